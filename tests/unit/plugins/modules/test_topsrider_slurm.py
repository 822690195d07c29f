# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gcu.topsrider.topsrider_slurm and topsrider_state's Slurm read against a fake
Slurm that keeps node state the way slurmctld does (sinfo, squeue, scontrol
update, show job and show hostnames, as Debian's Slurm 22.05 prints them): a drain by someone
else is never resumed or overwritten, check mode changes nothing, and no
command but sinfo, squeue and scontrol update/show ever runs (nothing cancels,
requeues or signals a job)."""
import os

import pytest

from ansible.module_utils import basic
from ansible_collections.gcu.topsrider.plugins.modules import topsrider_slurm, topsrider_state

from utils import AnsibleExitJson, AnsibleFailJson, exit_json, fail_json, set_module_args

RUN = {"kind": "deploy", "id": "20261125T140000Z"}
PREFIX = "gcu.topsrider deploy 20261125T140000Z: "


class FakeSlurm(object):
    def __init__(self, state="idle", reason="", features=("tops_2.5.136",), jobs=(), records=None):
        self.nodes = {"n1": {"state": state, "reason": reason, "features": list(features)},
                      "n2": {"state": "allocated", "reason": "", "features": ["tops_2.5.140"]}}
        self.jobs = list(jobs)
        self.records = dict(records or {})
        self.running = [("9", "n[1-2]")]
        self.hostnames = {"n[1-2]": ["n1", "n2"]}
        self.calls = []
        self.fail_update = None

    def __call__(self, module, argv, **kwargs):
        assert isinstance(argv, list) and kwargs.get("environ_update") == {"LC_ALL": "C", "LANG": "C"}
        self.calls.append(argv)
        tool = os.path.basename(argv[0])
        if tool == "sinfo":
            names = [argv[argv.index("-n") + 1]] if "-n" in argv else sorted(self.nodes)
            rows = []
            for n in names:
                if n in self.nodes:
                    v = self.nodes[n]
                    f = ",".join(v["features"]) or "(null)"
                    rows.append("%s|%s|%s|%s|%s\n" % (n, v["state"], f, f, v["reason"] or "none"))
            return 0, "".join(rows), ""
        if tool == "squeue" and "-w" in argv:
            if argv[argv.index("-w") + 1] not in self.nodes:
                return 1, "", "squeue: error: Invalid node name %s\n" % argv[argv.index("-w") + 1]
            return 0, "".join("%s|RUNNING|alice|0:10:00|train\n" % j for j in self.jobs), ""
        if tool == "squeue":
            return 0, "".join("%s|%s\n" % r for r in self.running), ""
        if tool == "scontrol" and argv[1:3] == ["-o", "show"]:
            rec = self.records.get(argv[4])
            if rec is None:
                return 1, "", "slurm_load_jobs error: Invalid job id specified\n"
            return 0, "JobId=%s JobName=train JobState=%s Restarts=%d ExitCode=0:0 NodeList=n1\n" % (
                argv[4], rec[0], rec[1]), ""
        if tool == "scontrol" and argv[1:3] == ["show", "hostnames"]:
            return 0, "".join(n + "\n" for n in self.hostnames[argv[3]]), ""
        if tool == "scontrol" and argv[1] == "update":
            if self.fail_update:
                return 1, "", self.fail_update
            name = argv[2].split("=", 1)[1]
            v = self.nodes[name]
            for word in argv[3:]:
                key, _sep, value = word.partition("=")
                if key == "state" and value == "drain":
                    v["state"] = "draining" if v["state"] in ("allocated", "mixed") else "drained"
                elif key == "state" and value == "resume":
                    v["state"], v["reason"] = "idle", ""
                elif key == "reason":
                    v["reason"] = value
                elif key == "availablefeatures":
                    v["features"] = value.split(",")
            return 0, "", ""
        raise AssertionError("a command the module must never run: %r" % (argv,))


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path",
                        lambda self, name, required=False, opt_dirs=None: "/usr/bin/" + name)

    def install(slurm):
        def run_command(self, argv, **kwargs):
            return slurm(self, argv, **kwargs)
        monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
        return slurm
    return install


def call(module, args):
    with set_module_args(args):
        try:
            module.main()
        except (AnsibleExitJson, AnsibleFailJson) as e:
            return e.args[0]
    raise AssertionError("the module neither exited nor failed")


def updates(slurm):
    return [c[3:] for c in slurm.calls if c[0].endswith("scontrol") and c[1] == "update"]


def test_drain_then_resume_with_the_release(fake):
    s = fake(FakeSlurm("allocated"))
    r = call(topsrider_slurm, {"name": "n1", "run": RUN, "state": "drained", "reason": "upgrade to 2.5.140"})
    assert r["changed"] and r["drained"] and r["owner"] is None
    assert r["after"]["state"] == "draining" and r["after"]["reason"] == PREFIX + "upgrade to 2.5.140"
    s.nodes["n1"]["state"] = "drained"  # the job ended
    r = call(topsrider_slurm, {"name": "n1", "run": RUN, "state": "resumed", "release": "2.5.140", "cluster": True})
    assert r["changed"] and r["resumed"] and r["features_changed"]
    assert r["after"]["state"] == "idle" and r["after"]["features"] == ["tops_2.5.140"]
    # job 9 runs on n1 (2.5.140 now) and n2 (2.5.140): one release
    assert r["cluster"]["two_releases"] == []
    assert updates(s)[-2:] == [["availablefeatures=tops_2.5.140", "activefeatures=tops_2.5.140"], ["state=resume"]]


def test_a_drain_by_someone_else_is_never_resumed_or_overwritten(fake):
    s = fake(FakeSlurm("drained", "admin: bios update"))
    r = call(topsrider_slurm, {"name": "n1", "run": RUN, "state": "drained", "reason": "upgrade"})
    assert not r["changed"] and r["owner"] == "other" and "someone else" in r["why"]
    r = call(topsrider_slurm, {"name": "n1", "run": RUN, "state": "noted", "reason": "FAILED"})
    assert not r["changed"]
    r = call(topsrider_slurm, {"name": "n1", "run": RUN, "state": "resumed"})
    assert not r["changed"] and not r["resumed"]
    assert updates(s) == [] and s.nodes["n1"]["reason"] == "admin: bios update"


def test_drained_during_the_run_by_someone_else_is_not_resumed(fake):
    s = fake(FakeSlurm("idle"))
    call(topsrider_slurm, {"name": "n1", "run": RUN, "state": "drained", "reason": "upgrade"})
    s.nodes["n1"]["reason"] = "admin: swap cable"  # scontrol update ... reason=... by an administrator
    r = call(topsrider_slurm, {"name": "n1", "run": RUN, "state": "resumed", "release": "2.5.140"})
    assert r["owner"] == "other" and not r["resumed"]
    assert s.nodes["n1"]["state"] == "drained" and s.nodes["n1"]["reason"] == "admin: swap cable"


def test_check_mode_changes_nothing_and_predicts(fake):
    s = fake(FakeSlurm("idle"))
    r = call(topsrider_slurm, {"name": "n1", "run": RUN, "state": "drained", "reason": "upgrade",
                               "_ansible_check_mode": True})
    assert r["changed"] and r["after"]["state"] == "drained" and updates(s) == []
    assert s.nodes["n1"]["state"] == "idle"


def test_refused_before_anything_runs(fake):
    s = fake(FakeSlurm())
    r = call(topsrider_slurm, {"name": "n1; reboot", "run": {"kind": "deploy", "id": "../x"}, "release": "2.5 1"})
    assert r["failed"] and "refused, nothing was changed" in r["msg"]
    assert "NodeName" in r["msg"] and "plain run id" in r["msg"] and "Slurm feature" in r["msg"]
    assert s.calls == []


def test_unknown_node_and_refused_update_fail_with_slurms_words(fake):
    s = fake(FakeSlurm())
    r = call(topsrider_slurm, {"name": "n9", "run": RUN, "state": "drained", "reason": "x"})
    assert r["failed"] and "Slurm has no node n9" in r["msg"]
    s.fail_update = "slurm_update error: Invalid user id"
    r = call(topsrider_slurm, {"name": "n1", "run": RUN, "state": "drained", "reason": "x"})
    assert r["failed"] and "Invalid user id" in r["msg"] and "scontrol update nodename=n1" in r["msg"]


def test_topsrider_state_reads_the_node_its_jobs_and_how_they_ended(fake):
    s = fake(FakeSlurm("draining", PREFIX + "upgrade", jobs=["17"], records={"16": ("CANCELLED", 0)}))
    r = call(topsrider_state, {"slurm_node": "n1", "slurm_jobs": ["16", "15"], "slurm_cluster": True})
    sl = r["state"]["slurm"]
    assert sl["error"] is None and sl["node"]["drain"] and sl["node"]["reason"] == PREFIX + "upgrade"
    assert [j["id"] for j in sl["jobs"]] == ["17"]
    assert sl["records"]["16"]["state"] == "CANCELLED" and sl["records"]["15"] is None
    # job 9 on n1 (tops_2.5.136) and n2 (tops_2.5.140)
    assert sl["cluster"]["two_releases"] == [{"id": "9", "nodes": ["n1", "n2"], "releases": ["2.5.136", "2.5.140"]}]
    assert updates(s) == []


def test_topsrider_state_names_a_slurm_it_cannot_ask(fake):
    fake(FakeSlurm())
    r = call(topsrider_state, {"slurm_node": "n9"})
    assert not r.get("failed") and "Slurm has no node n9" in r["state"]["slurm"]["error"]
    r = call(topsrider_state, {"slurm_jobs": ["1"]})
    assert r["failed"] and "need slurm_node" in r["msg"]
    r = call(topsrider_state, {"slurm_node": "n1", "slurm_jobs": ["1; scancel 2"]})
    assert r["failed"] and "Slurm job ids" in r["msg"]
