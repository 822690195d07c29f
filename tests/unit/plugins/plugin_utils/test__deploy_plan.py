# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugins/plugin_utils/_deploy_plan.py: the preflight's refusals, each whole
(tasks/rollout.yml refuses the host with this sentence, nothing changed)."""
import base64
import json

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.gcu.topsrider.plugins.filter import truth
from ansible_collections.gcu.topsrider.plugins.plugin_utils._deploy_plan import (
    deploy_result, preflight_problem, records, restore_plan, room_needed, snapshot_plan)
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
    """A preflight read: the open-deploy record (a string: its content as found), the local facts, the two files."""
    files = {OPEN: {"exists": open_record is not None, "content": open_record, "sha256": None},
             ENV: {"exists": env_sha is not None, "sha256": env_sha, "content": "x"},
             LD: {"exists": ld_sha is not None, "sha256": ld_sha, "content": "y" if ld_sha else None}}
    local = {"topsrider": {"version": "2.5.136", "manifest_sha256": facts_sha, "snapshot": "D0"}} if facts_sha else {}
    return {"files": files, "system": {"local": local}}


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
    ("{not json", "is not JSON"),
    ("", "is not JSON"),
    ('["D0"]', "names no deploy id"),
    ('{"id": ""}', "names no deploy id"),
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


def records_read(snapshot="default", journal="default", open_id="D1", big=()):
    """topsrider_state's files for the three records (None: the file is not there; "default": the
    records above); a path in big exists but its content was not returned (over 64 KiB)."""
    snapshot = SNAPSHOT if snapshot == "default" else snapshot
    journal = JOURNAL_RECORD if journal == "default" else journal

    def rec(path, value):
        if value is None:
            return {"exists": False, "content": None}
        text = value if isinstance(value, str) else json.dumps(value)
        return {"exists": True, "content": None if path in big else text}
    return {SNAP: rec(SNAP, snapshot), JOURNAL: rec(JOURNAL, journal),
            OPEN_MARK: rec(OPEN_MARK, {"id": open_id} if open_id else None)}


def restore(files, require_journal=True, slurped=None):
    return restore_plan(files, "D1", STATE, FACTS, "node-1", require_journal, slurped)


def test_a_restore_reads_its_snapshot_journal_and_open_mark_once():
    found = restore(records_read())
    assert found["problem"] == "" and found["snapshot"] == SNAPSHOT and found["journal"] == JOURNAL_RECORD
    assert found["journal_path"] == JOURNAL and found["pip"] == "/opt/venvs/train/bin/pip3"
    assert found["closes"] is True
    assert found["desired"] == restore_desired(SNAPSHOT, JOURNAL_RECORD, FACTS, "node-1")
    # The open mark names another deploy (or there is none): it stays.
    assert restore(records_read(open_id="D0"))["closes"] is False
    assert restore(records_read(open_id=None))["closes"] is False
    assert restore(records_read(journal=None), require_journal=False)["journal"] is None


def test_a_record_over_the_content_limit_is_taken_from_its_slurp():
    slurped = [{"item": SNAP, "content": base64.b64encode(json.dumps(SNAPSHOT).encode()).decode()},
               {"item": JOURNAL, "skipped": True}]
    assert records(records_read(big=(SNAP,)), slurped)[SNAP] == json.dumps(SNAPSHOT)
    assert restore(records_read(big=(SNAP,)), slurped=slurped)["snapshot"] == SNAPSHOT


def test_a_missing_snapshot_or_journal_is_refused_whole():
    assert restore(records_read(snapshot=None))["problem"] == (
        "node-1 has no deploy snapshot /var/lib/topsrider/deploys/D1.json; nothing was changed. List the snapshots "
        "with 'ls /var/lib/topsrider/deploys' on the node and name one with -e topsrider_snapshot=<id>.")
    assert restore(records_read(journal=None))["problem"] == (
        "snapshot D1 says its packages were journalled, but /var/lib/topsrider/snapshots/D1.json is missing, so the "
        "package versions and holds before 2.5.140 cannot be put back; nothing was changed. Put the file back from a "
        "backup and run again, or deploy the release you want instead (deploy.yml "
        "-e topsrider_bundle_dir=<release 2.5.136> -e topsrider_allow_downgrade=true).")
    unjournalled = dict(SNAPSHOT, packages_journalled=False)
    assert restore(records_read(snapshot=unjournalled, journal=None))["problem"] == ""


@pytest.mark.parametrize("snapshot, journal, says", [
    ("{cut off", JOURNAL_RECORD, "/var/lib/topsrider/deploys/D1.json, deploy snapshot D1, is not JSON ("),
    ("[1, 2]", JOURNAL_RECORD, "/var/lib/topsrider/deploys/D1.json, deploy snapshot D1, is not a JSON object"),
    (SNAPSHOT, "", "/var/lib/topsrider/snapshots/D1.json, its package journal, is not JSON ("),
])
def test_an_unreadable_record_fails_naming_it(snapshot, journal, says):
    with pytest.raises(ValueError) as found:
        restore(records_read(snapshot=snapshot, journal=journal))
    assert str(found.value).startswith(says) and str(found.value).endswith("; nothing was changed")
