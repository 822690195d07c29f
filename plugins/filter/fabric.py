# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fabric check filters (playbooks/fabric_check.yml): plan the jobs round by
round, advance with each round's eccl_probe results, build the report and
render it as Markdown, JUnit XML and Prometheus text. The logic lives in
plugins/plugin_utils/_fabric.py (pure, unit-tested); these are thin wrappers."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gcu.topsrider.plugins.plugin_utils._report_formats import ReportError
from ansible_collections.gcu.topsrider.plugins.plugin_utils._fabric import (
    FabricError, advance, build_report, job_for, max_rounds, plan, to_junit, to_markdown, to_prometheus,
)
from ansible_collections.gcu.topsrider.plugins.plugin_utils._filters import guarded_filters


def _job(state, node):
    """The node's job in the current round, or {} (none)."""
    return job_for(state, node) or {}


class FilterModule(object):
    def filters(self):
        return guarded_filters({
            "topsrider_fabric_plan": plan,
            "topsrider_fabric_job": _job,
            "topsrider_fabric_advance": advance,
            "topsrider_fabric_max_rounds": max_rounds,
            "topsrider_fabric_report": build_report,
            "topsrider_fabric_markdown": to_markdown,
            "topsrider_fabric_junit": to_junit,
            "topsrider_fabric_prometheus": to_prometheus,
        }, (ReportError, FabricError))
