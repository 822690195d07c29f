# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report of a run that lost a node in the middle of its turn.

A node that stops answering during a task (it lost power, its network, or
its container was killed) is dropped from the play by Ansible: none of its
rescue or always tasks run, so it writes no line of its own, and when it was
the last host standing in its batch the playbook ends there and no later
play writes the report. This callback does one thing at the end of the run: when a host was lost after the run
wrote its fleet report, it writes that host's line ("unreachable: the node
stopped answering during '<task>' ...") and the fleet report again, and
prints it. The other hosts' lines stay as the run wrote them (a batch's
hosts are "in progress" from the batch's start, tasks/batch.yml). The logic
is plugins/plugin_utils/_fleet_report.py's, the writer the one of
gcu.topsrider.topsrider_reports.
"""
from __future__ import annotations

DOCUMENTATION = r'''
name: fleet_report
type: aggregate
version_added: 0.3.0
short_description: Writes the fleet report of a deploy or rollback that lost a node mid-task
description:
  - At the end of a run of deploy.yml, rollback.yml or verify.yml that wrote its fleet report, rewrites it when
    a host stopped answering afterwards (Ansible runs none of such a host's rescue or always tasks), naming the
    host unreachable and the task it was lost in, and prints it.
  - A run of the playbooks from a checkout loads it by itself (the playbooks' adjacent C(callback_plugins/)
    holds a copy that needs no enabling). Ansible does not load a collection's callback unasked, and never a
    collection playbook's adjacent plugins, so where the collection is installed enable it in C(ansible.cfg)
    (C(callbacks_enabled = gcu.topsrider.fleet_report)) or the environment
    (C(ANSIBLE_CALLBACKS_ENABLED=gcu.topsrider.fleet_report)). Without it the written report still names
    such a node C(in progress), as the run left it, and the printed one is missing; a run that writes its fleet
    report without this callback loaded warns so (M(gcu.topsrider.topsrider_reports)), naming the setting.
  - Loaded both ways at once, it writes and prints the report once.
requirements:
  - enabled in callbacks_enabled where the collection is installed (see the description)
'''

import json
import os
import re
import time

from ansible.plugins.callback import CallbackBase
from ansible_collections.gcu.topsrider.plugins.action.topsrider_reports import write_reports
from ansible_collections.gcu.topsrider.plugins.plugin_utils._fleet_report import (
    lost_line, report_files, to_text, with_lost_hosts,
)

_REPORTS_ACTIONS = ("gcu.topsrider.topsrider_reports", "topsrider_reports")
_LATEST = re.compile(r"^(?P<dir>.+)/(?P<kind>deploy|rollback|verify)-latest\.json$")
# The reports this process already rewrote: the checkout's adjacent copy and the enabled
# collection callback are two instances of one class, and the report is written and printed once.
_DONE = set()
# Rows a lost host's line replaces: what the run wrote before it knew.
_REPLACED = ("in progress", "not started", "pending", "unreachable")
# The names this callback was loaded under in this ansible-playbook process. Ansible
# forks its workers after it loads the callbacks, so an action plugin sees it too
# (gcu.topsrider.topsrider_reports warns when a run writes its report without it).
LOADED = []


def loaded():
    """Whether this process (or the one it was forked from) loaded the callback."""
    return bool(LOADED)


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "gcu.topsrider.fleet_report"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super(CallbackModule, self).__init__()
        LOADED.append(self.CALLBACK_NAME)
        self._latest = None
        self._lost = {}
        self._failed = {}

    def v2_runner_on_ok(self, result):
        if result._task.action in _REPORTS_ACTIONS:
            for path in result._result.get("written") or []:
                if _LATEST.match(os.path.abspath(path)):
                    self._latest = os.path.abspath(path)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if not ignore_errors:
            self._failed[result._host.get_name()] = (result._task.get_name(), result._result.get("msg"))

    def v2_runner_on_unreachable(self, result):
        if not result._task.ignore_unreachable:
            self._lost[result._host.get_name()] = (result._task.get_name(), result._result.get("msg"), time.time())

    def v2_playbook_on_stats(self, stats):
        if not self._latest or not self._lost or self._latest in _DONE:
            return
        _DONE.add(self._latest)
        try:
            with open(self._latest) as f:
                report = json.load(f)
            rows = dict((r.get("host"), r) for r in report.get("hosts") or [])
            lines = {}
            for host, (task, msg, when) in self._lost.items():
                if host in rows and rows[host].get("result") in _REPLACED:
                    failed_task, failed_msg = self._failed.get(host, (None, None))
                    lines[host] = lost_line(host, task, msg, failed_task, failed_msg, now=when)
            if not lines:
                return
            report = with_lost_hosts(report, lines)
            reports_dir = _LATEST.match(self._latest).group("dir")
            run_dir = "%s/%s-%s.d" % (reports_dir, report["kind"], report["id"])
            write_reports([["%s/%s.json" % (run_dir, h), json.dumps(line, indent=4, sort_keys=True)]
                           for h, line in sorted(lines.items())] + report_files(report, reports_dir))
            self._display.display(to_text(report).rstrip("\n"))
        except Exception as e:  # a callback's error must not hide the run's own result
            self._display.warning("gcu.topsrider.fleet_report: could not rewrite the fleet report %s for the unreachable "
                                  "host(s) %s: %s" % (self._latest, ", ".join(sorted(self._lost)), e))
