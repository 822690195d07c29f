# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action of gcu.topsrider.job_progress (documented in plugins/modules/job_progress.py).

Waits for one background job on a node (a task started with async and
poll: 0) and prints one line per poll on the controller: what is waited for,
how long it has run and for how long it may ('t20-node-1: ECCL probe at level
collective: running, 12 s of 360 s'), instead of async's 'ASYNC POLL ... jid='
lines. Returns the job's own result, so that the task registers what the
started module returned; fails when the job failed or ran past the timeout.
"""
from __future__ import annotations

import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.gcu.topsrider.plugins.plugin_utils._async_job import job_status, poll_delay

display = Display()

ARGUMENT_SPEC = {
    "job": {"type": "dict", "required": True},
    "label": {"type": "str", "required": True},
    "timeout": {"type": "float", "default": 3600.0},
    "interval": {"type": "float", "default": 10.0},
}
# async_status's own keys, not the job's module's (finished stays: 1 when the job ended, 0 when the wait gave up).
ASYNC_KEYS = ("ansible_job_id", "started", "results_file", "erased", "stdout_lines", "stderr_lines")


def progress_line(host, label, waited, timeout):
    """One poll's line: 't20-node-1: ECCL probe: running, 12 s of 360 s'."""
    return "%s: %s: running, %d s of %d s" % (host, label, waited, timeout)


def done_line(host, label, waited, status):
    return "%s: %s: %s after %d s" % (host, label, "failed" if status.get("failed") else "done", waited)


def job_result(status):
    """The started module's result out of async_status's: its keys, without the polling's."""
    return dict((k, v) for k, v in status.items() if k not in ASYNC_KEYS)


def wait(host, args, read, now=time.monotonic, sleep=time.sleep, show=display.display):
    """Poll (read() -> async_status's result) until the job finished or the timeout
    passed, one line per poll that finds it running; the job's result."""
    started = now()
    polls = 0
    while True:
        status = read()
        waited = now() - started
        if status.get("finished") or status.get("failed"):
            show(done_line(host, args["label"], waited, status))
            return job_result(status)
        if waited > args["timeout"]:
            return {"failed": True, "changed": False, "finished": 0,
                    "msg": "%s: %s: still running after %d s (timeout %d s); it is left to end by its own "
                           "async limit" % (host, args["label"], waited, args["timeout"])}
        show(progress_line(host, args["label"], waited, args["timeout"]))
        sleep(poll_delay(polls, args["interval"]))
        polls += 1


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        job = args["job"]
        if job.get("skipped"):
            # The task that would have started the job did not run: neither does this one.
            result.update(skipped=True, changed=False, msg="no job: the task that starts it was skipped")
            return result
        jid = job.get("ansible_job_id")
        if not jid:
            raise AnsibleActionFail("job_progress: job has no ansible_job_id (start it with async and poll: 0)")
        host = task_vars.get("inventory_hostname", "?")
        try:
            out = wait(host, args, lambda: job_status(self, jid, "status", task_vars))
        finally:
            job_status(self, jid, "cleanup", task_vars)
            self._remove_tmp_path(self._connection._shell.tmpdir)
        result.update(out)
        return result
