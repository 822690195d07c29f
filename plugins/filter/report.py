# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report of deploy, verify and rollback (playbooks/tasks/finish.yml)
as plain text (printed) and JUnit XML (written), its summary, a host's Slurm
part, and who holds a node's cards in one sentence. The logic lives in
plugins/plugin_utils/_fleet_report.py (pure, unit-tested); these are thin wrappers."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gcu.topsrider.plugins.plugin_utils._fleet_report import (
    FleetReportError, slurm_line, summarize, to_junit, to_text,
)
from ansible_collections.gcu.topsrider.plugins.module_utils._holders import describe_all
from ansible_collections.gcu.topsrider.plugins.plugin_utils._filters import guarded_filters


class FilterModule(object):
    def filters(self):
        return guarded_filters({
            "topsrider_report_text": to_text,
            "topsrider_report_junit": to_junit,
            "topsrider_report_summary": summarize,
            "topsrider_report_slurm": slurm_line,
            "topsrider_holders_text": describe_all,
        }, (FleetReportError,))
