# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action of gcu.topsrider.topsrider_wait_free (documented in plugins/modules/topsrider_wait_free.py).

Reads who uses a node (gcu.topsrider.topsrider_state: the processes holding a
card and, on a Slurm node, the jobs Slurm runs there) and, while it is in use
and the timeout allows, reads again every interval, printing one line per poll:
the node, the jobs left with their remaining time, the processes holding cards.
Never stops, signals, cancels or requeues anything. The jobs that left the
node are looked up (scontrol's record) so that the report can say how each
ended; every poll also names the cluster's running jobs whose nodes carry two
releases.
"""
from __future__ import annotations

import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.gcu.topsrider.plugins.module_utils._holders import brief, describe_all
from ansible_collections.gcu.topsrider.plugins.module_utils._slurm import stopped_from_outside

display = Display()

ARGUMENT_SPEC = {
    "slurm_node": {"type": "str"},
    "timeout": {"type": "float", "default": 14400.0},
    "interval": {"type": "float", "default": 30.0},
    "label": {"type": "str", "default": ""},
    "feature_prefix": {"type": "str", "default": "tops_"},
}


def poll_delay(polls, interval):
    """Seconds before the next poll: 1, 2, 4 ... up to interval."""
    return min(float(interval), 2.0 ** min(polls, 16))


def job_text(job):
    left = job.get("time_left") or "?"
    return "%s (%s, %s, %s left)" % (job.get("id"), job.get("name") or "?", job.get("user") or "?",
                                     "no limit" if left == "UNLIMITED" else left)


def progress_line(host, label, node, jobs, holders, waited, timeout):
    """One poll's line: 'node2: deploy 2026...: slurm-node2 runs 1 job: 17 (train, root, 0:58 left); ...'."""
    parts = []
    if node:
        parts.append("%s runs %d job(s): %s" % (node, len(jobs), ", ".join(job_text(j) for j in jobs[:4])
                                                + (" and %d more" % (len(jobs) - 4) if len(jobs) > 4 else ""))
                     if jobs else "%s runs no job" % node)
    parts.append("%d process(es) hold cards%s" % (len(holders), (" (" + brief(holders) + ")") if holders else ""))
    return "%s: %swaiting until the node is free: %s; waited %d s of %d s" % (
        host, (label + ": ") if label else "", "; ".join(parts), waited, timeout)


def in_use_text(jobs, holders):
    """Who uses the node, in one sentence ('' when nobody)."""
    parts = []
    if jobs:
        parts.append("Slurm job(s) %s" % ", ".join(job_text(j) for j in jobs[:4])
                     + (" and %d more" % (len(jobs) - 4) if len(jobs) > 4 else ""))
    if holders:
        parts.append(describe_all(holders))
    return "; ".join(parts)


class Tracker(object):
    """The jobs seen on the node while waiting, and how each ended (scontrol's record)."""

    def __init__(self):
        self.jobs = {}
        self.two_releases = {}

    def see(self, slurm):
        records = slurm.get("records") or {}
        for job_id, record in records.items():
            entry = self.jobs.get(job_id)
            if entry is not None and record is not None:
                if entry["restarts_before"] is None:
                    entry["restarts_before"] = record.get("restarts") or 0
                entry["record"] = record
        here = set()
        for job in slurm.get("jobs") or []:
            here.add(job["id"])
            self.jobs.setdefault(job["id"], {"id": job["id"], "name": job.get("name"), "user": job.get("user"),
                                             "restarts_before": None, "record": None, "left": False})
        for job_id, entry in self.jobs.items():
            entry["left"] = job_id not in here
        for job in ((slurm.get("cluster") or {}).get("two_releases") or []):
            self.two_releases[job["id"]] = job

    def ids(self):
        return sorted(self.jobs)

    def result(self):
        out = []
        for job_id in sorted(self.jobs):
            e = self.jobs[job_id]
            record = e["record"] or {}
            out.append({"id": job_id, "name": e["name"], "user": e["user"], "left": e["left"],
                        "end_state": record.get("state") if e["left"] else None,
                        "exit_code": record.get("exit_code") if e["left"] else None,
                        "restarts_before": e["restarts_before"], "restarts": record.get("restarts"),
                        "stopped_from_outside": bool(e["left"]) and stopped_from_outside(record, e["restarts_before"])})
        return out


def wait(host, args, read, check_mode, now=time.monotonic, sleep=time.sleep, show=display.display):
    """Read (read(job_ids) -> topsrider_state's state) until the node is free, or
    the timeout passed, or once in check mode; one line per poll. The result the
    task returns."""
    timeout = max(0.0, args["timeout"])
    label = (args["label"] + ": ") if args["label"] else ""
    started = now()
    tracker = Tracker()
    polls = 0
    while True:
        state = read(tracker.ids())
        slurm = state.get("slurm") or {}
        tracker.see(slurm)
        holders = state["holders"]["processes"]
        jobs = slurm.get("jobs") or []
        waited = now() - started
        free = not holders and not jobs
        # Check mode waits for nothing: what the node has now is the prediction.
        if free or check_mode or waited >= timeout:
            break
        show(progress_line(host, args["label"], args["slurm_node"], jobs, holders, waited, timeout))
        sleep(min(poll_delay(polls, args["interval"]), max(0.0, timeout - waited)))
        polls += 1
    if free and polls:
        show("%s: %sfree after %d s" % (host, label, waited))
    in_use = in_use_text(jobs, holders)
    return {"changed": False, "free": free, "timed_out": not free and not check_mode and waited >= timeout,
            "waited_s": round(waited, 1), "holders": holders, "jobs": jobs, "node": slurm.get("node"),
            "jobs_seen": tracker.result(), "in_use": in_use,
            "two_releases": sorted(tracker.two_releases.values(), key=lambda j: j["id"]),
            "msg": "%s: %s" % (host, "in use: " + in_use if in_use else "free")}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = True

    def _read(self, args, job_ids, task_vars):
        module_args = {"holders": True}
        if args["slurm_node"]:
            module_args.update(slurm_node=args["slurm_node"], slurm_jobs=job_ids, slurm_cluster=True,
                               feature_prefix=args["feature_prefix"])
        r = self._execute_module(module_name="gcu.topsrider.topsrider_state", module_args=module_args,
                                 task_vars=task_vars)
        if r.get("failed") or r.get("unreachable"):
            raise AnsibleActionFail("cannot read who uses the node: %s" % (r.get("msg") or "failed"), result=r)
        state = r["state"]
        for part in ("holders", "slurm"):
            if state.get(part) is not None and state[part].get("error"):
                raise AnsibleActionFail("cannot tell whether the node is in use: %s" % state[part]["error"])
        return state

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        host = task_vars.get("inventory_hostname", "?")
        try:
            result.update(wait(host, args, lambda job_ids: self._read(args, job_ids, task_vars),
                               self._task.check_mode))
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result
