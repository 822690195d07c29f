# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node lock of gcu.topsrider.topsrider_lock: one deploy, rollback or
restore at a time per node. A lock file created with O_CREAT|O_EXCL (atomic
on a local file system) holding JSON that names the run; it is held for the
whole play (acquired by the first task, released by the play's `always`),
which a process-bound lock (fcntl) cannot be across SSH sessions.

No Ansible import; Python 3.6+. `clock` and `sleep` are passed in so the
waiting is tested without waiting.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import errno
import json
import os
import time


class LockError(Exception):
    pass


def describe(holder):
    """'deploy run 20250101T120000Z (op@ctl, pid 1234, since 2025-01-01T12:00:00Z)'"""
    if not isinstance(holder, dict):
        return "an unknown run (the lock file is not readable JSON)"
    who = "%s@%s" % (holder.get("user") or "?", holder.get("controller") or "?")
    return "%s run %s (%s, since %s)" % (holder.get("kind") or "a", holder.get("id") or "?", who,
                                         holder.get("since") or "?")


def locked_message(held, timeout, path):
    """The failure when another run held the lock for the whole wait (the module's and its action's)."""
    return ("This node is locked by %s: another deploy, rollback or restore is changing it, and it did not end "
            "within %d s; nothing was changed. Wait for that run and try again (or raise topsrider_lock_timeout). "
            "If that run is gone (its controller was killed), check that nothing runs on the node, then run again "
            "with -e topsrider_lock_break=%s, or remove %s."
            % (describe(held), timeout, held.get("id") if isinstance(held, dict) else "<id>", path))


def read_holder(path):
    """The holder dict, None when there is no lock file, or the string
    'unreadable' when the file is there but is not JSON (a writer died
    between create and write: still a lock, never silently taken)."""
    try:
        with open(path) as f:
            text = f.read()
    except (IOError, OSError) as e:
        if e.errno == errno.ENOENT:
            return None
        raise
    try:
        data = json.loads(text)
    except ValueError:
        return "unreadable"
    return data if isinstance(data, dict) else "unreadable"


def try_create(path, holder):
    """True when this call created the lock file with `holder` in it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except (IOError, OSError) as e:
        if e.errno == errno.EEXIST:
            return False
        raise
    try:
        os.write(fd, (json.dumps(holder, sort_keys=True) + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    return True


def same_run(a, b):
    return (isinstance(a, dict) and isinstance(b, dict) and a.get("id") == b.get("id")
            and a.get("token") == b.get("token"))


def acquire(path, holder, timeout, break_id=None, clock=time.time, sleep=time.sleep, interval=2.0):
    """Take the lock for `holder` ({id, token, kind, user, controller, since}),
    waiting up to `timeout` seconds. Returns (changed, previous holder or
    None, broken holder or None). Raises LockError naming the holder when the
    wait ends. The same run taking it again is not a change (a rescue after a
    failed task). `break_id`: remove a lock held by that run id first (a run
    that was killed and can no longer release it)."""
    deadline = clock() + timeout
    broken = None
    waited_for = None
    while True:
        if try_create(path, holder):
            return True, waited_for, broken
        current = read_holder(path)
        if current is None:
            continue
        if same_run(current, holder):
            return False, None, broken
        held_id = current.get("id") if isinstance(current, dict) else "unreadable"
        if break_id and held_id == break_id:
            os.unlink(path)
            broken = current
            continue
        waited_for = current
        if clock() >= deadline:
            raise LockError(current)
        sleep(min(interval, max(0.1, deadline - clock())))


def release(path, holder):
    """Remove the lock when `holder` holds it. Returns (released, holder now):
    a lock held by another run is never removed."""
    current = read_holder(path)
    if current is None:
        return False, None
    if not same_run(current, holder):
        return False, current
    os.unlink(path)
    return True, None
