# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report of deploy, verify and rollback (playbooks/tasks/finish.yml):
built from the run's host lines, as plain text (printed), Markdown and JUnit
XML (written), its summary, a host's Slurm part, and who holds a node's cards
in one sentence. The logic lives in
plugins/plugin_utils/_fleet_report.py (pure, unit-tested); these are thin wrappers."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gcu.topsrider.plugins.plugin_utils._fleet_report import (
    FleetReportError, build, in_progress_lines, report_files, slurm_line, summarize, to_junit, to_markdown, to_text,
)
from ansible_collections.gcu.topsrider.plugins.module_utils._holders import describe_all
from ansible_collections.gcu.topsrider.plugins.plugin_utils._filters import guarded_filters
from ansible_collections.gcu.topsrider.plugins.plugin_utils._report_formats import ReportError


class FilterModule(object):
    def filters(self):
        return guarded_filters({
            "topsrider_fleet_report": build,
            "topsrider_report_markdown": to_markdown,
            "topsrider_report_text": to_text,
            "topsrider_report_junit": to_junit,
            "topsrider_report_summary": summarize,
            "topsrider_report_files": report_files,
            "topsrider_in_progress_lines": in_progress_lines,
            "topsrider_report_slurm": slurm_line,
            "topsrider_holders_text": describe_all,
        }, (FleetReportError, ReportError))
