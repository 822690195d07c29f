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

from ansible_collections.gcu.topsrider.plugins.plugin_utils._filters import deferred, guarded_filters


class FilterModule(object):
    def filters(self):
        return guarded_filters({
            "topsrider_fleet_report": deferred("plugin_utils._fleet_report.build"),
            "topsrider_report_markdown": deferred("plugin_utils._fleet_report.to_markdown"),
            "topsrider_report_text": deferred("plugin_utils._fleet_report.to_text"),
            "topsrider_report_junit": deferred("plugin_utils._fleet_report.to_junit"),
            "topsrider_report_summary": deferred("plugin_utils._fleet_report.summarize"),
            "topsrider_report_files": deferred("plugin_utils._fleet_report.report_files"),
            "topsrider_in_progress_lines": deferred("plugin_utils._fleet_report.in_progress_lines"),
            "topsrider_report_slurm": deferred("plugin_utils._fleet_report.slurm_line"),
            "topsrider_holders_text": deferred("module_utils._holders.describe_all"),
        })
