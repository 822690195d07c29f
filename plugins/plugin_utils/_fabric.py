# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric check's logic: which jobs to run, and what their results say.

Pure functions on plain data (JSON-able dicts and lists), so that the
controller can keep the whole state in one Ansible fact between rounds and so
that every decision is unit-tested on synthetic results. playbooks/fabric_check.yml
runs the jobs (gcu.topsrider.eccl_probe, one node's share per host) and hands
their results to advance(); plugins/filter/fabric.py wraps these functions.

A run is a sequence of rounds; a round is a set of jobs that share no node, so
they run at the same time (each job its own rendezvous port). Phases:

1. ``fleet``: one job over every card of every node.
2. ``bisect`` (only when the fleet job failed): a failed group of 4 nodes or
   more is split in two halves, both run in the next round; a failed group of
   2 or 3 is a set of suspects, each then run in a pair with a node known good
   (a node of a job that passed). A suspect whose pair fails is broken. One
   broken node in N is found in ceil(log2 N) rounds. Without a node known good
   the suspects go to the pair phase, whose rule below names them.
3. ``pairs``: every node (not already broken) in two pairs with different
   partners: the ring (0,1), (1,2), ... (N-1,0), run as rounds of disjoint
   pairs (even edges, odd edges, and for odd N the closing edge alone).
4. ``retry``: a pair below ``threshold`` x the median busbw of the first
   attempts is run again, up to ``retries`` times, before it counts as slow;
   its busbw is the best of its attempts.

Verdict per node: ``broken`` when bisection names it, or every pair it is in
failed while each partner passed another pair; ``slow`` when every pair it is
in is slow while each partner has a pair that is fine; ``suspect`` when it is
in a failed or slow pair that names no one (e.g. two slow neighbours);
``unreachable`` when Ansible lost it; ``not_ready`` when its preflight probe
failed. Status: ``broken`` (exit 4) for any broken, unreachable, not_ready node
or failed pair/job nobody explains, else ``degraded`` (exit 3) for any slow
node or slow pair, else ``clean`` (exit 0).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math
import time
from xml.etree import ElementTree

from ansible_collections.gcu.topsrider.plugins.plugin_utils._report_formats import (
    EXIT_CLEAN, EXIT_DRIFT, EXIT_FAILED, md_cell, prometheus_text, safe_run_id, xml_document,
)

DEFAULTS = {"threshold": 0.8, "retries": 2, "port_base": 29600, "port_span": 2000}
VERDICTS = ("broken", "unreachable", "not_ready", "slow", "suspect", "ok")
BUSBW = "nccl-tests all_reduce busbw at the largest size: bytes / latency of the slowest rank x 2(n-1)/n"


class FabricError(ValueError):
    pass


# ------------------------------------------------------------------ plan --

def ring_rounds(nodes):
    """The ring's pairs as rounds of disjoint pairs. Every node is in two pairs
    with different partners (three or more nodes); two nodes give one pair."""
    n = len(nodes)
    if n < 2:
        return []
    if n == 2:
        return [[[nodes[0], nodes[1]]]]
    edges = [[nodes[i], nodes[(i + 1) % n]] for i in range(n)]
    if n % 2 == 0:
        return [edges[0::2], edges[1::2]]
    return [edges[0:n - 1:2], edges[1:n - 1:2], [edges[n - 1]]]


def pack_disjoint(groups):
    """Greedy rounds of groups that share no node, order kept."""
    rounds = []
    for group in groups:
        for r in rounds:
            if not any(set(group) & set(g) for g in r):
                r.append(group)
                break
        else:
            rounds.append([group])
    return rounds


def max_rounds(n, retries=DEFAULTS["retries"]):
    """An upper bound on the rounds of one run (the playbook's loop length):
    fleet, bisection (log2 n, leaves, and at most two more rounds of leaves),
    three pair rounds and, per retry, the slow pairs packed into at most three rounds."""
    n = max(2, int(n))
    return 1 + int(math.ceil(math.log(n, 2))) + 3 + 3 + 3 * int(retries)


def plan(cards, options=None, not_ready=None, unreachable=None, now=None):
    """The initial state. cards: {node: card count} of the nodes ready to run
    (in inventory order: a list of [node, count] pairs keeps it); not_ready:
    {node: why}; unreachable: [node]."""
    opts = dict(DEFAULTS)
    opts.update(dict((k, v) for k, v in (options or {}).items() if v is not None))
    if not 0 < float(opts["threshold"]) <= 1:
        raise FabricError("threshold must be a fraction in (0, 1], got %r" % (opts["threshold"],))
    if int(opts["retries"]) < 0:
        raise FabricError("retries must be 0 or more, got %r" % (opts["retries"],))
    pairs_in = cards.items() if isinstance(cards, dict) else cards
    order = []
    counts = {}
    for node, count in pairs_in:
        if int(count) < 1:
            raise FabricError("node %s has %r cards; a node in the fabric check needs at least one" % (node, count))
        order.append(node)
        counts[node] = int(count)
    state = {
        "kind": "fabric", "options": opts, "nodes": order, "cards": counts,
        "not_ready": dict(not_ready or {}), "unreachable": list(unreachable or []),
        "phase": "fleet", "seq": 0, "round_no": 0, "round": [], "done": False,
        "started": float(now if now is not None else time.time()), "round_started": None,
        "history": [], "fleet": None, "groups": [], "suspects": [], "good": [], "broken": {},
        "ring": [], "pair_rounds": [], "pairs": {}, "median": None, "notes": [],
    }
    if len(order) < 2:
        state["notes"].append("fewer than two nodes ready: no cross-node job to run")
        state["done"] = True
        return state
    return _schedule(state, [{"kind": "fleet", "nodes": list(order)}], now)


def _schedule(state, jobs, now=None):
    """Give the jobs ids, ports and rank offsets, and make them the next round."""
    opts = state["options"]
    out = []
    for job in jobs:
        nodes = list(job["nodes"])
        offsets, total = {}, 0
        for node in nodes:
            offsets[node] = total
            total += state["cards"][node]
        seq = state["seq"]
        state["seq"] = seq + 1
        out.append(dict(job, id="j%d" % seq, nodes=nodes, master=nodes[0], world=total, offsets=offsets,
                        port=int(opts["port_base"]) + seq % int(opts["port_span"])))
    state["round"] = out
    state["round_no"] += 1
    state["round_started"] = float(now if now is not None else time.time())
    return state


def job_for(state, node):
    """The job of `node` in the current round, or None."""
    for job in state.get("round") or []:
        if node in job["nodes"]:
            return job
    return None


# ------------------------------------------------------- results of a job --

def _largest(results):
    best = None
    for res in results or []:
        if best is None or res.get("size_bytes", 0) > best.get("size_bytes", 0):
            best = res
    return best


def job_outcome(job, node_results):
    """One job's outcome from its nodes' eccl_probe results ({node: result};
    a node without one did not answer)."""
    errors = {}
    latency, size, elapsed = None, None, 0.0
    for node in job["nodes"]:
        res = node_results.get(node)
        if not res:
            errors[node] = "no result: the node did not answer"
            continue
        coll = res.get("collective") or {}
        elapsed = max(elapsed, float(coll.get("elapsed_s") or 0.0))
        if not res.get("healthy"):
            probs = res.get("problems") or [{"code": "PROBE_FAILED", "message": res.get("msg") or "failed"}]
            errors[node] = "; ".join("%s: %s" % (p.get("code"), (p.get("message") or "")[:300]) for p in probs)
            continue
        big = _largest(coll.get("results"))
        if big is None or not big.get("latency_us"):
            errors[node] = "no all-reduce result"
            continue
        if latency is None or big["latency_us"] > latency:
            latency, size = float(big["latency_us"]), int(big["size_bytes"])
    busbw = None
    if not errors and latency:
        n = job["world"]
        busbw = round(size / (latency * 1e-6) / 1e9 * 2.0 * (n - 1) / n, 6)
    return {"id": job["id"], "kind": job["kind"], "nodes": job["nodes"], "world": job["world"],
            "suspect": job.get("suspect"), "ok": not errors, "errors": errors, "busbw_gbps": busbw, "latency_us": latency, "size_bytes": size,
            "elapsed_s": round(elapsed, 2)}


def _pair_key(a, b):
    return "%s|%s" % (a, b)


# --------------------------------------------------------------- advance --

def advance(state, node_results, active=None, now=None):
    """Take the current round's results and plan the next round (or finish).
    node_results: {node: eccl_probe result}; active: the nodes Ansible still
    reaches (a node that dropped out is unreachable from now on)."""
    now = float(now if now is not None else time.time())
    if state.get("done"):
        return state
    outcomes = [job_outcome(job, node_results or {}) for job in state["round"]]
    state["history"].append({"round": state["round_no"], "phase": state["phase"], "jobs": outcomes,
                             "wall_s": round(now - float(state["round_started"] or now), 2)})
    if active is not None:
        lost = [n for n in state["nodes"] if n not in active and n not in state["unreachable"]]
        state["unreachable"].extend(lost)
    phase = state["phase"]
    if phase == "fleet":
        state["fleet"] = outcomes[0]
        if outcomes[0]["ok"]:
            return _start_pairs(state, now)
        state["phase"] = "bisect"
        state["groups"] = [list(outcomes[0]["nodes"])]
        return _bisect_next(state, [], now)
    if phase == "bisect":
        return _bisect_next(state, outcomes, now)
    return _pairs_next(state, outcomes, now)


def _usable(state, node):
    return node not in state["unreachable"] and node not in state["broken"]


def _bisect_next(state, outcomes, now):
    failed_groups = []
    for o in outcomes:
        if o["kind"] == "bisect":
            if o["ok"]:
                state["good"].extend(n for n in o["nodes"] if n not in state["good"])
            else:
                failed_groups.append(o["nodes"])
        elif o["kind"] == "probe":
            suspect = o["suspect"]
            if o["ok"]:
                state["good"].extend(n for n in o["nodes"] if n not in state["good"])
            else:
                state["broken"][suspect] = {"by": "bisection", "evidence": "job %s with %s (known good) failed: %s" % (
                    o["id"], ", ".join(n for n in o["nodes"] if n != suspect),
                    _first_error(o, suspect))}
            if suspect in state["suspects"]:
                state["suspects"].remove(suspect)
    if not outcomes:
        failed_groups = state["groups"]
    jobs = []
    groups = []
    for group in failed_groups:
        group = [n for n in group if _usable(state, n)]
        if len(group) >= 4:
            half = len(group) // 2
            groups.extend([group[:half], group[half:]])
        elif group:
            state["suspects"].extend(n for n in group if n not in state["suspects"])
    state["groups"] = groups
    jobs.extend({"kind": "bisect", "nodes": g} for g in groups)
    good = [n for n in state["good"] if _usable(state, n)]
    busy = set(n for g in groups for n in g)
    partners = [n for n in good if n not in busy]
    suspects = [s for s in state["suspects"] if _usable(state, s)]
    state["suspects"] = suspects
    for suspect in suspects:
        if not partners:
            break
        jobs.append({"kind": "probe", "nodes": [partners.pop(0), suspect], "suspect": suspect})
    if jobs:
        return _schedule(state, jobs, now)
    if state["suspects"]:
        state["notes"].append("no node known good to test %s against: the pair phase decides"
                              % ", ".join(state["suspects"]))
        state["suspects"] = []
    elif not state["broken"]:
        state["notes"].append("the fleet job failed but no half of it did: the fault needs nodes from both halves; "
                              "the pair phase tests each node with two partners")
    return _start_pairs(state, now)


def _first_error(outcome, prefer=None):
    errors = outcome.get("errors") or {}
    if prefer in errors:
        return "%s: %s" % (prefer, errors[prefer])
    for node in outcome["nodes"]:
        if node in errors:
            return "%s: %s" % (node, errors[node])
    return "failed"


def _start_pairs(state, now):
    nodes = [n for n in state["nodes"] if _usable(state, n)]
    state["phase"] = "pairs"
    state["ring"] = [pair for r in ring_rounds(nodes) for pair in r]
    state["pair_rounds"] = ring_rounds(nodes)
    for a, b in state["ring"]:
        state["pairs"][_pair_key(a, b)] = {"a": a, "b": b, "attempts": [], "ok": None, "busbw_gbps": None,
                                           "slow": None, "errors": {}}
    return _next_pair_round(state, now)


def _next_pair_round(state, now):
    if state["pair_rounds"]:
        pairs = state["pair_rounds"].pop(0)
        return _schedule(state, [{"kind": "pair", "nodes": p} for p in pairs], now)
    return _plan_retries(state, now)


def _pairs_next(state, outcomes, now):
    for o in outcomes:
        pair = state["pairs"][_pair_key(*o["nodes"])]
        pair["attempts"].append({"job": o["id"], "ok": o["ok"], "busbw_gbps": o["busbw_gbps"],
                                 "elapsed_s": o["elapsed_s"]})
        if o["kind"] == "pair":
            pair["ok"] = o["ok"]
            pair["errors"] = o["errors"]
        if o["ok"] and (pair["busbw_gbps"] is None or o["busbw_gbps"] > pair["busbw_gbps"]):
            pair["busbw_gbps"] = o["busbw_gbps"]
    if state["phase"] == "pairs":
        return _next_pair_round(state, now)
    return _plan_retries(state, now)


def _threshold(state):
    firsts = sorted(p["attempts"][0]["busbw_gbps"] for p in state["pairs"].values()
                    if p["attempts"] and p["attempts"][0]["ok"] and p["attempts"][0]["busbw_gbps"] is not None)
    if not firsts:
        return None, None
    mid = len(firsts) // 2
    median = firsts[mid] if len(firsts) % 2 else (firsts[mid - 1] + firsts[mid]) / 2.0
    return median, median * float(state["options"]["threshold"])


def _plan_retries(state, now):
    median, threshold = _threshold(state)
    state["median"] = median
    state["threshold_gbps"] = threshold
    state["phase"] = "retry"
    again = []
    for key in [_pair_key(a, b) for a, b in state["ring"]]:
        pair = state["pairs"][key]
        if not pair["ok"] or threshold is None:
            pair["slow"] = False if pair["ok"] else None
            continue
        pair["slow"] = pair["busbw_gbps"] < threshold
        if pair["slow"] and len(pair["attempts"]) <= int(state["options"]["retries"]) \
                and _usable(state, pair["a"]) and _usable(state, pair["b"]):
            again.append([pair["a"], pair["b"]])
    if not again:
        state["round"] = []
        state["done"] = True
        return state
    # Retries of pairs sharing a node run one after the other: the first round now, the rest after it.
    first = pack_disjoint(again)[0]
    return _schedule(state, [{"kind": "retry", "nodes": p} for p in first], now)


# --------------------------------------------------------------- verdict --

def _attribute(state, bad):
    """Nodes every pair of which is bad while each partner has a good pair."""
    ring = state["ring"]
    named = []
    for node in state["nodes"]:
        mine = [p for p in ring if node in p]
        if len(mine) < 2 and len(ring) > 1:
            continue
        if not mine or not all(bad(state["pairs"][_pair_key(*p)]) for p in mine):
            continue
        partners = [p[0] if p[1] == node else p[1] for p in mine]
        fine_elsewhere = all(any(not bad(state["pairs"][_pair_key(*q)]) for q in ring if partner in q and node not in q)
                             for partner in partners)
        if fine_elsewhere:
            named.append(node)
    return named


def build_report(state, run_id, meta=None, now=None):
    """The fabric report (JSON-able): per-pair matrix, per-node verdict with evidence, median and threshold."""
    now = float(now if now is not None else time.time())
    pairs = [state["pairs"][_pair_key(a, b)] for a, b in state["ring"]]

    def failed(p):
        return p["ok"] is False

    def slow(p):
        return bool(p["slow"])

    broken = dict(state["broken"])
    for node in _attribute(state, failed):
        mine = [p for p in pairs if node in (p["a"], p["b"])]
        broken.setdefault(node, {"by": "pairs", "evidence": "every pair failed: " + "; ".join(
            "%s-%s: %s" % (p["a"], p["b"], "; ".join("%s: %s" % kv for kv in sorted(p["errors"].items()))[:400])
            for p in mine)})
    slow_nodes = [n for n in _attribute(state, slow) if n not in broken]
    explained = set(broken) | set(slow_nodes) | set(state["unreachable"])

    def unexplained_pair(p):
        return (failed(p) or slow(p)) and p["a"] not in explained and p["b"] not in explained
    nodes = []
    for node in list(state["nodes"]) + [n for n in state["not_ready"] if n not in state["nodes"]] + \
            [n for n in state["unreachable"] if n not in state["nodes"] and n not in state["not_ready"]]:
        mine = [p for p in pairs if node in (p["a"], p["b"])]
        evidence = []
        if node in state["unreachable"]:
            verdict = "unreachable"
            evidence.append("Ansible lost the node during the check")
        elif node in state["not_ready"]:
            verdict = "not_ready"
            evidence.append(state["not_ready"][node])
        elif node in broken:
            verdict = "broken"
            evidence.append("%s: %s" % (broken[node]["by"], broken[node]["evidence"]))
        elif node in slow_nodes:
            verdict = "slow"
            evidence.append("every pair below the threshold %.4f GB/s after %d retries: %s" % (
                state.get("threshold_gbps") or 0, int(state["options"]["retries"]),
                ", ".join("%s-%s %.4f GB/s" % (p["a"], p["b"], p["busbw_gbps"]) for p in mine)))
        elif any(unexplained_pair(p) for p in mine):
            verdict = "suspect"
            evidence.append("in a %s pair that names no node: %s" % (
                "failed" if any(failed(p) and unexplained_pair(p) for p in mine) else "slow",
                ", ".join("%s-%s" % (p["a"], p["b"]) for p in mine if unexplained_pair(p))))
        else:
            verdict = "ok"
        nodes.append({"node": node, "verdict": verdict, "cards": state["cards"].get(node), "evidence": evidence,
                      "pairs": [{"partner": p["b"] if p["a"] == node else p["a"], "busbw_gbps": p["busbw_gbps"],
                                 "ok": p["ok"], "slow": p["slow"]} for p in mine]})
    nodes.sort(key=lambda n: (VERDICTS.index(n["verdict"]), state["nodes"].index(n["node"])
                              if n["node"] in state["nodes"] else len(state["nodes"])))
    counts = dict((v, len([n for n in nodes if n["verdict"] == v])) for v in VERDICTS)
    unexplained = []
    fleet = state.get("fleet")
    if fleet and not fleet["ok"] and not broken and not counts["unreachable"]:
        unexplained.append("the whole-fleet job %s failed and no node was found: %s" % (fleet["id"], _first_error(fleet)))
    if any(failed(p) and unexplained_pair(p) for p in pairs):
        unexplained.append("a pair failed that names no node")
    if not state["done"]:
        unexplained.append("the check stopped after %d round(s), before it finished (phase %s)" % (
            len(state["history"]), state["phase"]))
    if counts["broken"] or counts["unreachable"] or counts["not_ready"] or unexplained:
        status = "broken"
    elif counts["slow"] or counts["suspect"]:
        status = "degraded"
    else:
        status = "clean"
    pair_jobs = [j for h in state["history"] for j in h["jobs"] if j["kind"] in ("pair", "retry") and j["ok"]]
    pair_rounds = [h for h in state["history"] if h["phase"] in ("pairs", "retry")]
    timing = {
        "rounds": len(state["history"]),
        "jobs": sum(len(h["jobs"]) for h in state["history"]),
        "wall_s": round(now - float(state["started"]), 2),
        "pair_job_s": round(sum(j["elapsed_s"] for j in pair_jobs) / len(pair_jobs), 2) if pair_jobs else None,
        "pair_round_s": round(sum(h["wall_s"] for h in pair_rounds) / len(pair_rounds), 2) if pair_rounds else None,
    }
    named = [n["node"] for n in nodes if n["verdict"] not in ("ok", "suspect")]
    return {
        "kind": "fabric", "id": safe_run_id(run_id), "status": status, "exit_code": exit_code_for(status),
        "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)), "timestamp": now,
        "meta": dict(meta or {}), "options": state["options"], "busbw": BUSBW,
        "median_busbw_gbps": state.get("median"), "threshold_gbps": state.get("threshold_gbps"),
        "summary": dict(counts, nodes=len(nodes), named=named,
                        pairs=len(pairs), slow_pairs=len([p for p in pairs if slow(p)]),
                        failed_pairs=len([p for p in pairs if failed(p)])),
        "unexplained": unexplained, "notes": list(state["notes"]),
        "fleet": fleet, "nodes": nodes, "pairs": pairs,
        "rounds": [{"round": h["round"], "phase": h["phase"], "wall_s": h["wall_s"],
                    "jobs": [{"id": j["id"], "kind": j["kind"], "nodes": j["nodes"], "ok": j["ok"],
                              "busbw_gbps": j["busbw_gbps"], "elapsed_s": j["elapsed_s"]} for j in h["jobs"]]}
                   for h in state["history"]],
        "timing": timing,
    }


def exit_code_for(status):
    """0 clean, 3 degraded (slow nodes), 4 broken or unreachable."""
    return {"clean": EXIT_CLEAN, "degraded": EXIT_DRIFT}.get(status, EXIT_FAILED)


# --------------------------------------------------------------- formats --

def _gb(value):
    return "-" if value is None else "%.4f" % value


def to_markdown(report):
    s = report["summary"]
    lines = ["# TopsRider fabric check %s" % report["id"], "",
             "Status: **%s** (exit %d). %d node(s): %d ok, %d slow, %d broken, %d unreachable, %d not ready, "
             "%d suspect. Pairs: %d, %d slow, %d failed." % (
                 report["status"], report["exit_code"], s["nodes"], s["ok"], s["slow"], s["broken"],
                 s["unreachable"], s["not_ready"], s["suspect"], s["pairs"], s["slow_pairs"], s["failed_pairs"]),
             "",
             "Median pair busbw %s GB/s; threshold %s GB/s (%s x median); %d retries. %s." % (
                 _gb(report["median_busbw_gbps"]), _gb(report["threshold_gbps"]), report["options"]["threshold"],
                 int(report["options"]["retries"]), report["busbw"]),
             ""]
    named = [n for n in report["nodes"] if n["verdict"] != "ok"]
    lines += ["## Named nodes", ""]
    if named:
        lines += ["| node | verdict | evidence |", "| --- | --- | --- |"]
        lines += ["| %s | **%s** | %s |" % (md_cell(n["node"]), n["verdict"], md_cell("; ".join(n["evidence"])))
                  for n in named]
    else:
        lines.append("None.")
    for text in report["unexplained"] + report["notes"]:
        lines += ["", "- " + md_cell(text)]
    fleet = report.get("fleet")
    if fleet:
        lines += ["", "## Whole fleet", "",
                  "Job %s over %d node(s), %d rank(s): %s, busbw %s GB/s, %ss." % (
                      fleet["id"], len(fleet["nodes"]), fleet["world"], "passed" if fleet["ok"] else "FAILED",
                      _gb(fleet["busbw_gbps"]), fleet["elapsed_s"])]
    lines += ["", "## Pairs", "", "| pair | busbw GB/s | attempts | verdict |", "| --- | --- | --- | --- |"]
    for p in report["pairs"]:
        verdict = "failed" if p["ok"] is False else ("slow" if p["slow"] else ("ok" if p["ok"] else "not run"))
        lines.append("| %s - %s | %s | %s | %s |" % (md_cell(p["a"]), md_cell(p["b"]), _gb(p["busbw_gbps"]),
                                                     ", ".join(_gb(a["busbw_gbps"]) if a["ok"] else "failed"
                                                               for a in p["attempts"]) or "-", verdict))
    lines += ["", "## Rounds", "", "| round | phase | jobs | wall s |", "| --- | --- | --- | --- |"]
    for r in report["rounds"]:
        lines.append("| %d | %s | %s | %s |" % (r["round"], r["phase"], md_cell("; ".join(
            "%s %s [%s] %s" % (j["id"], j["kind"], " ".join(j["nodes"]), "ok" if j["ok"] else "FAILED")
            for j in r["jobs"])), r["wall_s"]))
    t = report["timing"]
    lines += ["", "Timing: %d round(s), %d job(s), %ss in all; a pair job %ss, a pair round %ss." % (
        t["rounds"], t["jobs"], t["wall_s"], t["pair_job_s"], t["pair_round_s"])]
    return "\n".join(lines).rstrip("\n") + "\n"


def to_junit(report):
    """A testsuite `topsrider-fabric`: the whole-fleet job, then one testcase per
    node (slow = failure, broken / unreachable / not ready = error)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(report["timestamp"]))
    root = ElementTree.Element("testsuites", {"name": "topsrider-fabric", "time": "%.2f" % report["timing"]["wall_s"]})
    suite = ElementTree.SubElement(root, "testsuite", {"name": "fabric", "package": "topsrider-fabric", "id": "0",
                                                       "hostname": "controller", "timestamp": stamp,
                                                       "time": "%.2f" % report["timing"]["wall_s"], "skipped": "0"})
    counts = {"tests": 0, "failures": 0, "errors": 0}
    fleet = report.get("fleet")
    if fleet:
        case = ElementTree.SubElement(suite, "testcase", {"name": "whole fleet", "classname": "topsrider-fabric",
                                                          "time": "%.2f" % fleet["elapsed_s"]})
        counts["tests"] += 1
        if not fleet["ok"]:
            msg = "whole-fleet job %s failed" % fleet["id"]
            err = ElementTree.SubElement(case, "error", {"message": msg, "type": "broken"})
            err.text = "\n".join("%s: %s" % kv for kv in sorted(fleet["errors"].items()))
            counts["errors"] += 1
    for n in report["nodes"]:
        case = ElementTree.SubElement(suite, "testcase", {"name": n["node"], "classname": "topsrider-fabric.node",
                                                          "time": "0"})
        counts["tests"] += 1
        text = "\n".join(n["evidence"])
        if n["verdict"] in ("broken", "unreachable", "not_ready"):
            err = ElementTree.SubElement(case, "error", {"message": "%s: %s" % (n["verdict"], text[:200]),
                                                         "type": n["verdict"]})
            err.text = text
            counts["errors"] += 1
        elif n["verdict"] in ("slow", "suspect"):
            fail = ElementTree.SubElement(case, "failure", {"message": "%s: %s" % (n["verdict"], text[:200]),
                                                            "type": n["verdict"]})
            fail.text = text
            counts["failures"] += 1
    for k, v in counts.items():
        suite.set(k, str(v))
        root.set(k, str(v))
    return xml_document(root)


def _bytes_per_second(gbps):
    """The report's GB/s (10^9 bytes per second, as nccl-tests prints busbw) in the base unit, whole bytes."""
    return "%d" % round(float(gbps) * 1e9)


def to_prometheus(report):
    """The fabric report in Prometheus text format."""
    nodes = report["nodes"]
    return prometheus_text([
        ("topsrider_fabric_node_verdict", "1 for the node's verdict in the last fabric check.",
         [((("node", n["node"]), ("verdict", v)), 1 if n["verdict"] == v else 0) for n in nodes for v in VERDICTS]),
        ("topsrider_fabric_node_ok", "1 when the last fabric check found nothing wrong with the node, else 0.",
         [((("node", n["node"]),), 1 if n["verdict"] == "ok" else 0) for n in nodes]),
        # A pair's outcome is its own series; its bandwidth is there only when it was measured (never a
        # stand-in value such as -1 that a rule or a panel would read as a bandwidth). A pair that never
        # ran (a node unreachable or not ready) has neither.
        ("topsrider_fabric_pair_ok", "1 when the pair's all-reduce passed in the last fabric check, 0 when every "
         "attempt failed; absent when the pair did not run.",
         [((("a", p["a"]), ("b", p["b"])), 1 if p["ok"] else 0) for p in report["pairs"] if p["ok"] is not None]),
        ("topsrider_fabric_pair_slow", "1 when the pair's best busbw stayed below the threshold after its "
         "retries, else 0; absent when the pair failed or did not run.",
         [((("a", p["a"]), ("b", p["b"])), 1 if p["slow"] else 0) for p in report["pairs"]
          if p["ok"] and p["slow"] is not None]),
        ("topsrider_fabric_pair_busbw_bytes_per_second", "Best all-reduce bus bandwidth of the pair (nccl-tests "
         "busbw), bytes per second; absent when the pair failed or did not run.",
         [((("a", p["a"]), ("b", p["b"])), _bytes_per_second(p["busbw_gbps"])) for p in report["pairs"]
          if p["busbw_gbps"] is not None]),
        ("topsrider_fabric_median_busbw_bytes_per_second", "Median busbw of the pairs' first attempts, bytes per "
         "second; absent when no pair passed.",
         [((), _bytes_per_second(report["median_busbw_gbps"]))] if report["median_busbw_gbps"] is not None else []),
        ("topsrider_fabric_threshold_busbw_bytes_per_second", "Busbw below which a pair is slow, bytes per second; "
         "absent when no pair passed.",
         [((), _bytes_per_second(report["threshold_gbps"]))] if report["threshold_gbps"] is not None else []),
        ("topsrider_fabric_status", "Exit code of the last fabric check: 0 clean, 3 degraded, 4 broken.",
         [((), report["exit_code"])]),
        ("topsrider_fabric_last_check_timestamp_seconds", "When the fabric check finished (Unix time).",
         [((), "%.3f" % report["timestamp"])]),
    ])
