"""plugins/plugin_utils/_truth.py (and _values.py, the one rule for
names/paths/lines): the state a restore must end in, what differs from it, and what a rollback needs
from the cache."""
import base64
import hashlib

import pytest

from ansible_collections.gcu.topsrider.plugins.plugin_utils._truth import (
    freeze_torch_gcu, restore_expected, snapshot_needs, state_differences)
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


def good_actual():
    return {
        "packages": {"tops-sdk": {"version": "2.5.136-1", "held": True, "status": "installed"},
                     "tops-eccl": {"version": "2.5.136-1", "held": False, "status": "installed"},
                     "tops-new": {"version": None, "held": False, "status": "not-installed"}},
        "files": {"/etc/profile.d/topsrider.sh": hashlib.sha256(ENV).hexdigest(), "/etc/ld.so.conf.d/topsrider.conf": None},
        "torch_gcu": {"version": "2.13.0+2.5.136", "url": SNAP["torch_gcu"]["before_url"]},
        "facts": {"version": "2.5.136", "snapshot": "D0"},
    }


def test_expected_combines_snapshot_and_journal():
    exp = restore_expected(SNAP, JOURNAL)
    assert exp["packages"] == {"tops-sdk": {"version": "2.5.136-1", "held": True},
                               "tops-eccl": {"version": "2.5.136-1", "held": False},
                               "tops-new": {"version": None, "held": False}}
    assert exp["files"]["/etc/ld.so.conf.d/topsrider.conf"] is None
    assert exp["torch_gcu"]["version"] == "2.13.0+2.5.136"
    assert state_differences(exp, good_actual()) == []


@pytest.mark.parametrize("change, expected", [
    (lambda a: a["packages"]["tops-sdk"].update(version="2.5.140-1"), "package tops-sdk is 2.5.140-1, the snapshot has 2.5.136-1"),
    (lambda a: a["packages"]["tops-sdk"].update(held=False), "package tops-sdk is not held, the snapshot has it held"),
    (lambda a: a["packages"]["tops-sdk"].update(status="half-configured"), "package tops-sdk 2.5.136-1 is half-configured, not installed"),
    (lambda a: a["packages"]["tops-new"].update(version="1.0"), "package tops-new is 1.0, the snapshot has absent"),
    (lambda a: a["files"].update({"/etc/ld.so.conf.d/topsrider.conf": "ab" * 32}), "file /etc/ld.so.conf.d/topsrider.conf exists, the snapshot has none"),
    (lambda a: a["files"].update({"/etc/profile.d/topsrider.sh": None}), "file /etc/profile.d/topsrider.sh is missing"),
    (lambda a: a["torch_gcu"].update(version="2.13.0+2.5.140"), "torch_gcu is 2.13.0+2.5.140, the snapshot has 2.13.0+2.5.136"),
    (lambda a: a["torch_gcu"].update(url="file:///elsewhere.whl"), "torch_gcu 2.13.0+2.5.136 comes from file:///elsewhere.whl"),
    (lambda a: a.update(facts={"version": "2.5.140", "snapshot": "D1"}), "local facts name 2.5.140 (snapshot D1), the snapshot's name 2.5.136"),
    (lambda a: a.update(facts=None), "local facts are missing"),
])
def test_each_difference_is_named(change, expected):
    actual = good_actual()
    change(actual)
    out = state_differences(restore_expected(SNAP, JOURNAL), actual)
    assert len(out) == 1 and out[0].startswith(expected), out


def test_issue14_case1_packages_left_at_new_version_fail_the_proof():
    actual = good_actual()
    for p in actual["packages"].values():
        if p["version"]:
            p.update(version="2.5.140-1", held=False)
    out = state_differences(restore_expected(SNAP, JOURNAL), actual)
    assert [line.split(" is ")[0] for line in out] == ["package tops-eccl", "package tops-sdk"]


def test_old_snapshot_without_url_or_packages_compares_what_it_has():
    snap = dict(SNAP, packages=None, torch_gcu=dict(SNAP["torch_gcu"], before_url=None))
    actual = good_actual()
    actual["torch_gcu"]["url"] = None
    assert state_differences(restore_expected(snap, JOURNAL), actual) == []


@pytest.mark.parametrize("lines, expected", [
    (["torch==2.13.0", "torch_gcu @ file:///var/cache/topsrider/2.5.136/torch_gcu-2.13.0+2.5.136-py311-none-any.whl"],
     ("2.13.0+2.5.136", "file:///var/cache/topsrider/2.5.136/torch_gcu-2.13.0+2.5.136-py311-none-any.whl")),
    (["torch-gcu==2.13.0+2.5.140"], ("2.13.0+2.5.140", None)),
    # pip freeze quotes the + of a local version in the file URL
    (["torch_gcu @ file:///var/cache/topsrider/2.5.136/torch_gcu-2.13.0%2B2.5.136-py311-none-any.whl"],
     ("2.13.0+2.5.136", "file:///var/cache/topsrider/2.5.136/torch_gcu-2.13.0%2B2.5.136-py311-none-any.whl")),
    (["torch==2.13.0", "pip==24.0"], (None, None)),
])
def test_freeze_torch_gcu(lines, expected):
    assert freeze_torch_gcu(lines) == expected


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
