"""plugins/module_utils/_lock.py: the node lock (one change at a time)."""
import json

import pytest

from ansible_collections.gcu.topsrider.plugins.module_utils._lock import (
    LockError, acquire, describe, read_holder, release)
from fake_clock import Clock

A = {"id": "20260101T000000Z", "token": "aaa", "kind": "deploy", "user": "op", "controller": "ctl", "since": "T0"}
B = {"id": "20260101T000000Z", "token": "bbb", "kind": "deploy", "user": "op2", "controller": "ctl2", "since": "T1"}


def test_acquire_and_release(tmp_path):
    path = str(tmp_path / "run.lock")
    assert acquire(path, A, 0) == (True, None, None)
    assert read_holder(path) == A
    assert release(path, A) == (True, None)
    assert read_holder(path) is None


def test_same_run_takes_it_again_without_change(tmp_path):
    path = str(tmp_path / "run.lock")
    acquire(path, A, 0)
    assert acquire(path, dict(A), 0) == (False, None, None)


def test_other_run_waits_then_fails_naming_the_holder(tmp_path):
    """Two runs started in the same second share an id; the token tells them apart."""
    path = str(tmp_path / "run.lock")
    acquire(path, A, 0)
    clock = Clock()
    with pytest.raises(LockError) as e:
        acquire(path, B, 10, clock=clock, sleep=clock.sleep)
    assert e.value.args[0] == A
    assert sum(clock.slept) >= 10
    assert "deploy run 20260101T000000Z (op@ctl, since T0)" == describe(e.value.args[0])


def test_waits_until_the_holder_releases(tmp_path):
    path = str(tmp_path / "run.lock")
    acquire(path, A, 0)
    clock = Clock()

    def sleep(s):
        clock.sleep(s)
        if clock.now >= 4:
            release(path, A)
    changed, waited_for, broken = acquire(path, B, 60, clock=clock, sleep=sleep)
    assert changed and waited_for == A and broken is None
    assert read_holder(path) == B


def test_release_never_removes_another_runs_lock(tmp_path):
    path = str(tmp_path / "run.lock")
    acquire(path, A, 0)
    assert release(path, B) == (False, A)
    assert read_holder(path) == A


def test_break_id_removes_only_that_runs_lock(tmp_path):
    path = str(tmp_path / "run.lock")
    acquire(path, A, 0)
    changed, waited, broken = acquire(path, B, 0, break_id=A["id"])
    assert changed and broken == A
    with pytest.raises(LockError):
        acquire(path, A, 0, break_id="someone-else")


def test_unreadable_lock_file_is_still_a_lock(tmp_path):
    path = tmp_path / "run.lock"
    path.write_text("{not json")
    with pytest.raises(LockError) as e:
        acquire(str(path), A, 0)
    assert e.value.args[0] == "unreadable"
    assert "unknown run" in describe("unreadable")
    assert json.loads(json.dumps(A)) == A
