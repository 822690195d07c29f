# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drift filters: desired vs actual TopsRider state, and the fleet report in
JSON, Markdown, JUnit XML and Prometheus text form. The logic lives in
plugins/module_utils/_drift.py (pure, unit-tested); these are thin wrappers."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gcu.topsrider.plugins.module_utils._drift import (
    DriftError, build_report, deploy_pending_reasons, node_findings, safe_run_id, to_junit, to_markdown, to_prometheus,
)


def _plain(value):
    """Jinja and ansible-core 2.19 hand over tagged or lazy containers: make plain ones."""
    if isinstance(value, dict):
        return dict((str(k), _plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return value


def _guard(func, *args):
    try:
        return func(*[_plain(a) for a in args])
    except (DriftError, KeyError, TypeError, ValueError) as e:
        raise AnsibleFilterError("%s: %s" % (func.__name__, e))


def topsrider_drift_findings(actual, node, desired):
    return _guard(node_findings, node, desired, actual)


def topsrider_deploy_pending(findings, state, manifest, manifest_sha256, stage_path, facts_path):
    """Why a deploy of the manifest could still change a node ([] = nothing to do)."""
    return _guard(deploy_pending_reasons, findings, state.get("files") if isinstance(state, dict) else None,
                  manifest, manifest_sha256, stage_path, facts_path)


def _report(results, hosts, run_id, meta, now):
    return build_report(hosts, results, safe_run_id(run_id), now=now, meta=meta)


def topsrider_drift_report(results, hosts, run_id, meta=None, now=None):
    return _guard(_report, results, hosts, run_id, meta, now)


def topsrider_drift_markdown(report):
    return _guard(to_markdown, report)


def topsrider_drift_junit(report):
    return _guard(to_junit, report)


def topsrider_drift_prometheus(report):
    return _guard(to_prometheus, report)


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
