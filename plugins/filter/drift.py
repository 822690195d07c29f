# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drift filters: desired vs actual TopsRider state (the one comparison,
plugins/module_utils/_compare.py, which topsrider_state also runs on the
node), and the fleet report in JSON, Markdown, JUnit XML and Prometheus text
form (plugins/plugin_utils/_drift.py). Thin wrappers over pure, unit-tested
code."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gcu.topsrider.plugins.plugin_utils._filters import deferred, guarded_filters

node_findings = deferred("module_utils._compare.node_findings")
probe_findings = deferred("module_utils._compare.probe_findings")
sorted_findings = deferred("module_utils._compare.sorted_findings")
deploy_pending_reasons = deferred("module_utils._compare.deploy_pending_reasons")
build_report = deferred("plugin_utils._drift.build_report")
safe_run_id = deferred("plugin_utils._report_formats.safe_run_id")


def _drift_findings(actual, node, desired):
    return node_findings(node, desired, actual)


def _with_probe(findings, node, probe):
    """A node's findings (topsrider_state's) with its eccl_probe's problems added, in report order."""
    if not isinstance(findings, list):
        raise ValueError("findings of %s are a list (topsrider_state's findings), got %s"
                         % (node, type(findings).__name__))
    return sorted_findings(list(findings) + probe_findings(node, probe if isinstance(probe, dict) else None))


def _deploy_pending(findings, state, manifest, manifest_sha256, stage_path, facts_path):
    """Why a deploy of the manifest could still change a node ([] = nothing to do)."""
    return deploy_pending_reasons(findings, state.get("files") if isinstance(state, dict) else None,
                                  manifest, manifest_sha256, stage_path, facts_path)


def _report(results, hosts, run_id, meta=None, now=None, previous=None):
    return build_report(hosts, results, safe_run_id(run_id), now=now, meta=meta, previous=previous)


class FilterModule(object):
    def filters(self):
        return guarded_filters({
            "topsrider_drift_findings": _drift_findings,
            "topsrider_drift_report": _report,
            "topsrider_drift_markdown": deferred("plugin_utils._drift.to_markdown"),
            "topsrider_drift_junit": deferred("plugin_utils._drift.to_junit"),
            "topsrider_drift_prometheus": deferred("plugin_utils._drift.to_prometheus"),
            "topsrider_deploy_pending": _deploy_pending,
            "topsrider_probe_findings": _with_probe,
            "topsrider_revoked_findings": deferred("plugin_utils._drift.revoked_findings"),
        })
