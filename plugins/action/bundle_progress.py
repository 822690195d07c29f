# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action of gcu.topsrider.bundle_progress (documented in plugins/modules/bundle_progress.py).

Waits for background (async) downloads on one node and prints a progress line
per poll: the bytes already in place plus those in the partial directory,
against the total, with the source named. Each poll runs async_status for the
unfinished jobs and one find on the partial directory; nothing else is sent.
"""
from __future__ import annotations

import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()

ARGUMENT_SPEC = {
    "jobs": {"type": "list", "elements": "dict", "required": True},
    "partial_dir": {"type": "path", "required": True},
    "source": {"type": "str", "required": True},
    "label": {"type": "str", "default": "bundle"},
    "interval": {"type": "float", "default": 10.0},
    "timeout": {"type": "float", "default": 3600.0},
}


def human_bytes(n):
    """1536 -> '1.5 KiB' (binary units, one decimal)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return ("%d %s" % (value, unit)) if unit == "B" else ("%.1f %s" % (value, unit))
        value /= 1024.0
    return "%d B" % n  # not reached


def progress_line(host, label, source, done, total):
    """One poll's line: 'node3: 2.5.136 from node1: 512.0 MiB of 1.0 GiB (50%)'."""
    done = min(done, total) if total else done
    percent = int(done * 100 / total) if total else 100
    return "%s: %s from %s: %s of %s (%d%%)" % (host, label, source, human_bytes(done), human_bytes(total), percent)


def poll_delay(polls, interval):
    """Seconds before the next poll: 0.5, 1, 2, 4 ... up to interval, so a small
    transfer is not kept waiting for a whole interval and a long one polls every interval."""
    return min(float(interval), 0.5 * 2 ** min(polls, 16))


def failure_message(host, label, source, failures):
    """The failed task's message: which files, from which source, and why."""
    parts = ["%s: %s" % (f["file"], (f.get("msg") or "failed").strip()) for f in failures]
    return ("%s: could not stage %s from %s; %s. Nothing was moved into place for these files (each is "
            "sha256-checked before it is); the next run fetches them again."
            % (host, label, source, "; ".join(parts)))


def started_jobs(results):
    """{jid: {"file", "size"}} from an async loop's registered results (skipped items have no job id)."""
    jobs = {}
    for res in results:
        jid = res.get("ansible_job_id")
        if not jid:
            continue
        item = res.get("item")
        if not isinstance(item, dict) or "file" not in item or "size" not in item:
            raise AnsibleActionFail("bundle_progress: job %s has no item with file and size" % jid)
        jobs[str(jid)] = {"file": str(item["file"]), "size": int(item["size"])}
    return jobs


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = True

    def _async_dir(self):
        return self._remote_expand_user(self.get_shell_option("async_dir", default="~/.ansible_async"))

    def _job_status(self, jid, mode, task_vars):
        return self._execute_module(
            module_name="ansible.legacy.async_status", task_vars=task_vars,
            module_args={"jid": jid, "mode": mode, "_async_dir": self._async_dir()})

    def _partial_bytes(self, partial_dir, task_vars):
        found = self._execute_module(
            module_name="ansible.legacy.find", task_vars=task_vars,
            module_args={"paths": [partial_dir], "hidden": True, "file_type": "file", "recurse": False})
        return sum(int(f.get("size", 0)) for f in found.get("files", []))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        if self._task.check_mode:
            raise AnsibleActionFail("bundle_progress waits for real downloads; it does not run in check mode")
        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        host = task_vars.get("inventory_hostname", "?")
        jobs = started_jobs(args["jobs"])
        total = sum(job["size"] for job in jobs.values())
        deadline = time.monotonic() + args["timeout"]
        done_bytes = 0
        polls = 0
        finished = []
        try:
            while jobs:
                for jid in list(jobs):
                    status = self._job_status(jid, "status", task_vars)
                    if status.get("finished") or status.get("failed"):
                        job = jobs.pop(jid)
                        finished.append(dict(status, file=job["file"]))
                        if not status.get("failed"):
                            done_bytes += job["size"]
                if not jobs:
                    break
                if time.monotonic() > deadline:
                    finished.extend({"file": j["file"], "failed": True, "msg": "still running after %ds" % args["timeout"]}
                                    for j in jobs.values())
                    break
                partial = self._partial_bytes(args["partial_dir"], task_vars)
                display.display(progress_line(host, args["label"], args["source"], done_bytes + partial, total))
                time.sleep(poll_delay(polls, args["interval"]))
                polls += 1
        finally:
            for item in finished:
                if item.get("ansible_job_id"):
                    self._job_status(item["ansible_job_id"], "cleanup", task_vars)
            self._remove_tmp_path(self._connection._shell.tmpdir)
        failures = [f for f in finished if f.get("failed")]
        result["files"] = [{"file": f["file"], "changed": bool(f.get("changed")), "failed": bool(f.get("failed"))}
                           for f in finished]
        result["bytes"] = done_bytes
        result["changed"] = any(f.get("changed") for f in finished)
        if failures:
            result["failed"] = True
            result["msg"] = failure_message(host, args["label"], args["source"], failures)
        else:
            display.display(progress_line(host, args["label"], args["source"], total, total))
            result["msg"] = "%s: %s staged from %s" % (host, human_bytes(total), args["source"])
        return result
