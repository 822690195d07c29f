# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/_slurm.py: Slurm's output as a deploy reads it (sinfo, squeue,
scontrol, as Debian's Slurm 22.05 prints them; host lists expanded by the real
scontrol), who owns a drain, the release
feature, and the plan of a run's drain, note and resume: never over a drain
someone else set."""
import os
import shutil
import subprocess

import pytest

from ansible_collections.gcu.topsrider.plugins.module_utils import _slurm as slurm

RUN = ("deploy", "20261125T140000Z")
OURS = "gcu.topsrider deploy 20261125T140000Z: upgrade to 2.5.140; this run resumes the node when it is done"


def node(state="idle", reason="", features=("tops_2.5.136",), active=None):
    return {"name": "n1", "state": state, "drain": slurm.is_drained(state), "reason": reason,
            "features": list(features), "active_features": list(features if active is None else active)}


# ---------------------------------------------------------------- parsers
def test_parse_sinfo_as_slurm_prints_it():
    text = ("tn1|drained|tops_2.5.140,fast|tops_2.5.140,fast|gcu.topsrider deploy X: draining\n"
            "tn2|idle|(null)|(null)|none\n"
            "tn3|draining|ib|ib|admin: swap | cable\n"
            "tn3|draining|ib|ib|admin: swap | cable\n"  # a node in two partitions
            "bad line\n")
    nodes = slurm.parse_sinfo(text)
    assert sorted(nodes) == ["tn1", "tn2", "tn3"]
    assert nodes["tn1"] == {"state": "drained", "drain": True, "reason": "gcu.topsrider deploy X: draining",
                            "features": ["tops_2.5.140", "fast"], "active_features": ["tops_2.5.140", "fast"]}
    assert nodes["tn2"]["reason"] == "" and nodes["tn2"]["features"] == [] and not nodes["tn2"]["drain"]
    assert nodes["tn3"]["reason"] == "admin: swap | cable" and nodes["tn3"]["drain"]


@pytest.mark.parametrize("state, drained", [
    ("drained", True), ("draining", True), ("drain", True), ("drained*", True), ("idle+drain", True),
    ("idle", False), ("mixed", False), ("allocated", False), ("down*", False), ("idle~", False)])
def test_is_drained(state, drained):
    assert slurm.is_drained(state) is drained


def test_parse_squeue_and_time_left():
    jobs = slurm.parse_squeue("17|RUNNING|alice|1:02:03|train\n18|COMPLETING|bob|UNLIMITED|x|y\n\n")
    assert jobs == [{"id": "17", "state": "RUNNING", "user": "alice", "time_left": "1:02:03", "name": "train"},
                    {"id": "18", "state": "COMPLETING", "user": "bob", "time_left": "UNLIMITED", "name": "x|y"}]
    assert [slurm.seconds_left(t) for t in ("1-02:03:04", "02:03", "1:02:03", "UNLIMITED", "")] == \
        [93784, 123, 3723, None, None]


def test_parse_job_record():
    text = ("JobId=17 JobName=wrap UserId=root(0) GroupId=root(0) JobState=COMPLETED Reason=None Restarts=0 "
            "ExitCode=0:0 RunTime=00:00:31 StartTime=2026-11-25T13:59:47 EndTime=2026-11-25T14:00:18 "
            "NodeList=slurm-node[2-3] BatchHost=slurm-node2 Features=tops_2.5.136\n")
    assert slurm.parse_job_record(text) == {
        "id": "17", "state": "COMPLETED", "restarts": 0, "exit_code": "0:0", "nodes": "slurm-node[2-3]",
        "start": "2026-11-25T13:59:47", "end": "2026-11-25T14:00:18"}
    assert slurm.parse_job_record("slurm_load_jobs error: Invalid job id specified") is None


@pytest.mark.parametrize("record, before, stopped", [
    ({"state": "COMPLETED", "restarts": 0}, 0, False),
    ({"state": "FAILED", "restarts": 0}, 0, False),     # the job's own failure
    ({"state": "TIMEOUT", "restarts": 0}, 0, False),    # its own time limit
    ({"state": "CANCELLED", "restarts": 0}, 0, True),
    ({"state": "NODE_FAIL", "restarts": 0}, 0, True),
    ({"state": "PREEMPTED", "restarts": 0}, 0, True),
    ({"state": "PENDING", "restarts": 1}, 0, True),     # requeued: back in the queue
    ({"state": "RUNNING", "restarts": 2}, 2, False),    # requeued before the run began
    (None, 0, False),                                   # Slurm forgot it: not claimed either way
])
def test_stopped_from_outside(record, before, stopped):
    assert slurm.stopped_from_outside(record, before) is stopped


@pytest.mark.parametrize("text, names", [
    ("slurm-node1\nslurm-node2\n", ["slurm-node1", "slurm-node2"]),
    ("a01\na02\n\n", ["a01", "a02"]),
    ("", []),
])
def test_parse_hostnames(text, names):
    assert slurm.parse_hostnames(text) == names


# Host lists as Slurm's own parser (Debian's scontrol, no slurmctld needed) expands them.
# scontrol reads a slurm.conf first: the units give it one of their own (with none it asks DNS for one).
SLURM_CONF = "ClusterName=units\nSlurmctldHost=localhost\n"
HOSTLISTS = [
    ("slurm-node[1-2]", ["slurm-node1", "slurm-node2"]),
    ("a[01-03,5],b7", ["a01", "a02", "a03", "a5", "b7"]),
    ("c[1-2]x[3-4]", ["c1x3", "c1x4", "c2x3", "c2x4"]),
    ("t20-node-3", ["t20-node-3"]),
    ("n[1-3],m[01-02]", ["n1", "n2", "n3", "m01", "m02"]),
]


class Module(object):
    """Just what read_hostnames uses of an AnsibleModule, running the real commands."""

    def __init__(self):
        self.calls = []

    def get_bin_path(self, name, required=False):
        return shutil.which(name)

    def run_command(self, argv, environ_update=None):
        assert isinstance(argv, list) and environ_update == slurm.C_LOCALE
        self.calls.append(argv)
        proc = subprocess.run(argv, env=dict(os.environ, **environ_update), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, check=False)
        return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def slurm_conf(tmp_path, monkeypatch):
    conf = tmp_path / "slurm.conf"
    conf.write_text(SLURM_CONF)
    monkeypatch.setenv("SLURM_CONF", str(conf))


def test_host_lists_are_expanded_by_the_real_scontrol(slurm_conf):
    assert shutil.which("scontrol"), "this test needs Debian's slurm-client (make setup installs it)"
    module = Module()
    got = slurm.read_hostnames(module, [h for h, _names in HOSTLISTS] + ["slurm-node[1-2]", ""])
    assert got == dict(HOSTLISTS)
    # one call per distinct host list, none for an empty one
    assert sorted(c[3] for c in module.calls) == sorted(h for h, _names in HOSTLISTS)
    assert all(c[1:3] == ["show", "hostnames"] for c in module.calls)


def test_a_host_list_scontrol_refuses_names_the_command(slurm_conf):
    assert shutil.which("scontrol"), "this test needs Debian's slurm-client (make setup installs it)"
    # scontrol prints "Invalid hostlist" and exits 0
    with pytest.raises(slurm.SlurmError) as e:
        slurm.read_hostnames(Module(), ["n1", "n[3-1]"])
    assert str(e.value) == ("`%s show hostnames n[3-1]` gave no node names for the host list n[3-1] (rc=0): "
                            "scontrol: error: _parse_single_range: Invalid range: `3-1'\nInvalid hostlist: n[3-1]"
                            % shutil.which("scontrol"))


def test_no_scontrol_is_named():
    module = Module()
    module.get_bin_path = lambda name, required=False: None
    with pytest.raises(slurm.SlurmError) as e:
        slurm.read_hostnames(module, ["n[1-2]"])
    assert str(e.value).startswith("scontrol not found: this node has no Slurm client")
    assert slurm.read_hostnames(module, ["", ""]) == {}


# ---------------------------------------------------------------- reasons and features
@pytest.mark.parametrize("reason, owner", [
    (OURS, "run"),
    ("gcu.topsrider deploy 20261124T000000Z: deferred: still in use", "collection"),
    ("gcu.topsrider rollback 20261125T140000Z: roll back", "collection"),  # another kind is another run
    ("admin: bios update", "other"),
    ("topsrider: card gcu3 unhealthy", "other"),  # the health gate's own
    ("Not responding", "other"),
    ("", None), ("none", None),
])
def test_reason_owner(reason, owner):
    assert slurm.reason_owner(reason, *RUN) == owner


def test_reason_is_one_bounded_line():
    reason = slurm.make_reason("deploy", "X", "FAILED:\n" + "y" * 400)
    assert reason.startswith("gcu.topsrider deploy X: FAILED: yyy") and "\n" not in reason
    assert len(reason) == slurm.REASON_MAX and reason.endswith("...")


def test_release_feature_keeps_the_others():
    assert slurm.with_release(["ib", "tops_2.5.136", "big"], "2.5.140") == ["ib", "big", "tops_2.5.140"]
    assert slurm.with_release([], "2.5.140") == ["tops_2.5.140"]
    assert slurm.release_of(["ib", "tops_2.5.140"]) == "2.5.140"
    assert slurm.release_of(["ib"]) is None and slurm.release_of(["tops_1", "tops_2"]) is None


def test_jobs_on_two_releases():
    features = {"n1": ["tops_2.5.140"], "n2": ["tops_2.5.140", "ib"], "n3": ["tops_2.5.136"], "n4": []}
    running = [{"id": "1", "nodes": "n[1-2]"}, {"id": "2", "nodes": "n[2-3]"}, {"id": "3", "nodes": "n3,n4"}]
    hostnames = {"n[1-2]": ["n1", "n2"], "n[2-3]": ["n2", "n3"], "n3,n4": ["n3", "n4"]}
    assert slurm.jobs_on_two_releases(running, features, hostnames) == [
        {"id": "2", "nodes": ["n2", "n3"], "releases": ["2.5.136", "2.5.140"]}]


# ---------------------------------------------------------------- the plan
PLAN_CASES = [
    # node, want, release -> updates, owner, flags set, why
    (node("idle"), "drained", None, [["state=drain", "reason=" + OURS]], None, {"drained"}, None),
    (node("mixed"), "drained", None, [["state=drain", "reason=" + OURS]], None, {"drained"}, None),
    # someone else's drain: left as it is, with their reason
    (node("drained", "admin: bios update"), "drained", None, [], "other", set(), "someone else"),
    (node("draining", "topsrider: card gcu3 unhealthy"), "drained", None, [], "other", set(), "someone else"),
    # an earlier run's drain (a deferred node) is taken over
    (node("draining", "gcu.topsrider deploy 1: deferred"), "drained", None, [["reason=" + OURS]], "collection",
     {"drained"}, None),
    (node("drained", OURS), "drained", None, [], "run", set(), None),
    # resume only this run's drain
    (node("drained", OURS), "resumed", "2.5.140",
     [["availablefeatures=tops_2.5.140", "activefeatures=tops_2.5.140"], ["state=resume"]], "run",
     {"resumed", "features_changed"}, None),
    (node("drained", "admin: swap cable"), "resumed", "2.5.140",
     [["availablefeatures=tops_2.5.140", "activefeatures=tops_2.5.140"]], "other", {"features_changed"},
     "someone else"),
    (node("idle"), "resumed", None, [], None, set(), "not drained"),
    # a failure noted in this run's reason, never in someone else's
    (node("drained", OURS), "noted", None,
     [["reason=gcu.topsrider deploy 20261125T140000Z: FAILED: x"]], "run", {"noted"}, None),
    (node("drained", "admin: x"), "noted", None, [], "other", set(), "someone else"),
    # a feature alone, no drain
    (node("allocated", features=("ib", "tops_2.5.136")), "present", "2.5.140",
     [["availablefeatures=ib,tops_2.5.140", "activefeatures=ib,tops_2.5.140"]], None, {"features_changed"}, None),
    (node("allocated", features=("tops_2.5.140",)), "present", "2.5.140", [], None, set(), None),
]


@pytest.mark.parametrize("before, want, release, updates, owner, flags, why", PLAN_CASES)
def test_plan(before, want, release, updates, owner, flags, why):
    text = "FAILED: x" if want == "noted" else OURS.split(": ", 1)[1]
    out = slurm.plan(before, want, RUN[0], RUN[1], text, release)
    assert out["updates"] == updates
    assert out["owner"] == owner
    assert set(k for k in ("drained", "resumed", "noted", "features_changed") if out[k]) == flags
    assert (why is None and out["why"] is None) or why in (out["why"] or "")


def test_plan_refuses_an_unknown_want():
    with pytest.raises(slurm.SlurmError):
        slurm.plan(node(), "cancelled", "deploy", "X")
