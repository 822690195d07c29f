# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action of gcu.topsrider.bundle_progress (documented in plugins/modules/bundle_progress.py).

Waits for one background (async) fetch job on a node (gcu.topsrider.bundle_fetch
started with poll: 0) and prints a progress line per poll: the bytes of the
job's files already in the destination or in the partial directory, against
the total, with the source named. Each poll runs async_status for the job and,
while it runs, one find over the two directories; nothing else is sent.
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
    "files": {"type": "list", "elements": "dict", "required": True},
    "dest_dir": {"type": "path", "required": True},
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


def failure_message(host, label, source, failures):
    """The failed task's message: which files, from which source, and why."""
    parts = ["%s: %s" % (f["file"], (f.get("msg") or "failed").strip()) for f in failures]
    return ("%s: could not stage %s from %s; %s. A file is moved into place only once its sha256 is checked; "
            "the next run fetches what is still missing." % (host, label, source, "; ".join(parts)))


def job_files(files):
    """{file: size} of the job's files; each needs a file name and a size in bytes."""
    sizes = {}
    for entry in files:
        if not isinstance(entry, dict) or "file" not in entry or "size" not in entry:
            raise AnsibleActionFail("bundle_progress: every entry of files needs file and size, got %r" % (entry,))
        sizes[str(entry["file"])] = int(entry["size"])
    return sizes


def bytes_in_place(found, sizes):
    """Bytes of the job's files found (find's files from dest and partial), each counted at most at its size."""
    seen = {}
    for item in found:
        name = str(item.get("path", "")).rsplit("/", 1)[-1]
        if name in sizes:
            seen[name] = max(seen.get(name, 0), min(int(item.get("size", 0)), sizes[name]))
    return sum(seen.values())


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = True

    def _bytes_so_far(self, args, sizes, task_vars):
        found = self._execute_module(
            module_name="ansible.legacy.find", task_vars=task_vars,
            module_args={"paths": [args["partial_dir"], args["dest_dir"]], "patterns": sorted(sizes),
                         "hidden": True, "file_type": "file", "recurse": False})
        return bytes_in_place(found.get("files", []), sizes)

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        if self._task.check_mode:
            raise AnsibleActionFail("bundle_progress waits for real downloads; it does not run in check mode")
        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        host = task_vars.get("inventory_hostname", "?")
        sizes = job_files(args["files"])
        total = sum(sizes.values())
        jid = args["job"].get("ansible_job_id")
        if not jid:
            raise AnsibleActionFail("bundle_progress: job has no ansible_job_id (start it with async and poll: 0)")
        deadline = time.monotonic() + args["timeout"]
        polls = 0
        status = {}
        try:
            while True:
                status = job_status(self, jid, "status", task_vars)
                if status.get("finished") or status.get("failed"):
                    break
                if time.monotonic() > deadline:
                    status = {"failed": True, "msg": "still running after %ds" % args["timeout"]}
                    break
                display.display(progress_line(host, args["label"], args["source"],
                                              self._bytes_so_far(args, sizes, task_vars), total))
                time.sleep(poll_delay(polls, args["interval"]))
                polls += 1
        finally:
            job_status(self, jid, "cleanup", task_vars)
            self._remove_tmp_path(self._connection._shell.tmpdir)
        result["files"] = status.get("files", [])
        result["bytes"] = int(status.get("bytes", 0) or 0)
        result["changed"] = bool(status.get("changed"))
        if status.get("failed"):
            result["failed"] = True
            result["msg"] = failure_message(host, args["label"], args["source"],
                                            [{"file": status.get("file") or ", ".join(sorted(sizes)),
                                              "msg": status.get("msg")}])
        else:
            display.display(progress_line(host, args["label"], args["source"], total, total))
            result["msg"] = "%s: %s staged from %s" % (host, human_bytes(total), args["source"])
        return result
