# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""topsrider-slurm-gate (role slurm_node's health gate): the checks, the drain
and resume decisions (only its own drains are resumed, never more than the
configured share of the cluster drained), the gate's own timeout, and that it
runs on the node Python floor."""
import importlib.util
import io
import json
import os
import subprocess

import pytest

from test_node_python_floor import FLOOR, BIN, find_python

PATH = os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles", "slurm_node", "files",
                    "topsrider_slurm_gate.py")
SPEC = importlib.util.spec_from_file_location("topsrider_slurm_gate", PATH)
gate = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(gate)


def efsmi_q(cards=8, bad=()):
    blocks = []
    for i in range(cards):
        blocks.append("DEV ID %d\n    Device Info\n        Dev Name                : T20\n"
                      "        Health                  : %s\n    Power Info\n        Cur Power : 48 W\n"
                      % (i, "False" if i in bad else "True"))
    return "------ Enflame System Management Interface ------\n" + "".join(blocks)


class Fake(object):
    """subprocess.run stand-in: answers by the command's base name (or a function
    of argv), records argv, and advances a fake clock by each command's duration
    (by base name, or a function of argv)."""

    def __init__(self, answers, durations=None):
        self.answers, self.durations, self.calls, self.t = answers, durations or {}, [], 0.0

    def now(self):
        return self.t

    def __call__(self, argv, stdout=None, stderr=None, universal_newlines=None, timeout=None, check=None):
        name = os.path.basename(argv[0])
        self.calls.append(list(argv))
        if name not in self.answers:
            raise FileNotFoundError(2, "No such file or directory", argv[0])
        took = self.durations.get(name, 0.1)
        if callable(took):
            took = took(argv)
        if took > timeout:
            self.t += timeout
            raise subprocess.TimeoutExpired(argv, timeout)
        self.t += took
        answer = self.answers[name]
        if callable(answer):
            answer = answer(argv)
        rc, out, err = answer
        return subprocess.CompletedProcess(argv, rc, out, err)

    def scontrol(self):
        """The scontrol commands that change the cluster (not `scontrol show`)."""
        return [c for c in self.calls if os.path.basename(c[0]) == "scontrol" and c[1:2] != ["show"]]


def sinfo(*rows):
    return (0, "".join("%s|%s|%s\n" % r for r in rows), "")


@pytest.fixture
def node(tmp_path):
    facts = tmp_path / "topsrider.fact"
    facts.write_text(json.dumps({"version": "2.5.136", "python": "/opt/venvs/train/bin/python"}))
    env = tmp_path / "topsrider.sh"
    env.write_text("export TOPS=1\n")
    cfg = {"vendor": "enflame", "node_name": "n1", "expected_cards": 8, "release": "2.5.136",
           "facts_file": str(facts), "env_file": str(env), "max_drain_share": 0.5, "log_file": "",
           "jobs_dir": str(tmp_path / "run" / "topsrider" / "jobs")}
    path = tmp_path / "gate.json"

    def write(**over):
        c = dict(cfg, **over)
        path.write_text(json.dumps(c))
        return str(path)
    write.tmp = tmp_path
    return write


def run(config, fake, mode="prolog", env=None):
    out = io.StringIO()
    environ = {"SLURMD_NODENAME": "n1", "SLURM_JOB_ID": "7"} if env is None else env
    rc = gate.main(["--config", config, "--mode", mode], environ=environ, runner=fake, now=fake.now, out=out)
    return rc, out.getvalue()


IDLE2 = sinfo(("n1", "idle", "none"), ("n2", "idle", "none"))


# ---------------------------------------------------------------- checks
def test_fit_node_passes_and_changes_nothing(node):
    fake = Fake({"efsmi": (0, efsmi_q(), ""), "sinfo": IDLE2})
    rc, out = run(node(), fake)
    assert rc == 0 and "checks passed" in out
    assert fake.scontrol() == []


def test_unhealthy_card_drains_with_a_topsrider_reason_and_fails_the_prolog(node):
    fake = Fake({"efsmi": (0, efsmi_q(bad=(3,)), ""), "sinfo": IDLE2, "scontrol": (0, "", "")})
    rc = run(node(), fake)[0]
    assert rc == 1
    assert fake.scontrol() == [["/usr/bin/scontrol", "update", "nodename=n1", "state=drain",
                                "reason=topsrider: card gcu3 unhealthy"]]


@pytest.mark.parametrize("answer, over, reason", [
    ((1, "", "Error: EFML initialize failed, the enflame driver is not loaded\n"), {},
     "topsrider: driver not loaded: efsmi -q failed (rc=1: Error: EFML initialize failed, the enflame driver is not loaded)"),
    ((0, efsmi_q(cards=7), ""), {}, "topsrider: 7 of 8 cards seen"),
    ((0, efsmi_q(bad=(0, 5)), ""), {}, "topsrider: cards gcu0,gcu5 unhealthy"),
    ((0, efsmi_q(), ""), {"release": "2.5.140"}, "topsrider: stack at 2.5.136, expected 2.5.140"),
    ((0, efsmi_q(), ""), {"env_file": "/nonexistent/topsrider.sh"},
     "topsrider: environment file /nonexistent/topsrider.sh missing"),
    ((0, efsmi_q(), ""), {"facts_file": "/nonexistent/topsrider.fact"},
     "topsrider: stack not deployed: /nonexistent/topsrider.fact missing"),
])
def test_each_problem_is_named_in_the_reason(node, answer, over, reason):
    fake = Fake({"efsmi": answer, "sinfo": IDLE2, "scontrol": (0, "", "")})
    rc = run(node(**over), fake)[0]
    assert rc == 1
    assert fake.scontrol()[0][-1] == "reason=" + reason


def sinfo_features(*rows):
    """sinfo -o '%N|%T|%b|%E' rows: (node, state, features, reason)."""
    return (0, "".join("%s|%s|%s|%s\n" % r for r in rows), "")


@pytest.mark.parametrize("deployed, features, fit, reason", [
    # a deploy proved the node at 2.5.140 and tagged it: the role's recorded 2.5.136 no longer counts
    ("2.5.140", "tops_2.5.140,ib", True, None),
    ("2.5.140", "tops_2.5.136", False, "topsrider: stack at 2.5.140, but the node's feature says tops_2.5.136"),
    # no release feature: the release the role recorded
    ("2.5.140", "(null)", False, "topsrider: stack at 2.5.140, expected 2.5.136"),
    ("2.5.136", "ib", True, None),
])
def test_the_release_is_the_one_the_nodes_feature_names(node, deployed, features, fit, reason):
    (node.tmp / "topsrider.fact").write_text(json.dumps({"version": deployed}))
    fake = Fake({"efsmi": (0, efsmi_q(), ""), "scontrol": (0, "", ""),
                 "sinfo": sinfo_features(("n1", "idle", features, "none"), ("n2", "idle", "tops_2.5.136", "none"))})
    rc, out = run(node(), fake)
    assert rc == (0 if fit else 1), out
    assert (fake.scontrol()[0][-1] if fake.scontrol() else None) == (None if fit else "reason=" + reason)


def test_parse_features_and_reason_with_a_bar():
    text = "a|drained|tops_2.5.140,ib|admin: bios | firmware\nb|idle|(null)|none\n"
    assert gate.parse_features(text) == {"a": ["tops_2.5.140", "ib"], "b": []}
    assert gate.parse_sinfo(text) == [("a", "drained", "admin: bios | firmware"), ("b", "idle", "none")]


def test_missing_tool_means_no_driver(node):
    fake = Fake({"sinfo": IDLE2, "scontrol": (0, "", "")})
    rc = run(node(efsmi="/nonexistent/efsmi"), fake)[0]
    assert rc == 1 and fake.scontrol()[0][-1] == "reason=topsrider: driver not loaded: /nonexistent/efsmi not found"


def test_nvidia_node_is_read_with_nvidia_smi(node):
    smi = (0, "0, 0\n1, 0\n2, 4\n3, 0\n", "")
    fake = Fake({"nvidia-smi": smi, "sinfo": IDLE2, "scontrol": (0, "", "")})
    rc = run(node(vendor="nvidia", expected_cards=4, env_file=""), fake)[0]
    assert rc == 1 and fake.scontrol()[0][-1] == "reason=topsrider: card gpu2 unhealthy"
    smi_calls = [c for c in fake.calls if os.path.basename(c[0]) == "nvidia-smi"]
    assert smi_calls[0][1].startswith("--query-gpu=index,ecc.errors.uncorrected.volatile.total")


# ---------------------------------------------------------------- resume: only our own drains
def test_passing_check_resumes_a_node_the_gate_drained(node):
    drained = sinfo(("n1", "drained", "topsrider: card gcu3 unhealthy"), ("n2", "idle", "none"))
    fake = Fake({"efsmi": (0, efsmi_q(), ""), "sinfo": drained, "scontrol": (0, "", "")})
    rc = run(node(), fake, mode="health", env={"SLURMD_NODENAME": "n1"})[0]
    assert rc == 0
    assert fake.scontrol() == [["/usr/bin/scontrol", "update", "nodename=n1", "state=resume"]]


@pytest.mark.parametrize("state", ["drained", "draining", "drained*", "idle+drain", "mixed+drain"])
def test_a_node_drained_by_someone_else_is_never_resumed(node, state):
    admin = sinfo(("n1", state, "maintenance: PSU swap (admin)"), ("n2", "idle", "none"))
    fake = Fake({"efsmi": (0, efsmi_q(), ""), "sinfo": admin, "scontrol": (0, "", "")})
    rc = run(node(), fake, mode="health", env={"SLURMD_NODENAME": "n1"})[0]
    assert rc == 0 and fake.scontrol() == []


def test_a_drained_node_keeps_the_reason_it_has(node):
    admin = sinfo(("n1", "drained", "maintenance (admin)"), ("n2", "idle", "none"))
    fake = Fake({"efsmi": (0, efsmi_q(bad=(1,)), ""), "sinfo": admin, "scontrol": (0, "", "")})
    rc, out = run(node(), fake, mode="health", env={"SLURMD_NODENAME": "n1"})
    assert rc == 1 and fake.scontrol() == [] and "already drained" in out


# ---------------------------------------------------------------- the share cap
def test_never_drains_more_than_the_share(node):
    # 4 nodes, share 0.5: two may be drained by the gate; n2 and n3 are already.
    rows = sinfo(("n1", "idle", "none"), ("n2", "drained", "topsrider: card gcu0 unhealthy"),
                 ("n3", "draining", "topsrider: 7 of 8 cards seen"), ("n4", "idle", "none"))
    fake = Fake({"efsmi": (0, efsmi_q(bad=(2,)), ""), "sinfo": rows, "scontrol": (0, "", "")})
    rc, out = run(node(), fake)
    assert rc == 0, "past the cap the prolog lets the job run (a failed prolog would drain anyway)"
    assert fake.scontrol() == [] and "NOT drained" in out and "allows 2" in out


def test_the_cap_counts_only_the_gates_own_drains(node):
    rows = sinfo(("n1", "idle", "none"), ("n2", "drained", "admin: bios update"),
                 ("n3", "drained", "admin: bios update"), ("n4", "idle", "none"))
    fake = Fake({"efsmi": (0, efsmi_q(bad=(2,)), ""), "sinfo": rows, "scontrol": (0, "", "")})
    rc = run(node(), fake)[0]
    assert rc == 1 and len(fake.scontrol()) == 1


@pytest.mark.parametrize("total, share, allowed", [(2, 0.5, 1), (8, 0.25, 2), (3, 0.25, 0), (10, 0.1, 1),
                                                   (4, 1.0, 4), (5, 0.0, 0)])
def test_allowed_drains_is_the_share_rounded_down(total, share, allowed):
    nodes = [("n%d" % i, "idle", "") for i in range(total)]
    action = gate.decide("n0", ["x"], None, nodes, share)[0]
    assert action == ("drain" if allowed >= 1 else "capped")
    if allowed >= total:
        return
    # with `allowed` of the others drained by the gate already, n0 is capped
    nodes = [("n0", "idle", "")] + [("n%d" % i, "drained", "topsrider: x") for i in range(1, allowed + 1)] \
        + [("n%d" % i, "idle", "") for i in range(allowed + 1, total)]
    assert gate.decide("n0", ["x"], None, nodes, share)[0] == "capped"


# ---------------------------------------------------------------- time
def test_a_hung_efsmi_is_reported_as_the_gates_timeout_not_the_cards(node):
    fake = Fake({"efsmi": (0, efsmi_q(), ""), "sinfo": IDLE2, "scontrol": (0, "", "")}, durations={"efsmi": 60})
    rc = run(node(), fake)[0]
    assert rc == 1
    reason = fake.scontrol()[0][-1]
    assert reason == "reason=topsrider: gate timed out: efsmi gave no answer in 5s"
    assert "card" not in reason


def test_the_whole_gate_stays_within_its_deadline(node):
    # each command within its own timeout, together past the deadline: the
    # next command is not started and the gate reports its own timeout
    fake = Fake({"efsmi": (0, efsmi_q(), ""), "sinfo": IDLE2, "scontrol": (0, "", "")}, durations={"efsmi": 4})
    rc = run(node(deadline_s=3, command_timeout_s=5), fake)[0]
    assert rc == 1 and fake.scontrol()[0][-1].startswith("reason=topsrider: gate timed out")
    assert fake.t <= 3 + 5 + 5, "sinfo and scontrol get a command timeout each past the deadline, no more"


def test_unreadable_cluster_changes_nothing_but_still_refuses_the_job(node):
    fake = Fake({"efsmi": (0, efsmi_q(bad=(1,)), ""), "sinfo": (1, "", "slurm_load_node: Unable to contact slurm controller\n")})
    rc, out = run(node(), fake)
    assert rc == 1 and fake.scontrol() == [] and "cannot read the cluster" in out
    fake = Fake({"efsmi": (0, efsmi_q(), ""), "sinfo": (1, "", "down\n")})
    assert run(node(), fake)[0] == 0
    # as the health check too (what NHC's check_cmd_status reads): not fit is exit 1, fit 0
    for bad, rc in (((1,), 1), ((), 0)):
        fake = Fake({"efsmi": (0, efsmi_q(bad=bad), ""), "sinfo": (1, "", "down\n")})
        assert run(node(), fake, mode="health", env={"SLURMD_NODENAME": "n1"})[0] == rc
        assert fake.scontrol() == []


# ---------------------------------------------------------------- modes and configuration
def test_check_mode_never_drains(node):
    fake = Fake({"efsmi": (0, efsmi_q(bad=(1,)), "")})
    rc, out = run(node(), fake, mode="check")
    assert rc == 1 and "n1: card gcu1 unhealthy" in out and fake.scontrol() == []


def test_health_check_without_health_drains_only_reports(node):
    fake = Fake({"efsmi": (0, efsmi_q(bad=(1,)), ""), "sinfo": IDLE2, "scontrol": (0, "", "")})
    rc, out = run(node(health_drains=False), fake, mode="health", env={"SLURMD_NODENAME": "n1"})
    assert rc == 1 and fake.scontrol() == [] and "health_drains is false" in out


def test_mode_follows_slurm_job_id(node):
    fake = Fake({"efsmi": (0, efsmi_q(bad=(1,)), ""), "sinfo": IDLE2, "scontrol": (0, "", "")})
    out = io.StringIO()
    assert gate.main(["--config", node(health_drains=False)], environ={"SLURMD_NODENAME": "n1", "SLURM_JOB_ID": "3"},
                     runner=fake, now=fake.now, out=out) == 1
    assert "[prolog]" in out.getvalue() and len(fake.scontrol()) == 1


@pytest.mark.parametrize("over, words", [
    ({"vendor": "amd"}, "vendor must be"), ({"expected_cards": 0}, "expected_cards"),
    ({"max_drain_share": 1.5}, "max_drain_share"), ({"deadline_s": 0}, "deadline_s"),
    ({"health_drains": "yes"}, "health_drains"), ({"colour": "red"}, "unknown keys colour"),
])
def test_bad_configuration_is_refused(node, over, words):
    out = io.StringIO()
    assert gate.main(["--config", node(**over), "--mode", "config"], environ={}, out=out) == 2
    assert words in out.getvalue()


def test_reason_is_bounded():
    nodes = [("n1", "idle", ""), ("n2", "idle", "")]
    reason = gate.decide("n1", ["x" * 400], None, nodes, 1.0)[1]
    assert reason.startswith("topsrider: ") and len(reason) == 240


def test_parse_sinfo_strips_flags():
    rows = gate.parse_sinfo("a|drained*|topsrider: x\nb|idle~|none\n\nbad line\n")
    assert rows == [("a", "drained", "topsrider: x"), ("b", "idle", "none")]


# ---------------------------------------------------------------- the node Python floor
def test_gate_needs_at_most_the_node_python_floor():
    proc = subprocess.run([os.path.join(BIN, "vermin"), "--target=%s-" % FLOOR, "--violations", "--no-tips", PATH],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout


def test_gate_runs_on_the_floor_python(node):
    py = find_python(FLOOR)
    proc = subprocess.run([py, PATH, "--config", node(), "--mode", "config"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout
    # the check mode end to end with a stand-in efsmi
    efsmi = node.tmp / "efsmi"
    efsmi.write_text("#!/bin/sh\ncat <<'X'\n%sX\n" % efsmi_q(bad=(4,)))
    efsmi.chmod(0o755)
    proc = subprocess.run([py, PATH, "--config", node(efsmi=str(efsmi)), "--mode", "check", "--node", "n1"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert proc.returncode == 1 and "n1: card gcu4 unhealthy" in proc.stdout, proc.stdout


# ---------------------------------------------------------------- job files (prolog writes, epilog removes)
# What Debian's scontrol (slurm-client 22.05.8, the version of sim/slurm's image)
# prints for `scontrol show hostnames EXPR`: (rc, stdout, stderr). With a
# slurm.conf there; without one it gives up (rc 1). Recorded, and held to the
# real scontrol by test_the_recorded_hostnames_are_what_scontrol_prints.
HOSTNAMES = {
    "n[1-2]": (0, "n1\nn2\n", ""),
    "n[01-03],x7": (0, "n01\nn02\nn03\nx7\n", ""),
    "r[1-2]n[1-2]": (0, "r1n1\nr1n2\nr2n1\nr2n2\n", ""),
    "n1": (0, "n1\n", ""),
    "n3": (0, "n3\n", ""),
    # an invalid range: a message on stderr, nothing on stdout, and rc 0
    "n[3-1]": (0, "", "scontrol: error: _parse_single_range: Invalid range: `3-1'\nInvalid hostlist: n[3-1]\n"),
    # an unclosed bracket: a piece of the expression back as a "name"
    "n[1": (0, "n]\n", ""),
}
# sim/slurm's image without a slurm.conf (scontrol then asks DNS for one).
NO_SLURM_CONF = (1, "", "scontrol: error: resolve_ctls_from_dns_srv: res_nsearch error: Host name lookup failure\n"
                        "scontrol: error: fetch_config: DNS SRV lookup failed\n"
                        "scontrol: error: _establish_config_source: failed to fetch config\n"
                        "scontrol: fatal: Could not establish a configuration source\n")


def scontrol_answers(hostnames=None):
    """scontrol as the fake runs it: show job -d (SHOW_JOB), update, and show hostnames
    as recorded (HOSTNAMES), or `hostnames`, one answer for every host list."""
    def answer(argv):
        if argv[1:3] == ["show", "job"]:
            return (0, SHOW_JOB, "")
        if argv[1:3] == ["show", "hostnames"]:
            return HOSTNAMES[argv[3]] if hostnames is None else hostnames
        return (0, "", "")
    return answer


SHOW_JOB = """JobId=7 JobName=train
   UserId=alice(1000) GroupId=alice(1000)
   NumNodes=2 NumCPUs=4 TRES=cpu=4,node=2,billing=4,gres/gcu=4
     Nodes=n[1-2] CPU_IDs=0-1 Mem=0 GRES=gcu:2(IDX:1,3)
   TresPerNode=gres:gcu:2
"""


def test_a_passing_prolog_writes_the_job_file_and_the_epilog_removes_it(node):
    fake = Fake({"efsmi": (0, efsmi_q(), ""), "sinfo": IDLE2, "scontrol": scontrol_answers()})
    env = {"SLURMD_NODENAME": "n1", "SLURM_JOB_ID": "7", "SLURM_JOB_USER": "alice",
           "SLURM_SCRIPT_CONTEXT": "prolog_slurmd"}
    out = io.StringIO()
    assert gate.main(["--config", node()], environ=env, runner=fake, now=fake.now, out=out) == 0
    assert [[os.path.basename(c[0])] + c[1:] for c in fake.calls if c[0] == "/usr/bin/scontrol"] == [
        ["scontrol", "show", "job", "-d", "7"], ["scontrol", "show", "hostnames", "n[1-2]"]]
    jobs = node.tmp / "run" / "topsrider" / "jobs"
    path = jobs / "7.json"
    assert json.loads(path.read_text()) == {"job_id": "7", "user": "alice", "cards": [1, 3]}
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    assert [oct(d.stat().st_mode & 0o777) for d in (jobs, jobs.parent)] == ["0o755", "0o755"]
    assert os.listdir(str(jobs)) == ["7.json"]  # no temporary file left
    # what the card exporter reads of it
    from ansible_collections.gcu.topsrider.plugins.module_utils import _card_jobs
    assert _card_jobs.read_jobs(str(jobs)) == ([{"job_id": "7", "user": "alice", "cards": [1, 3]}], [])
    # the epilog (as Slurm runs it: no --mode) removes it, and a second time is no error
    env["SLURM_SCRIPT_CONTEXT"] = "epilog_slurmd"
    for _n in range(2):
        assert gate.main(["--config", node()], environ=env, runner=fake, now=fake.now, out=out) == 0
        assert os.listdir(str(jobs)) == []
    # installed under a name with "epilog" (Slurm without SLURM_SCRIPT_CONTEXT)
    gate.write_job_file(gate.load_config(node()), {"job_id": "8", "user": "bob", "cards": []})
    env = {"SLURMD_NODENAME": "n1", "SLURM_JOB_ID": "8"}
    assert gate.main(["--config", node()], environ=env, runner=fake, now=fake.now, out=out,
                     prog="/usr/local/libexec/topsrider/topsrider-slurm-epilog") == 0
    assert os.listdir(str(jobs)) == []


def test_a_refused_job_gets_no_job_file(node):
    fake = Fake({"efsmi": (0, efsmi_q(bad=(1,)), ""), "sinfo": IDLE2, "scontrol": (0, SHOW_JOB, "")})
    rc, _out = run(node(), fake)
    assert rc == 1 and not (node.tmp / "run").exists()


def test_gpu_cards_from_slurm_job_gpus_without_scontrol(node):
    fake = Fake({"nvidia-smi": (0, "", ""), "sinfo": IDLE2})
    cfg = gate.load_config(node(vendor="nvidia"))
    env = {"SLURM_JOB_ID": "9", "SLURM_JOB_GPUS": "0,2-3", "SLURM_JOB_USER": "bob"}
    gate.record_job(cfg, env, "n1", fake, fake.now, io.StringIO())
    assert json.loads((node.tmp / "run" / "topsrider" / "jobs" / "9.json").read_text())["cards"] == [0, 2, 3]
    assert fake.calls == []


def test_unknown_cards_or_a_bad_job_id_write_no_file_but_keep_the_job(node):
    out = io.StringIO()
    fake = Fake({"scontrol": (1, "", "slurm_load_jobs error: Invalid job id specified")})
    cfg = gate.load_config(node())
    gate.record_job(cfg, {"SLURM_JOB_ID": "7"}, "n1", fake, fake.now, out)
    gate.record_job(cfg, {"SLURM_JOB_ID": "../7"}, "n1", fake, fake.now, out)
    assert not (node.tmp / "run").exists()
    assert "its cards are unknown (scontrol show job -d: slurm_load_jobs error" in out.getvalue()
    assert "'../7' is not a job id" in out.getvalue()
    assert gate.main(["--config", node(jobs_dir=""), "--mode", "config"], environ={}, out=out) == 0
    assert gate.main(["--config", node(jobs_dir="run/jobs"), "--mode", "config"], environ={}, out=out) == 2


SHOW_JOB_TWO_LINES = """JobId=8 JobName=train
     Nodes=n[1-2] CPU_IDs=0-1 Mem=0 GRES=gcu:2(IDX:0-1)
     Nodes=n3 CPU_IDs=0-7 Mem=0 GRES=gcu:8(IDX:0-7)
"""


def expand_recorded(calls):
    def expand(host_list):
        calls.append(host_list)
        rc, out, err = HOSTNAMES[host_list]
        names = gate.parse_hostnames(out) if rc == 0 else None
        if not names:
            raise gate.HostlistError("%s: %s" % (host_list, err))
        return names
    return expand


@pytest.mark.parametrize("text, node, cards, expanded", [
    (SHOW_JOB, "n2", [1, 3], ["n[1-2]"]),
    (SHOW_JOB, "n3", None, ["n[1-2]"]),
    (SHOW_JOB_TWO_LINES, "n3", list(range(8)), ["n[1-2]", "n3"]),
    ("     Nodes=n1 CPU_IDs=0 Mem=0 GRES=gpu:tesla:1(IDX:0),gcu:3(IDX:4-6)\n", "n1", [4, 5, 6], ["n1"]),
    ("     Nodes=n1 CPU_IDs=0 Mem=0 GRES=\n", "n1", [], ["n1"]),
    ("     Nodes=n1 CPU_IDs=0 Mem=0 GRES=gcu:1(IDX:0)\n     Nodes=n1 CPU_IDs=1 Mem=0 GRES=gcu:1(IDX:0)\n", "n2",
     None, ["n1"]),  # each host list expanded once
    ("JobId=9 JobName=x\n   NumNodes=1\n", "n1", None, []),
])
def test_cards_from_scontrol(text, node, cards, expanded):
    calls = []
    assert gate.cards_from_scontrol(text, node, "gcu", expand_recorded(calls)) == cards
    assert calls == expanded


@pytest.mark.parametrize("text", ["     Nodes=n[1 CPU_IDs=0 Mem=0 GRES=gcu:1(IDX:0)\n",
                                  "     Nodes=n[3-1] CPU_IDs=0 Mem=0 GRES=gcu:1(IDX:0)\n"
                                  "     Nodes=n1 CPU_IDs=0 Mem=0 GRES=gcu:1(IDX:0)\n"])
def test_a_host_list_slurm_cannot_expand_leaves_the_cards_unknown(text):
    # not "no cards here": that line may be this node's
    with pytest.raises(gate.HostlistError):
        gate.cards_from_scontrol(text, "n1", "gcu", expand_recorded([]))


EXPANDED = [(h, a[1].split()) for h, a in sorted(HOSTNAMES.items()) if gate.parse_hostnames(a[1])]


@pytest.mark.parametrize("host_list, names", EXPANDED)
def test_read_hostnames_asks_scontrol(node, host_list, names):
    fake = Fake({"scontrol": scontrol_answers()})
    cfg = gate.load_config(node())
    assert gate.read_hostnames(cfg, host_list, gate.Clock(5, fake.now), fake) == names
    assert fake.calls == [["/usr/bin/scontrol", "show", "hostnames", host_list]]


@pytest.mark.parametrize("answer, message", [
    (HOSTNAMES["n[3-1]"], "scontrol show hostnames n[3-1]: scontrol: error: _parse_single_range: "
                          "Invalid range: `3-1' (rc=0)"),
    (HOSTNAMES["n[1"], "scontrol show hostnames n[3-1]: n] (rc=0)"),
    (NO_SLURM_CONF, "scontrol show hostnames n[3-1]: scontrol: error: resolve_ctls_from_dns_srv: res_nsearch error: "
                    "Host name lookup failure (rc=1)"),
    ((0, "", ""), "scontrol show hostnames n[3-1]: no output (rc=0)"),
    ((0, "n1\nslurm_load_jobs error: x\n", ""), "scontrol show hostnames n[3-1]: n1 (rc=0)"),
])
def test_read_hostnames_refuses_what_is_not_a_list_of_names(node, answer, message):
    fake = Fake({"scontrol": scontrol_answers(hostnames=answer)})
    with pytest.raises(gate.HostlistError) as e:
        gate.read_hostnames(gate.load_config(node()), "n[3-1]", gate.Clock(5, fake.now), fake)
    assert str(e.value) == message


def test_read_hostnames_without_scontrol_or_in_time(node):
    fake = Fake({})
    with pytest.raises(gate.HostlistError) as e:
        gate.read_hostnames(gate.load_config(node()), "n[1-2]", gate.Clock(5, fake.now), fake)
    assert str(e.value).startswith("scontrol show hostnames n[1-2]: [Errno 2] No such file or directory") \
        and str(e.value).endswith("(rc=127)")
    fake = Fake({"scontrol": scontrol_answers()}, durations={"scontrol": 60})
    with pytest.raises(gate.GateTimeout):
        gate.read_hostnames(gate.load_config(node()), "n[1-2]", gate.Clock(5, fake.now), fake)


@pytest.mark.parametrize("hostnames, duration, why", [
    (NO_SLURM_CONF, 0.1, "scontrol show hostnames n[1-2]: scontrol: error: resolve_ctls_from_dns_srv"),
    (HOSTNAMES["n[1"], 0.1, "scontrol show hostnames n[1-2]: n] (rc=0)"),
    ((0, "", "Invalid hostlist: n[1-2]\n"), 0.1, "scontrol show hostnames n[1-2]: Invalid hostlist: n[1-2] (rc=0)"),
    (HOSTNAMES["n[1-2]"], 60, "gate timed out: scontrol gave no answer in"),
])
def test_a_failing_expansion_writes_no_job_file_and_decides_nothing(node, hostnames, duration, why):
    """The hostlist only places the job's cards for the job file: when Slurm cannot
    expand it the prolog writes no file (not a wrong one) and the job still runs
    on a fit node (the file labels cards; fitness was decided before); an unfit
    node is still refused and drained."""
    def took(argv):
        return duration if argv[1:3] == ["show", "hostnames"] else 0.1
    env = {"SLURMD_NODENAME": "n1", "SLURM_JOB_ID": "7", "SLURM_JOB_USER": "alice"}
    for bad, rc_wanted in (((), 0), ((2,), 1)):
        fake = Fake({"efsmi": (0, efsmi_q(bad=bad), ""), "sinfo": IDLE2,
                     "scontrol": scontrol_answers(hostnames=hostnames)}, durations={"scontrol": took})
        rc, out = run(node(), fake, env=env)
        assert rc == rc_wanted, out
        assert not (node.tmp / "run").exists()
        if rc_wanted == 0:
            assert fake.scontrol() == []
            assert "no job file for job 7: its cards are unknown (%s" % why in out, out
        else:
            assert fake.scontrol()[0][-1] == "reason=topsrider: card gcu2 unhealthy"


def test_the_recorded_hostnames_are_what_scontrol_prints(node, tmp_path, monkeypatch):
    """HOSTNAMES against Debian's own scontrol through the gate's own runner
    (make setup installs slurm-client, the version of sim/slurm's image)."""
    scontrol = "/usr/bin/scontrol"
    assert os.access(scontrol, os.X_OK), "this test needs Debian's slurm-client (make setup installs it)"
    version = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "slurm-client"], stdout=subprocess.PIPE,
                             universal_newlines=True, check=False).stdout
    assert version.startswith("22.05.8-"), version
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=units\nSlurmctldHost=localhost\n")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    cfg = gate.load_config(node(scontrol=scontrol))
    for host_list, (rc, out, err) in sorted(HOSTNAMES.items()):
        got = gate.run_command([scontrol, "show", "hostnames", host_list], gate.Clock(30), 30)
        assert got == (rc, out, err), host_list
        names = gate.parse_hostnames(out)
        if names:
            assert gate.read_hostnames(cfg, host_list, gate.Clock(30)) == names
        else:
            with pytest.raises(gate.HostlistError):
                gate.read_hostnames(cfg, host_list, gate.Clock(30))
