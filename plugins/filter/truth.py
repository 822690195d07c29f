# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that let deploy.yml and rollback.yml prove an end state before
they say ok, and the one rule for operator values that become node paths,
file names or lines, and a rescue's two questions (what failed, in one
sentence; did the node stop answering). The logic lives in plugins/plugin_utils/_truth.py and _values.py (pure,
unit-tested); these are thin wrappers."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

from ansible_collections.gcu.topsrider.plugins.plugin_utils._truth import (
    failure_text, freeze_torch_gcu, node_lost, restore_expected, snapshot_needs, state_differences,
)
from ansible_collections.gcu.topsrider.plugins.module_utils._values import run_id, value_problems
from ansible_collections.gcu.topsrider.plugins.plugin_utils._filters import guarded_filters


def _restore_actual(state, freeze_lines, facts_path):
    """The actual side of topsrider_state_differences from a topsrider_state
    result (packages, files) and `pip freeze --all` lines."""
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


class FilterModule(object):
    def filters(self):
        return guarded_filters({
            # {label: value} | topsrider_value_problems('name'|'path'|'line') -> [problem, ...]
            "topsrider_value_problems": value_problems,
            # '' | topsrider_run_id -> 20261125T213000Z; an operator's id is checked by the name rule
            "topsrider_run_id": run_id,
            "topsrider_restore_expected": restore_expected,
            "topsrider_restore_actual": _restore_actual,
            "topsrider_state_differences": state_differences,
            "topsrider_snapshot_needs": snapshot_needs,
            # msg | topsrider_failure(action, name[, prefix]) -> one sentence
            "topsrider_failure": failure_text,
            # topsrider_lock_taken | topsrider_node_lost(probe) -> whether the node stopped answering
            "topsrider_node_lost": node_lost,
        }, (AttributeError,))
