# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action of gcu.topsrider.topsrider_reports (documented in plugins/modules/topsrider_reports.py).

Writes a run's report files on the controller, inside the ansible-playbook
process: no module is sent anywhere and no interpreter started (a command
task running a script for it cost about half a second per call, twice in a
no-change deploy). Each file is written next to itself and renamed into
place (a reader never sees half a report), mode 0644, in its directory, made
(0755) when missing (a run's first host line makes <kind>-<run id>.d),
ending with one newline (added when the text has none: a Jinja '\\n' inside
a YAML block scalar arrives as two characters, so callers do not append one).

`show`: text printed on the controller's terminal as it is, line for line,
through Ansible's display: a person reads the same plain lines under any
stdout callback and result format (a debug task's msg is one JSON string
with \\n escapes under the stock configuration).
"""
from __future__ import annotations

import errno
import os
import re

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.gcu.topsrider.plugins.module_utils._atomic import write_atomic

display = Display()

# A fleet report (<kind>-latest.json is written with each one).
_LATEST = re.compile(r"(?:^|/)(?:deploy|rollback|verify)-latest\.json$")
NO_CALLBACK = ("gcu.topsrider.fleet_report is not enabled: if a node stops answering in the middle of a task, Ansible"
               " ends the run without printing the fleet report at the end, and the written report names that node"
               " 'in progress'. Enable it in ansible.cfg (callbacks_enabled = gcu.topsrider.fleet_report under"
               " [defaults]) or with ANSIBLE_CALLBACKS_ENABLED=gcu.topsrider.fleet_report (docs/deploy.md).")


def _callback_loaded():
    # Imported here: the callback imports this module's write_reports.
    from ansible_collections.gcu.topsrider.plugins.callback import fleet_report
    return fleet_report.loaded()


ARGUMENT_SPEC = {"files": {"type": "list", "elements": "raw", "required": True},
                 "show": {"type": "str"}}


def file_problems(files):
    """What makes `files` not a list of [path, text] pairs ([] when it is one)."""
    out = []
    for pair in files:
        if (not isinstance(pair, (list, tuple)) or len(pair) != 2 or not isinstance(pair[0], str)
                or not pair[0] or "\x00" in pair[0] or not isinstance(pair[1], str)):
            shown = [pair[0], type(pair[1]).__name__] if isinstance(pair, (list, tuple)) and len(pair) == 2 else pair
            out.append("want [[path, text], ...], got %r" % (shown,))
    return out


def write_reports(files):
    """Write every [path, text] of `files` (a relative path is taken from
    the directory ansible-playbook runs in); the paths written, in order."""
    problems = file_problems(files)
    if problems:
        raise ValueError("; ".join(problems))
    for path, text in files:
        path = os.path.abspath(path)
        directory = os.path.dirname(path)
        made = not os.path.isdir(directory)
        try:
            # Hosts write their lines at once: another may make the run's
            # directory between a look and a mkdir, so an existing one is fine.
            os.makedirs(directory, 0o755, exist_ok=True)
            write_atomic(path, text if text.endswith("\n") else text + "\n", 0o644, prefix=".report-")
        except (IOError, OSError) as e:
            if made and getattr(e, "errno", None) in (errno.ENOSPC, errno.EDQUOT):
                # A full file system: the directory this call made holds nothing (every host's write
                # fails there too), so it goes rather than stay behind, empty.
                try:
                    os.rmdir(directory)
                except OSError:
                    pass
            raise ReportWriteError(path, e)
    return [pair[0] for pair in files]


class ReportWriteError(OSError):
    """A report file that could not be written: which, and why, in one sentence
    (a full file system named as such; the file, when it was there, is as it was)."""

    def __init__(self, path, error):
        reason = getattr(error, "strerror", None) or str(error)
        if getattr(error, "errno", None) in (errno.ENOSPC, errno.EDQUOT):
            text = ("the file system of %s is full (%s): %s was not written and is as it was; free space there and run again"
                    % (os.path.dirname(path), reason, path))
        else:
            text = "cannot write %s: %s" % (path, reason)
        super(ReportWriteError, self).__init__(getattr(error, "errno", None), text)
        self.text = text

    def __str__(self):
        return self.text


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        problems = file_problems(args["files"])
        if problems:
            raise AnsibleActionFail("topsrider_reports: %s; nothing was written" % "; ".join(problems))
        if self._task.check_mode:
            written = []
            result["msg"] = "check mode: nothing written"
        else:
            try:
                written = write_reports(args["files"])
            except (IOError, OSError) as e:
                raise AnsibleActionFail("topsrider_reports: %s" % e)
        if args["show"]:
            display.display(args["show"].rstrip("\n"))
        if any(_LATEST.search(p) for p, dummy in args["files"]) and not _callback_loaded():
            result["warnings"] = [NO_CALLBACK]
        # The run's own output on the controller, not a change to the fleet.
        result.update(changed=False, written=written)
        return result
