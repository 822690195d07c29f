# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action of gcu.topsrider.bundle_push (documented in plugins/modules/bundle_push.py).

Copies bundle files from the controller to a node, one ansible.builtin.copy
per file (the same action, arguments and checks as a copy task), and while a
file is being sent prints a line per poll: the file, how much of it and of the
whole has been read on the controller, and the rate. How far a copy is comes
from the controller's own processes: the transfer (sftp or scp under SSH, the
docker client under the docker connection, or this worker itself) holds the
source file open, and /proc/<pid>/fdinfo of that descriptor says how far it
has read. Where that cannot be seen (no /proc), the line says how long it has
been sending.
"""
from __future__ import annotations

import os
import threading
import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.gcu.topsrider.plugins.action.bundle_progress import human_bytes

display = Display()

ARGUMENT_SPEC = {
    "files": {"type": "list", "elements": "dict", "required": True},
    "src_dir": {"type": "path", "required": True},
    "dest_dir": {"type": "path", "required": True},
    "label": {"type": "str", "default": "bundle"},
    "owner": {"type": "str"},
    "group": {"type": "str"},
    "mode": {"type": "raw"},
    "interval": {"type": "float", "default": 10.0},
}


def descendants(root_pid, proc="/proc"):
    """root_pid and every process below it (from /proc/<pid>/stat's parent ids)."""
    parents = {}
    for name in os.listdir(proc):
        if not name.isdigit():
            continue
        try:
            with open(os.path.join(proc, name, "stat")) as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses; ppid follows the last ')'.
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1 and fields[1].isdigit():
            parents.setdefault(int(fields[1]), []).append(int(name))
    found, todo = [], [root_pid]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(parents.get(pid, []))
    return found


def bytes_read(path, pids, proc="/proc"):
    """{pid: the furthest offset it has read in `path`} for each of `pids` that holds the file open
    (its descriptors' fdinfo pos); {} when none has."""
    real = os.path.realpath(path)
    found = {}
    for pid in pids:
        fd_dir = os.path.join(proc, str(pid), "fd")
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(os.path.join(fd_dir, fd)) != real:
                    continue
                with open(os.path.join(proc, str(pid), "fdinfo", fd)) as f:
                    pos = int(f.readline().split()[1])
            except (OSError, ValueError, IndexError):
                continue
            found[pid] = max(found.get(pid, 0), pos)
    return found


def reading(path, pid):
    """What the controller is doing with `path` now, seen from the process tree under `pid`:
    ('sending', bytes) when a child (the transfer) reads it, ('checking', bytes) when only this
    worker does (copy's checksum of the source), (None, None) when nothing has it open."""
    found = bytes_read(path, descendants(pid)) if os.path.isdir("/proc") else {}
    children = [pos for p, pos in found.items() if p != pid]
    if children:
        return "sending", max(children)
    if pid in found:
        return "checking", found[pid]
    return None, None


def progress_line(host, label, name, index, count, state, done, size, before, total, seconds):
    """'t20-node-1: 2.5.140 from the controller: file 2 of 4, tops-sdk.deb, sent 1.2 GiB of 3.1 GiB; 1.3 GiB of
    3.4 GiB in all (38%)'; state: sending, checking (its checksum on the controller), None (nothing reads it now)."""
    if state is None:
        # done: what was seen sent before, if anything.
        where = "%s%d s in (nothing reads it now: the node's checksum, or the copy's other steps)" % (
            ("sent %s of %s, " % (human_bytes(min(done, size)), human_bytes(size))) if done else "", seconds)
        overall = before + min(done or 0, size)
    else:
        done = min(done, size)
        where = "%s %s of %s" % ("sent" if state == "sending" else "checksum, read", human_bytes(done), human_bytes(size))
        overall = before + (done if state == "sending" else 0)
    percent = int(overall * 100 / total) if total else 100
    return "%s: %s from the controller: file %d of %d, %s, %s; %s of %s in all (%d%%)" % (
        host, label, index, count, name, where, human_bytes(overall), human_bytes(total), percent)


class Watcher(object):
    """A thread that prints a progress line every `interval` seconds while one file is sent."""

    def __init__(self, line, path, interval, show=display.display, pid=None):
        self.line, self.path, self.interval, self.show = line, path, interval, show
        self.pid = os.getpid() if pid is None else pid
        self.sent = None  # the furthest the transfer was seen to read
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="bundle_push progress")
        self.thread.daemon = True
        self.started = time.monotonic()

    def _run(self):
        while not self.stop.wait(self.interval):
            try:
                state, done = reading(self.path, self.pid)
            except OSError:
                state, done = None, None
            if state == "sending":
                self.sent = max(self.sent or 0, done)
            elif state is None:
                done = self.sent
            self.show(self.line(state, done, time.monotonic() - self.started))

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        return False


def file_sizes(files):
    sizes = []
    for entry in files:
        if not isinstance(entry, dict) or "file" not in entry or "size" not in entry:
            raise AnsibleActionFail("bundle_push: every entry of files needs file and size, got %r" % (entry,))
        name = str(entry["file"])
        if not name or "/" in name or name in (".", ".."):
            raise AnsibleActionFail("bundle_push: %r is not a plain file name" % (name,))
        sizes.append((name, int(entry["size"])))
    return sizes


class ActionModule(ActionBase):
    # Each file's copy makes (and removes) its own temporary directory on the node.
    TRANSFERS_FILES = False

    def _copy(self, src, dest, args, task_vars):
        new_task = self._task.copy()
        for key in list(new_task.args):
            new_task.args.pop(key, None)
        pairs = (("src", src), ("dest", dest), ("owner", args["owner"]), ("group", args["group"]), ("mode", args["mode"]))
        new_task.args.update(dict((k, v) for k, v in pairs if v is not None))
        copy_action = self._shared_loader_obj.action_loader.get(
            "ansible.legacy.copy", task=new_task, connection=self._connection, play_context=self._play_context,
            loader=self._loader, templar=self._templar, shared_loader_obj=self._shared_loader_obj)
        return copy_action.run(task_vars=task_vars)

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        host = task_vars.get("inventory_hostname", "?")
        files = file_sizes(args["files"])
        total = sum(size for dummy_name, size in files)
        results, sent, before = [], 0, 0
        for index, (name, size) in enumerate(files, 1):
            src = os.path.join(args["src_dir"], name)

            def line(state, done, seconds, name=name, index=index, size=size, before=before):
                return progress_line(host, args["label"], name, index, len(files), state, done, size, before, total,
                                     seconds)

            if self._task.check_mode:
                one = self._copy(src, os.path.join(args["dest_dir"], name), args, task_vars)
            else:
                with Watcher(line, src, args["interval"]):
                    one = self._copy(src, os.path.join(args["dest_dir"], name), args, task_vars)
            one["file"] = name
            results.append(one)
            if one.get("failed"):
                result.update(failed=True, msg="%s: could not copy %s to %s: %s" % (
                    host, name, args["dest_dir"], one.get("msg", "failed")))
                break
            if one.get("changed") and not self._task.check_mode:
                sent += size
                display.display(line("sending", size, 0))
            before += size
        self._remove_tmp_path(self._connection._shell.tmpdir)
        result["copies"] = results
        result["changed"] = any(r.get("changed") for r in results)
        result["sent_bytes"] = sent
        diffs = []
        for r in results:
            diff = r.get("diff")
            diffs += diff if isinstance(diff, list) else [diff] if diff else []
        if diffs:
            result["diff"] = diffs
        if "msg" not in result:
            result["msg"] = "%s: %s of %s copied from the controller (%d file(s))" % (
                host, human_bytes(sent), human_bytes(total), len(results))
        return result
