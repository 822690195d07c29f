# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fabric check filters (playbooks/fabric_check.yml): plan the jobs round by
round, advance with each round's eccl_probe results, build the report and
render it as Markdown, JUnit XML and Prometheus text. The logic lives in
plugins/module_utils/_fabric.py (pure, unit-tested); these are thin wrappers."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gcu.topsrider.plugins.filter.drift import _plain
from ansible_collections.gcu.topsrider.plugins.module_utils._drift import DriftError
from ansible_collections.gcu.topsrider.plugins.module_utils._fabric import (
    FabricError, advance, build_report, job_for, max_rounds, plan, to_junit, to_markdown, to_prometheus,
)


def _guard(func, *args):
    try:
        return func(*[_plain(a) for a in args])
    except (DriftError, FabricError, KeyError, TypeError, ValueError) as e:
        raise AnsibleFilterError("%s: %s" % (func.__name__, e))


def topsrider_fabric_plan(cards, options=None, not_ready=None, unreachable=None, now=None):
    """[[node, card count], ...] of the ready nodes -> the state, first round planned."""
    return _guard(plan, cards, options, not_ready, unreachable, now)


def topsrider_fabric_job(state, node):
    """The node's job in the current round, or {} (none)."""
    return _guard(job_for, state, node) or {}


def topsrider_fabric_advance(state, results, active=None, now=None):
    return _guard(advance, state, results, active, now)


def topsrider_fabric_max_rounds(nodes, retries=2):
    return _guard(max_rounds, nodes, retries)


def topsrider_fabric_report(state, run_id, meta=None, now=None):
    return _guard(build_report, state, run_id, meta, now)


def topsrider_fabric_markdown(report):
    return _guard(to_markdown, report)


def topsrider_fabric_junit(report):
    return _guard(to_junit, report)


def topsrider_fabric_prometheus(report):
    return _guard(to_prometheus, report)


class FilterModule(object):
    def filters(self):
        return {
            "topsrider_fabric_plan": topsrider_fabric_plan,
            "topsrider_fabric_job": topsrider_fabric_job,
            "topsrider_fabric_advance": topsrider_fabric_advance,
            "topsrider_fabric_max_rounds": topsrider_fabric_max_rounds,
            "topsrider_fabric_report": topsrider_fabric_report,
            "topsrider_fabric_markdown": topsrider_fabric_markdown,
            "topsrider_fabric_junit": topsrider_fabric_junit,
            "topsrider_fabric_prometheus": topsrider_fabric_prometheus,
        }
