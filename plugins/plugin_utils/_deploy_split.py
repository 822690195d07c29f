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

from ansible_collections.gcu.topsrider.plugins.module_utils._slurm import REASON_PREFIX


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


def deploy_at_release(records):
    """records: one per host of the play, in inventory order: {host, read (its
    deploy_current_state, or None), slurm (whether its scheduler is Slurm),
    reprobe (topsrider_deploy_reprobe)} -> [host, ...]: the hosts whose read
    left nothing pending and where Slurm (the release feature) or a re-probe
    applies, in that order (deploy.yml's second play, tasks/at_release.yml)."""
    _check_records(records)
    return [r["host"] for r in records if _read_clean(r.get("read")) and (r.get("slurm") or r.get("reprobe"))]


def _check_records(records):
    if not isinstance(records, list) or not all(isinstance(r, dict) and r.get("host") for r in records):
        raise ValueError("records are a list of mappings with a host, got %r" % (records,))


def _current(record, fast_path):
    read, probe = record.get("read"), record.get("probe")
    probe_ok = not isinstance(probe, dict) or probe.get("skipped") or probe.get("healthy")
    return bool(fast_path and not record.get("compare_error") and _read_clean(read)
                and probe_ok and not left_drained(read, "slurm" if record.get("slurm") else "none"))


def _busy(record):
    found = _slurm_state(record.get("read"), record.get("slurm")) or {}
    holders = ((record.get("read") or {}).get("state") or {}).get("holders") or {}
    return len(found.get("jobs") or []) + len(holders.get("processes") or []) if found else 0


def deploy_split(records, fast_path=True):
    """records: one per host of the play, in inventory order: {host, read (its
    deploy_current_state, or None), probe (its deploy_current_probe, or None),
    compare_error (whether its comparison could not finish), slurm (whether
    its scheduler is Slurm)} -> {"current": [host, ...], "rollout": [host, ...]}."""
    _check_records(records)
    current = [r["host"] for r in records if _current(r, fast_path)]
    rollout = sorted((r for r in records if r["host"] not in current), key=_busy)
    return {"current": current, "rollout": [r["host"] for r in rollout]}
