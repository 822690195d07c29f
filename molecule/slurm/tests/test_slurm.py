# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm for real (issue 19): Debian's slurmctld and slurmd on a controller and
two simulated T20 nodes, the rendered slurm.sbatch submitted with sbatch, and
the slurm_node role's health gate as the nodes' prolog and health check. (The
cluster's third node is kept drained meanwhile: test_slurm_rollout.py, which
runs next, uses all three.)

The tests run in order and share the cluster (two cards a node: every rank
imports torch; the gate is timed on eight cards on the third node): the
smoke job on 4 cards; a
two-node job's files (its cards on each node, its host list expanded by
scontrol show hostnames) written by the prolog and removed by the epilog; a
card made unhealthy on node1 -> the next job's prolog drains node1 with a
"topsrider:" reason and the job is requeued (not lost) while a one-node job
runs on node2; the card repaired -> the health check resumes node1 and the
requeued job finishes; an administrator's drain is never resumed; the drain
share cap (one of two nodes) holds."""
import json
import os
import re
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], "molecule", "_shared", "tests"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from launch_helpers import dexec  # noqa: E402 pylint: disable=wrong-import-position,import-error
from slurm_helpers import (  # noqa: E402 pylint: disable=wrong-import-position,import-error
    CTL, EPHEMERAL, N1, N2, N3, SBATCH, drained, job, job_if, job_outputs, no_jobs_left, node_state, ranks, sh, submit,
    wait_for)

testinfra_hosts = ["slurm-node1"]
KEPT_OUT = "molecule: kept out of test_slurm.py"
GATE_LOG = "/var/log/topsrider-slurm-gate.log"


# node3 with 8 cards for the gate's timing: its state kept, the cards redrawn by simctl, the
# gate's configuration copied with 8 expected.
EIGHT_CARDS = """cp -p /etc/topsrider-sim/state.json /tmp/sim-state.kept
python3 - <<'EOF'
import json, subprocess
state = json.load(open("/tmp/sim-state.kept"))
subprocess.run(["simctl", "reset", "--cards", "8"], check=True, stdout=subprocess.DEVNULL)
state["cards"] = json.load(open("/etc/topsrider-sim/state.json"))["cards"]
json.dump(state, open("/etc/topsrider-sim/state.json", "w"))
gate = json.load(open("/etc/topsrider/slurm-gate.json"))
gate["expected_cards"] = 8
json.dump(gate, open("/tmp/gate-8.json", "w"))
EOF
simctl init"""


def simctl(node, *args):
    sh(node, "simctl " + " ".join(args))


@pytest.fixture(scope="module", autouse=True)
def node3_kept_out():
    """These tests are about two nodes: the third is drained (by hand, as an
    administrator would) while they run, and given back after them."""
    sh(CTL, "scontrol update nodename=%s state=drain reason='%s'" % (N3, KEPT_OUT))
    yield
    sh(CTL, "scontrol update nodename=%s state=resume" % N3)


@pytest.fixture(autouse=True)
def jobs_cleared():
    """Each test starts with an empty queue, whatever the test before it left."""
    yield
    no_jobs_left()


def test_cluster_is_up_with_the_roles_lines():
    rows = sh(CTL, "sinfo -h -N -o '%N %T %G'").split("\n")
    assert sorted(r for r in rows if r) == ["slurm-node1 idle gcu:2", "slurm-node2 idle gcu:2",
                                            "slurm-node3 drained gcu:2"]
    with open(os.path.join(EPHEMERAL, "reports", "slurm", "slurm.conf.topsrider")) as f:
        merged = f.read()
    for line in ("GresTypes=gcu", "Prolog=/usr/local/libexec/topsrider/topsrider-slurm-gate",
                 "PrologFlags=Alloc", "SchedulerParameters=nohold_on_prolog_fail",
                 "HealthCheckProgram=/usr/local/libexec/topsrider/topsrider-slurm-gate",
                 "Epilog=/usr/local/libexec/topsrider/topsrider-slurm-epilog"):
        assert line in merged.splitlines(), line
    assert re.search(r"^NodeName=slurm-node1 CPUs=\d+ .*Features=tops_2\.5\.136 Gres=gcu:2 NodeAddr=127.0.0.1 "
                     r"Port=16818 State=UNKNOWN$", merged, re.M), merged
    # the smoke job asks for the release its nodes run
    with open(os.path.join(EPHEMERAL, "launch", "slurm_job", "slurm.sbatch")) as f:
        assert "#SBATCH --constraint=tops_2.5.136\n" in f.read()


def test_gres_conf_and_gate_on_the_node(host):
    gres = [line for line in host.file("/etc/slurm/gres.conf").content_string.splitlines()
            if line and not line.startswith("#")]
    assert gres == ["NodeName=slurm-node1 Name=gcu File=/dev/gcu%d" % i for i in range(2)]
    cfg = json.loads(host.file("/etc/topsrider/slurm-gate.json").content_string)
    assert cfg["expected_cards"] == 2 and cfg["release"] == "2.5.136" and cfg["max_drain_share"] == 0.5
    gate = host.file("/usr/local/libexec/topsrider/topsrider-slurm-gate")
    assert gate.mode == 0o755 and gate.user == "root"
    out = host.run("/usr/local/libexec/topsrider/topsrider-slurm-gate --mode check")
    assert out.rc == 0 and "slurm-node1: fit" in out.stderr, out.stderr
    # slurmd reads the same GRES
    assert "gcu" in host.check_output("slurmd -N slurm-node1 -G 2>&1 || true")


def test_the_gate_on_eight_cards_within_10_s():
    """The issue's bound: the whole gate within 10 s on a T20 node's 8 cards. node3, out of the
    cluster during these tests, is given 8 cards for it (its simulated state with the cards of
    `simctl reset --cards 8`, and a copy of the gate's configuration that expects 8), then its
    own state back."""
    sh(N3, EIGHT_CARDS)
    try:
        started = time.monotonic()
        rc, _out, err = dexec(N3, "/usr/local/libexec/topsrider/topsrider-slurm-gate --mode check --config /tmp/gate-8.json")
        took = time.monotonic() - started
        assert rc == 0 and "slurm-node3: fit" in err, err
        assert took < 10, "the gate took %.1f s on 8 cards" % took
    finally:
        sh(N3, "cp -p /tmp/sim-state.kept /etc/topsrider-sim/state.json && simctl init && rm -f /tmp/gate-8.json")
    assert len(json.loads(sh(N3, "simctl show"))["cards"]) == 2


def test_sbatch_runs_the_smoke_job_on_every_card_of_two_nodes():
    subprocess.run(["docker", "cp", os.path.join(EPHEMERAL, "launch", "slurm_job", "slurm.sbatch"), CTL + ":" + SBATCH],
                   check=True)
    rc, out, err = dexec(CTL, "sbatch --parsable --wait --chdir=/tmp -o /tmp/smoke-%%j.out %s" % SBATCH, timeout=420)
    job_id = out.strip().split(";")[0]
    if rc != 0:
        # Say why: the job's record and what it printed (seen once: rc=1 for a job that then passed on a re-run).
        _rc, record, _err = dexec(CTL, "scontrol -o show job %s" % job_id)
        _rc, printed, _err = dexec(N1, "tail -n 40 /tmp/smoke-%s.out" % job_id)
        raise AssertionError("sbatch --wait: rc=%d %s%s\njob: %s\noutput on %s:\n%s" % (rc, out, err, record, N1, printed))
    info = job(job_id)
    assert info["JobState"] == "COMPLETED" and info["ExitCode"] == "0:0", (
        info, job_outputs("/tmp/smoke-%s.out" % job_id, (N1, N2)))
    assert info["NodeList"] == "slurm-node[1-2]", info
    results, text = ranks(N1, "/tmp/smoke-%s.out" % job_id)
    assert sorted(r["rank"] for r in results) == list(range(4)), text
    assert {r["world_size"] for r in results} == {4}
    assert len({r["loss"] for r in results}) == 1, "not the same loss on every rank:\n" + text
    assert {r["backend"] for r in results} == {"eccl"}


def test_the_prolog_writes_the_jobs_file_and_the_epilog_removes_it():
    """What the card exporter labels the cards with: the job, its user and this node's cards. A job
    on two nodes: its node line in `scontrol show job -d` names them as a host list (slurm-node[1-2]),
    which each node's prolog expands with `scontrol show hostnames`."""
    job_id = submit("-N2 -w 'slurm-node[1-2]' --gres=gcu:2 -o /dev/null", "--wrap 'sleep 30'")
    path = "/run/topsrider/jobs/%s.json" % job_id
    for n in (N1, N2):
        wait_for("the job's file on %s" % n, lambda n=n: dexec(n, "test -f %s" % path)[0] == 0, 60)
        assert json.loads(sh(n, "cat %s" % path)) == {"job_id": job_id, "user": "root", "cards": [0, 1]}
    shown = sh(CTL, "scontrol show job -d %s" % job_id)
    assert "Nodes=slurm-node[1-2] " in shown, shown
    assert sh(N2, "stat -c '%%U %%a' %s /run/topsrider/jobs" % path).split() == ["root", "644", "root", "755"]
    assert dexec(N3, "ls /run/topsrider/jobs/%s.json" % job_id)[0] != 0  # not a node of the job
    sh(CTL, "scancel %s" % job_id)
    for n in (N1, N2):
        wait_for("the job's file removed by the epilog on %s" % n, lambda n=n: dexec(n, "test -e %s" % path)[0] != 0, 60)


def test_bad_card_drains_the_node_and_the_job_is_requeued_not_lost():
    simctl(N1, "card", "1", "health=false")
    try:
        requeued = submit("-o /tmp/requeued-%j.out", SBATCH)
        state, reason = wait_for("slurm-node1 drained by the prolog", lambda: drained(N1), 60)
        assert reason == "topsrider: card gcu1 unhealthy", (state, reason)
        # Requeued: restarted once, and past COMPLETING, the state Slurm passes through (its
        # epilog on the allocated nodes) before the job is PENDING again; seen under CI's load.
        info = wait_for("the job requeued", lambda: job_if(requeued, lambda j: int(j["Restarts"]) >= 1
                                                           and j["JobState"] != "COMPLETING"), 30)
        assert info["JobState"] == "PENDING", info
        assert "[prolog]" in sh(N1, "tail -n 3 %s" % GATE_LOG)

        # meanwhile a one-node job runs on the healthy node
        out = sh(CTL, "sbatch --parsable --wait -N1 --chdir=/tmp -o /tmp/single-%%j.out %s" % SBATCH, timeout=300)
        single = out.strip().split(";")[0]
        info = job(single)
        assert info["JobState"] == "COMPLETED" and info["NodeList"] == N2, info
        results, text = ranks(N2, "/tmp/single-%s.out" % single)
        assert len(results) == 2 and len({r["loss"] for r in results}) == 1, text

        # the health check runs on the drained node and does not resume it while the card is bad
        # ("draining" while the requeued job's allocation is still being released, then "drained":
        # seen under CI's load; either way the node takes no new job and keeps the gate's reason):
        # longer than one health check interval (10 s, molecule.yml)
        time.sleep(11)
        now = drained(N1)
        assert now and now[1] == reason, node_state(N1)
    finally:
        simctl(N1, "card", "1", "health=true")
    wait_for("slurm-node1 resumed by the health check", lambda: node_state(N1)[0] in ("idle", "allocated", "mixed"), 40)
    assert "resuming slurm-node1" in sh(N1, "cat %s" % GATE_LOG)

    # the requeued job was not lost: it runs once eligible again (Slurm holds a
    # requeued job back for cred_expire + 1 s: 41 s in sim/slurm/slurm.conf.j2)
    # and succeeds on both nodes
    info = wait_for("the requeued job finished", lambda: job_if(requeued, lambda j: j["JobState"] in (
        "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL")), 300, step=3)
    assert info["JobState"] == "COMPLETED" and info["ExitCode"] == "0:0", (
        info, job_outputs("/tmp/requeued-%s.out" % requeued, (N1, N2)))
    results, text = ranks(N1, "/tmp/requeued-%s.out" % requeued)
    assert len(results) == 4 and len({r["loss"] for r in results}) == 1, text


def test_a_node_an_administrator_drained_stays_drained():
    sh(CTL, "scontrol update nodename=%s state=drain reason='admin: bios update'" % N2)
    try:
        before = int(sh(N2, "wc -l < %s" % GATE_LOG))
        # the health check (every 10 s) passes on the node and leaves it alone
        wait_for("two health checks on slurm-node2", lambda: int(sh(N2, "wc -l < %s" % GATE_LOG)) >= before + 2, 40)
        assert node_state(N2) == ("drained", "admin: bios update")
    finally:
        sh(CTL, "scontrol update nodename=%s state=resume" % N2)


def test_the_gate_never_drains_more_than_its_share():
    # share 0.5 of two nodes: one node at a time
    simctl(N1, "card", "0", "health=false")
    simctl(N2, "card", "0", "health=false")
    try:
        first = submit("-N1 -w %s --exclusive --wrap 'echo never'" % N1)
        wait_for("slurm-node1 drained", lambda: node_state(N1)[1].startswith("topsrider: card gcu0"), 60)
        sh(CTL, "scancel %s" % first)
        second = submit("-N1 -w %s --exclusive -o /tmp/capped-%%j.out --wrap 'echo ran on $SLURMD_NODENAME'" % N2)
        info = wait_for("the job on slurm-node2", lambda: job_if(second, lambda j: j["JobState"] == "COMPLETED"), 60)
        assert info["NodeList"] == N2
        assert node_state(N2)[0] == "idle", "the gate drained a second node of two"
        assert "NOT drained" in sh(N2, "cat %s" % GATE_LOG)
    finally:
        simctl(N1, "card", "0", "health=true")
        simctl(N2, "card", "0", "health=true")
    wait_for("slurm-node1 resumed", lambda: node_state(N1)[0] == "idle", 40)
