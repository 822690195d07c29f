# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which hosts of a deploy are already at the release and which roll out, in
what order, and which of the hosts the read found at the release are
re-probed or tagged first (deploy.yml, once for the play, on the controller;
filters topsrider_deploy_split, topsrider_deploy_at_release and
topsrider_left_drained).

A host is at the release when the fast path is on, its one-pass read
(topsrider_state with the desired state) finished and left nothing pending,
its ECCL re-probe was not asked for or found it healthy, and no earlier run of
this collection left it drained in Slurm (such a node goes through the
rollout, which resumes it). The others roll out in inventory order; with
Slurm, the nodes nobody uses now first (fewest Slurm jobs and card holders),
so that the busy ones come last, when their jobs are more likely to have
ended."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.gcu.topsrider.plugins.module_utils._slurm import REASON_PREFIX
from ansible_collections.gcu.topsrider.plugins.plugin_utils._filters import plain


def _slurm_state(read, slurm):
    state = (read or {}).get("state") if isinstance(read, dict) else None
    found = (state or {}).get("slurm") if isinstance(state, dict) else None
    return found if slurm and isinstance(found, dict) else None


def left_drained(read, scheduler):
    """Whether an earlier run of this collection left the node drained (`read`:
    its topsrider_state result with slurm_node; `scheduler`: topsrider_scheduler)."""
    node = (_slurm_state(read, scheduler == "slurm") or {}).get("node") or {}
    return bool(node.get("drain")) and str(node.get("reason") or "").startswith(REASON_PREFIX)


def _read_clean(read):
    pending = read.get("pending") if isinstance(read, dict) else None
    return isinstance(pending, list) and not pending


def _current(record, fast_path):
    read, probe = record.get("read"), record.get("probe")
    probe_ok = not isinstance(probe, dict) or probe.get("skipped") or probe.get("healthy")
    return bool(fast_path and not record.get("compare_error") and _read_clean(read)
                and probe_ok and not left_drained(read, "slurm" if record.get("slurm") else "none"))


def _busy(record):
    found = _slurm_state(record.get("read"), record.get("slurm")) or {}
    holders = ((record.get("read") or {}).get("state") or {}).get("holders") or {}
    return len(found.get("jobs") or []) + len(holders.get("processes") or []) if found else 0


# The variables of a host the filters read through hostvars, and nothing else
# (tests/unit/test_task_headers.py counts them as read by deploy.yml).
HOSTVARS_READ = ("deploy_current_state", "deploy_current_probe", "deploy_compare_error", "deploy_current_slurm",
                 "topsrider_scheduler", "topsrider_deploy_reprobe")


def host_records(hostvars, hosts):
    """What the split reads of each host, in the order of `hosts`, straight from
    `hostvars` (the play's hostvars: each variable is templated when read, and
    only these are read): its read (deploy_current_state), re-probe
    (deploy_current_probe), whether its comparison could not finish
    (deploy_compare_error), its Slurm feature task (deploy_current_slurm),
    whether its scheduler is Slurm (topsrider_scheduler) and whether a
    re-probe was asked for (topsrider_deploy_reprobe)."""
    if not hasattr(hostvars, "get") or not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
        raise ValueError("takes the play's hostvars and a list of host names, got a %s and %r" % (type(hostvars).__name__, hosts))
    records = []
    for host in hosts:
        if host not in hostvars:
            raise ValueError("%s is not a host of this inventory" % host)
        found = hostvars[host]
        records.append({
            "host": host,
            "read": plain(found.get("deploy_current_state")),
            "probe": plain(found.get("deploy_current_probe")),
            "compare_error": "deploy_compare_error" in found,
            "tagged": bool((plain(found.get("deploy_current_slurm")) or {}).get("changed")),
            "slurm": found.get("topsrider_scheduler", "none") == "slurm",
            "reprobe": boolean(found.get("topsrider_deploy_reprobe", False), strict=False),
        })
    return records


def deploy_at_release(hostvars, hosts):
    """The hosts (of `hosts`, in that order) whose read left nothing pending and
    where Slurm (the release feature) or a re-probe applies (deploy.yml's
    second play, tasks/at_release.yml)."""
    return [r["host"] for r in host_records(hostvars, hosts) if _read_clean(r["read"]) and (r["slurm"] or r["reprobe"])]


def deploy_split(hostvars, hosts, fast_path=True):
    """{"current": [host, ...], "rollout": [host, ...]} for the play's `hosts`, in
    inventory order: at the release, and the others in the order they roll out."""
    records = host_records(hostvars, hosts)
    current = [r["host"] for r in records if _current(r, fast_path)]
    rollout = sorted((r for r in records if r["host"] not in current), key=_busy)
    return {"current": current, "rollout": [r["host"] for r in rollout]}


def current_lines(hostvars, hosts, version, feature_prefix, started, now):
    """The report lines of the hosts already at the release (`hosts`, the
    split's current): ok, changed only where this run set the node's Slurm
    release feature (tasks/at_release.yml), and the seconds from the run's
    start (`started`) to `now`, both epoch seconds."""
    duration = round(float(now) - float(started), 1)
    return [{"host": r["host"], "result": "ok", "version": version, "changed": r["tagged"],
             "detail": "already at %s%s" % (version, "; Slurm feature %s%s set" % (feature_prefix, version) if r["tagged"] else ""),
             "duration_s": duration}
            for r in host_records(hostvars, hosts)]
