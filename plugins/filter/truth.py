# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that let deploy.yml and rollback.yml prove an end state before
they say ok, and the one rule for operator values that become node paths,
file names or lines. The logic lives in plugins/module_utils/_truth.py (pure,
unit-tested); these are thin wrappers."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

from ansible.errors import AnsibleFilterError
from ansible_collections.gcu.topsrider.plugins.module_utils._truth import (
    freeze_torch_gcu, restore_expected, snapshot_needs, state_differences, value_problems,
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
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise AnsibleFilterError("%s: %s" % (func.__name__, e))


def topsrider_value_problems(values, kind):
    """{label: value} | topsrider_value_problems('name'|'path'|'line') -> [problem, ...]"""
    return _guard(value_problems, values, kind)


def topsrider_restore_expected(deploy_snapshot, journal=None):
    return _guard(restore_expected, deploy_snapshot, journal)


def topsrider_restore_actual(state, freeze_lines, facts_path):
    """The actual side of topsrider_state_differences from a topsrider_state
    result (packages, files) and `pip freeze --all` lines."""
    def build(state, freeze_lines, facts_path):
        files = dict((p, f.get("sha256") if f.get("exists") else None)
                     for p, f in (state.get("files") or {}).items() if p != facts_path)
        facts = (state.get("files") or {}).get(facts_path) or {}
        version, url = freeze_torch_gcu(freeze_lines)
        return {
            "packages": state.get("packages") or {},
            "files": files,
            "torch_gcu": {"version": version, "url": url},
            "facts": json.loads(facts["content"]) if facts.get("exists") and facts.get("content") else None,
        }
    return _guard(build, state, freeze_lines, facts_path)


def topsrider_state_differences(expected, actual):
    return _guard(state_differences, expected, actual)


def topsrider_snapshot_needs(deploy_snapshot, journal, cache_root):
    return _guard(snapshot_needs, deploy_snapshot, journal, cache_root)


class FilterModule(object):
    def filters(self):
        return {
            "topsrider_value_problems": topsrider_value_problems,
            "topsrider_restore_expected": topsrider_restore_expected,
            "topsrider_restore_actual": topsrider_restore_actual,
            "topsrider_state_differences": topsrider_state_differences,
            "topsrider_snapshot_needs": topsrider_snapshot_needs,
        }
