# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node's Slurm state as a deploy or rollback sees it, and the rules for changing it.

Pure functions (parsers of sinfo, squeue and scontrol output, the drain
reason's owner, the release feature; host lists are Slurm's to expand:
``scontrol show hostnames``) and the reads and updates that run them
on a node with the Slurm client (module.run_command, C locale). Used by
gcu.topsrider.topsrider_state (reads) and gcu.topsrider.topsrider_slurm
(drain, resume, note, release feature). Runs on the node: Python 3.6+.

Rules (docs/rollout.md):
- A drain reason of this collection starts with ``gcu.topsrider <kind> <run id>: ``.
  A reason belongs to whoever set it: a node drained for any other reason (an
  administrator, Slurm itself, the health gate's ``topsrider:``) is never
  resumed and its reason never overwritten. A reason of an earlier run of this
  collection (a node it left draining) is taken over by the next run.
- The release is a node feature ``tops_<version>`` (the prefix is a setting);
  other features of the node are kept as they are.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

REASON_PREFIX = "gcu.topsrider "
# Slurm keeps a reason of any length; a line an operator reads in sinfo -R is short.
REASON_MAX = 240
FEATURE_PREFIX = "tops_"
# Job states in which a job no longer runs because something stopped it from
# outside (cancelled, requeued, its node lost or preempted), not because it ended.
STOPPED_STATES = ("CANCELLED", "NODE_FAIL", "PREEMPTED", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD",
                  "BOOT_FAIL", "DEADLINE", "SPECIAL_EXIT", "RESV_DEL_HOLD", "REVOKED")
C_LOCALE = {"LC_ALL": "C", "LANG": "C"}
SINFO_FORMAT = "%N|%T|%f|%b|%E"
SQUEUE_FORMAT = "%i|%T|%u|%L|%j"
NODE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
FEATURE = re.compile(r"^[A-Za-z0-9_.-]+\Z")


class SlurmError(Exception):
    pass


# ---- reasons ---------------------------------------------------------------

def run_prefix(kind, run_id):
    return "%s%s %s:" % (REASON_PREFIX, kind, run_id)


def make_reason(kind, run_id, text):
    """'gcu.topsrider deploy 20261125T140000Z: <text>', at most REASON_MAX characters, one line."""
    reason = "%s %s" % (run_prefix(kind, run_id), " ".join(str(text).split()))
    return reason if len(reason) <= REASON_MAX else reason[:REASON_MAX - 3] + "..."


def reason_owner(reason, kind, run_id):
    """Who drained a node: None (no reason), 'run' (this run), 'collection'
    (an earlier run of gcu.topsrider) or 'other'."""
    reason = (reason or "").strip()
    if not reason or reason.lower() == "none":
        return None
    if reason.startswith(run_prefix(kind, run_id)):
        return "run"
    if reason.startswith(REASON_PREFIX):
        return "collection"
    return "other"


# ---- sinfo / squeue / scontrol ---------------------------------------------

def _null(value):
    value = (value or "").strip()
    return "" if value in ("(null)", "none", "None") else value


def _features(text):
    return [f for f in _null(text).split(",") if f]


def parse_sinfo(text):
    """{node: {state, drain, reason, features, active_features}} from sinfo -h -N -o SINFO_FORMAT.
    A node listed once per partition is one entry."""
    nodes = {}
    for line in (text or "").splitlines():
        parts = line.split("|", 4)
        if len(parts) != 5 or not parts[0].strip():
            continue
        state = parts[1].strip().lower()
        nodes[parts[0].strip()] = {
            "state": state,
            "drain": is_drained(state),
            "reason": _null(parts[4]),
            "features": _features(parts[2]),
            "active_features": _features(parts[3]),
        }
    return nodes


def is_drained(state):
    """sinfo's %T: drained (idle and drained), draining (jobs still run), drain."""
    state = (state or "").lower().rstrip("*~#!%$@^-")
    return state.startswith("drain") or "+drain" in state


def parse_squeue(text):
    """[{id, state, user, time_left, name}] from squeue -h -o SQUEUE_FORMAT."""
    jobs = []
    for line in (text or "").splitlines():
        parts = line.split("|", 4)
        if len(parts) != 5 or not parts[0].strip():
            continue
        jobs.append({"id": parts[0].strip(), "state": parts[1].strip(), "user": parts[2].strip(),
                     "time_left": parts[3].strip(), "name": parts[4].strip()})
    return jobs


def parse_job_record(text):
    """{id, state, restarts, exit_code, nodes, start, end} from scontrol -o show job ID; None when unknown."""
    fields = dict(re.findall(r"(?:^|\s)([A-Za-z:/]+)=(\S*)", text or ""))
    if "JobId" not in fields:
        return None
    try:
        restarts = int(fields.get("Restarts", "0"))
    except ValueError:
        restarts = None
    return {"id": fields["JobId"], "state": fields.get("JobState"), "restarts": restarts,
            "exit_code": fields.get("ExitCode"), "nodes": _null(fields.get("NodeList")),
            "start": fields.get("StartTime"), "end": fields.get("EndTime")}


def stopped_from_outside(record, restarts_before=0):
    """A job cancelled, requeued, preempted or lost with its node (not one that ended by itself)."""
    if not record:
        return False
    state = (record.get("state") or "").upper()
    if state in STOPPED_STATES:
        return True
    restarts = record.get("restarts")
    return restarts is not None and restarts > (restarts_before or 0)


def seconds_left(text):
    """squeue's %L ('1-02:03:04', '02:03', 'UNLIMITED') in seconds; None when unlimited or unknown."""
    text = (text or "").strip()
    m = re.match(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)$", text)
    if not m:
        return None
    days, hours, minutes, secs = (int(g) if g else 0 for g in m.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + secs


def parse_hostnames(text):
    """The names `scontrol show hostnames` prints, one a line."""
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


# ---- the release feature ----------------------------------------------------

def release_of(features, prefix=FEATURE_PREFIX):
    """The release a node's features name (tops_2.5.140 -> '2.5.140'), or None."""
    found = [f[len(prefix):] for f in features or [] if f.startswith(prefix)]
    return found[0] if len(found) == 1 else None


def with_release(features, release, prefix=FEATURE_PREFIX):
    """The node's features with the one release feature for `release` (others kept, in order)."""
    kept = [f for f in features or [] if not f.startswith(prefix)]
    return kept + ["%s%s" % (prefix, release)]


def jobs_on_two_releases(running, node_features, hostnames, prefix=FEATURE_PREFIX):
    """The running jobs whose nodes carry different release features.
    running: [{id, nodes (a host list)}]; node_features: {node: [features]};
    hostnames: {host list: [node names]}, as Slurm expands them (read_hostnames).
    A node without a release feature does not count (its release is not known to Slurm)."""
    mixed = []
    for job in running:
        nodes = hostnames.get(job.get("nodes"), [])
        releases = sorted(set(r for r in (release_of(node_features.get(n), prefix) for n in nodes) if r))
        if len(releases) > 1:
            mixed.append({"id": job["id"], "nodes": nodes, "releases": releases})
    return mixed


# ---- reads on the node -------------------------------------------------------

def _run(module, argv):
    rc, out, err = module.run_command(argv, environ_update=C_LOCALE)
    return rc, out, err


def _bin(module, name):
    path = module.get_bin_path(name, required=False)
    if not path:
        raise SlurmError("%s not found: this node has no Slurm client (install slurm-client, or run "
                         "without topsrider_scheduler: slurm)" % name)
    return path


def _checked(module, argv, what):
    rc, out, err = _run(module, argv)
    if rc != 0:
        raise SlurmError("`%s` failed (rc=%d) while reading %s: %s" % (
            " ".join(argv), rc, what, (err or out or "").strip() or "no output"))
    return out


def read_hostnames(module, host_lists):
    """{host list: [node names]}: each distinct host list ('n[1-3],m7') as Slurm's own parser expands it
    (`scontrol show hostnames`, which needs no slurmctld)."""
    wanted = sorted(set(h for h in host_lists if h))
    scontrol = _bin(module, "scontrol") if wanted else None
    out = {}
    for host_list in wanted:
        argv = [scontrol, "show", "hostnames", host_list]
        rc, text, err = _run(module, argv)
        out[host_list] = parse_hostnames(text) if rc == 0 else []
        # scontrol says "Invalid hostlist" on stderr and still exits 0: no names is the failure.
        if not out[host_list]:
            raise SlurmError("`%s` gave no node names for the host list %s (rc=%d): %s" % (
                " ".join(argv), host_list, rc, (err or text or "").strip() or "no output"))
    return out


def read_node(module, name):
    """The node as sinfo shows it; SlurmError when Slurm does not know it or cannot be asked."""
    out = _checked(module, [_bin(module, "sinfo"), "-h", "-N", "-n", name, "-o", SINFO_FORMAT], "node " + name)
    nodes = parse_sinfo(out)
    if name not in nodes:
        raise SlurmError("Slurm has no node %s (sinfo -N -n %s lists none): set topsrider_slurm_node_name "
                         "to the node's NodeName" % (name, name))
    return dict(nodes[name], name=name)


def read_jobs(module, name):
    """The jobs Slurm runs on the node (running, completing, suspended, configuring)."""
    out = _checked(module, [_bin(module, "squeue"), "-h", "-w", name, "-o", SQUEUE_FORMAT], "the jobs on " + name)
    return parse_squeue(out)


def read_job_records(module, ids):
    """{id: record or None} of jobs, as scontrol still has them (MinJobAge after they end)."""
    out = {}
    scontrol = _bin(module, "scontrol") if ids else None
    for job_id in ids:
        rc, text, _err = _run(module, [scontrol, "-o", "show", "job", str(job_id)])
        out[str(job_id)] = parse_job_record(text) if rc == 0 else None
    return out


def read_cluster(module, prefix=FEATURE_PREFIX):
    """Every running job with its nodes, and every node's features: {running, features, two_releases}."""
    features = dict((n, v["features"]) for n, v in parse_sinfo(_checked(
        module, [_bin(module, "sinfo"), "-h", "-N", "-o", SINFO_FORMAT], "the nodes")).items())
    running = []
    out = _checked(module, [_bin(module, "squeue"), "-h", "-t", "RUNNING,COMPLETING,SUSPENDED", "-o", "%i|%N"],
                   "the running jobs")
    for line in out.splitlines():
        job_id, _sep, nodes = line.partition("|")
        if job_id.strip():
            running.append({"id": job_id.strip(), "nodes": nodes.strip()})
    hostnames = read_hostnames(module, [job["nodes"] for job in running])
    return {"running": running, "features": features,
            "two_releases": jobs_on_two_releases(running, features, hostnames, prefix)}


def slurm_state(module, name, job_ids=(), cluster=False, prefix=FEATURE_PREFIX):
    """{node, jobs, records, cluster, error} as gcu.topsrider.topsrider_state returns it:
    what Slurm says of the node, the jobs on it, the records of job_ids and, with
    cluster, every running job and node feature. A Slurm that cannot be asked is
    an error in the result, not a failure."""
    state = {"node": None, "jobs": [], "records": {}, "cluster": None, "error": None}
    try:
        state["node"] = read_node(module, name)
        state["jobs"] = read_jobs(module, name)
        state["records"] = read_job_records(module, job_ids)
        if cluster:
            state["cluster"] = read_cluster(module, prefix)
    except SlurmError as e:
        state["error"] = str(e)
    return state


def update_node(module, name, words):
    """scontrol update nodename=NAME WORDS...; SlurmError when Slurm refuses."""
    argv = [_bin(module, "scontrol"), "update", "nodename=" + name] + list(words)
    rc, out, err = _run(module, argv)
    if rc != 0:
        raise SlurmError("`%s` failed (rc=%d): %s" % (" ".join(argv), rc, (err or out or "").strip() or "no output"))


# ---- what a run does to its node ----------------------------------------------

def plan(node, want, kind, run_id, text=None, release=None, prefix=FEATURE_PREFIX):
    """The scontrol updates that take `node` (read_node's dict) where a run of
    `kind` and `run_id` wants it, and what it looks like then. Pure.

    want: 'drained' (drain it for this run; a node drained by someone else
    stays as it is, with their reason; one left draining by an earlier run of
    this collection is taken over), 'resumed' (resume it only while the reason
    is this run's), 'noted' (put `text` in this run's reason, only while it is
    this run's) or 'present' (neither). release: also set the node's release
    feature (before a resume, so the node comes back already tagged).

    Returns {updates: [[word, ...], ...], after: node, owner (before),
    drained, resumed, noted, features_changed, why (when the drain part was left alone)}."""
    owner = reason_owner(node.get("reason"), kind, run_id) if node.get("drain") else None
    after = dict(node)
    out = {"updates": [], "owner": owner, "drained": False, "resumed": False, "noted": False,
           "features_changed": False, "why": None}
    if release is not None:
        features = with_release(node.get("features"), release, prefix)
        active = with_release(node.get("active_features"), release, prefix)
        if features != node.get("features") or active != node.get("active_features"):
            out["updates"].append(["availablefeatures=" + ",".join(features), "activefeatures=" + ",".join(active)])
            after.update(features=features, active_features=active)
            out["features_changed"] = True
    if want in ("drained", "noted"):
        reason = make_reason(kind, run_id, text or "")
        if want == "drained" and owner is None:
            out["updates"].append(["state=drain", "reason=" + reason])
            after.update(drain=True, reason=reason,
                         state="draining" if node.get("state") in ("allocated", "mixed", "completing") else "drained")
            out["drained"] = True
        elif (owner == "run" or want == "drained" and owner == "collection") and node.get("reason") != reason:
            # this run's reason, or (when draining) an earlier run's node taken over
            out["updates"].append(["reason=" + reason])
            after["reason"] = reason
            out["drained" if owner == "collection" else "noted"] = True
        elif owner == "other" or want == "noted" and owner == "collection":
            out["why"] = "drained by %s (%s): left as it is" % (
                "an earlier gcu.topsrider run" if owner == "collection" else "someone else", node.get("reason"))
        elif owner is None:
            out["why"] = "not drained"
    elif want == "resumed":
        if owner == "run":
            out["updates"].append(["state=resume"])
            after.update(drain=False, reason="", state="idle" if node.get("state") == "drained" else "mixed")
            out["resumed"] = True
        elif owner is None:
            out["why"] = "not drained"
        else:
            out["why"] = "drained by %s (%s): never resumed by this run" % (
                "an earlier gcu.topsrider run" if owner == "collection" else "someone else", node.get("reason"))
    elif want != "present":
        raise SlurmError("want must be drained, resumed, noted or present, got %r" % (want,))
    out["after"] = after
    return out


def apply(module, name, want, kind, run_id, text=None, release=None, prefix=FEATURE_PREFIX, cluster=False):
    """Read the node, plan (above), run the updates unless in check mode, read it
    again. Returns the plan's flags with before, after (as Slurm has it now; in
    check mode as it would be), changed, msg, and with cluster the cluster's
    running jobs and release features (read after the change)."""
    before = read_node(module, name)
    result = plan(before, want, kind, run_id, text, release, prefix)
    updates = result.pop("updates")
    after = result.pop("after")
    if updates and not module.check_mode:
        for words in updates:
            update_node(module, name, words)
        after = read_node(module, name)
    done = [k for k in ("drained", "noted", "resumed", "features_changed") if result[k]]
    result.update(before=before, after=after, changed=bool(updates), cluster=read_cluster(module, prefix)
                  if cluster else None,
                  msg="%s: %s" % (name, ", ".join(done) if done else result["why"] or "nothing to change"))
    return result
