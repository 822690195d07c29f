# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node lock of gcu.topsrider.topsrider_lock: one deploy, rollback or
restore at a time per node. A lock file holding JSON that names the run; it
is held for the whole play (acquired by the first task, released by the
play's `always`), which a process-bound lock (fcntl) cannot be across SSH
sessions.

Never half-written: the holder is written to a temporary file in the same
directory, which is then hard-linked to the lock path (atomic; EEXIST while
another run holds it) and removed. A full disk means no lock file at all.

A lock names its holder so that the next run can tell a dead one from a live
one without an operator (issue 31):
- `controller`, `boot_id`, `pidns` (the controller: hostname, its boot id,
  its pid namespace) and `pid`, `pid_start` (the ansible-playbook process and
  its start time in clock ticks after boot, from /proc/<pid>/stat, so a pid
  used again by another process is not mistaken for it). A run on the same
  controller takes over the lock of a holder whose process is gone; the
  controller's action decides that (`judge_process`), the node cannot see it.
- `renewed` (the node's clock when the holder took or renewed the lock) and
  `lease_s`: a holder on another controller whose lease expired is gone too;
  the node decides that (`judge_node`) with its own clock, so the controllers'
  clocks never meet.
- A lock file that is not readable JSON (left by an older version that died
  between create and write) is stale once its mtime is `grace` seconds old.
A holder without these fields (an older version) is waited for, as before;
break_id stays for what a program cannot decide.

No Ansible import; Python 3.6+. `clock` and `sleep` are passed in so the
waiting is tested without waiting.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import errno
import json
import os
import time

from ansible_collections.gcu.topsrider.plugins.module_utils._atomic import write_atomic

# Seconds after which a lock file that is not readable JSON is stale (by mtime).
UNREADABLE_GRACE = 60


class LockError(Exception):
    pass


def describe(holder):
    """'deploy run 20250101T120000Z (op@ctl, since 2025-01-01T12:00:00Z)'"""
    if not isinstance(holder, dict):
        return "an unknown run (the lock file is not readable JSON)"
    who = "%s@%s" % (holder.get("user") or "?", holder.get("controller") or "?")
    return "%s run %s (%s, since %s)" % (holder.get("kind") or "a", holder.get("id") or "?", who,
                                         holder.get("since") or "?")


def locked_message(held, timeout, path):
    """The failure when another run held the lock for the whole wait (the module's and its action's)."""
    lease = ""
    if isinstance(held, dict) and _number(held.get("lease_s")) is not None and _number(held.get("renewed")) is not None:
        lease = (" Its lease (%d s, renewed by that run while it runs) expires at %s, node time; a later run then "
                 "takes the lock over." % (held["lease_s"], _utc(held["renewed"] + held["lease_s"])))
    return ("This node is locked by %s: another deploy, rollback or restore is changing it, and it did not end "
            "within %d s; nothing was changed.%s Wait for that run and try again (or raise topsrider_lock_timeout). "
            "If that run is gone and this run cannot tell (another controller, or an older version's lock), check "
            "that nothing runs on the node, then run again with -e topsrider_lock_break=%s, or remove %s."
            % (describe(held), timeout, lease, held.get("id") if isinstance(held, dict) else "unreadable", path))


def _number(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _utc(epoch):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def read_holder(path):
    """The holder dict, None when there is no lock file, or the string
    'unreadable' when the file is there but is not JSON."""
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


def _text(holder):
    return json.dumps(holder, sort_keys=True) + "\n"


def try_create(path, holder):
    """True when this call created the lock file with `holder` in it: written
    whole to a temporary file beside it, linked to `path` (fails with EEXIST
    when held), the temporary file removed whatever happens. A write that
    fails (a full disk) raises and leaves no file."""
    tmp = "%s.%s.%d.tmp" % (path, holder.get("token") or "x", os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        try:
            # os.write may write less than asked (a disk filling up): go on until all is
            # written; the write after a short one raises ENOSPC, and nothing is linked.
            data = _text(holder).encode("utf-8")
            while data:
                data = data[os.write(fd, data):]
            os.fsync(fd)
        finally:
            os.close(fd)
        return _link(tmp, path)
    finally:
        os.unlink(tmp)


def _link(src, dst):
    """Hard-link src to dst, which appears whole or not at all; False when dst exists (held)."""
    try:
        os.link(src, dst)
    except (IOError, OSError) as e:
        if e.errno == errno.EEXIST:
            return False
        raise
    return True


def same_run(a, b):
    return (isinstance(a, dict) and isinstance(b, dict) and a.get("id") == b.get("id")
            and a.get("token") == b.get("token"))


def same_controller(a, b):
    """Both holders name the same controller: hostname, boot id and pid namespace (all known)."""
    keys = ("controller", "boot_id", "pidns")
    return (isinstance(a, dict) and isinstance(b, dict)
            and all(a.get(k) and a.get(k) == b.get(k) for k in keys))


def judge_node(current, me, now, mtime, grace=UNREADABLE_GRACE):
    """What the node alone can decide about the lock `current` (read from
    the file, mtime `mtime`) for the run `me`: the reason it is stale, or None.
    An unreadable file `grace` seconds old; a holder on another controller
    whose lease (`renewed` + `lease_s`, the node's clock) has passed. A
    holder on this same controller is judged by its process (judge_process),
    never by its lease: a live run may outlast it."""
    if current == "unreadable":
        if mtime is not None and now - mtime >= grace:
            return "the lock file is not readable JSON and is %d s old" % (now - mtime)
        return None
    if not isinstance(current, dict) or same_controller(current, me):
        return None
    renewed, lease = _number(current.get("renewed")), _number(current.get("lease_s"))
    if renewed is None or lease is None or now - renewed <= lease:
        return None
    return ("its lease of %d s from %s expired %d s ago (at %s, node time)"
            % (lease, current.get("controller") or "?", now - renewed - lease, _utc(renewed + lease)))


def judge_process(current, me, started):
    """What this controller decides about the lock `current` for the run `me`
    (both name their controller): the reason it is stale when its holder ran
    on this controller and its ansible-playbook is gone, else None.
    `started(pid)` is the start time of that process now (None: no such
    process); another start time is another process that got the same pid."""
    if not (same_controller(current, me) and _number(current.get("pid")) and current.get("pid_start") is not None):
        return None
    now_start = started(current["pid"])
    if now_start is not None and str(now_start) == str(current["pid_start"]):
        return None
    return ("its ansible-playbook (pid %d on %s) is gone%s"
            % (current["pid"], current["controller"],
               "" if now_start is None else "; that pid is another process now"))


def found_note(previous, reason):
    """The line of the next run's report: what it found on the node and took over."""
    if not isinstance(previous, dict):
        return "an unreadable node lock found (%s), taken over" % reason
    return "interrupted %s run %s found (%s)" % (previous.get("kind") or "a", previous.get("id") or "?", reason)


def check_mode_warning(path, current, holder, now=None):
    """Check mode's warning when another run holds the lock (None when nobody
    does, or this run): what check mode reads may change under it, or the
    lock is stale and a real run takes it over."""
    if current is None or current == holder or (isinstance(current, dict) and current.get("token") == holder.get("token")):
        return None
    stale = judge_node(current, holder, time.time() if now is None else now, _mtime(path))
    if stale is None:
        return "another run is changing this node: %s; what check mode reads may change under it" % describe(current)
    return "the lock of %s is stale (%s): a run that is not in check mode takes it over" % (describe(current), stale)


def took_over_line(previous, reason):
    """The task's own line when it takes a stale lock over."""
    return "took over the lock of %s: %s" % (describe(previous), reason)


def _take_away(path, expected, me):
    """Remove the lock file when it still is `expected` (a holder by its
    token, or 'unreadable'). It is renamed to a name of this run's first and
    checked there, so that a lock another run took meanwhile is put back,
    never removed. True when it was removed."""
    private = "%s.%s.stale" % (path, me.get("token") or "x")
    try:
        os.rename(path, private)
    except (IOError, OSError) as e:
        if e.errno == errno.ENOENT:
            return False
        raise
    moved = read_holder(private)
    if moved == expected or (isinstance(moved, dict) and same_run(moved, expected)):
        os.unlink(private)
        return True
    # Put back, unless a new holder came meanwhile.
    _link(private, path)
    os.unlink(private)
    return False


def _mtime(path):
    try:
        return os.stat(path).st_mtime
    except (IOError, OSError) as e:
        if e.errno == errno.ENOENT:
            return None
        raise


def renew(path, holder, now):
    """The same run takes its lock again: its lease starts again from `now`
    (the lock rewritten whole, atomically)."""
    current = read_holder(path)
    if not same_run(current, holder):
        return
    write_atomic(path, _text(dict(current, renewed=now, lease_s=holder.get("lease_s", current.get("lease_s")))),
                 0o600, prefix=".run.lock.")


def acquire(path, holder, timeout, break_id=None, clock=time.time, sleep=time.sleep, interval=2.0,
            takeover=None, grace=UNREADABLE_GRACE):
    """Take the lock for `holder` ({id, token, kind, user, controller, since,
    and the identity fields above}), waiting up to `timeout` seconds.
    Returns (changed, previous holder or None, broken holder or None, took
    over: {'holder', 'reason', 'note'} or None). Raises LockError naming the holder
    when the wait ends. The same run taking it again is not a change (a
    rescue after a failed task); it renews the lease. `break_id`: remove a
    lock held by that run id first (a run that was killed and can no longer
    release it). `takeover`: {'token', 'reason'}, the controller's judgement
    that the holder with that token is gone; a stale lock the node can judge
    itself (judge_node) is taken over without it."""
    deadline = clock() + timeout
    broken = None
    waited_for = None
    holder = dict(holder, renewed=clock()) if "lease_s" in holder else dict(holder)
    while True:
        if try_create(path, holder):
            return True, waited_for, broken, None
        current = read_holder(path)
        if current is None:
            continue
        if same_run(current, holder):
            if "lease_s" in holder:
                renew(path, holder, clock())
            return False, None, broken, None
        held_id = current.get("id") if isinstance(current, dict) else "unreadable"
        if break_id and held_id == break_id:
            if _take_away(path, current, holder):
                broken = current
            continue
        reason = judge_node(current, holder, clock(), _mtime(path), grace)
        if reason is None and takeover and isinstance(current, dict) and current.get("token") == takeover.get("token"):
            reason = takeover.get("reason") or "its holder is gone"
        if reason is not None:
            if _take_away(path, current, holder):
                holder = dict(holder, renewed=clock()) if "lease_s" in holder else holder
                if try_create(path, holder):
                    return True, None, broken, {"holder": current, "reason": reason, "note": found_note(current, reason)}
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


def process_start(pid, proc="/proc"):
    """The start time of process `pid` (clock ticks after boot, field 22 of
    /proc/<pid>/stat) as a string, or None when there is no such process."""
    try:
        with open(os.path.join(proc, str(int(pid)), "stat")) as f:
            stat = f.read()
    except (IOError, OSError, ValueError):
        return None
    # The command name (field 2) is in parentheses and may hold anything: count after its last ')'.
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None
