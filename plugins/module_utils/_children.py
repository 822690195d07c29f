# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Child processes bounded by a deadline and killed as whole process groups.

eccl_probe runs third-party code (torch, torch_gcu, ECCL) that can hang
forever -- by design in its collective level, where a rank that never joins is
the failure being looked for. AnsibleModule.run_command can neither bound a
child by a timeout nor kill what it started, so these helpers use Popen with a
new session per child (start_new_session): each child leads its own process
group and os.killpg() takes down anything it forked too.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import signal
import subprocess
import time

# After one child fails, the others (ranks of one job) cannot finish: give them
# this long, then kill them.
ABORT_GRACE_S = 5.0


class Child(object):
    """A child process in its own session (see the module docstring), output in temp files."""

    def __init__(self, argv, env, workdir, name):
        self.argv = argv
        self.out_path = os.path.join(workdir, name + ".out")
        self.err_path = os.path.join(workdir, name + ".err")
        self.killed = None
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            # ansible-test 2.21's pylint (ansible-bad-function) asks for run_command here. It cannot
            # do this: the ranks of one job must run at once, be bounded by one deadline and be killed
            # as whole process groups (the module docstring), and run_command blocks until its one
            # child exits, with no timeout. So Popen, at this one place.
            self.proc = subprocess.Popen(  # pylint: disable=ansible-bad-function
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                cwd=workdir, close_fds=True, start_new_session=True)
        self.pid = self.proc.pid

    def running(self):
        return self.proc.poll() is None

    def kill(self, reason):
        """Kill the child's whole process group, then reap it."""
        if self.proc.poll() is None:
            self.killed = reason
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
        self.proc.wait()

    def output(self):
        with open(self.out_path, "rb") as f:
            out = f.read().decode("utf-8", "replace")
        with open(self.err_path, "rb") as f:
            err = f.read().decode("utf-8", "replace")
        return self.proc.returncode, out, err


def wait_all(children, timeout):
    """Wait for all children until `timeout` (whole run); kill the rest. Returns timed_out."""
    deadline = time.time() + timeout
    abort_at = None
    timed_out = False
    try:
        while any(c.running() for c in children):
            now = time.time()
            if abort_at is None and any(c.proc.returncode not in (None, 0) for c in children):
                abort_at = now + ABORT_GRACE_S
            if abort_at is not None and now >= abort_at:
                for c in children:
                    c.kill("aborted")
                break
            if now >= deadline:
                timed_out = True
                for c in children:
                    c.kill("timeout")
                break
            time.sleep(0.1)
    finally:
        # Whatever happened (even an exception here), leave no child behind.
        for c in children:
            c.kill(c.killed or "timeout")
    return timed_out


def run_probe(argv, env, timeout, workdir, name):
    """Run one probe child bounded by timeout -> (rc, stdout, stderr, timed_out)."""
    child = Child(argv, env, workdir, name)
    timed_out = wait_all([child], timeout)
    rc, out, err = child.output()
    return rc, out, err, timed_out
