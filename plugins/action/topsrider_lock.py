# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action of gcu.topsrider.topsrider_lock (plugins/modules/topsrider_lock.py).

Taking the lock runs the module with timeout=0: when it is free (the usual
case) that one call takes it. When another run holds it, the action polls the
node the same way until the lock is free or `timeout` has passed, printing a
line per poll on the controller (who holds it, how long this run has waited,
of how long), instead of one silent module call that waits on the node.
Releasing, check mode, timeout=0 and a timeout the module refuses run the
module once, as they are.
"""
from __future__ import annotations

import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.gcu.topsrider.plugins.module_utils._lock import describe, locked_message

display = Display()


def poll_delay(polls, most=10.0):
    """Seconds before the next try: 1, 2, 4, 8, then every `most`."""
    return min(float(most), 2.0 ** min(polls, 16))


def waiting_line(host, held, waited, timeout):
    return "%s: waiting for the node lock, held by %s; %d s of %d s" % (host, describe(held), waited, timeout)


def wait(host, timeout, path, take, now=time.monotonic, sleep=time.sleep, show=display.display):
    """take() -> the module's result with timeout=0; until it is not 'locked' or `timeout` passed."""
    started = now()
    polls = 0
    waited_for = None
    while True:
        result = take()
        if not (result.get("failed") and result.get("locked")):
            if waited_for is not None and not result.get("failed"):
                result["waited_for"] = waited_for
            return result
        held = result.get("holder") if isinstance(result.get("holder"), dict) else "unreadable"
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
        if (args.get("state", "acquired") != "acquired" or self._task.check_mode or not timeout
                or not 0 < timeout <= 86400):
            result.update(module(args))
        else:
            host = task_vars.get("inventory_hostname", "?")
            result.update(wait(host, timeout, args.get("path"), lambda: module(dict(args, timeout=0))))
        self._remove_tmp_path(self._connection._shell.tmpdir)
        return result
