"""plugins/action/job_progress.py: a line per poll while the job runs, the job's own result when it ends,
a failure at the timeout, and the shared poll schedule (plugin_utils/_async_job.py)."""
from ansible_collections.gcu.topsrider.plugins.action.job_progress import job_result, progress_line, wait
from ansible_collections.gcu.topsrider.plugins.plugin_utils._async_job import poll_delay

from fake_clock import Clock

ARGS = {"label": "ECCL probe at level collective", "timeout": 360.0, "interval": 10.0}


def run(statuses, args=None):
    clock, shown, reads = Clock(), [], iter(statuses)
    out = wait("t20-node-1", args or ARGS, lambda: next(reads), now=clock, sleep=clock.sleep, show=shown.append)
    return out, shown, clock


def test_a_line_per_poll_then_the_jobs_own_result():
    running = {"ansible_job_id": "j1", "started": 1, "finished": 0}
    done = {"ansible_job_id": "j1", "started": 1, "finished": 1, "results_file": "/root/.ansible_async/j1",
            "changed": False, "healthy": True, "problems": [], "collective": {"results": [1]}}
    out, shown, clock = run([running, running, running, done])
    assert shown == ["t20-node-1: ECCL probe at level collective: running, 0 s of 360 s",
                     "t20-node-1: ECCL probe at level collective: running, 0 s of 360 s",
                     "t20-node-1: ECCL probe at level collective: running, 1 s of 360 s",
                     "t20-node-1: ECCL probe at level collective: done after 2 s"]
    assert out == {"changed": False, "finished": 1, "healthy": True, "problems": [], "collective": {"results": [1]}}
    assert clock.slept == [0.5, 0.5, 1]


def test_a_failed_job_fails_with_its_own_message():
    out, shown, dummy = run([{"ansible_job_id": "j", "finished": 1, "failed": True, "msg": "rank 3 timed out"}])
    assert out == {"failed": True, "finished": 1, "msg": "rank 3 timed out"}
    assert shown == ["t20-node-1: ECCL probe at level collective: failed after 0 s"]


def test_the_timeout_fails_and_says_what_was_waited_for():
    out, shown, dummy = run([{"finished": 0}] * 100, dict(ARGS, timeout=5.0))
    assert out["failed"] and out["finished"] == 0 and out["msg"].startswith("t20-node-1: ECCL probe at level collective: still running after ")
    assert "(timeout 5 s)" in out["msg"]
    assert all(line.endswith("of 5 s") for line in shown)


def test_job_result_keeps_the_modules_keys_only():
    assert job_result({"ansible_job_id": "j", "finished": 1, "started": 1, "results_file": "f", "rc": 0}) == {
        "finished": 1, "rc": 0}


def test_progress_line():
    assert progress_line("n1", "x", 12.7, 360) == "n1: x: running, 12 s of 360 s"


def test_polls_start_fast_and_settle_at_the_interval():
    assert [poll_delay(n, 10) for n in range(10)] == [0.5, 0.5, 1, 1, 2, 2, 4, 4, 8, 8]
    assert poll_delay(10, 10) == 10 and poll_delay(1000, 10) == 10
