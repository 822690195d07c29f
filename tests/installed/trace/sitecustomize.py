# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which files of the installed collection a run opens (tests/installed/run.py).

On PYTHONPATH for the traced ansible-playbook runs only: Python's audit hook
sees every file any controller process opens (imports included, and the
worker processes forked from it), and this one appends each path under
TOPSRIDER_TRACE_ROOT to the file TOPSRIDER_TRACE_LOG. It changes nothing
else, and a failure to write is the run's to ignore, never to fail on."""
import os
import sys

_ROOT = os.environ.get("TOPSRIDER_TRACE_ROOT")
_LOG = os.environ.get("TOPSRIDER_TRACE_LOG")


def _opened(event, args):
    if event != "open" or not isinstance(args[0], (str, bytes)):
        return
    try:
        path = os.path.realpath(os.fsdecode(args[0]))
        if path.startswith(_ROOT + os.sep):
            with open(_LOG, "a") as log:
                log.write(path[len(_ROOT) + 1:] + "\n")
    except (OSError, ValueError):
        pass


if _ROOT and _LOG:
    _ROOT = os.path.realpath(_ROOT)
    sys.addaudithook(_opened)
