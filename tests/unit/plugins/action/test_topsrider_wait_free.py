"""plugins/action/topsrider_wait_free.py: the wait for a free node, against a
scripted sequence of reads (the jobs on the node, the processes holding cards,
scontrol's record of a job once it left): one line per poll, a bounded wait,
how each job ended, jobs on two releases, and no wait in check mode."""
from ansible_collections.gcu.topsrider.plugins.action.topsrider_wait_free import (
    in_use_text, poll_delay, progress_line, wait)

ARGS = {"slurm_node": "n1", "timeout": 100.0, "interval": 30.0, "label": "deploy X", "feature_prefix": "tops_"}
JOB = {"id": "17", "state": "RUNNING", "user": "alice", "time_left": "0:01:00", "name": "train"}
HOLDER = {"pid": 4242, "user": "alice", "command": "python train.py", "devices": ["gcu0"], "cards": [0],
          "slurm_job_id": "17"}


class Script(object):
    """Reads in order; each read costs `step` seconds of a fake clock."""

    def __init__(self, reads, step=10.0):
        self.reads, self.step, self.t, self.asked, self.lines, self.slept = list(reads), step, 0.0, [], [], []

    def read(self, job_ids):
        self.asked.append(list(job_ids))
        self.t += self.step
        return self.reads.pop(0) if len(self.reads) > 1 else self.reads[0]

    def now(self):
        return self.t

    def sleep(self, s):
        self.slept.append(s)
        self.t += s


def state(jobs=(), holders=(), records=None, two=()):
    return {"holders": {"processes": list(holders), "error": None},
            "slurm": {"node": {"name": "n1", "drain": True}, "jobs": list(jobs), "records": records or {},
                      "cluster": {"two_releases": list(two)}}}


def go(script, args=None, check_mode=False):
    return wait("node1", args or ARGS, script.read, check_mode, now=script.now, sleep=script.sleep,
                show=script.lines.append)


def test_waits_for_the_job_then_says_how_it_ended():
    s = Script([state([JOB], [HOLDER]), state([JOB], [HOLDER], {"17": {"state": "RUNNING", "restarts": 0}}),
                state([], [], {"17": {"state": "COMPLETED", "restarts": 0, "exit_code": "0:0"}})])
    r = go(s)
    assert r["free"] and not r["timed_out"] and r["in_use"] == ""
    assert s.asked == [[], ["17"], ["17"]]  # the record of every job seen, once it is known
    assert r["jobs_seen"] == [{"id": "17", "name": "train", "user": "alice", "left": True, "end_state": "COMPLETED",
                               "exit_code": "0:0", "restarts_before": 0, "restarts": 0, "stopped_from_outside": False}]
    assert s.lines[0] == ("node1: deploy X: waiting until the node is free: n1 runs 1 job(s): 17 (train, alice, "
                          "0:01:00 left); 1 process(es) hold cards (Slurm job 17: pid 4242 on gcu0); "
                          "waited 10 s of 100 s")
    assert s.lines[-1] == "node1: deploy X: free after %d s" % r["waited_s"]
    assert len(s.lines) == 3


def test_a_job_requeued_from_outside_is_named():
    s = Script([state([JOB]), state([JOB], records={"17": {"state": "RUNNING", "restarts": 0}}),
                state([], records={"17": {"state": "PENDING", "restarts": 1}})])
    assert go(s)["jobs_seen"][0]["stopped_from_outside"] is True


def test_bounded_by_the_timeout_and_never_stops_anything():
    s = Script([state([JOB], [HOLDER])], step=10.0)
    r = go(s, dict(ARGS, timeout=60.0))
    assert not r["free"] and r["timed_out"] and 60.0 <= r["waited_s"] < 80.0
    assert r["jobs_seen"][0]["left"] is False and r["jobs_seen"][0]["end_state"] is None
    assert r["in_use"].startswith("Slurm job(s) 17 (train, alice, 0:01:00 left); pid 4242")
    assert all(x <= 30.0 for x in s.slept)


def test_one_look_without_a_scheduler_and_in_check_mode():
    s = Script([state(holders=[HOLDER])])
    r = go(s, dict(ARGS, slurm_node=None, timeout=0.0))
    assert not r["free"] and r["timed_out"] and s.slept == [] and len(s.asked) == 1
    s = Script([state([JOB])])
    r = go(s, check_mode=True)
    assert not r["free"] and not r["timed_out"] and len(s.asked) == 1 and s.lines == []


def test_jobs_seen_on_two_releases_are_collected():
    mixed = {"id": "21", "nodes": ["n1", "n2"], "releases": ["2.5.136", "2.5.140"]}
    s = Script([state([JOB], two=[mixed]), state([])])
    assert go(s)["two_releases"] == [mixed]


def test_polls_start_fast_and_settle_at_the_interval():
    assert [poll_delay(p, 30) for p in range(7)] == [1, 2, 4, 8, 16, 30, 30]


def test_lines_name_many_jobs_briefly():
    jobs = [dict(JOB, id=str(i), time_left="UNLIMITED") for i in range(6)]
    line = progress_line("h", "", "n1", jobs, [], 5, 60)
    assert "n1 runs 6 job(s)" in line and "and 2 more" in line and "no limit left" in line
    assert in_use_text([], []) == ""
