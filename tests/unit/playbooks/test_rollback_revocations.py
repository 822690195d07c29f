# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rollback.yml's revocation checks, run on localhost (the node's state under
tmp) on real keys made here, as rollback.yml chains them: the list checked on
the controller (gcu.topsrider.topsrider_release_trust, with a record of its own
that never saw the node's newer list), then on the node
(tasks/node_revocations.yml: no older than the newest list the node accepted),
then the target release against the list (tasks/restore_plan.yml reads the
snapshot; tasks/rollback_target.yml, with topsrider_rollback_allow_revoked as
the override). A refusal stops before the
restore (the last task here stands for it) and leaves the node's record as it
was. molecule/signing runs the whole playbook on nodes."""
import json
import os
import subprocess
import sys

import pytest
import yaml

from conftest import COLLECTIONS, TOP, run_play
from gpg_keys import signed_list
from ansible_collections.gcu.topsrider.plugins.module_utils import _signature as sig

TASKS = os.path.join(TOP, "playbooks", "tasks")
REASON = "ECCL all-reduce hangs (advisory 7)"
MANIFEST_SHA256 = "c" * 64
PLAY = [
    {"name": "The list, on the controller", "gcu.topsrider.topsrider_release_trust": {
        "keyring": "{{ topsrider_keyring | default('') }}", "revocations": "{{ topsrider_revocations }}",
        "seen": "{{ topsrider_revocations_seen }}"},
     "register": "rollback_trust", "when": "topsrider_revocations | default('') | length > 0"},
    {"name": "On the node", "ansible.builtin.import_tasks": os.path.join(TASKS, "node_revocations.yml"),
     "vars": {"node_revocations_trust": "{{ rollback_trust }}",
              "node_revocations_name": "{{ topsrider_revocations | default('') }}"}},
    {"name": "The plan", "ansible.builtin.include_tasks": os.path.join(TASKS, "restore_plan.yml")},
    {"name": "The target", "ansible.builtin.import_tasks": os.path.join(TASKS, "rollback_target.yml")},
    {"name": "Stands for the restore", "ansible.builtin.debug": {
        "msg": "RESTORE REACHED, revoked: {{ rollback_revoked | map(attribute='actual') | join(',') }}"}},
]


def make_node(tmp_path, keys):
    """A node that accepted list serial 2 (which revokes 2.5.136) and has snapshot S going back to 2.5.136;
    the lists serial 1 (revokes nothing) and 2 on the controller, and a controller record that has seen none."""
    state = tmp_path / "node"
    (state / "deploys").mkdir(parents=True)
    (state / "deploys" / "S.json").write_text(json.dumps(
        {"id": "S", "facts_before": {"version": "2.5.136", "manifest_sha256": MANIFEST_SHA256}}))
    ctl = tmp_path / "ctl"
    ctl.mkdir()
    one = signed_list(str(ctl / "revocations-1.json"), keys["ops"], 1)
    two = signed_list(str(ctl / "revocations-2.json"), keys["ops"], 2, [{"version": "2.5.136", "reason": REASON}])
    with open(two, "rb") as f:
        raw = f.read()
    sig.write_seen(str(state / "revocations-seen.json"), sig.seen_record(json.loads(raw.decode()), raw))
    return {"vars": {"deploy_state_dir": str(state), "restore_snapshot_id": "S",
                     "node_facts_file": str(state / "topsrider.fact"),
                     "topsrider_keyring": keys["ops"].export(str(ctl / "trusted.gpg")),
                     "topsrider_revocations_seen": str(ctl / "fresh-home-seen.json")},
            "one": one, "two": two, "record": str(state / "revocations-seen.json")}


@pytest.fixture
def node(tmp_path, keys):
    return make_node(tmp_path, keys)


def rollback(tmp_path, node, check=False, **extra):
    with open(node["record"], "rb") as f:
        before = f.read()
    rc, out = run_play(tmp_path, PLAY, dict(node["vars"], **extra), args=["--check"] if check else [])
    with open(node["record"], "rb") as f:
        assert f.read() == before, "the node's record changed"
    return rc, out


# The cases of a real run, each a host of ONE play (local connection, the node's state and the
# controller's record of its own, the case's list and override as its host variables):
# case: (the list: a node list's key, "three" for a newer one, "" for none; the override)
CASES = {"older": ("one", False), "no-list": ("", False), "revoked": ("two", False), "override": ("two", True),
         "override-older": ("one", True), "newer": ("three", False)}


@pytest.fixture(scope="module")
def runs(tmp_path_factory, keys):
    """{case: (its node, what its host did)}: "failed" (the host failed), "msgs" (its failed tasks'
    messages), "restore" (the message of the task that stands for the restore, None where it did not run)."""
    tmp = tmp_path_factory.mktemp("rollback-cases")
    nodes, hosts, before = {}, {}, {}
    for case, (revocations, allow) in CASES.items():
        nodes[case] = make_node(tmp / case, keys)
        if revocations == "three":
            revocations = signed_list(str(tmp / case / "revocations-3.json"), keys["ops"], 3)
        elif revocations:
            revocations = nodes[case][revocations]
        hosts[case] = dict(nodes[case]["vars"], topsrider_revocations=revocations, ansible_connection="local",
                           ansible_python_interpreter=sys.executable)
        if allow:
            hosts[case]["topsrider_rollback_allow_revoked"] = True
        with open(nodes[case]["record"], "rb") as f:
            before[case] = f.read()
    (tmp / "inventory.json").write_text(json.dumps({"all": {"hosts": hosts}}))
    (tmp / "play.json").write_text(json.dumps([{"hosts": "all", "gather_facts": False, "tasks": PLAY}]))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(TOP, "sim", "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_LOCAL_TEMP=str(tmp / "tmp"),
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i",
                           str(tmp / "inventory.json"), str(tmp / "play.json")], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env, cwd=str(tmp), universal_newlines=True, timeout=300,
                          check=False)
    played = json.loads(proc.stdout)
    out = {}
    for case in CASES:
        with open(nodes[case]["record"], "rb") as f:
            assert f.read() == before[case], "%s: the node's record changed" % case
        results = [(t["task"]["name"], t["hosts"][case]) for t in played["plays"][0]["tasks"] if case in t["hosts"]]
        restore = [r.get("msg") for name, r in results if name == "Stands for the restore"]
        out[case] = (nodes[case], {"failed": played["stats"][case]["failures"] > 0,
                                   "msgs": [r.get("msg", "") for _n, r in results if r.get("failed")],
                                   "restore": restore[0] if restore else None})
    return out


def refusal(result):
    """The host's failed tasks' messages, one text."""
    return "\n".join(result["msgs"])


@pytest.mark.parametrize("check", [False, True], ids=["run", "check mode"])
def test_an_older_list_than_the_nodes_is_refused_on_the_node_naming_both_serials(tmp_path, keys, runs, check):
    if check:
        node = make_node(tmp_path, keys)
        rc, out = rollback(tmp_path, node, check, topsrider_revocations=node["one"])
        assert rc != 0 and "RESTORE REACHED" not in out, out
    else:
        node, result = runs["older"]
        assert result["failed"] and result["restore"] is None, result
        out = refusal(result)
    assert ("refused on the node, nothing was changed: %s: serial 1 is older than serial 2 already seen here; "
            "refusing an older revocation list (a replay) (the node's record: %s)" % (node["one"], node["record"])) in out
    # The controller had never seen serial 2: it accepted serial 1 (and recorded it, but not in check mode).
    controller = node["vars"]["topsrider_revocations_seen"]
    if check:
        assert not os.path.exists(controller)
    else:
        with open(controller) as f:
            assert json.load(f)["serial"] == 1


def test_no_list_is_refused_on_a_node_that_accepted_one(runs):
    node, result = runs["no-list"]
    assert result["failed"] and result["restore"] is None, result
    assert "%s has accepted revocation list serial 2; a run that gives no revocation list" % node["record"] in refusal(result), result


def test_the_nodes_list_refuses_the_revoked_target_with_its_reason(runs):
    node, result = runs["revoked"]
    assert result["failed"] and result["restore"] is None, result
    out = refusal(result)
    assert "release 2.5.136 (manifest sha256 %s) is revoked by %s (serial 2): %s" % (MANIFEST_SHA256, node["two"], REASON) in out
    assert "run again with -e topsrider_rollback_allow_revoked=true" in out, result


def test_the_override_goes_back_to_the_revoked_target_with_the_nodes_list(runs):
    _node, result = runs["override"]
    assert not result["failed"] and result["restore"] == "RESTORE REACHED, revoked: revoked: %s" % REASON, result


def test_the_override_does_not_let_an_older_list_in(runs):
    _node, result = runs["override-older"]
    assert result["failed"] and result["restore"] is None and "serial 1 is older than serial 2" in refusal(result), result


def test_a_newer_list_passes_and_checks_the_target_against_it(runs):
    _node, result = runs["newer"]
    assert not result["failed"] and result["restore"] == "RESTORE REACHED, revoked: ", result


def _in_order(tasks, ancestors=()):
    """(task, ancestors) in the order Ansible meets them: a block's tasks, its rescue, then its always;
    ancestors the (block task, section) pairs the task sits in."""
    for task in tasks or []:
        yield task, ancestors
        for section in ("block", "rescue", "always"):
            if section in task:
                yield from _in_order(task[section], ancestors + ((id(task), section),))


def _names(task, key):
    name = task.get("ansible.builtin.%s_tasks" % key)
    return os.path.basename(name if isinstance(name, str) else (name or {}).get("file", ""))


def test_every_restore_of_a_snapshot_comes_after_the_nodes_check_in_the_same_block():
    """Every task that restores a snapshot (tasks/restore.yml: rollback.yml's, to the last snapshot or one
    named with topsrider_snapshot, and deploy.yml's rescue) runs only in a block whose tasks began with
    tasks/node_revocations.yml, unconditionally and before tasks/quiesce.yml (the first step that may change
    anything, a Slurm drain): a refusal there fails the host before any restore can run (deploy.yml's rescue
    restores only a snapshot its rollout wrote, after the check)."""
    seen = []
    for playbook in sorted(os.listdir(os.path.join(TOP, "playbooks"))):
        if not playbook.endswith(".yml"):
            continue
        with open(os.path.join(TOP, "playbooks", playbook)) as f:
            plays = yaml.safe_load(f) or []
        for play in plays:
            order = list(_in_order(play.get("tasks", [])))
            for index, (task, ancestors) in enumerate(order):
                if "restore.yml" not in (_names(task, "include"), _names(task, "import")):
                    continue
                seen.append(playbook)
                checks = [i for i, (t, a) in enumerate(order[:index])
                          if _names(t, "import") == "node_revocations.yml" and a and ancestors and a[0][0] == ancestors[0][0]]
                assert checks, "%s restores a snapshot without tasks/node_revocations.yml first" % playbook
                check, check_ancestors = order[checks[0]]
                assert "when" not in check and check_ancestors[0][1] == "block", (playbook, check)
                quiesce = [i for i, (t, a) in enumerate(order) if _names(t, "import") == "quiesce.yml"]
                assert quiesce and checks[0] < quiesce[0], playbook
    assert sorted(set(seen)) == ["deploy.yml", "rollback.yml"], seen
    with open(os.path.join(TASKS, "node_revocations.yml")) as f:
        assert all("when" not in task for task in yaml.safe_load(f))
