"""plugins/modules/topsrider_lock.py: what the module returns and says when it takes a stale lock over, and
a full disk failing with a clear message and no lock file (issue 31)."""
import errno
import os

import pytest

from ansible.module_utils import basic
from ansible_collections.gcu.topsrider.plugins.module_utils import _lock
from ansible_collections.gcu.topsrider.plugins.modules import topsrider_lock
from utils import AnsibleExitJson, AnsibleFailJson, exit_json, fail_json, set_module_args

HOLDER = {"id": "r2", "token": "t2", "kind": "deploy", "user": "ops", "controller": "ctl", "since": "S"}


def run(monkeypatch, **args):
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)
    warned = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, w: warned.append(w))
    with set_module_args(dict({"holder": HOLDER, "timeout": 0}, **args)):
        with pytest.raises((AnsibleExitJson, AnsibleFailJson)) as e:
            topsrider_lock.main()
    return e.value.args[0], warned


def test_a_stale_unreadable_lock_is_taken_over_and_said_so(tmp_path, monkeypatch):
    path = tmp_path / "run.lock"
    path.write_text("{\"id\": \"20")
    os.utime(str(path), (1, 1))
    out, warned = run(monkeypatch, path=str(path), lease=3600)
    assert out["changed"] and out["took_over"]["holder"] == "unreadable"
    assert out["took_over"]["note"].startswith("an unreadable node lock found (the lock file is not readable JSON")
    assert warned == ["took over the lock of an unknown run (the lock file is not readable JSON): "
                      + out["took_over"]["reason"]]
    held = _lock.read_holder(str(path))
    assert held["id"] == "r2" and held["lease_s"] == 3600 and held["renewed"] > 1


def test_the_controllers_takeover_names_the_dead_run(tmp_path, monkeypatch):
    path = str(tmp_path / "run.lock")
    dead = dict(HOLDER, id="r1", token="t1")
    _lock.acquire(path, dead, 0)
    out, warned = run(monkeypatch, path=path, takeover={"token": "t1", "reason": "its ansible-playbook (pid 9 on ctl) is gone"})
    assert out["took_over"]["note"] == "interrupted deploy run r1 found (its ansible-playbook (pid 9 on ctl) is gone)"
    assert warned == ["took over the lock of deploy run r1 (ops@ctl, since S): its ansible-playbook (pid 9 on ctl) is gone"]


def test_a_full_disk_is_a_clear_failure_and_leaves_no_lock_file(tmp_path, monkeypatch):
    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(_lock.os, "write", full)
    out, warned = run(monkeypatch, path=str(tmp_path / "run.lock"))
    assert out["failed"] and out["msg"] == (
        "The node lock %s could not be written: No space left on device; no lock file was left and nothing was "
        "changed. Free space in %s and run again." % (tmp_path / "run.lock", tmp_path))
    assert os.listdir(str(tmp_path)) == []


def test_a_lease_out_of_range_is_refused(tmp_path, monkeypatch):
    out, warned = run(monkeypatch, path=str(tmp_path / "run.lock"), lease=5)
    assert out["failed"] and out["msg"] == "lease must be between 60 and 604800 seconds, got 5"
    assert os.listdir(str(tmp_path)) == []
