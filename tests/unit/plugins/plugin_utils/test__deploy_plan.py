# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugins/plugin_utils/_deploy_plan.py: the preflight's refusals, each whole
(tasks/rollout.yml refuses the host with this sentence, nothing changed)."""
import json
import os
import tempfile

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.gcu.topsrider.plugins.filter import truth
from ansible_collections.gcu.topsrider.plugins.plugin_utils._deploy_plan import (
    deploy_result, preflight_problem, restore_plan, rollback_choice, room_needed, snapshot_plan)
from ansible_collections.gcu.topsrider.plugins.module_utils._state import record_state
from ansible_collections.gcu.topsrider.plugins.plugin_utils._truth import restore_desired

MIB = 1024 * 1024
MANIFEST = {"version": "2.5.140", "files": [
    {"file": "tops-sdk_2.5.140-1_amd64.deb", "type": "deb", "size": 30 * MIB, "installed_size": 120 * MIB},
    {"file": "tops-eccl_2.5.140-1_amd64.deb", "type": "deb", "size": 10 * MIB},
    {"file": "torch_gcu-2.5.140-cp311-cp311-linux_x86_64.whl", "type": "wheel", "size": 10 * MIB}]}
# 50 MiB of bundle twice, 120 MiB that dpkg unpacks, 100 MiB: 320 MiB.
NEED = 320 * MIB


def state(os_family="Debian", architecture="x86_64", free=NEED, space_error=None, busy=None, lock_error=None,
          count=8, pci_count=8, cards_error=None):
    return {"system": {"os_family": os_family, "architecture": architecture},
            "space": {"free": free, "error": space_error, "checked": "/var/cache/topsrider"},
            "dpkg_lock": {"busy": busy, "error": lock_error},
            "devices": {"count": count, "pci_count": pci_count, "error": cards_error}}


def problem(found, expected_count=8, keep=2):
    return preflight_problem(found, "node-1", MANIFEST, keep, "/var/cache/topsrider", expected_count)


def test_room_is_the_bundle_times_the_versions_kept_plus_what_dpkg_unpacks_plus_100_mib():
    assert room_needed(MANIFEST, 2) == (NEED, 50 * MIB, 120 * MIB)
    assert room_needed(MANIFEST, "3") == (NEED + 50 * MIB, 50 * MIB, 120 * MIB)


def test_a_node_with_room_a_free_dpkg_and_its_cards_passes():
    assert problem(state()) == ""
    assert problem(state(architecture="amd64", count=7), expected_count=None) == ""


@pytest.mark.parametrize("found, expected_count, text", [
    (state(os_family="RedHat"), 8,
     "node-1 is RedHat on x86_64; TopsRider for T20 ships amd64 .debs for Debian/Ubuntu only. Remove the host from the "
     "t20 group."),
    (state(architecture="aarch64", free=0), 8,
     "node-1 is Debian on aarch64; TopsRider for T20 ships amd64 .debs for Debian/Ubuntu only. Remove the host from the "
     "t20 group."),
    (state(free=NEED - 1, busy="/var/lib/dpkg/lock-frontend"), 8,
     "node-1: not enough disk for TopsRider 2.5.140 under /var/cache/topsrider (the file system of /var/cache/topsrider): "
     "needed 335544320 bytes (320.0 MiB: the bundle, 50.0 MiB, times topsrider_cache_keep 2, plus 120.0 MiB that dpkg "
     "unpacks, plus 100 MiB), free 335544319 bytes (320.0 MiB). Nothing was sent or changed. Free space under "
     "/var/cache/topsrider (old versions) or on its file system."),
    (state(free=None, space_error="statvfs: Permission denied"), 8,
     "node-1: not enough disk for TopsRider 2.5.140 under /var/cache/topsrider (the file system of /var/cache/topsrider): "
     "needed 335544320 bytes (320.0 MiB: the bundle, 50.0 MiB, times topsrider_cache_keep 2, plus 120.0 MiB that dpkg "
     "unpacks, plus 100 MiB), free 0 bytes (0.0 MiB). Nothing was sent or changed. Free space under "
     "/var/cache/topsrider (old versions) or on its file system. (statvfs: Permission denied)"),
    (state(busy="/var/lib/dpkg/lock-frontend", count=0), 8,
     "/var/lib/dpkg/lock-frontend is held by another process: another apt/dpkg run (unattended-upgrades?) is active on "
     "node-1. Wait for it to finish, or stop it, and deploy again."),
    (state(lock_error="cannot open /var/lib/dpkg/lock: Permission denied"), 8,
     "node-1: cannot open /var/lib/dpkg/lock: Permission denied; nothing was changed."),
    (state(count=7), "8",
     "node-1: expected 8 GCUs (topsrider_expected_count), the driver sees 7 (PCI sees 8); nothing was changed. Check "
     "the cards and the driver (efsmi), or set topsrider_expected_count for this host."),
    (state(count=0, pci_count=None), 8,
     "node-1: expected 8 GCUs (topsrider_expected_count), the driver sees 0 (PCI sees ?); nothing was changed. Check "
     "the cards and the driver (efsmi), or set topsrider_expected_count for this host."),
    (state(count=None, cards_error="efsmi: timed out after 30 s"), 8,
     "node-1: expected 8 GCUs (topsrider_expected_count), cannot count them: efsmi: timed out after 30 s; nothing was "
     "changed. Check the cards and the driver (efsmi), or set topsrider_expected_count for this host."),
])
def test_the_first_failing_check_is_the_whole_refusal(found, expected_count, text):
    assert problem(found, expected_count) == text


def test_the_filter_says_which_input_it_could_not_read():
    problem_filter = truth.FilterModule().filters()["topsrider_preflight_problem"]
    assert problem_filter(state(), "node-1", MANIFEST, 2, "/var/cache/topsrider", None) == ""
    with pytest.raises(AnsibleFilterError, match="^preflight_problem: 'dpkg_lock'$"):
        problem_filter({"system": {"os_family": "Debian", "architecture": "amd64"}, "space": {"free": NEED}},
                       "node-1", MANIFEST, 2, "/var/cache/topsrider", None)


OPEN = "/var/lib/topsrider/open-deploy.json"
ENV, LD = "/etc/profile.d/topsrider.sh", "/etc/ld.so.conf.d/topsrider.conf"
SHA = "a" * 64


def read(open_record=None, facts_sha=None, env_sha="e1", ld_sha=None):
    """A preflight read: the open-deploy mark (a string: its content as found, read as topsrider_state's
    records read it), the local facts, the two files."""
    with tempfile.TemporaryDirectory() as tmp:
        mark = os.path.join(tmp, "open-deploy.json")
        if open_record is not None:
            with open(mark, "w") as f:
                f.write(open_record)
        records = {OPEN: record_state(mark)}
    files = {ENV: {"exists": env_sha is not None, "sha256": env_sha, "content": "x"},
             LD: {"exists": ld_sha is not None, "sha256": ld_sha, "content": "y" if ld_sha else None}}
    local = {"topsrider": {"version": "2.5.136", "manifest_sha256": facts_sha, "snapshot": "D0"}} if facts_sha else {}
    return {"files": files, "records": records, "system": {"local": local}}


def plan(found, package_plan=(), torch_gcu="2.5.136"):
    return snapshot_plan(found, "D1", [ENV, LD], OPEN, SHA, list(package_plan), torch_gcu)


def test_a_new_release_records_its_own_snapshot_of_what_was_there():
    assert plan(read(facts_sha="b" * 64)) == {
        "id": "D1", "continues": False, "open": None, "new_release": True, "needed": True,
        "before": {"files": {ENV: "e1", LD: None}, "torch_gcu": "2.5.136"}}
    # A node never deployed: no local facts at all.
    assert plan(read())["new_release"] is True


def test_at_the_release_a_snapshot_is_needed_only_when_packages_would_change():
    assert plan(read(facts_sha=SHA))["needed"] is False and plan(read(facts_sha=SHA))["new_release"] is False
    moved = plan(read(facts_sha=SHA), package_plan=[{"package": "tops-sdk", "action": "install"}])
    assert moved["needed"] is True and moved["new_release"] is False and moved["id"] == "D1"


def test_an_open_deploy_is_continued_under_its_own_snapshot():
    record = '{"id": "D0", "run": "R0", "from_version": "2.5.130", "to_version": "2.5.136"}'
    found = plan(read(open_record=record, facts_sha=SHA))
    assert found["id"] == "D0" and found["continues"] is True and found["open"]["to_version"] == "2.5.136"
    assert found["needed"] is False


@pytest.mark.parametrize("record, says", [
    ("{not json", "cannot be used ("),
    ("", "cannot be used ("),
    ('["D0"]', "is not a JSON object); nothing was changed"),
    ('{"id": ""}', "names no deploy id"),
    ('{"run": "R0"}', "names no deploy id"),
])
def test_an_unreadable_open_deploy_record_is_refused_naming_it(record, says):
    with pytest.raises(ValueError) as found:
        plan(read(open_record=record))
    text = str(found.value)
    assert text.startswith(OPEN + ", the record of a deploy that never finished here, ") and says in text
    assert "nothing was changed" in text and "Put it back from a backup" in text


def test_the_result_says_deployed_repaired_or_already_there():
    at = plan(read(facts_sha=SHA))
    same = read(facts_sha=SHA)["files"]
    assert deploy_result("2.5.140", at, same, [ENV, LD], False) == {
        "result": "ok", "version": "2.5.140", "changed": False, "detail": "already at 2.5.140"}
    # A managed file put back, or the wheel reinstalled: repaired.
    fixed = read(facts_sha=SHA, env_sha="e2")["files"]
    assert deploy_result("2.5.140", at, fixed, [ENV, LD], False)["detail"] == "repaired at 2.5.140"
    assert deploy_result("2.5.140", at, same, [ENV, LD], True) == {
        "result": "ok", "version": "2.5.140", "changed": True, "detail": "repaired at 2.5.140"}
    new = plan(read(facts_sha="b" * 64))
    assert deploy_result("2.5.140", new, same, [ENV, LD], False) == {
        "result": "ok", "version": "2.5.140", "changed": True, "detail": "deployed 2.5.140"}
    # Check mode wrote nothing: the files are as they were; a new release is still what it would do.
    assert deploy_result("2.5.140", at, None, [ENV, LD], False)["changed"] is False
    assert deploy_result("2.5.140", new, None, [ENV, LD], False)["detail"] == "deployed 2.5.140"


STATE = "/var/lib/topsrider"
FACTS = "/etc/ansible/facts.d/topsrider.fact"
SNAP = STATE + "/deploys/D1.json"
JOURNAL = STATE + "/snapshots/D1.json"
OPEN_MARK = STATE + "/open-deploy.json"
SNAPSHOT = {"id": "D1", "from_version": "2.5.136", "to_version": "2.5.140", "packages_journalled": True,
            "packages": {"tops-sdk": {"version": "2.5.136-1", "held": True}},
            "files": {ENV: "ZXhwb3J0IFg9MQo=", LD: None}, "modes": {},
            "torch_gcu": {"python": "/opt/venvs/train/bin/python", "before": "2.5.136"},
            "facts_before": {"version": "2.5.136"}}
JOURNAL_RECORD = {"packages": {"tops-sdk": {"before": "2.5.136-1", "before_held": True}}}


@pytest.fixture
def records_read(tmp_path):
    """The three records written under a state directory and read as topsrider_state reads them
    (module_utils/_state.py's record_state): None, the file is not there; "default", the records
    above; a str or bytes, the file's content; else the JSON of it."""
    state_dir = tmp_path / "state"
    (state_dir / "deploys").mkdir(parents=True)
    (state_dir / "snapshots").mkdir()

    def read(snapshot="default", journal="default", open_id="D1", open_mark=None):
        paths = {"snapshot": state_dir / "deploys" / "D1.json", "journal": state_dir / "snapshots" / "D1.json",
                 "open": state_dir / "open-deploy.json"}
        values = {"snapshot": SNAPSHOT if snapshot == "default" else snapshot,
                  "journal": JOURNAL_RECORD if journal == "default" else journal,
                  "open": open_mark if open_mark is not None else {"id": open_id} if open_id else None}
        for name, path in paths.items():
            if path.exists():
                path.unlink()
            if isinstance(values[name], bytes):
                path.write_bytes(values[name])
            elif values[name] is not None:
                path.write_text(values[name] if isinstance(values[name], str) else json.dumps(values[name]))
        return dict((str(path), record_state(str(path))) for path in paths.values())
    read.state_dir = str(state_dir)
    return read


def restore(records_read, found, require_journal=True):
    return restore_plan(found, "D1", records_read.state_dir, FACTS, "node-1", require_journal)


def test_a_restore_reads_its_snapshot_journal_and_open_mark_once(records_read):
    found = restore(records_read, records_read())
    assert found["problem"] == "" and found["snapshot"] == SNAPSHOT and found["journal"] == JOURNAL_RECORD
    assert found["journal_path"] == records_read.state_dir + "/snapshots/D1.json"
    assert found["pip"] == "/opt/venvs/train/bin/pip3" and found["closes"] is True
    assert found["desired"] == restore_desired(SNAPSHOT, JOURNAL_RECORD, FACTS, "node-1")
    # The open mark names another deploy (or there is none): it stays.
    assert restore(records_read, records_read(open_id="D0"))["closes"] is False
    assert restore(records_read, records_read(open_id=None))["closes"] is False
    assert restore(records_read, records_read(journal=None), require_journal=False)["journal"] is None


def test_a_record_over_the_old_64_kib_content_limit_is_read_whole(records_read):
    big = dict(SNAPSHOT, padding="x" * (200 * 1024))
    assert restore(records_read, records_read(snapshot=big))["snapshot"] == big


def test_a_missing_snapshot_or_journal_is_refused_whole(records_read):
    state_dir = records_read.state_dir
    assert restore(records_read, records_read(snapshot=None))["problem"] == (
        "node-1 has no deploy snapshot %s/deploys/D1.json; nothing was changed. List the snapshots "
        "with 'ls %s/deploys' on the node and name one with -e topsrider_snapshot=<id>." % (state_dir, state_dir))
    assert restore(records_read, records_read(journal=None))["problem"] == (
        "snapshot D1 says its packages were journalled, but %s/snapshots/D1.json is missing, so the "
        "package versions and holds before 2.5.140 cannot be put back; nothing was changed. Put the file back from a "
        "backup and run again, or deploy the release you want instead (deploy.yml "
        "-e topsrider_bundle_dir=<release 2.5.136> -e topsrider_allow_downgrade=true)." % state_dir)
    unjournalled = dict(SNAPSHOT, packages_journalled=False)
    assert restore(records_read, records_read(snapshot=unjournalled, journal=None))["problem"] == ""


@pytest.mark.parametrize("snapshot, journal, says", [
    ("{cut off", JOURNAL_RECORD, "the deploy snapshot D1 cannot be used: {dir}/deploys/D1.json is not JSON: "),
    ("[1, 2]", JOURNAL_RECORD, "the deploy snapshot D1 cannot be used: {dir}/deploys/D1.json is not a JSON object;"),
    (SNAPSHOT, "", "the package journal cannot be used: {dir}/snapshots/D1.json is not JSON: "),
    (SNAPSHOT, b"{\xff}", "the package journal cannot be used: {dir}/snapshots/D1.json is not UTF-8 text: "),
])
def test_an_unusable_record_is_refused_naming_it_and_its_fault(records_read, snapshot, journal, says):
    found = restore(records_read, records_read(snapshot=snapshot, journal=journal))
    assert found["problem"].startswith("node-1: " + says.format(dir=records_read.state_dir)), found["problem"]
    assert found["problem"].endswith("; nothing was changed.") and found["snapshot"] is None


FACTS_RECORDED = {"version": "2.5.136", "snapshot": "D0"}


def choose(records_read, requested="", facts="recorded", **mark):
    facts = dict(FACTS_RECORDED) if facts == "recorded" else facts
    return rollback_choice(records_read(**mark), records_read.state_dir, requested, facts, FACTS)


def test_a_rollback_undoes_an_open_deploy_first_else_goes_to_the_facts_snapshot(records_read):
    opened = {"id": "D1", "to_version": "2.5.140"}
    assert choose(records_read, open_id=None) == {"id": "D0", "from": "2.5.136", "problem": ""}
    assert choose(records_read, open_mark=opened) == {"id": "D1", "from": "the unfinished deploy of 2.5.140",
                                                      "problem": ""}
    # The operator's snapshot wins; it undoes the open deploy only when it is that deploy's.
    assert choose(records_read, "D7", open_mark=opened) == {"id": "D7", "from": "2.5.136", "problem": ""}
    assert choose(records_read, "D1", open_mark=opened)["from"] == "the unfinished deploy of 2.5.140"
    assert choose(records_read, "D7", facts=None, open_id=None) == {"id": "D7", "from": "?", "problem": ""}


def test_a_rollback_without_a_snapshot_or_with_a_hostile_id_is_refused(records_read):
    state_dir = records_read.state_dir
    assert choose(records_read, facts=None, open_id=None)["problem"] == (
        "no deploy is recorded in %s, so there is no snapshot to roll back to; nothing was changed. Name one with "
        "-e topsrider_snapshot=<id> (ls %s/deploys)." % (FACTS, state_dir))
    found = choose(records_read, "../../etc/x", open_id=None)
    assert found["problem"].startswith('topsrider_snapshot "../../etc/x" ') and "nothing was changed" in found["problem"]


@pytest.mark.parametrize("text, fault", [("{cut off", "is not JSON: "), ("[]", "is not a JSON object")])
def test_an_open_deploy_mark_that_cannot_be_used_refuses_the_rollback(records_read, text, fault):
    found = choose(records_read, open_mark=text)
    mark = records_read.state_dir + "/open-deploy.json"
    assert found["id"] == "" and found["problem"].startswith(
        "%s, the record of a deploy that never finished here, cannot be used (%s %s" % (mark, mark, fault))
    assert found["problem"].endswith("remove it when the node is in the state a rollback should return to")
