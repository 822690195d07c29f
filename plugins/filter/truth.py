# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that let deploy.yml and rollback.yml prove an end state before
they say ok, and the one rule for operator values that become node paths,
file names or lines, and a rescue's two questions (what failed, in one
sentence; did the node stop answering), and which hosts of a deploy are
already at the release. The logic lives in
plugins/plugin_utils/_truth.py, _deploy_split.py and
module_utils/_values.py (pure, unit-tested); these are
thin wrappers."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gcu.topsrider.plugins.plugin_utils._filters import deferred, guarded_filters


class FilterModule(object):
    def filters(self):
        return guarded_filters({
            # {label: value} | topsrider_value_problems('name'|'path'|'line') -> [problem, ...]
            "topsrider_value_problems": deferred("module_utils._values.value_problems"),
            # '' | topsrider_run_id -> 20261125T213000Z; an operator's id is checked by the name rule
            "topsrider_run_id": deferred("module_utils._values.run_id"),
            # preflight_state.state | topsrider_snapshot_record(id, time, ...) -> the deploy snapshot
            "topsrider_snapshot_record": deferred("plugin_utils._truth.snapshot_record"),
            # snapshot | topsrider_restore_desired(journal, facts_file, node) -> topsrider_state's desired
            "topsrider_restore_desired": deferred("plugin_utils._truth.restore_desired"),
            "topsrider_snapshot_needs": deferred("plugin_utils._truth.snapshot_needs"),
            # restore_read.state.records | topsrider_restore_plan(id, state_dir, facts_file, host[, journal])
            "topsrider_restore_plan": deferred("plugin_utils._deploy_plan.restore_plan"),
            # open_read.state.records | topsrider_rollback_choice(state_dir, requested, facts, facts_file) -> {id, from, problem}
            "topsrider_rollback_choice": deferred("plugin_utils._deploy_plan.rollback_choice"),
            # msg | topsrider_failure(action, name[, prefix]) -> one sentence
            "topsrider_failure": deferred("plugin_utils._truth.failure_text"),
            # topsrider_lock_taken | topsrider_node_lost(probe) -> whether the node stopped answering
            "topsrider_node_lost": deferred("plugin_utils._truth.node_lost"),
            # hostvars | topsrider_deploy_split(hosts, fast_path) -> {current, rollout}
            "topsrider_deploy_split": deferred("plugin_utils._deploy_split.deploy_split"),
            # hostvars | topsrider_deploy_at_release(hosts) -> [host, ...] to re-probe or tag first
            "topsrider_deploy_at_release": deferred("plugin_utils._deploy_split.deploy_at_release"),
            # hostvars | topsrider_deploy_current_lines(hosts, version, feature_prefix, started, now) -> report lines
            "topsrider_deploy_current_lines": deferred("plugin_utils._deploy_split.current_lines"),
            # preflight_state.state | topsrider_preflight_problem(host, manifest, keep, cache_root, expected) -> '' or the refusal
            "topsrider_preflight_problem": deferred("plugin_utils._deploy_plan.preflight_problem"),
            # preflight_state.state | topsrider_snapshot_plan(id, files, open_path, sha256, plan, torch_gcu) -> the decision
            "topsrider_snapshot_plan": deferred("plugin_utils._deploy_plan.snapshot_plan"),
            # version | topsrider_deploy_result(snapshot, files_now, files, wheel_changed) -> the host's report line
            "topsrider_deploy_result": deferred("plugin_utils._deploy_plan.deploy_result"),
            # deploy_current_state | topsrider_left_drained(scheduler) -> drained by an earlier run of this collection
            "topsrider_left_drained": deferred("plugin_utils._deploy_split.left_drained"),
        }, (AttributeError,))
