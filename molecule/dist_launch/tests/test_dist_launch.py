# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dist_launch on two simulated T20 nodes: real torchrun jobs started with the
generated scripts, the launch check, and the platform script's refusals.

The jobs run for real (torch on CPU, the stand-in torch_gcu's eccl backend over
gloo). The simulated efsmi does not measure processes: it reports the
utilization `simctl busy` sets. Where a test needs "the cards are busy" it sets
simctl to mirror which ranks run, standing in for the hardware reporting
utilization; the launch check also counts the real rank processes in /proc,
which no simctl setting can fake.
"""
import json
import os
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], "molecule", "_shared", "tests"))
from launch_helpers import LAUNCH, Job, dexec, free_port, launch_check, smoke  # noqa: E402 pylint: disable=wrong-import-position,import-error

testinfra_hosts = ["dist_launch-node1"]
NODES = ["dist_launch-node1", "dist_launch-node2"]
PYTHON = "/opt/venvs/train/bin/python"
CARDS = 2  # a node's simulated cards (molecule.yml: SIM_CARDS)


@pytest.fixture
def simctl():
    def run(node, *args):
        rc, out, err = dexec(node, "simctl " + " ".join(args))
        assert rc == 0, err
        return out
    yield run
    for node in NODES:
        run(node, "busy", "none")


# ---------------------------------------------------------------- the role's files
def test_node_scripts(host):
    for name, mode in (("launch-single.sh", 0o755), ("launch-platform.sh", 0o755),
                       ("ddp_smoke.py", 0o644), ("topsrider_rank.py", 0o644)):
        f = host.file("%s/%s" % (LAUNCH, name))
        assert f.exists and f.user == "root" and f.group == "root" and f.mode == mode, name
    single = host.file(LAUNCH + "/launch-single.sh").content_string
    assert "DIST_LAUNCH_CARDS=%d" % CARDS in single and "DIST_LAUNCH_ENV_FILE=/etc/profile.d/topsrider.sh" in single
    out = host.run("DIST_LAUNCH_DRY_RUN=1 %s/launch-single.sh %s/ddp_smoke.py" % (LAUNCH, LAUNCH))
    assert out.rc == 0, out.stderr
    assert "--nproc_per_node=%d" % CARDS in out.stdout.split()


def test_cluster_files():
    out_dir = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "launch", "t20")
    with open(os.path.join(out_dir, "hostfile")) as f:
        lines = [line for line in f.read().splitlines() if line and not line.startswith("#")]
    assert lines == ["dist_launch-node1 slots=%d" % CARDS, "dist_launch-node2 slots=%d" % CARDS]
    with open(os.path.join(out_dir, "slurm.sbatch")) as f:
        sbatch = f.read()
    assert "#SBATCH --nodes=2" in sbatch and "#SBATCH --gres=gcu:%d" % CARDS in sbatch
    assert "%s/launch-platform.sh" % LAUNCH in sbatch
    import yaml
    with open(os.path.join(out_dir, "k8s-job.yaml")) as f:
        docs = list(yaml.safe_load_all(f))
    job = docs[2]
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert job["spec"]["completions"] == 2 and job["spec"]["completionMode"] == "Indexed"
    assert container["resources"]["limits"] == {"enflame.com/gcu": CARDS}
    assert "DIST_LAUNCH_CARDS=%d" % CARDS in docs[0]["data"]["launch-platform.sh"]
    # the embedded script is valid bash
    subprocess.run(["bash", "-n", "/dev/stdin"], input=docs[0]["data"]["launch-platform.sh"].encode(), check=True)


# ---------------------------------------------------------------- refusals
def test_platform_refuses_missing_rank():
    rc, out, err = dexec("dist_launch-node2", "WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=%d %s/launch-platform.sh "
                         "%s/ddp_smoke.py" % (free_port(), LAUNCH, LAUNCH))
    assert rc == 64, (out, err)
    assert "missing variable(s): RANK" in err and "refusing to start" in err
    assert dexec("dist_launch-node2", "pgrep -f '[t]orch.distributed.run'")[0] == 1  # nothing started


def test_platform_refuses_unreachable_master():
    command = ("DIST_LAUNCH_MASTER_TIMEOUT=3 WORLD_SIZE=2 RANK=1 MASTER_ADDR=127.0.0.1 "
               "MASTER_PORT=%d %s/launch-platform.sh %s/ddp_smoke.py" % (free_port(), LAUNCH, LAUNCH))
    rc, _out, err = dexec("dist_launch-node2", command)
    assert rc == 69 and "did not answer within 3s" in err


# ---------------------------------------------------------------- single node + launch check
def test_single_node_a_rank_per_card_and_launch_check(host, simctl):
    # Held until the check is done (the stop file ends the hold on every rank; 25 s at most).
    job = Job("dist_launch-node1", "single", "env MASTER_PORT=%d %s/launch-single.sh %s" % (
        free_port(), LAUNCH, smoke("/tmp/launch-test/single", "--hold 25 --stop-file /tmp/launch-test/single/stop")))
    try:
        results = job.wait_results(CARDS, 180)
        assert len(results) == CARDS, job.log()
        # While the job runs: a real rank process per card; simctl mirrors them as busy cards.
        simctl("dist_launch-node1", "busy", "all", "--util", "85")
        rc, out = launch_check(host, "dist_launch-node1")
        assert rc == 0, out
        assert "%d training processes for %d cards, every card busy" % (CARDS, CARDS) in out
        assert dexec("dist_launch-node1", "touch /tmp/launch-test/single/stop")[0] == 0
        assert job.wait(120) == 0, job.log()
    finally:
        job.stop()
    assert sorted(r["rank"] for r in results) == list(range(CARDS))
    assert sorted(r["local_rank"] for r in results) == list(range(CARDS))
    assert {r["world_size"] for r in results} == {CARDS}
    assert {r["backend"] for r in results} == {"eccl"}
    # Every rank trained on its own card through the torch_gcu 2.x device API.
    assert sorted(r["device"] for r in results) == ["gcu:%d" % i for i in range(CARDS)]
    assert {r["api"] for r in results} == {"2.x"}
    assert len({r["loss"] for r in results}) == 1, results
    assert len({r["param_checksum"] for r in results}) == 1, results
    assert {r["config"] for r in results} == {"/opt/topsrider/launch/configs/small.yaml"}
    assert "%d processes (one per card)" % CARDS in job.log()


def test_launch_check_catches_a_one_process_launch(host, simctl):
    # The classic mistake: torchrun without --nproc_per_node starts one process.
    job = Job("dist_launch-node1", "oneproc", ". /etc/profile.d/topsrider.sh; GLOO_SOCKET_IFNAME=lo "
              "DIST_LAUNCH_BACKEND=eccl %s -m torch.distributed.run --nnodes=1 --master_port=%d %s" % (
                  PYTHON, free_port(), smoke("/tmp/launch-test/oneproc", "--hold 60")))
    try:
        results = job.wait_results(1, 120)
        assert len(results) == 1 and results[0]["world_size"] == 1, job.log()
        simctl("dist_launch-node1", "busy", "0", "--util", "85")  # card 0 works, the rest sleep
        rc, out = launch_check(host, "dist_launch-node1")
        assert rc != 0, out
        assert "launch check failed (one_busy_rest_asleep)" in out
        assert "one busy, the rest asleep: 1 training process(es) for %d cards" % CARDS in out
        assert "asleep: 1. " in out
        # Even with every card reported busy, one process for all the cards is caught.
        simctl("dist_launch-node1", "busy", "all", "--util", "85")
        rc, out = launch_check(host, "dist_launch-node1")
        assert rc != 0 and "one_busy_rest_asleep" in out, out
    finally:
        job.stop()


# ---------------------------------------------------------------- two nodes
def test_two_nodes_a_rank_per_card():
    port = free_port()
    env = "WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=%d DIST_LAUNCH_MASTER_TIMEOUT=120" % port
    # Node 1 (RANK=1) first: it must wait for the master, then join.
    worker = Job("dist_launch-node2", "multi", "env %s RANK=1 %s/launch-platform.sh %s" % (
        env, LAUNCH, smoke("/tmp/launch-test/multi")))
    time.sleep(4)
    master = Job("dist_launch-node1", "multi", "env %s RANK=0 %s/launch-platform.sh %s" % (
        env, LAUNCH, smoke("/tmp/launch-test/multi")))
    try:
        assert master.wait(240) == 0, master.log()
        assert worker.wait(60) == 0, worker.log()
    finally:
        master.stop()
        worker.stop()
    results = master.results() + worker.results()
    assert sorted(r["rank"] for r in results) == list(range(2 * CARDS)), results
    assert sorted(r["rank"] for r in worker.results()) == list(range(CARDS, 2 * CARDS))
    assert {r["world_size"] for r in results} == {2 * CARDS}
    assert len({r["loss"] for r in results}) == 1, results
    assert len({r["param_checksum"] for r in results}) == 1, results
    assert {r["config"] for r in results} == {"/opt/topsrider/launch/configs/large.yaml"}
    assert {r["total_cards"] for r in results} == {str(2 * CARDS)}
    assert {r["device"] for r in worker.results()} == {"gcu:%d" % i for i in range(CARDS)}
    assert "node 1 waits for the master 127.0.0.1:%d" % port in worker.log()
    assert "node 0 of 2, %d processes here, %d in total" % (CARDS, 2 * CARDS) in master.log()


# ---------------------------------------------------------------- what a job needs: launcher and verify agree
def test_a_deleted_environment_file_fails_verify_on_that_node_only_in_the_launchers_words(host, tmp_path):
    """node2 loses /etc/profile.d/topsrider.sh: its launcher refuses (exit 72), and verify.yml fails that
    node only, with the launcher's own message (the one list and rule, plugins/module_utils/_compare.py);
    node1 stays ok."""
    env_file = "/etc/profile.d/topsrider.sh"
    rc, _out, err = dexec("dist_launch-node2", "mv %s /root/topsrider.sh.moved" % env_file)
    assert rc == 0, err
    try:
        rc, out, err = dexec("dist_launch-node2", "DIST_LAUNCH_DRY_RUN=1 %s/launch-single.sh %s/ddp_smoke.py"
                             % (LAUNCH, LAUNCH))
        assert rc == 72 and out == "", (out, err)
        launcher = err.strip().split("launch-single.sh: ERROR: ", 1)[1]
        assert launcher.startswith(env_file + " is missing or unreadable: ") and "run playbooks/deploy.yml" in launcher
        runner = host.backend.ansible_runner
        proc = subprocess.run(
            ["ansible-playbook", "-i", runner.inventory_file,
             os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], "playbooks", "verify.yml"),
             "-e", "topsrider_reports_dir=%s" % tmp_path],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=420, check=False)
        output = proc.stdout.decode()
    finally:
        rc, _out, err = dexec("dist_launch-node2", "mv /root/topsrider.sh.moved %s" % env_file)
        assert rc == 0, err
    assert proc.returncode == 2, output[-3000:]
    with open(os.path.join(str(tmp_path), "verify-latest.json")) as f:
        rows = dict((r["host"], r) for r in json.load(f)["hosts"])
    assert rows["dist_launch-node1"]["result"] == "ok", rows
    assert rows["dist_launch-node1"]["detail"].startswith("%d cards healthy, ECCL ok" % CARDS), rows
    assert rows["dist_launch-node2"]["result"] == "failed", rows
    # the same file and the same words as the launcher, the remedy included
    assert rows["dist_launch-node2"]["detail"].startswith(launcher), rows
    # (The printed failure may be wrapped by the YAML result format: its words are in the report above.)
    assert "dist_launch-node2 is unhealthy" in output
    assert "dist_launch-node1 is unhealthy" not in output
