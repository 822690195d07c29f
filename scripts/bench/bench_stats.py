# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Callback plugin for `make bench` and the perf check: per-host task counts and
the bundle bytes a run really sent, as JSON (controller side, not collection
content: scripts/bench is not in galaxy.yml's manifest allow-list).

Enable with
  ANSIBLE_CALLBACK_PLUGINS=<a directory with only this file> ANSIBLE_CALLBACKS_ENABLED=bench_stats
  BENCH_STATS_FILE=/path/out.json BENCH_BUNDLE_ROOT=/work/main/.cache/bundles
(bench.py links it into .cache/bench/callback_plugins/; ANSIBLE_CALLBACK_PLUGINS=scripts/bench
works too, but ansible then also imports bench.py and bench_report.py as callbacks and warns.)
The stdout callback stays whatever ansible.cfg says.

Per host (every result is counted once per task, a loop counts once):
  tasks      results that ran: ok (changed or not), failed, ignored, unreachable.
             include_tasks/include_role results are counted as `includes`, not
             tasks (the PLAY RECAP does not count them either).
  skipped, changed, failed (not ignored), ignored, unreachable
  changed_tasks  names of the tasks that reported changed
  ran_tasks  names of the tasks counted in `tasks`, in order (what the count is made of)
  bundle_bytes_sent  sum of `size` of the CHANGED results of ansible.builtin.copy
             whose templated `src` lies under BENCH_BUNDLE_ROOT (and the
             `sent_bytes` of gcu.topsrider.bundle_push from under it): what a copy
             really transferred (a copy that finds the same checksum on the node
             reports ok and sends nothing). Loop items are counted one by one
             from v2_runner_item_on_ok; check-mode results are left out (a copy in
             check mode reports changed but sends nothing).
"""
from __future__ import annotations

DOCUMENTATION = r"""
name: bench_stats
type: aggregate
short_description: Per-host task counts and bundle bytes sent, as JSON (make bench)
description:
  - Writes at the end of the playbook a JSON file named by the environment variable E(BENCH_STATS_FILE).
  - Bundle bytes are counted for ansible.builtin.copy tasks whose src lies under E(BENCH_BUNDLE_ROOT).
requirements:
  - enable it with ANSIBLE_CALLBACKS_ENABLED=bench_stats
"""

import json
import os

from ansible.plugins.callback import CallbackBase
from ansible_collections.gcu.topsrider.plugins.module_utils._atomic import write_atomic

COPY_ACTIONS = frozenset(("copy", "ansible.builtin.copy", "ansible.legacy.copy", "gcu.topsrider.bundle_push"))
PUSH_ACTIONS = frozenset(("gcu.topsrider.bundle_push",))
INCLUDE_ACTIONS = frozenset((
    "include_tasks", "ansible.builtin.include_tasks", "ansible.legacy.include_tasks",
    "include_role", "ansible.builtin.include_role", "ansible.legacy.include_role",
    "include", "ansible.builtin.include", "ansible.legacy.include",
))
COUNTERS = ("tasks", "changed", "failed", "ignored", "unreachable", "skipped", "includes", "bundle_bytes_sent")


def result_data(result):
    """The result dictionary of a callback result (2.19: .result; older: ._result)."""
    data = getattr(result, "result", None)
    if not isinstance(data, dict):
        data = getattr(result, "_result", None)
    return data if isinstance(data, dict) else {}


def result_task_fields(result):
    fields = getattr(result, "task_fields", None)
    if fields is None:
        fields = getattr(result, "_task_fields", None)
    return fields or {}


def result_host(result):
    host = getattr(result, "host", None) or getattr(result, "_host", None)
    return host.get_name() if hasattr(host, "get_name") else str(getattr(host, "name", host))


def result_task(result):
    return getattr(result, "task", None) or getattr(result, "_task", None)


def task_action(result):
    """The action as resolved by the loader when known, else as written."""
    task = result_task(result)
    names = set()
    for name in (getattr(task, "resolved_action", None), getattr(task, "action", None),
                 result_task_fields(result).get("action")):
        if isinstance(name, str) and name:
            names.add(name)
    return names


def is_changed(data):
    if "changed" in data:
        return bool(data["changed"])
    return any(isinstance(r, dict) and r.get("changed") for r in data.get("results") or [])


def path_under(path, root):
    """True when the controller path `path` lies under the directory `root`."""
    if not isinstance(path, str) or not path or not root or not os.path.isabs(path):
        return False
    path = os.path.realpath(path)
    root = os.path.realpath(root)
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:
        return False


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "bench_stats"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, display=None, stats_file=None, bundle_root=None):
        super().__init__(display=display)
        self.stats_file = stats_file if stats_file is not None else os.environ.get("BENCH_STATS_FILE", "")
        self.bundle_root = bundle_root if bundle_root is not None else os.environ.get("BENCH_BUNDLE_ROOT", "")
        self.hosts = {}

    # ---- counting -----------------------------------------------------------
    def _host(self, name):
        if name not in self.hosts:
            self.hosts[name] = dict({k: 0 for k in COUNTERS}, changed_tasks=[], ran_tasks=[])
        return self.hosts[name]

    def _copy_bytes(self, result, data):
        """Bytes a changed, non-check-mode copy from under the bundle root sent."""
        fields = result_task_fields(result)
        if not (task_action(result) & COPY_ACTIONS) or not is_changed(data) or data.get("failed"):
            return 0
        if fields.get("check_mode") is True or data.get("_ansible_check_mode"):
            return 0
        args = fields.get("args") or {}
        if task_action(result) & PUSH_ACTIONS:
            # gcu.topsrider.bundle_push: one copy per file; it counts the bytes of those that changed.
            size = data.get("sent_bytes") if path_under(args.get("src_dir"), self.bundle_root) else 0
            return size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else 0
        if not path_under(args.get("src"), self.bundle_root):
            return 0
        size = data.get("size")
        return size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else 0

    def _ran(self, result, outcome):
        data = result_data(result)
        host = self._host(result_host(result))
        if task_action(result) & INCLUDE_ACTIONS:
            host["includes"] += 1
            return
        host["tasks"] += 1
        task = result_task(result)
        name = str(getattr(result, "task_name", None) or (task.get_name() if task is not None else ""))
        host["ran_tasks"].append(name)
        if outcome in ("failed", "ignored", "unreachable"):
            host[outcome] += 1
        if outcome != "unreachable" and is_changed(data):
            host["changed"] += 1
            host["changed_tasks"].append(name)
        # A loop's items were counted one by one (v2_runner_item_on_ok); a
        # failed copy is not counted.
        if outcome == "ok" and "results" not in data:
            host["bundle_bytes_sent"] += self._copy_bytes(result, data)

    def v2_runner_on_ok(self, result):
        self._ran(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._ran(result, "ignored" if ignore_errors else "failed")

    def v2_runner_on_unreachable(self, result):
        self._ran(result, "unreachable")

    def v2_runner_on_skipped(self, result):
        self._host(result_host(result))["skipped"] += 1

    def v2_runner_item_on_ok(self, result):
        self._host(result_host(result))["bundle_bytes_sent"] += self._copy_bytes(result, result_data(result))

    # ---- output ---------------------------------------------------------------
    def summary(self):
        hosts = {name: dict(counts) for name, counts in sorted(self.hosts.items())}
        totals = {k: sum(h[k] for h in hosts.values()) for k in COUNTERS}
        return {"format": 1, "bundle_root": self.bundle_root, "hosts": hosts, "totals": totals}

    def v2_playbook_on_stats(self, stats):
        if not self.stats_file:
            self._display.warning("bench_stats: BENCH_STATS_FILE is not set; nothing written")
            return
        doc = self.summary()
        # The PLAY RECAP numbers too, as a cross-check.
        recap = {}
        for name in sorted(getattr(stats, "processed", {}) or {}):
            recap[name] = stats.summarize(name)
        doc["recap"] = recap
        os.makedirs(os.path.dirname(os.path.abspath(self.stats_file)), exist_ok=True)
        write_atomic(self.stats_file, json.dumps(doc, indent=1, sort_keys=True) + "\n", 0o600, prefix=".bench_stats.")
