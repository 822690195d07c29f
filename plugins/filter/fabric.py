# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fabric check filters (playbooks/fabric_check.yml): plan the jobs round by
round, advance with each round's eccl_probe results, build the report and
render it as Markdown, JUnit XML and Prometheus text. The logic lives in
plugins/plugin_utils/_fabric.py (pure, unit-tested); these are thin wrappers."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gcu.topsrider.plugins.plugin_utils._filters import deferred, guarded_filters

job_for = deferred("plugin_utils._fabric.job_for")


def _job(state, node):
    """The node's job in the current round, or {} (none)."""
    return job_for(state, node) or {}


class FilterModule(object):
    def filters(self):
        return guarded_filters({
            "topsrider_fabric_plan": deferred("plugin_utils._fabric.plan"),
            "topsrider_fabric_job": _job,
            "topsrider_fabric_advance": deferred("plugin_utils._fabric.advance"),
            "topsrider_fabric_max_rounds": deferred("plugin_utils._fabric.max_rounds"),
            "topsrider_fabric_report": deferred("plugin_utils._fabric.build_report"),
            "topsrider_fabric_markdown": deferred("plugin_utils._fabric.to_markdown"),
            "topsrider_fabric_junit": deferred("plugin_utils._fabric.to_junit"),
            "topsrider_fabric_prometheus": deferred("plugin_utils._fabric.to_prometheus"),
        })
