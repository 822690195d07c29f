"""plugins/module_utils/_lock.py: the node lock (one change at a time), never half-written, and every
decision on a lock whose holder may be gone (issue 31)."""
import errno
import json
import os

import pytest

from ansible_collections.gcu.topsrider.plugins.module_utils import _lock
from ansible_collections.gcu.topsrider.plugins.module_utils._lock import (
    LockError, acquire, check_mode_warning, describe, judge_node, judge_process, locked_message, process_start,
    read_holder, release, took_over_line)
from fake_clock import Clock

A = {"id": "20260101T000000Z", "token": "aaa", "kind": "deploy", "user": "op", "controller": "ctl", "since": "T0"}
B = {"id": "20260101T000000Z", "token": "bbb", "kind": "deploy", "user": "op2", "controller": "ctl2", "since": "T1"}
# The identity fields the action adds: this controller, its ansible-playbook process.
CTL = {"controller": "ctl", "boot_id": "boot-1", "pidns": "pid:[4026531836]"}
A_CTL = dict(A, pid=4242, pid_start="777", **CTL)
ME = dict(B, pid=5151, pid_start="888", **CTL)


def lock(tmp_path):
    return str(tmp_path / "run.lock")


def test_acquire_and_release(tmp_path):
    path = lock(tmp_path)
    assert acquire(path, A, 0) == (True, None, None, None)
    assert read_holder(path) == A
    assert sorted(os.listdir(str(tmp_path))) == ["run.lock"]  # the temporary file is gone
    assert release(path, A) == (True, None)
    assert read_holder(path) is None


def test_same_run_takes_it_again_without_change(tmp_path):
    path = lock(tmp_path)
    acquire(path, A, 0)
    assert acquire(path, dict(A), 0) == (False, None, None, None)


def test_same_run_acquiring_again_renews_its_lease(tmp_path):
    path = lock(tmp_path)
    clock = Clock(1000.0)
    acquire(path, dict(A, lease_s=600), 0, clock=clock)
    assert read_holder(path)["renewed"] == 1000.0 and read_holder(path)["lease_s"] == 600
    clock.now = 1500.0
    assert acquire(path, dict(A, lease_s=600), 0, clock=clock)[0] is False
    assert read_holder(path) == dict(A, lease_s=600, renewed=1500.0)


def test_other_run_waits_then_fails_naming_the_holder(tmp_path):
    """Two runs started in the same second share an id; the token tells them apart."""
    path = lock(tmp_path)
    acquire(path, A, 0)
    clock = Clock()
    with pytest.raises(LockError) as e:
        acquire(path, B, 10, clock=clock, sleep=clock.sleep)
    assert e.value.args[0] == A
    assert sum(clock.slept) >= 10
    assert "deploy run 20260101T000000Z (op@ctl, since T0)" == describe(e.value.args[0])


def test_waits_until_the_holder_releases(tmp_path):
    path = lock(tmp_path)
    acquire(path, A, 0)
    clock = Clock()

    def sleep(s):
        clock.sleep(s)
        if clock.now >= 4:
            release(path, A)
    changed, waited_for, broken, took_over = acquire(path, B, 60, clock=clock, sleep=sleep)
    assert changed and waited_for == A and broken is None and took_over is None
    assert read_holder(path) == B


def test_release_never_removes_another_runs_lock(tmp_path):
    path = lock(tmp_path)
    acquire(path, A, 0)
    assert release(path, B) == (False, A)
    assert read_holder(path) == A


def test_break_id_removes_only_that_runs_lock(tmp_path):
    path = lock(tmp_path)
    acquire(path, A, 0)
    changed, waited, broken, took_over = acquire(path, B, 0, break_id=A["id"])
    assert changed and broken == A and took_over is None
    with pytest.raises(LockError):
        acquire(path, A, 0, break_id="someone-else")
    assert sorted(os.listdir(str(tmp_path))) == ["run.lock"]


# ---- a lock file that is not readable JSON (an older version's writer that died) ----

def test_unreadable_young_lock_file_is_still_a_lock(tmp_path):
    path = tmp_path / "run.lock"
    path.write_text("{not json")
    os.utime(str(path), (990.0, 990.0))
    clock = Clock(1000.0)
    with pytest.raises(LockError) as e:
        acquire(str(path), A, 0, clock=clock)
    assert e.value.args[0] == "unreadable"
    assert "unknown run" in describe("unreadable")
    assert judge_node("unreadable", A, 1049.0, 990.0) is None


def test_unreadable_lock_file_past_the_grace_is_taken_over_and_said_so(tmp_path):
    path = tmp_path / "run.lock"
    path.write_text("\0\0garbage")
    os.utime(str(path), (900.0, 900.0))
    clock = Clock(1000.0)
    changed, waited, broken, took_over = acquire(str(path), A, 600, clock=clock, sleep=clock.sleep)
    assert changed and clock.slept == [] and took_over == {
        "holder": "unreadable", "reason": "the lock file is not readable JSON and is 100 s old",
        "note": "an unreadable node lock found (the lock file is not readable JSON and is 100 s old), taken over"}
    assert read_holder(str(path)) == A


def test_unreadable_lock_file_is_taken_over_once_it_ages_while_waiting(tmp_path):
    """Never a reason to wait the whole timeout: at most the grace."""
    path = tmp_path / "run.lock"
    path.write_text("{")
    os.utime(str(path), (1000.0, 1000.0))
    clock = Clock(1000.0)
    changed, waited, broken, took_over = acquire(str(path), A, 600, clock=clock, sleep=clock.sleep)
    assert changed and took_over["holder"] == "unreadable"
    assert 1060 <= clock.now < 1064


# ---- the same controller: the holder's ansible-playbook process ----

def test_same_controller_dead_process_is_stale():
    assert judge_process(A_CTL, ME, lambda pid: None) == "its ansible-playbook (pid 4242 on ctl) is gone"


def test_same_controller_live_process_is_not_stale_even_past_its_lease():
    held = dict(A_CTL, renewed=0.0, lease_s=60)
    assert judge_process(held, ME, lambda pid: "777") is None
    assert judge_node(held, ME, 10 ** 6, None) is None


def test_reused_pid_with_another_start_time_is_stale():
    assert judge_process(A_CTL, ME, lambda pid: "999") == (
        "its ansible-playbook (pid 4242 on ctl) is gone; that pid is another process now")


def test_another_controller_or_boot_or_namespace_is_not_judged_by_process():
    for other in (dict(A_CTL, controller="ctl2"), dict(A_CTL, boot_id="boot-2"), dict(A_CTL, pidns="pid:[1]"),
                  dict(A_CTL, boot_id=None), A):
        assert judge_process(other, ME, lambda pid: None) is None, other
    assert judge_process(dict(A_CTL, pid=None), ME, lambda pid: None) is None


def test_takeover_by_the_controllers_judgement_names_the_dead_run(tmp_path):
    path = lock(tmp_path)
    acquire(path, A_CTL, 0)
    reason = judge_process(read_holder(path), ME, lambda pid: None)
    changed, waited, broken, took_over = acquire(path, ME, 0, takeover={"token": "aaa", "reason": reason})
    assert changed and took_over == {
        "holder": A_CTL, "reason": reason,
        "note": "interrupted deploy run 20260101T000000Z found (its ansible-playbook (pid 4242 on ctl) is gone)"}
    assert read_holder(path) == ME
    assert took_over_line(A_CTL, reason) == (
        "took over the lock of deploy run 20260101T000000Z (op@ctl, since T0): its ansible-playbook "
        "(pid 4242 on ctl) is gone")
    assert sorted(os.listdir(str(tmp_path))) == ["run.lock"]


def test_takeover_for_another_token_takes_nothing(tmp_path):
    """The judgement was about a holder that has since gone; the lock another run holds now stays."""
    path = lock(tmp_path)
    acquire(path, A_CTL, 0)
    with pytest.raises(LockError):
        acquire(path, ME, 0, takeover={"token": "not-aaa", "reason": "gone"})
    assert read_holder(path) == A_CTL


# ---- another controller: the lease ----

def test_other_controller_within_its_lease_is_waited_for(tmp_path):
    path = lock(tmp_path)
    acquire(path, dict(A_CTL, controller="ctl2", lease_s=3600), 0, clock=Clock(1000.0))
    clock = Clock(1000.0 + 3600)
    with pytest.raises(LockError) as e:
        acquire(path, dict(ME, lease_s=3600), 0, clock=clock)
    assert e.value.args[0]["renewed"] == 1000.0
    msg = locked_message(e.value.args[0], 0, path)
    assert "Its lease (3600 s, renewed by that run while it runs) expires at 1970-01-01T01:16:40Z" in msg


def test_other_controller_past_its_lease_is_taken_over(tmp_path):
    path = lock(tmp_path)
    other = dict(A_CTL, controller="ctl2", lease_s=3600)
    acquire(path, other, 0, clock=Clock(1000.0))
    clock = Clock(1000.0 + 3600 + 5)
    changed, waited, broken, took_over = acquire(path, dict(ME, lease_s=3600), 600, clock=clock, sleep=clock.sleep)
    assert changed and clock.slept == []
    assert took_over["holder"] == dict(other, renewed=1000.0)
    assert took_over["reason"] == "its lease of 3600 s from ctl2 expired 5 s ago (at 1970-01-01T01:16:40Z, node time)"
    assert read_holder(path) == dict(ME, lease_s=3600, renewed=4605.0)


def test_a_lock_without_a_lease_is_never_expired():
    """An older version's holder: waited for, as before (topsrider_lock_break decides)."""
    assert judge_node(A, ME, 10 ** 9, 0.0) is None
    assert judge_node(dict(A, renewed="x", lease_s=60), ME, 10 ** 9, 0.0) is None


# ---- never half-written ----

def test_a_full_disk_leaves_no_lock_file(tmp_path, monkeypatch):
    path = lock(tmp_path)

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(_lock.os, "write", full)
    with pytest.raises(OSError) as e:
        acquire(path, A, 600)
    assert e.value.errno == errno.ENOSPC
    assert os.listdir(str(tmp_path)) == []


def test_a_disk_that_fills_mid_write_leaves_no_lock_file(tmp_path, monkeypatch):
    """A short write (the disk filled after some bytes), then ENOSPC: nothing half-written is linked."""
    path = lock(tmp_path)
    real_write = os.write
    calls = []

    def short_then_full(fd, data):
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, data[:5])
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(_lock.os, "write", short_then_full)
    with pytest.raises(OSError) as e:
        acquire(path, A, 600)
    assert e.value.errno == errno.ENOSPC and len(calls) == 2
    assert os.listdir(str(tmp_path)) == []


def test_a_short_write_is_finished_before_the_lock_is_linked(tmp_path, monkeypatch):
    path = lock(tmp_path)
    real_write = os.write

    def short(fd, data):
        return real_write(fd, data[:7])
    monkeypatch.setattr(_lock.os, "write", short)
    assert acquire(path, A, 600)[0] is True
    with open(path) as f:
        assert json.loads(f.read())["token"] == A["token"]


def test_a_failed_link_leaves_no_temporary_file(tmp_path, monkeypatch):
    path = lock(tmp_path)

    def no_link(src, dst):
        raise OSError(errno.EPERM, "Operation not permitted")
    monkeypatch.setattr(_lock.os, "link", no_link)
    with pytest.raises(OSError):
        acquire(path, A, 600)
    assert os.listdir(str(tmp_path)) == []


def test_take_away_puts_back_a_lock_another_run_took_meanwhile(tmp_path):
    path = lock(tmp_path)
    acquire(path, B, 0)
    assert _lock._take_away(path, A, ME) is False
    assert read_holder(path) == B and sorted(os.listdir(str(tmp_path))) == ["run.lock"]


# ---- the process start time ----

def test_process_start_reads_field_22_after_the_command_name(tmp_path):
    (tmp_path / "77").mkdir()
    # A command name with spaces and parentheses: fields are counted after its last ')'.
    fields = ["S", "1", "77", "77", "0", "-1", "4194560", "0", "0", "0", "0", "0", "0", "0", "0", "20", "0", "1",
              "0", "123456", "1000"]
    (tmp_path / "77" / "stat").write_text("77 (a) b (c)) %s\n" % " ".join(fields))
    assert process_start(77, str(tmp_path)) == "123456"
    assert process_start(78, str(tmp_path)) is None
    assert process_start(os.getpid()) == process_start(os.getpid())
    assert process_start(os.getpid()) is not None


def test_check_mode_says_who_holds_the_lock_or_that_a_real_run_takes_it_over(tmp_path):
    path = tmp_path / "run.lock"
    assert check_mode_warning(str(path), None, A) is None
    assert check_mode_warning(str(path), dict(A), A) is None
    assert check_mode_warning(str(path), B, A) == (
        "another run is changing this node: deploy run 20260101T000000Z (op2@ctl2, since T1); what check mode reads "
        "may change under it")
    path.write_text("{")
    os.utime(str(path), (100.0, 100.0))
    assert check_mode_warning(str(path), "unreadable", A, now=1000.0) == (
        "the lock of an unknown run (the lock file is not readable JSON) is stale (the lock file is not readable "
        "JSON and is 900 s old): a run that is not in check mode takes it over")
