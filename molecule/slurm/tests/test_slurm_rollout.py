# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rolling upgrades and rollbacks of a busy Slurm cluster (issue 28), against
the real slurmctld and slurmd of this scenario's three nodes, with the real
deploy.yml and rollback.yml (topsrider_scheduler=slurm). The tests run in
order and share the cluster (after test_slurm.py):

1. deploy 2.5.140 (batches of 1, then 2) while a 2-node training job runs on
   node1 and node2: node3 (idle) is upgraded at once, the job's nodes, both
   drained first, only after it ended; the job finishes with exit 0 and every
   rank's result whole; a job submitted during the rollout for 2.5.136 never
   starts, one for 2.5.140 runs on an upgraded node; every node ends at 2.5.140,
   resumed, with the feature tops_2.5.140; the report counts 0 jobs killed or
   requeued and 0 jobs on two releases.
2. rollback.yml with node1 drained by an administrator before the run, node2
   drained by one during it, and a job on node3 that outlasts
   topsrider_drain_timeout (topsrider_deferred_resume=true): node1 and node2
   are rolled back and never resumed, node3 is deferred and resumed as it was,
   its job untouched; the run's status is deferred.
3. deploy to node1 while a job there outlasts the timeout (the default): the
   node is deferred and left draining under the run's reason; once the job
   ended, the plain re-run upgrades it, proves it at the collective level and
   resumes it.
4. a node whose upgrade fails is restored and stays drained with the failure
   as the run's reason; deployed again, it is upgraded and resumed.
"""
import json
import os
import re
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slurm_helpers import (  # noqa: E402 pylint: disable=wrong-import-position,import-error
    CTL, EPHEMERAL, N1, N2, N3, SBATCH, back_in_service, job, node_state, responding, sh, wait_for)

testinfra_hosts = ["slurm-node1"]
TOP = os.environ["MOLECULE_PROJECT_DIRECTORY"]
BUNDLES = os.path.join(TOP, ".cache", "bundles")
SMOKE = "/opt/topsrider/launch/ddp_smoke.py"
STOP = "/tmp/rollout-stop"
NODES = (N1, N2, N3)
FINAL = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY")


def playbook(host, runs, name, log, *extra, limit=None):
    """Start deploy.yml or rollback.yml with the scheduler set, in the background."""
    argv = ["ansible-playbook", "-i", host.backend.ansible_runner.inventory_file,
            os.path.join(TOP, "playbooks", name), "-e", "topsrider_scheduler=slurm", "-e", "topsrider_drain_poll=2"]
    argv += list(extra) + (["--limit", limit] if limit else [])
    out = open(os.path.join(EPHEMERAL, log), "w")
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ, ANSIBLE_NOCOLOR="1"))
    runs.append(proc)
    return proc


def finish(proc, log, limit=900):
    rc = proc.wait(timeout=limit)
    with open(os.path.join(EPHEMERAL, log)) as f:
        return rc, f.read()


@pytest.fixture
def runs():
    """The playbooks a test starts; one still running when the test ends (it failed) is stopped,
    so that the next test does not meet it."""
    started = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=60)


def report(kind):
    with open(os.path.join(EPHEMERAL, "reports", "%s-latest.json" % kind)) as f:
        data = json.load(f)
    return data, dict((h["host"], h) for h in data["hosts"])


def features(node):
    return sh(CTL, "sinfo -h -N -n %s -o '%%f'" % node).strip().split(",")


def deployed(node):
    return json.loads(sh(node, "cat /etc/ansible/facts.d/topsrider.fact"))["version"]


def installed_at(node, version):
    """When dpkg installed tops-eccl <version> on the node last (dpkg.log, the node's clock: UTC)."""
    lines = sh(node, "grep ' status installed tops-eccl:amd64 %s-1$' /var/log/dpkg.log || true" % version).splitlines()
    assert lines, "%s: tops-eccl %s was never installed" % (node, version)
    return lines[-1][:19].replace(" ", "T")


def submit_training(name, nodes, hold=900, extra=""):
    """The rendered slurm.sbatch running the smoke job held on the cards until STOP appears."""
    out = sh(CTL, "sbatch --parsable --chdir=/tmp -J %s -N%d -w %s -o /tmp/%s-%%j.out %s %s %s --steps 3 --hold %d "
                  "--hold-pause 1 --stop-file %s --report-held" % (
                      name, len(nodes), ",".join(nodes), name, extra, SBATCH, SMOKE, hold, STOP))
    return out.strip().split(";")[0]


def running_on_cards(job_id, node, ranks):
    """The job runs and its ranks hold the node's cards (the one busy reader's view, /proc)."""
    if job(job_id)["JobState"] != "RUNNING":
        return None
    held = sh(node, "ls -l /proc/[0-9]*/fd 2>/dev/null | grep -c ' /dev/gcu[0-9]' || true").strip()
    return int(held or 0) >= ranks


def stop_jobs(*nodes):
    for n in nodes:
        sh(n, "touch %s" % STOP)


def job_if_ended(job_id):
    info = job(job_id)
    return info if info["JobState"] in FINAL else None


def ended(job_id, limit=240):
    return wait_for("job %s ended" % job_id, lambda: job_if_ended(job_id), limit, step=2)


def held_results(node, path, count):
    lines = [json.loads(x) for x in sh(node, "cat %s" % path).splitlines() if x.startswith("{")]
    held = [x for x in lines if x.get("phase") == "held"]
    assert sorted(x["rank"] for x in held) == list(range(count)), lines
    # DDP kept every rank's parameters the same through the whole hold: the result is whole.
    assert len({x["param_checksum"] for x in held}) == 1 and len({x["held_steps"] for x in held}) == 1, held
    assert held[0]["held_steps"] > 0
    return held


def logged(log, pattern):
    with open(os.path.join(EPHEMERAL, log)) as f:
        return re.search(pattern, f.read(), re.M)


def test_1_a_rolling_upgrade_waits_for_the_job_and_never_mixes_releases(host, runs):
    subprocess.run(["docker", "cp", os.path.join(EPHEMERAL, "launch", "slurm_job", "slurm.sbatch"),
                    CTL + ":" + SBATCH], check=True)
    for n in NODES:
        sh(n, "rm -f %s" % STOP)
        # idle with no reason; on the two shared cores a slurmd can miss a ping
        # after the gate tests ("idle*", not responding) and answer the next one.
        wait_for("%s idle and responding" % n, lambda n=n: node_state(n) == ("idle", "none") and responding(n), 120,
                 step=2)
        assert deployed(n) == "2.5.136" and features(n) == ["tops_2.5.136"]
    train = submit_training("train", [N1, N2])
    wait_for("the training job running", lambda: job(train)["JobState"] == "RUNNING", 60)

    # batches of 1, then 2: the idle node first, then both nodes of the job, drained together
    proc = playbook(host, runs, "deploy.yml", "rollout-upgrade.log", "-e", "topsrider_bundle_dir=%s/2.5.140" % BUNDLES,
                    "-e", json.dumps({"topsrider_serial": [1, 2]}))
    wait_for("the training job on the cards of node1 and node2",
             lambda: running_on_cards(train, N1, 2) and running_on_cards(train, N2, 2), 180, step=2)
    # node3 (no job) first, at once: upgraded, tagged and resumed while the job still runs
    wait_for("node3 upgraded and resumed", lambda: features(N3) == ["tops_2.5.140"] and node_state(N3)[0] == "idle",
             420, step=2)
    assert job(train)["JobState"] == "RUNNING"
    # then node1 and node2, both drained before either changes, and waited for (a line per poll)
    wait_for("node1 and node2 draining for the deploy",
             lambda: all(node_state(n)[1].startswith("gcu.topsrider deploy ") for n in (N1, N2)), 120)
    for n in (N1, N2):
        state, reason = node_state(n)
        assert state == "draining" and "upgrade to 2.5.140" in reason, (n, state, reason)
    wait_for("a progress line for node1", lambda: logged("rollout-upgrade.log", r"^%s: deploy \S+: waiting" % N1), 60)
    # submitted during the rollout: for 2.5.136 (the rendered script's own constraint; its two nodes
    # are draining and will come back as 2.5.140) and for 2.5.140 (only node3 is there yet)
    old = sh(CTL, "sbatch --parsable --chdir=/tmp -J old -N2 -o /tmp/old-%%j.out %s" % SBATCH).strip()
    new = sh(CTL, "sbatch --parsable --chdir=/tmp -J new -N1 --constraint=tops_2.5.140 -o /tmp/new-%j.out "
                  "--wrap 'cat /etc/ansible/facts.d/topsrider.fact'").strip()
    time.sleep(4)
    assert job(train)["JobState"] == "RUNNING" and deployed(N1) == deployed(N2) == "2.5.136"
    stop_jobs(N1, N2)  # the training job comes to its end
    info = ended(train)
    rc, log = finish(proc, "rollout-upgrade.log")
    assert rc == 0, log[-6000:]

    # the job: finished by itself, every rank's result whole
    assert info["JobState"] == "COMPLETED" and info["ExitCode"] == "0:0" and info["Restarts"] == "0", info
    held_results(N1, "/tmp/train-%s.out" % train, 4)
    # its nodes were upgraded only after it ended; node3 before
    end = info["EndTime"]
    assert installed_at(N3, "2.5.140") < end <= min(installed_at(N1, "2.5.140"), installed_at(N2, "2.5.140"))
    # every node at the release, resumed, tagged
    for n in NODES:
        assert deployed(n) == "2.5.140" and features(n) == ["tops_2.5.140"], n
        assert not node_state(n)[0].startswith("drain"), node_state(n)
    # never two releases in one job: the 2.5.136 job never started, the 2.5.140 one ran on an upgraded node
    old_info = job(old)
    assert old_info["JobState"] == "PENDING" and old_info["Restarts"] == "0", old_info
    sh(CTL, "scancel %s" % old)
    new_info = ended(new, 120)
    assert new_info["JobState"] == "COMPLETED", new_info
    assert installed_at(new_info["NodeList"], "2.5.140") < new_info["StartTime"], new_info
    assert '"version": "2.5.140"' in sh(new_info["NodeList"], "cat /tmp/new-%s.out" % new)

    data, hosts = report("deploy")
    assert data["status"] == "ok" and data["summary"]["ok"] == 3, data["summary"]
    slurm = data["summary"]["slurm"]
    assert slurm["drained"] == 3 and slurm["resumed"] == 3 and slurm["jobs_waited_for"] == 1, slurm
    assert slurm["jobs_killed_or_requeued"] == 0 and slurm["jobs_on_two_releases"] == 0, slurm
    assert slurm["other_drains"] == 0 == slurm["other_drains_kept"]
    waited = hosts[N1]["slurm"]["jobs_waited"]
    assert [(j["id"], j["end_state"]) for j in waited] == [(train, "COMPLETED")], waited
    # one line per poll while it waited, naming the job and its time left
    assert re.search(r"^%s: deploy \S+: waiting until the node is free: %s runs 1 job\(s\): %s \(train, root, "
                     r"[\d:-]+ left\); 2 process\(es\) hold cards \(Slurm job %s: pids [\d,-]+ on gcu0-1\); "
                     r"waited \d+ s of 14400 s$" % (N1, N1, train, train), log, re.M), log
    assert "Slurm: 3 node(s) drained by this run, 3 resumed; 1 job(s) waited for, 0 killed or requeued" in log


def test_2_rollback_never_resumes_an_administrators_drain_and_defers_a_busy_node(host, runs):
    for n in NODES:
        sh(n, "rm -f %s" % STOP)
    sh(CTL, "scontrol update nodename=%s state=drain reason='admin: bios update'" % N1)
    busy = submit_training("busy", [N3], extra="--constraint=tops_2.5.140")
    wait_for("the job on node3", lambda: job(busy)["JobState"] == "RUNNING", 60)

    proc = playbook(host, runs, "rollback.yml", "rollout-rollback.log", "-e", "topsrider_serial=3",
                    "-e", "topsrider_drain_timeout=20", "-e", "topsrider_deferred_resume=true")
    # an administrator drains node2 while the run holds it (the reason is this run's)
    wait_for("node2 drained by the rollback", lambda: node_state(N2)[1].startswith("gcu.topsrider rollback "), 300,
             step=0.5)
    sh(CTL, "scontrol update nodename=%s state=drain reason='admin: swap cable'" % N2)
    rc, log = finish(proc, "rollout-rollback.log")
    assert rc == 0, log[-6000:]

    data, hosts = report("rollback")
    assert data["status"] == "deferred", data["summary"]
    assert hosts[N1]["result"] == hosts[N2]["result"] == "ok" and hosts[N3]["result"] == "deferred", hosts
    assert deployed(N1) == deployed(N2) == "2.5.136" and deployed(N3) == "2.5.140"
    # drains by others: never resumed, their reasons as they set them
    assert node_state(N1) == ("drained", "admin: bios update")
    assert node_state(N2) == ("drained", "admin: swap cable")
    assert features(N1) == features(N2) == ["tops_2.5.136"]
    # the busy node: nothing changed, resumed as it was (topsrider_deferred_resume), its job untouched
    assert node_state(N3)[0] in ("allocated", "mixed") and features(N3) == ["tops_2.5.140"]
    assert job(busy)["JobState"] == "RUNNING"
    assert "deferred, nothing was changed: in use after topsrider_drain_timeout (20 s): Slurm job(s) %s" % busy \
        in hosts[N3]["detail"]
    slurm = data["summary"]["slurm"]
    assert slurm["other_drains"] == 2 and slurm["other_drains_kept"] == 2, slurm
    assert slurm["jobs_killed_or_requeued"] == 0 and slurm["jobs_on_two_releases"] == 0, slurm
    assert hosts[N1]["slurm"]["other_drain"] == "before" and hosts[N2]["slurm"]["other_drain"] == "during"
    assert "Status: deferred" in log

    stop_jobs(N3)
    info = ended(busy)
    assert info["JobState"] == "COMPLETED" and info["ExitCode"] == "0:0" and info["Restarts"] == "0", info
    held_results(N3, "/tmp/busy-%s.out" % busy, 2)
    for n in (N1, N2):  # the administrator gives their nodes back
        sh(CTL, "scontrol update nodename=%s state=resume" % n)


def test_3_a_deferred_node_stays_draining_and_the_next_run_upgrades_it(host, runs):
    for n in NODES:
        sh(n, "rm -f %s" % STOP)
    busy = submit_training("late", [N1], extra="--constraint=tops_2.5.136")
    wait_for("the job on node1", lambda: job(busy)["JobState"] == "RUNNING", 60)
    args = ("-e", "topsrider_bundle_dir=%s/2.5.140" % BUNDLES, "-e", "topsrider_drain_timeout=20")
    rc, log = finish(playbook(host, runs, "deploy.yml", "rollout-deferred.log", *args, limit=N1), "rollout-deferred.log")
    assert rc == 0, log[-6000:]
    data, hosts = report("deploy")
    assert data["status"] == "deferred" and hosts[N1]["result"] == "deferred", hosts
    # left draining under this run's reason, which says what happens next; its job untouched
    state, reason = node_state(N1)
    assert state == "draining" and re.match(r"^gcu\.topsrider deploy \S+: deferred: still in use", reason), reason
    assert "the next deploy" in reason
    assert deployed(N1) == "2.5.136" and job(busy)["JobState"] == "RUNNING"

    stop_jobs(N1)
    assert ended(busy)["JobState"] == "COMPLETED"
    # the plain re-run; the node is proven at the collective level on its (free) cards before it is resumed
    rc, log = finish(playbook(host, runs, "deploy.yml", "rollout-next.log", *(args + (
        "-e", "topsrider_probe_level=collective")), limit=N1), "rollout-next.log")
    assert rc == 0, log[-6000:]
    data, hosts = report("deploy")
    assert data["status"] == "ok" and hosts[N1]["result"] == "ok" and hosts[N1]["detail"] == "deployed 2.5.140"
    assert deployed(N1) == "2.5.140" and features(N1) == ["tops_2.5.140"] and back_in_service(N1)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", log)
    assert re.search(r"TASK \[Prove ECCL on every card at topsrider_probe_level[^\n]*\n\s*(ok|changed): \[%s\]" % N1, plain), plain[-6000:]
    # it took the earlier run's drain over, and gave the node back
    assert hosts[N1]["slurm"]["owner_before"] == "collection" and hosts[N1]["slurm"]["resumed"]


def test_4_a_node_that_fails_after_its_change_is_restored_and_stays_drained(host, runs):
    """node2 (2.5.136) gets the bundle whose tops-eccl postinst fails: restored, and left drained with
    the failure in the run's reason (what to do next), not resumed, its feature unchanged."""
    rc, log = finish(playbook(host, runs, "deploy.yml", "rollout-failed.log", "-e",
                              "topsrider_bundle_dir=%s/2.5.140-broken-postinst" % BUNDLES, limit=N2),
                     "rollout-failed.log")
    assert rc == 2, log[-6000:]
    data, hosts = report("deploy")
    assert data["status"] == "failed" and hosts[N2]["result"] == "failed" and "restored" in hosts[N2]["detail"]
    assert deployed(N2) == "2.5.136" and features(N2) == ["tops_2.5.136"]
    state, reason = node_state(N2)
    assert state == "drained" and re.match(r"^gcu\.topsrider deploy \S+: FAILED, see reports/deploy-\S+\.md: "
                                           r"restored to the state before the deploy", reason), reason
    assert hosts[N2]["slurm"]["drained_by_run"] and not hosts[N2]["slurm"]["resumed"]
    # what the reason says: fix it, deploy again, and the run resumes the node
    rc, log = finish(playbook(host, runs, "deploy.yml", "rollout-fixed.log", "-e",
                              "topsrider_bundle_dir=%s/2.5.140" % BUNDLES, limit=N2), "rollout-fixed.log")
    assert rc == 0, log[-6000:]
    assert deployed(N2) == "2.5.140" and features(N2) == ["tops_2.5.140"] and back_in_service(N2)
