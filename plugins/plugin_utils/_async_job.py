# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Polling a background (async, poll: 0) job on a node from an action plugin:
how long to wait between polls, and async_status for the job. The actions
bundle_progress and job_progress use it; each prints its own progress lines."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


def poll_delay(polls, interval):
    """Seconds before the next poll: 0.5, 0.5, 1, 1, 2, 2, 4 ... up to interval, so a
    job of seconds is seen to end within about a second and a long one polls every interval."""
    return min(float(interval), 0.5 * 2 ** min(polls // 2, 16))


def job_status(action, jid, mode, task_vars):
    """async_status of the job on the task's host (mode status or cleanup), run by the action `action`."""
    async_dir = action._remote_expand_user(action.get_shell_option("async_dir", default="~/.ansible_async"))
    return action._execute_module(module_name="ansible.legacy.async_status", task_vars=task_vars,
                                  module_args={"jid": jid, "mode": mode, "_async_dir": async_dir})
