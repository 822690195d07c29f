# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""launch_check.yml on a simulated NVIDIA node (SIMULATOR: two H100s).

The jobs are real torchrun jobs started with the rendered launch-single.sh,
on the CPU with gloo (DIST_LAUNCH_BACKEND=gloo): this node's torch has no
CUDA, and the simulator does not pretend it has. The stand-in nvidia-smi
reports the utilization `simctl busy` sets; the launch check also counts the
real rank processes in /proc, which no simctl setting can fake.
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], "molecule", "_shared", "tests"))
from launch_helpers import LAUNCH, Job, dexec, free_port, launch_check, smoke  # noqa: E402 pylint: disable=wrong-import-position,import-error

NODE = "topsrider-nvidia_node-node1"
testinfra_hosts = [NODE]
PYTHON = "/opt/venvs/train/bin/python"
GLOO = "GLOO_SOCKET_IFNAME=lo DIST_LAUNCH_BACKEND=gloo"


@pytest.fixture
def simctl():
    def run(*args):
        rc, out, err = dexec(NODE, "simctl " + " ".join(args))
        assert rc == 0, err
        return out
    yield run
    run("busy", "none")


def test_node_is_an_nvidia_node(host):
    assert not host.exists("efsmi") and host.exists("nvidia-smi")
    out = host.check_output("nvidia-smi -L")
    assert out.count("NVIDIA H100 80GB HBM3") == 2


def test_every_gpu_busy_with_one_rank_each(host, simctl):
    # Held until the check is done (the stop file ends the hold on every rank; 25 s at most).
    job = Job(NODE, "nvidia-single", "%s MASTER_PORT=%d %s/launch-single.sh %s" % (
        GLOO, free_port(), LAUNCH, smoke("/tmp/launch-test/nvidia-single",
                                         "--hold 25 --stop-file /tmp/launch-test/nvidia-single/stop")))
    try:
        results = job.wait_results(2, 180)
        assert len(results) == 2, job.log()
        simctl("busy", "all", "--util", "90")
        rc, out = launch_check(host, NODE)
        assert rc == 0, out
        assert "2 training processes for 2 cards, every card busy" in out
        assert dexec(NODE, "touch /tmp/launch-test/nvidia-single/stop")[0] == 0
        assert job.wait(120) == 0, job.log()
    finally:
        job.stop()
    assert sorted(r["local_rank"] for r in results) == list(range(2))
    assert len({r["loss"] for r in results}) == 1, results
    assert "2 processes (one per card)" in job.log()


def test_no_job_is_named(host, simctl):
    simctl("busy", "none")
    rc, out = launch_check(host, NODE)
    assert rc != 0 and "launch check failed (no_job)" in out, out


def test_one_process_for_two_gpus_is_named(host, simctl):
    job = Job(NODE, "nvidia-oneproc", "%s %s -m torch.distributed.run --nnodes=1 --master_port=%d %s" % (
        GLOO, PYTHON, free_port(), smoke("/tmp/launch-test/nvidia-oneproc", "--hold 60")))
    try:
        results = job.wait_results(1, 120)
        assert len(results) == 1 and results[0]["world_size"] == 1, job.log()
        simctl("busy", "0", "--util", "90")
        rc, out = launch_check(host, NODE)
        assert rc != 0, out
        assert "launch check failed (one_busy_rest_asleep)" in out
        assert "1 training process(es) for 2 cards" in out and "asleep: 1" in out
    finally:
        job.stop()
