# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What molecule/slurm's tests share: commands on the cluster's containers,
the nodes' and jobs' state as Slurm reports it, waiting for a condition."""
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], "molecule", "_shared", "tests"))
from launch_helpers import dexec  # noqa: E402 pylint: disable=wrong-import-position,import-error

CTL, N1, N2, N3 = "slurm-ctl", "slurm-node1", "slurm-node2", "slurm-node3"
EPHEMERAL = os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]
SBATCH = "/root/slurm.sbatch"


def sh(node, script, timeout=60):
    rc, out, err = dexec(node, script, timeout=timeout)
    assert rc == 0, "%s: %s\nrc=%d\n%s%s" % (node, script, rc, out, err)
    return out


def _sinfo(node):
    state, _sep, reason = sh(CTL, "sinfo -h -N -n %s -o '%%T|%%E'" % node).strip().partition("|")
    return state, reason


def node_state(node):
    """(state, reason) as the scheduler has them: sinfo's %T without its "*" (not responding)
    flag, which only says slurmctld's last ping of slurmd went unanswered; on the two shared
    cores that happens now and then and clears at the next ping (see responding)."""
    state, reason = _sinfo(node)
    return state.rstrip("*"), reason


def responding(node):
    """Whether slurmctld's last ping of the node's slurmd was answered."""
    return not _sinfo(node)[0].endswith("*")


def back_in_service(node, limit=120):
    """The node is resumed now (idle, no reason), and its slurmd answers slurmctld's pings
    within limit seconds: a slurmd that a deploy broke never would."""
    assert node_state(node) == ("idle", "none"), (node, node_state(node))
    wait_for("%s responding to slurmctld" % node, lambda: responding(node), limit, step=2)
    return True


def job(job_id):
    text = sh(CTL, "scontrol -o show job %s" % job_id)
    return dict(re.findall(r"(\w+)=(\S*)", text))


def wait_for(what, check, limit, step=1.0):
    end = time.time() + limit
    while True:
        value = check()
        if value:
            return value
        if time.time() > end:
            raise AssertionError("%s: not within %ss (last: %r)" % (what, limit, value))
        time.sleep(step)


def drained(node):
    state = node_state(node)
    return state if state[0].startswith("drain") else None


def no_jobs_left(limit=60):
    """Cancel every job still queued or running, and wait until Slurm has none: what a test
    that failed half-way leaves behind (a requeued job that takes both nodes once they are
    healthy) must not meet the next test. After a test that passed this cancels nothing."""
    if sh(CTL, "squeue -h -o %i").strip():
        sh(CTL, "scancel --full --user=root")
        wait_for("no job left in the queue", lambda: not sh(CTL, "squeue -h -o %i").strip(), limit, step=2)


def job_if(job_id, check):
    info = job(job_id)
    return info if check(info) else None


def submit(*args):
    return sh(CTL, "sbatch --parsable --chdir=/tmp %s" % " ".join(args)).strip().split(";")[0]


def job_outputs(path, nodes):
    """What a job wrote to `path` on each of `nodes` (its last 40 lines; the
    batch host has it), for an assertion's message when a job did not end as
    it should."""
    out = []
    for node in nodes:
        rc, text, err = dexec(node, "tail -n 40 %s" % path, timeout=30)
        out.append("--- %s:%s (rc=%d)\n%s%s" % (node, path, rc, text, err))
    return "\n".join(out)


def ranks(node, path):
    out = sh(node, "cat %s" % path)
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")], out
