"""plugins/plugin_utils/_truth.py (and _values.py, the one rule for
names/paths/lines): the deploy snapshot, the state a restore must end in (compared by
module_utils/_compare.py, as topsrider_state does), and what a rollback needs from the cache."""
import base64
import copy
import hashlib
import json

import pytest

from ansible_collections.gcu.topsrider.plugins.module_utils._compare import compare, desired_problems, desired_reads
from ansible_collections.gcu.topsrider.plugins.plugin_utils._truth import (
    restore_desired, snapshot_needs, snapshot_record)
from ansible_collections.gcu.topsrider.plugins.module_utils._values import value_problem, value_problems


@pytest.mark.parametrize("kind, value, ok", [
    ("name", "2.5.140", True),
    ("name", "20261122T035011Z", True),
    ("name", "2.5.140\n", False),          # issue 14: a trailing newline became a directory name
    ("name", "../etc", False),
    ("name", "a/b", False),
    ("name", "..", False),
    ("name", ".hidden", False),
    ("name", "", False),
    ("name", "x" * 129, False),
    ("name", 2.5, False),
    ("path", "/opt/venvs/train/bin/python", True),
    ("path", "/opt/venvs/../bin/python", False),
    ("path", "opt/python", False),
    ("path", "/opt//python", False),
    ("path", "/opt/python/", False),
    ("path", "/opt/py thon", False),
    ("path", "/opt/python\n", False),
    ("line", "ECCL_DEBUG=INFO", True),
    ("line", "a\nb", False),
    ("line", "a\rb", False),
])
def test_value_rule(kind, value, ok):
    assert (value_problem(value, kind) is None) is ok


def test_value_problems_name_the_label_and_quote_the_value():
    out = value_problems({"the manifest version": "2.5.140\n", "id": "ok-1"}, "name")
    assert out == ['the manifest version "2.5.140\\n" has a newline or another control character']


def test_unknown_kind_is_an_error():
    with pytest.raises(ValueError):
        value_problem("x", "dir")


ENV = b"export ECCL_DEBUG=WARN\n"
SNAP = {
    "id": "D1", "from_version": "2.5.136", "to_version": "2.5.140", "packages_journalled": True,
    "packages": {"tops-sdk": {"version": "2.5.136-1", "held": True}, "tops-new": {"version": None, "held": False}},
    "files": {"/etc/profile.d/topsrider.sh": base64.b64encode(ENV).decode(), "/etc/ld.so.conf.d/topsrider.conf": None},
    "torch_gcu": {"python": "/opt/venvs/train/bin/python", "before": "2.13.0+2.5.136",
                  "before_cache": "/var/cache/topsrider/2.5.136",
                  "before_url": "file:///var/cache/topsrider/2.5.136/torch_gcu-2.13.0+2.5.136-py311-none-any.whl"},
    "facts_before": {"version": "2.5.136", "snapshot": "D0"},
}
JOURNAL = {"id": "D1", "packages": {
    "tops-sdk": {"before": "2.5.136-1", "before_held": True,
                 "before_deb": {"path": "/var/cache/topsrider/2.5.136/tops-sdk_2.5.136-1_amd64.deb"}},
    "tops-eccl": {"before": "2.5.136-1", "before_held": False, "before_deb": {"path": "/srv/elsewhere/x.deb"}}}}


ENV_PATH, LD_PATH, FACTS = "/etc/profile.d/topsrider.sh", "/etc/ld.so.conf.d/topsrider.conf", "/etc/ansible/facts.d/topsrider.fact"
URL = "file:///var/cache/topsrider/2.5.136/torch_gcu-2.13.0%2B2.5.136-py311-none-any.whl"


def file_read(content, mode="0644", owner="root", group="root"):
    """A file as topsrider_state reads it (module_utils/_state.py file_state)."""
    data = content.encode() if isinstance(content, str) else content
    return {"exists": True, "type": "file", "mode": mode, "owner": owner, "group": group, "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(), "content": content if isinstance(content, str) else None}


def facts_text(facts):
    return json.dumps(facts, indent=4, sort_keys=True) + "\n"


def good_state():
    """topsrider_state's `state` of a node exactly at SNAP (with JOURNAL)."""
    return {
        "packages": {"tops-sdk": {"version": "2.5.136-1", "held": True, "status": "installed", "want": "hold"},
                     "tops-eccl": {"version": "2.5.136-1", "held": False, "status": "installed", "want": "install"},
                     "tops-new": {"version": None, "held": False, "status": "not-installed", "want": "unknown"}},
        "files": {ENV_PATH: file_read(ENV.decode()), LD_PATH: {"exists": False},
                  FACTS: file_read(facts_text(SNAP["facts_before"]))},
        "python": {"path": "/opt/venvs/train/bin/python", "python": "3.11", "torch": "2.13.0",
                   "torch_gcu": "2.13.0+2.5.136", "torch_gcu_url": SNAP["torch_gcu"]["before_url"], "pip": "23.0.1",
                   "error": None},
        "devices": None, "library": None, "package_files": None, "services": None,
    }


def differences(snap, state, journal="the snapshot's"):
    """What restore.yml's one topsrider_state call returns as `pending` (the assert's differences)."""
    desired = restore_desired(snap, JOURNAL if journal == "the snapshot's" else journal, FACTS, "t20-01")
    assert desired_problems(desired) == []
    return compare(desired, state)["pending"]


def test_a_node_at_the_snapshot_has_no_difference():
    assert differences(SNAP, good_state()) == []


def test_the_restore_reads_its_packages_files_facts_and_python_but_not_the_cards():
    reads = desired_reads(restore_desired(SNAP, JOURNAL, FACTS))
    assert sorted(reads["packages"]) == ["tops-eccl", "tops-new", "tops-sdk"]
    assert sorted(reads["files"]) == sorted([ENV_PATH, LD_PATH, FACTS])
    assert reads["python"] == "/opt/venvs/train/bin/python" and reads["devices"] is False
    assert reads["library"] is None and reads["package_files"] == []


def test_the_desired_state_combines_snapshot_and_journal():
    desired = restore_desired(SNAP, JOURNAL, FACTS)
    assert desired["packages"] == {"tops-sdk": {"version": "2.5.136-1", "held": True},
                                   "tops-eccl": {"version": "2.5.136-1", "held": False},
                                   "tops-new": {"version": None, "held": False}}
    assert desired["files"][LD_PATH] == {"absent": True}
    assert desired["files"][ENV_PATH] == {"sha256": hashlib.sha256(ENV).hexdigest(), "mode": "0644", "owner": "root",
                                          "group": "root"}
    assert desired["torch_gcu"] == {"version": "2.13.0+2.5.136", "url": SNAP["torch_gcu"]["before_url"]}


def set_path(state, path, value):
    keys = path.split("|")
    for key in keys[:-1]:
        state = state[key]
    state[keys[-1]] = value


@pytest.mark.parametrize("path, value, expected", [
    ("packages|tops-sdk|version", "2.5.140-1", "package tops-sdk version: expected 2.5.136-1, found 2.5.140-1"),
    ("packages|tops-sdk|held", False, "package tops-sdk hold: expected held, found not held"),
    ("packages|tops-eccl|held", True, "package tops-eccl hold: expected not held, found held"),
    ("packages|tops-sdk|status", "half-configured",
     "package tops-sdk version: expected 2.5.136-1, found 2.5.136-1 (half-configured)"),
    ("packages|tops-new|version", "1.0", "package tops-new version: expected not installed, found 1.0"),
    ("files|" + LD_PATH, file_read("/x\n"), "env %s: expected absent, found a file" % LD_PATH),
    ("files|" + ENV_PATH, {"exists": False}, "env %s: expected sha256:" % ENV_PATH),
    ("files|" + ENV_PATH, file_read("export ECCL_DEBUG=INFO\n"), "env %s: expected sha256:" % ENV_PATH),
    ("files|%s|owner" % ENV_PATH, "nobody", "env %s owner: expected root, found nobody" % ENV_PATH),
    ("files|%s|mode" % FACTS, "0600", "env %s mode: expected 0644, found 0600" % FACTS),
    ("python|torch_gcu", "2.13.0+2.5.140",
     "wheel torch_gcu version: expected 2.13.0+2.5.136, found 2.13.0+2.5.140 (in /opt/venvs/train/bin/python)"),
    ("python|torch_gcu", None, "wheel torch_gcu version: expected 2.13.0+2.5.136, found not installed"),
    ("python|torch_gcu_url", "file:///elsewhere.whl",
     "wheel torch_gcu source: expected %s, found file:///elsewhere.whl" % SNAP["torch_gcu"]["before_url"]),
    ("python|torch_gcu_url", None,
     "wheel torch_gcu source: expected %s, found an index or --find-links" % SNAP["torch_gcu"]["before_url"]),
    ("files|" + FACTS, file_read(facts_text({"version": "2.5.140", "snapshot": "D1"})),
     "env local facts %s: expected version 2.5.136 (snapshot D0), found version 2.5.140 (snapshot D1)" % FACTS),
    ("files|" + FACTS, {"exists": False}, "env %s: expected present, found missing" % FACTS),
])
def test_each_difference_is_named(path, value, expected):
    state = good_state()
    set_path(state, path, value)
    out = differences(SNAP, state)
    assert any(line.startswith(expected) for line in out), out


def test_a_restored_file_whose_mode_alone_differs_is_named():
    """The old comparer (sha256 only) passed this node; the one comparison names the mode."""
    state = good_state()
    state["files"][ENV_PATH]["mode"] = "0600"
    assert differences(SNAP, state) == ["env %s mode: expected 0644, found 0600" % ENV_PATH]


def test_a_snapshot_that_recorded_a_mode_expects_that_mode():
    snap = dict(SNAP, modes={ENV_PATH: {"mode": "0640", "owner": "root", "group": "adm"}})
    assert restore_desired(snap, JOURNAL, FACTS)["files"][ENV_PATH]["mode"] == "0640"
    assert differences(snap, good_state()) == ["env %s group: expected adm, found root" % ENV_PATH,
                                               "env %s mode: expected 0640, found 0644" % ENV_PATH]


def test_pip_freezes_hash_fragment_is_not_a_different_source():
    snap = copy.deepcopy(SNAP)
    snap["torch_gcu"]["before_url"] += "#sha256=" + "ab" * 32
    assert differences(snap, good_state()) == []


def test_issue14_case1_packages_left_at_new_version_fail_the_proof():
    state = good_state()
    for p in state["packages"].values():
        if p["version"]:
            p.update(version="2.5.140-1", held=False)
    assert [line.split(":")[0] for line in differences(SNAP, state)] == [
        "package tops-eccl version", "package tops-sdk version"]


def test_an_old_format_snapshot_is_still_proven():
    """Written before 2026-11-26: no modes, no packages (before 2026-11-22), no source of the wheel,
    packages_journalled as a string; the restore writes its files 0644 root:root and proves that."""
    old = {"id": "D0", "from_version": None, "to_version": "2.5.136", "packages_journalled": "True",
           "journal": "/var/lib/topsrider/snapshots/D0.json",
           "files": {ENV_PATH: base64.b64encode(ENV).decode(), LD_PATH: None},
           "torch_gcu": {"python": "/opt/venvs/train/bin/python", "before": None, "before_cache": None},
           "facts_before": None}
    state = good_state()
    state["packages"] = {}
    state["files"][FACTS] = {"exists": False}
    state["python"].update(torch_gcu=None, torch_gcu_url=None)
    assert differences(old, state, journal=None) == []
    state["files"][ENV_PATH]["owner"] = "nobody"
    state["python"]["torch_gcu"] = "2.13.0+2.5.136"
    assert differences(old, state, journal=None) == [
        "env %s owner: expected root, found nobody" % ENV_PATH,
        "wheel torch_gcu version: expected not installed, found 2.13.0+2.5.136 (in /opt/venvs/train/bin/python)"]


def test_a_training_python_that_does_not_answer_is_a_difference():
    state = good_state()
    state["python"] = {"path": "/opt/venvs/train/bin/python", "torch_gcu": None, "error": "no such file"}
    assert differences(SNAP, state) == [
        "wheel training python: expected /opt/venvs/train/bin/python, found none (no such file)"]


def test_restore_desired_states_that_cannot_be_compared_are_named():
    desired = restore_desired(SNAP, JOURNAL, FACTS)
    assert desired_problems(dict(desired, python=None)) == [
        "desired.torch_gcu is {version, url} in desired.python (a restore's training Python)"]
    assert desired_problems(dict(desired, packages={"x": "1.0"})) == [
        "desired.packages maps package names to {version (null: not installed), held}"]
    assert desired_problems(dict(desired, facts={"path": "rel", "content": None})) == [
        "desired.facts is {path: the local facts file, content: a mapping or null}"]
    assert "names no staged release" in " ".join(desired_problems(
        dict(desired, stage_path="/s", manifest_sha256="x", facts_file=FACTS)))


# ---------------------------------------------------------------- the snapshot record
PREFLIGHT = {
    "packages": {"tops-sdk": {"version": "2.5.136-1", "held": True, "status": "installed", "want": "hold"},
                 "tops-new": {"version": None, "held": False, "status": "not-installed", "want": "unknown"}},
    "files": {ENV_PATH: file_read(ENV.decode(), mode="0640", group="adm"), LD_PATH: {"exists": False},
              "/var/lib/topsrider/open-deploy.json": {"exists": False},
              "/etc/big.conf": dict(file_read(b"\xff\xfe"), content=None)},
}
LOCAL = {"topsrider": {"version": "2.5.136", "snapshot": "D0"}}
ENVIRONMENT = {"path": "/opt/venvs/train/bin/python", "torch_gcu": "2.13.0+2.5.136", "torch_gcu_url": URL}


def record(**kw):
    args = dict(state=PREFLIGHT, deploy_id="D1", time="2026-11-26T19:00:00Z", to_version="2.5.140",
                managed_files=[ENV_PATH, LD_PATH, "/etc/big.conf"], journal="/var/lib/topsrider/snapshots/D1.json",
                journalled=True, python="/opt/venvs/train/bin/python", environment=ENVIRONMENT,
                cache_root="/var/cache/topsrider/", local_facts=LOCAL,
                slurped=[{"item": "/etc/big.conf", "content": "//4=", "encoding": "base64"}])
    args.update(kw)
    return snapshot_record(**args)


def test_the_snapshot_record_has_the_shape_a_restore_reads():
    rec = record()
    assert rec == {
        "id": "D1", "time": "2026-11-26T19:00:00Z", "from_version": "2.5.136", "to_version": "2.5.140",
        "packages_journalled": True, "journal": "/var/lib/topsrider/snapshots/D1.json",
        "packages": {"tops-new": {"version": None, "held": False}, "tops-sdk": {"version": "2.5.136-1", "held": True}},
        "files": {ENV_PATH: base64.b64encode(ENV).decode(), LD_PATH: None, "/etc/big.conf": "//4="},
        "modes": {ENV_PATH: {"mode": "0640", "owner": "root", "group": "adm"},
                  "/etc/big.conf": {"mode": "0644", "owner": "root", "group": "root"}},
        "torch_gcu": {"python": "/opt/venvs/train/bin/python", "before": "2.13.0+2.5.136",
                      "before_cache": "/var/cache/topsrider/2.5.136", "before_url": URL},
        "facts_before": {"version": "2.5.136", "snapshot": "D0"},
    }
    json.dumps(rec)  # written with to_nice_json


def test_a_first_deploy_records_nothing_before_it():
    rec = record(local_facts={}, environment={"torch_gcu": None, "torch_gcu_url": None}, journalled=False)
    assert rec["from_version"] is None and rec["facts_before"] is None and rec["packages_journalled"] is False
    assert rec["torch_gcu"] == {"python": "/opt/venvs/train/bin/python", "before": None, "before_cache": None,
                                "before_url": None}


def test_the_record_is_what_the_restore_proves_mode_included():
    desired = restore_desired(record(), JOURNAL, FACTS)
    assert desired["files"][ENV_PATH] == {"sha256": hashlib.sha256(ENV).hexdigest(), "mode": "0640",
                                          "owner": "root", "group": "adm"}
    assert desired["files"]["/etc/big.conf"]["sha256"] == hashlib.sha256(b"\xff\xfe").hexdigest()
    assert desired["torch_gcu"] == {"version": "2.13.0+2.5.136", "url": URL}


def test_a_file_whose_content_was_not_read_is_refused():
    with pytest.raises(ValueError, match="/etc/big.conf exists but its content was neither read nor slurped"):
        record(slurped=[])


def test_snapshot_needs_names_cache_dirs_only():
    assert snapshot_needs(SNAP, JOURNAL, "/var/cache/topsrider") == ["2.5.136"]
    snap = dict(SNAP, from_version=None, torch_gcu=dict(SNAP["torch_gcu"], before_cache=None,
                                                        before_url="file:///var/cache/topsrider/2.5.130/w.whl"))
    assert snapshot_needs(snap, None, "/var/cache/topsrider/") == ["2.5.130"]
    assert snapshot_needs(None, None, "/var/cache/topsrider") == []


# ---------------------------------------------------------------- one sentence for a failed task
@pytest.mark.parametrize("task, result, prefix, expected", [
    # an assert's message alone: its name is a claim, never read as a fact in front of the reason
    ({"name": "There is a snapshot to go back to, with a plain id", "action": "ansible.builtin.assert"},
     {"msg": "no deploy is recorded in /etc/ansible/facts.d/topsrider.fact, so there is no snapshot to roll back to;\n"
             "nothing was changed."}, "",
     "no deploy is recorded in /etc/ansible/facts.d/topsrider.fact, so there is no snapshot to roll back to; "
     "nothing was changed."),
    ({"name": "Refuse", "action": "fail"}, {"msg": "x failed"}, "", "x failed"),
    # another task: the step, then its message
    ({"name": "Install the packages", "action": "gcu.topsrider.deb_bundle"}, {"msg": "dpkg failed"}, "",
     "Install the packages: dpkg failed"),
    # the prefix once: the issue's "refused, nothing was changed: t20-node-1: refused, nothing was changed: ..."
    ({"name": "Inputs | Names", "action": "ansible.builtin.assert"},
     {"msg": "refused, nothing was changed: topsrider_python \"python\" is not absolute."},
     "refused, nothing was changed", "refused, nothing was changed: topsrider_python \"python\" is not absolute."),
    ({"name": "Check", "action": "ansible.builtin.assert"},
     {"msg": "eccl_env: refused, nothing was changed: \"PATH\" is ..."}, "refused, nothing was changed",
     "refused, nothing was changed: \"PATH\" is ..."),
    ({"name": "Check", "action": "ansible.builtin.assert"},
     {"msg": "t20-node-1: Refused, nothing was changed: x"}, "refused, nothing was changed",
     "Refused, nothing was changed: x"),
    # said later in a sentence: kept where it is, not added
    ({"name": "Check", "action": "ansible.builtin.assert"},
     {"msg": "the manifest is bad; refused, nothing was changed."}, "refused, nothing was changed",
     "the manifest is bad; refused, nothing was changed."),
    ({"name": "Bundle | The installer", "action": "ansible.builtin.assert"}, {"msg": "x.run: corrupt. Nothing was sent."},
     "refused, nothing was changed", "refused, nothing was changed: x.run: corrupt. Nothing was sent."),
    # nothing known: still a sentence
    ({}, {}, "", "failed"),
    (None, None, "refused", "refused: failed"),
])
def test_failure_text(task, result, prefix, expected):
    from ansible_collections.gcu.topsrider.plugins.plugin_utils._truth import failure_text
    task, result = task or {}, result or {}
    assert failure_text(result.get("msg"), task.get("action"), task.get("name"), prefix) == expected


LOCK_OK = {"changed": True, "acquired": True, "took_over": None}
PROBE_OK = {"changed": False, "rc": 0, "stdout": "", "stderr": ""}
PROBE_SKIPPED = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}


@pytest.mark.parametrize("lock, probe, lost", [
    # a task failed on a node that answers: a failure, not a lost node
    (LOCK_OK, PROBE_OK, False),
    # another run's lock refused this one; the node answers
    ({"failed": True, "msg": "This node is locked by deploy run X"}, PROBE_OK, False),
    # the lock task could not reach the node (SSH): the probe was skipped
    ({"unreachable": True, "msg": "Failed to connect to the host via ssh"}, PROBE_SKIPPED, True),
    # the docker connection reports a stopped container as the lock task's failure
    ({"failed": True, "module_stderr": "Error response from daemon: container abc is not running"}, PROBE_OK, True),
    ({"failed": True, "module_stderr": "Error: No such container: topsrider-fleet-node1"}, PROBE_OK, True),
    # lost later, mid-task: the probe in the rescue could not run there
    (LOCK_OK, {"unreachable": True, "msg": "connection refused"}, True),
    (LOCK_OK, {"failed": False, "msg": "docker exec: container abc is not running"}, True),
    (LOCK_OK, {"rc": 137, "stdout": "", "stderr": ""}, True),
    # no lock task result (the run failed before start.yml): the probe decides
    (None, PROBE_OK, False),
    (None, {"unreachable": True}, True),
])
def test_node_lost(lock, probe, lost):
    from ansible_collections.gcu.topsrider.plugins.plugin_utils._truth import node_lost
    assert node_lost(lock, probe) is lost


# What ansible-core 2.19 gave the rescue when the state directory's file system
# was full (molecule fleet, node_disk.yml): the snapshot's two-item copy loop.
FULL_LOOP = {
    "failed": True, "msg": "One or more items failed", "changed": False,
    "results": [
        {"failed": True, "changed": False, "item": {"dest": "/var/lib/topsrider/deploys/20261126T115604Z.json"},
         "msg": "Task failed: Module failed: Failed to replace '/var/lib/topsrider/deploys/20261126T115604Z.json' with "
                "b'/root/.ansible/tmp/ansible-tmp-1795694202.398513-32067-275185721750532/.source.json': [Errno 28] No "
                "space left on device: b'/root/.ansible/tmp/ansible-tmp-1795694202.398513-32067-275185721750532/"
                ".source.json' -> b'/var/lib/topsrider/deploys/.ansible_tmp2ixeb6q_20261126T115604Z.json'"},
        {"failed": True, "changed": False, "item": {"dest": "/var/lib/topsrider/open-deploy.json"},
         "msg": "Failed to replace '/var/lib/topsrider/open-deploy.json' with b'/x': [Errno 28] No space left on device"},
    ],
}


@pytest.mark.parametrize("result, expected", [
    (FULL_LOOP, "Snapshot | Write it: the file system of /var/lib/topsrider/deploys is full (No space left on device): "
                "/var/lib/topsrider/deploys/20261126T115604Z.json was not written and is as it was; free space there and "
                "run again"),
    # a loop whose first item passed: the first failed one speaks
    ({"failed": True, "msg": "One or more items failed",
      "results": [{"changed": False, "msg": "ok"}, {"failed": True, "msg": "Module failed: dpkg said no"}]},
     "Snapshot | Write it: dpkg said no"),
    # a loop with no failed item recorded: its own message
    ({"failed": True, "msg": "One or more items failed", "results": []}, "Snapshot | Write it: One or more items failed"),
    # the message alone, as before
    ("Task failed: Module failed: boom", "Snapshot | Write it: boom"),
    ({}, "Snapshot | Write it: failed"),
])
def test_failure_text_of_a_whole_result(result, expected):
    from ansible_collections.gcu.topsrider.plugins.plugin_utils._truth import failure_text
    assert failure_text(result, "ansible.builtin.copy", "Snapshot | Write it") == expected
