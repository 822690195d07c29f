# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drift filters: desired vs actual TopsRider state, and the fleet report in
JSON, Markdown, JUnit XML and Prometheus text form. The logic lives in
plugins/module_utils/_drift.py (pure, unit-tested); these are thin wrappers."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gcu.topsrider.plugins.module_utils._drift import (
    DriftError, build_report, deploy_pending_reasons, node_findings, safe_run_id, to_junit, to_markdown, to_prometheus,
)
from ansible_collections.gcu.topsrider.plugins.plugin_utils._filters import guarded

ERRORS = (DriftError,)


def _drift_findings(actual, node, desired):
    return node_findings(node, desired, actual)


def _deploy_pending(findings, state, manifest, manifest_sha256, stage_path, facts_path):
    """Why a deploy of the manifest could still change a node ([] = nothing to do)."""
    return deploy_pending_reasons(findings, state.get("files") if isinstance(state, dict) else None,
                                  manifest, manifest_sha256, stage_path, facts_path)


def _report(results, hosts, run_id, meta=None, now=None):
    return build_report(hosts, results, safe_run_id(run_id), now=now, meta=meta)


topsrider_drift_findings = guarded(_drift_findings, ERRORS)
topsrider_deploy_pending = guarded(_deploy_pending, ERRORS)
topsrider_drift_report = guarded(_report, ERRORS)
topsrider_drift_markdown = guarded(to_markdown, ERRORS)
topsrider_drift_junit = guarded(to_junit, ERRORS)
topsrider_drift_prometheus = guarded(to_prometheus, ERRORS)


class FilterModule(object):
    def filters(self):
        return {
            "topsrider_drift_findings": topsrider_drift_findings,
            "topsrider_drift_report": topsrider_drift_report,
            "topsrider_drift_markdown": topsrider_drift_markdown,
            "topsrider_drift_junit": topsrider_drift_junit,
            "topsrider_drift_prometheus": topsrider_drift_prometheus,
            "topsrider_deploy_pending": topsrider_deploy_pending,
        }
