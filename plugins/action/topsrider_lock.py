# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action of gcu.topsrider.topsrider_lock (plugins/modules/topsrider_lock.py).

Taking the lock runs the module with timeout=0: when it is free (the usual
case) that one call takes it. When another run holds it, the action polls the
node the same way until the lock is free or `timeout` has passed, printing a
line per poll on the controller (who holds it, how long this run has waited,
of how long), instead of one silent module call that waits on the node.
Releasing, check mode and a timeout the module refuses run the module once,
as they are.

It adds to the holder this controller (hostname, boot id, pid namespace) and
the run's ansible-playbook process (pid, start time; identity()). The action
runs in a worker process of ansible-playbook: forked from it (its command line
is ansible-playbook's too) or started by a fork server; the run's process is
the topmost of the first unbroken line of ansible-playbook processes above
this one (an ansible-playbook started by a task of another one, a test driving
the playbooks, is its own run). When the holder of the lock ran on this same
controller and its process is gone (module_utils/_lock.py judge_process), it
asks the module at once to take that holder's lock over; the module says so
(a warning, and `took_over` in the result).
"""
from __future__ import annotations

import os
import socket
import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.gcu.topsrider.plugins.module_utils._lock import (
    describe, judge_process, locked_message, process_start)

display = Display()


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except (IOError, OSError):
        return None


def _parent(pid, proc):
    stat = _read(os.path.join(proc, str(pid), "stat"))
    if stat is None:
        return None
    fields = stat.decode("utf-8", "replace").rsplit(")", 1)[-1].split()
    try:
        return int(fields[1])
    except (IndexError, ValueError):
        return None


def is_playbook(pid, proc="/proc"):
    """The process runs ansible-playbook: its program or its script (argv 0 or 1) is named so."""
    cmdline = _read(os.path.join(proc, str(pid), "cmdline"))
    if not cmdline:
        return False
    argv = cmdline.decode("utf-8", "replace").split("\0")[:2]
    return any(os.path.basename(a) == "ansible-playbook" for a in argv)


def playbook_process(pid=None, proc="/proc"):
    """The pid of this run's ansible-playbook process (from `pid`, default
    this process, upwards), or None when there is none above it."""
    pid = os.getpid() if pid is None else pid
    found = None
    seen = set()
    while pid and pid > 1 and pid not in seen:
        seen.add(pid)
        if is_playbook(pid, proc):
            found = pid
        elif found is not None:
            break
        pid = _parent(pid, proc)
    return found


def identity(proc="/proc", hostname=None, pid=None):
    """The holder fields that name this controller and this run's process:
    controller (hostname), boot_id, pidns, and pid and pid_start when the
    ansible-playbook process is found."""
    boot = _read(os.path.join(proc, "sys", "kernel", "random", "boot_id"))
    try:
        pidns = os.readlink(os.path.join(proc, "self", "ns", "pid"))
    except OSError:
        pidns = None
    found = {"controller": hostname or socket.gethostname(),
             "boot_id": boot.decode("ascii", "replace").strip() if boot else None,
             "pidns": pidns}
    run = playbook_process(pid, proc)
    start = process_start(run, proc) if run else None
    if start is not None:
        found.update(pid=run, pid_start=start)
    return found


def poll_delay(polls, most=10.0):
    """Seconds before the next try: 1, 2, 4, 8, then every `most`."""
    return min(float(most), 2.0 ** min(polls, 16))


def waiting_line(host, held, waited, timeout):
    return "%s: waiting for the node lock, held by %s; %d s of %d s" % (host, describe(held), waited, timeout)


def wait(host, timeout, path, take, now=time.monotonic, sleep=time.sleep, show=display.display, judge=None):
    """take(takeover) -> the module's result with timeout=0; until it is not
    'locked' or `timeout` passed. judge(holder) -> why that holder is gone
    (None: it may be running): its lock is then taken over at once."""
    started = now()
    polls = 0
    waited_for = None
    takeover = None
    while True:
        result = take(takeover)
        held = result.get("holder") if isinstance(result.get("holder"), dict) else "unreadable"
        reason = judge(held) if judge is not None and result.get("locked") and isinstance(held, dict) else None
        if reason is not None and (takeover is None or takeover["token"] != held.get("token")):
            takeover = {"token": held.get("token"), "reason": reason}
            continue
        if not (result.get("failed") and result.get("locked")):
            if waited_for is not None and not result.get("failed"):
                result["waited_for"] = waited_for
            return result
        waited_for = result.get("holder")
        waited = now() - started
        if waited >= timeout:
            result["msg"] = locked_message(held, timeout, path)
            return result
        show(waiting_line(host, held, waited, timeout))
        sleep(min(poll_delay(polls), max(0.1, timeout - waited)))
        polls += 1


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)

        def module(module_args):
            return self._execute_module(module_name="gcu.topsrider.topsrider_lock", module_args=module_args,
                                        task_vars=task_vars)

        try:
            timeout = int(args.get("timeout", 600))
        except (TypeError, ValueError):
            timeout = None  # the module says what is wrong with it
        if (args.get("state", "acquired") != "acquired" or self._task.check_mode or timeout is None
                or not 0 <= timeout <= 86400 or not isinstance(args.get("holder"), dict)):
            result.update(module(args))
        else:
            host = task_vars.get("inventory_hostname", "?")
            me = dict(args["holder"])
            me.update(identity(hostname=me.get("controller") or None))
            args["holder"] = me

            def take(takeover):
                return module(dict(args, timeout=0, takeover=takeover) if takeover else dict(args, timeout=0))

            result.update(wait(host, timeout, args.get("path"), take,
                               judge=lambda held: judge_process(held, me, process_start)))
        self._remove_tmp_path(self._connection._shell.tmpdir)
        return result
