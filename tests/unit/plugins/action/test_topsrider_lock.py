"""plugins/action/topsrider_lock.py: a free lock is one call; a held one is polled with a line per poll until
it is free (the run waited for is returned) or the timeout passed (the module's message, with the real timeout);
any other failure is returned at once."""
from ansible_collections.gcu.topsrider.plugins.action.topsrider_lock import poll_delay, wait, waiting_line

from fake_clock import Clock

HELD = {"id": "20261126T050639Z", "token": "t1", "kind": "deploy", "user": "ops", "controller": "ctl",
        "since": "2026-11-26T05:06:39Z"}
LOCKED = {"failed": True, "locked": True, "holder": HELD, "msg": "This node is locked by ... within 0 s ..."}
TAKEN = {"changed": True, "holder": {"id": "r2"}, "waited_for": None, "broken": None}


def run(results, timeout=600, judge=None, asked=None):
    clock, shown, calls = Clock(), [], iter(results)

    def take(takeover):
        if asked is not None:
            asked.append(takeover)
        return dict(next(calls))
    out = wait("t20-node-2", timeout, "/var/lib/topsrider/run.lock", take, now=clock,
               sleep=clock.sleep, show=shown.append, judge=judge)
    return out, shown, clock


def test_a_free_lock_is_one_call_and_no_line():
    out, shown, dummy = run([TAKEN])
    assert out == TAKEN and shown == []


def test_a_held_lock_is_polled_with_a_line_each_time_then_taken():
    out, shown, clock = run([LOCKED, LOCKED, LOCKED, TAKEN])
    assert shown == [
        "t20-node-2: waiting for the node lock, held by deploy run 20261126T050639Z (ops@ctl, since "
        "2026-11-26T05:06:39Z); 0 s of 600 s",
        "t20-node-2: waiting for the node lock, held by deploy run 20261126T050639Z (ops@ctl, since "
        "2026-11-26T05:06:39Z); 1 s of 600 s",
        "t20-node-2: waiting for the node lock, held by deploy run 20261126T050639Z (ops@ctl, since "
        "2026-11-26T05:06:39Z); 3 s of 600 s"]
    assert out["changed"] and out["waited_for"] == HELD and clock.now == 7


def test_the_timeout_fails_with_the_modules_message_and_the_real_timeout():
    out, shown, dummy = run([LOCKED] * 100, timeout=30)
    assert out["failed"] and out["locked"]
    assert out["msg"].startswith("This node is locked by deploy run 20261126T050639Z (ops@ctl, since ")
    assert "did not end within 30 s" in out["msg"] and "-e topsrider_lock_break=20261126T050639Z" in out["msg"]
    assert all(line.endswith("of 30 s") for line in shown) and len(shown) == 6


def test_an_unreadable_lock_is_named_as_such():
    unreadable = dict(LOCKED, holder=None)
    out, shown, dummy = run([unreadable] * 10, timeout=2)
    assert "an unknown run (the lock file is not readable JSON)" in shown[0]
    assert "locked by an unknown run" in out["msg"] and "topsrider_lock_break=unreadable" in out["msg"]


def test_another_failure_is_returned_at_once():
    bad = {"failed": True, "msg": "holder needs id and token"}
    out, shown, dummy = run([bad])
    assert out == bad and shown == []


def test_polls():
    assert [poll_delay(n) for n in range(6)] == [1, 2, 4, 8, 10, 10]
    assert waiting_line("n", "unreadable", 3.9, 10) == (
        "n: waiting for the node lock, held by an unknown run (the lock file is not readable JSON); 3 s of 10 s")


def test_a_holder_judged_gone_is_taken_over_at_once_by_its_token():
    asked = []
    took = dict(TAKEN, took_over={"holder": HELD, "reason": "gone", "note": "interrupted deploy run ... found"})
    out, shown, clock = run([LOCKED, took], judge=lambda held: "its ansible-playbook (pid 1 on ctl) is gone",
                            asked=asked)
    assert asked == [None, {"token": "t1", "reason": "its ansible-playbook (pid 1 on ctl) is gone"}]
    assert out == took and shown == [] and clock.now == 0


def test_a_live_holder_is_waited_for():
    asked = []
    out, shown, clock = run([LOCKED, LOCKED, TAKEN], judge=lambda held: None, asked=asked)
    assert asked == [None, None, None] and len(shown) == 2 and out["waited_for"] == HELD


def test_timeout_zero_is_one_try():
    out, shown, clock = run([LOCKED], timeout=0)
    assert out["failed"] and "did not end within 0 s" in out["msg"] and shown == []
