# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drift: the fleet report in its four forms (JSON document, Markdown, JUnit
XML, Prometheus textfile), from every node's findings (the one comparison,
module_utils/_compare.py, made them).

Pure functions, no ansible imports: the filter plugin gcu.topsrider.drift
calls them on the controller and the unit tests call them directly.
Python 3.6+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import time
from xml.etree import ElementTree

from ansible_collections.gcu.topsrider.plugins.module_utils._compare import (
    CATEGORIES, CHECKS, finding, sorted_findings,
)
from ansible_collections.gcu.topsrider.plugins.module_utils._signature import revoked_problem
from ansible_collections.gcu.topsrider.plugins.plugin_utils._report_formats import (
    exit_code_for, md_cell, prometheus_text, safe_run_id, short_text, xml_document,
)


# ---------------------------------------------------------------- revoked --

def revoked_findings(deployed, node, revoked, name, serial=None):
    """The "revoked" finding of a node whose deployed release (its local
    facts: {version, manifest_sha256}, as deploy.yml writes them) is on the
    revocation list (`revoked`: the list's entries, checked on the
    controller; `name`: its path), else []. The list's reason is the
    finding's actual value."""
    if not isinstance(deployed, dict) or not deployed.get("version") or not revoked:
        return []
    doc = {"serial": serial if serial is not None else 0, "revoked": revoked}
    entry, problem = revoked_problem(doc, name, deployed["version"], deployed.get("manifest_sha256"))
    if not entry:
        return []
    return [finding(node, "revoked", "release %s" % deployed["version"], "not revoked",
                    "revoked: %s" % entry["reason"], problem)]


# ----------------------------------------------------------------- report --

def _previous_successes(previous):
    """{node: last_success} from the previous report (None, or a report without them: {})."""
    if not isinstance(previous, dict):
        return {}
    out = {}
    for n in previous.get("nodes") or []:
        if isinstance(n, dict) and n.get("node") and n.get("last_success") is not None:
            out[n["node"]] = float(n["last_success"])
    return out


def build_report(hosts, results, run_id, now=None, meta=None, previous=None):
    """The fleet report. hosts: every targeted node, in order; results:
    {node: {checked_at, findings, error}} for the nodes that answered (a node
    without a result was unreachable; one with an error could not be checked).
    now: when the run started. Per node: duration_s (checked_at - now; null
    when unreachable) and last_success (when its check last completed, drift
    found or not: this run's checked_at, else the one in `previous`, the last
    report, else null)."""
    now = time.time() if now is None else float(now)
    before = _previous_successes(previous)
    nodes = []
    findings = []
    for host in hosts:
        res = (results or {}).get(host)
        if not res:
            status, checked_at, error = "unreachable", now, "no result: the node did not answer"
            found = [finding(host, "unreachable", "reachable", "reachable", "unreachable", error)]
        elif res.get("error"):
            status, checked_at, error = "failed", float(res.get("checked_at") or now), res["error"]
            found = [finding(host, "unreachable", "drift check", "completes", "failed", error)]
        else:
            # In report order, the node's read and its probe's findings together.
            found = sorted_findings(res.get("findings") or [])
            status = "drift" if found else "clean"
            checked_at, error = float(res.get("checked_at") or now), None
        nodes.append({"node": host, "status": status, "checked_at": checked_at, "findings": len(found),
                      "categories": sorted(set(f["category"] for f in found),
                                           key=CATEGORIES.index), "error": error,
                      "duration_s": None if status == "unreachable" else round(max(0.0, checked_at - now), 3),
                      "last_success": checked_at if status in ("clean", "drift") else before.get(host)})
        findings.extend(found)
    counts = dict((s, len([n for n in nodes if n["status"] == s]))
                  for s in ("clean", "drift", "unreachable", "failed"))
    if counts["unreachable"] or counts["failed"]:
        status = "failed"
    elif counts["drift"]:
        status = "drift"
    else:
        status = "clean"
    summary = dict(counts, nodes=len(nodes), findings=len(findings),
                   by_category=dict((c, len([f for f in findings if f["category"] == c])) for c in CATEGORIES))
    return {"kind": "drift", "id": safe_run_id(run_id), "status": status, "exit_code": exit_code_for(status),
            "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)), "timestamp": now,
            "desired": dict(meta or {}), "summary": summary, "nodes": nodes, "findings": findings}


def to_markdown(report):
    s = report["summary"]
    lines = ["# TopsRider drift check %s" % report["id"], "",
             "Status: **%s** (exit %d). %d node(s): %d clean, %d with drift, %d unreachable, %d failed; "
             "%d finding(s)." % (report["status"], report["exit_code"], s["nodes"], s["clean"], s["drift"],
                                 s["unreachable"], s["failed"], s["findings"]),
             ""]
    desired = report.get("desired") or {}
    if desired:
        lines += ["Desired: " + ", ".join("%s %s" % (k, short_text(desired[k])) for k in sorted(desired)), ""]
    lines += ["| node | status | findings | categories |", "| --- | --- | --- | --- |"]
    for n in report["nodes"]:
        cats = ", ".join(n["categories"]) or "-"
        lines.append("| %s | %s | %d | %s |" % (md_cell(n["node"]), n["status"], n["findings"], cats))
    if report["findings"]:
        lines += ["", "## Findings", "", "| node | category | check | expected | actual |",
                  "| --- | --- | --- | --- | --- |"]
        for f in report["findings"]:
            lines.append("| %s | %s | %s | %s | %s |" % (md_cell(f["node"]), f["category"], md_cell(f["check"]),
                                                         md_cell(f["expected"]), md_cell(f["actual"])))
        details = [f for f in report["findings"] if f.get("detail")]
        if details:
            lines += ["", "## Details", ""]
            for f in details:
                lines += ["### %s: %s %s" % (f["node"], f["category"], f["check"]), "", "```",
                          f["detail"].rstrip("\n").replace("```", "'''"), "```", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def to_junit(report):
    """JUnit XML: a testsuite per node, a testcase per node and check (the
    CHECKS, plus `reachable`); drift is a <failure>, an unreachable or failed
    node an <error> on `reachable` and <skipped> on the checks that did not run."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(report["timestamp"]))
    root = ElementTree.Element("testsuites", {"name": "topsrider-drift", "time": "0"})
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for i, n in enumerate(report["nodes"]):
        suite = ElementTree.SubElement(root, "testsuite", {
            "name": n["node"], "package": "topsrider-drift", "id": str(i), "hostname": n["node"],
            "timestamp": stamp, "time": "0"})
        mine = [f for f in report["findings"] if f["node"] == n["node"]]
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for check in ("reachable",) + CHECKS:
            case = ElementTree.SubElement(suite, "testcase", {
                "name": check, "classname": "topsrider-drift.%s" % n["node"], "time": "0"})
            counts["tests"] += 1
            if n["status"] in ("unreachable", "failed"):
                if check == "reachable":
                    err = ElementTree.SubElement(case, "error", {"message": n["error"], "type": n["status"]})
                    err.text = n["error"]
                    counts["errors"] += 1
                else:
                    # Did not run: neither passed nor failed.
                    ElementTree.SubElement(case, "skipped", {"message": "not checked: the node %s" % (
                        "was unreachable" if n["status"] == "unreachable" else "check failed")})
                    counts["skipped"] += 1
                continue
            hits = [f for f in mine if f["category"] == check]
            if hits:
                fail = ElementTree.SubElement(case, "failure", {
                    "message": "; ".join("%s: expected %s, actual %s" % (
                        f["check"], short_text(f["expected"]), short_text(f["actual"])) for f in hits),
                    "type": "drift"})
                fail.text = "\n\n".join(
                    "%s\n  expected: %s\n  actual:   %s%s" % (
                        f["check"], short_text(f["expected"]), short_text(f["actual"]),
                        ("\n" + f["detail"]) if f.get("detail") else "")
                    for f in hits)
                counts["failures"] += 1
        for k, v in counts.items():
            suite.set(k, str(v))
            totals[k] = totals.get(k, 0) + v
    totals.pop("skipped", None)  # not an attribute of <testsuites> in the Jenkins schema
    for k, v in totals.items():
        root.set(k, str(v))
    return xml_document(root)


def to_prometheus(report):
    """The drift report in Prometheus text format."""
    nodes = report["nodes"]
    return prometheus_text([
        ("topsrider_drift_findings", "Drift findings of the node in the last check.",
         [((("node", n["node"]),), n["findings"]) for n in nodes]),
        ("topsrider_drift_category_findings", "Drift findings of the node in the last check, per category.",
         [((("node", n["node"]), ("category", c)),
           len([f for f in report["findings"] if f["node"] == n["node"] and f["category"] == c]))
          for n in nodes for c in CATEGORIES]),
        ("topsrider_drift_last_check_timestamp_seconds", "When the node was last checked (Unix time).",
         [((("node", n["node"]),), "%.3f" % n["checked_at"]) for n in nodes]),
        ("topsrider_drift_healthy", "1 when the node was checked and matches the desired state, else 0.",
         [((("node", n["node"]),), 1 if n["status"] == "clean" else 0) for n in nodes]),
        ("topsrider_drift_up", "1 when the node could be checked, else 0 (unreachable or the check failed).",
         [((("node", n["node"]),), 0 if n["status"] in ("unreachable", "failed") else 1) for n in nodes]),
        ("topsrider_drift_last_success_timestamp_seconds",
         "When the node's drift check last completed, drift found or not (Unix time; 0: never).",
         [((("node", n["node"]),), "%.3f" % (n.get("last_success") or 0)) for n in nodes]),
        ("topsrider_drift_check_duration_seconds",
         "Seconds from the start of the last run to the end of the node's check (unreachable nodes: none).",
         [((("node", n["node"]),), "%.3f" % n["duration_s"]) for n in nodes
          if n.get("duration_s") is not None]),
    ])
