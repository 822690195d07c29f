# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drift: desired vs actual TopsRider state, as findings, and the fleet report
in its four forms (JSON document, Markdown, JUnit XML, Prometheus textfile).

Pure functions, no ansible imports: the filter plugin gcu.topsrider.drift
calls them on the controller and the unit tests call them directly.
Python 3.6+.

A finding is {node, category, check, expected, actual, detail}; categories
are CATEGORIES. The desired state of one node is:
    {manifest: <bundle manifest.json>, hold: bool,
     files: {path: {content, mode, owner, group}},
     python: path, library: {name, package} or None,
     expected_count: int or None, require_healthy: bool}
and the actual state is topsrider_state's `state`, plus optionally
`probe`: an eccl_probe result.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import difflib
import hashlib
import json
import time
from xml.etree import ElementTree

from ansible_collections.gcu.topsrider.plugins.module_utils._torch_rule import torch_matches
from ansible_collections.gcu.topsrider.plugins.plugin_utils._report_formats import (
    exit_code_for, md_cell, prometheus_text, safe_run_id, short_text, xml_document,
)

CATEGORIES = ("package", "env", "wheel", "library", "device", "health", "unreachable")
# The checks every reachable node gets (one JUnit test case each).
CHECKS = ("package", "env", "wheel", "library", "device", "health")


class DriftError(ValueError):
    pass


def finding(node, category, check, expected, actual, detail=None):
    if category not in CATEGORIES:
        raise DriftError("unknown category %r" % category)
    return {"node": node, "category": category, "check": check,
            "expected": expected, "actual": actual, "detail": detail}


def _sha(text):
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------- compare --

def _packages(node, desired, actual):
    out = []
    debs = [f for f in desired.get("manifest", {}).get("files", []) if f.get("type") == "deb"]
    have = actual.get("packages") or {}
    for deb in sorted(debs, key=lambda d: d["package"]):
        name = deb["package"]
        entry = have.get(name) or {"version": None, "status": "not-installed", "held": False, "want": "unknown"}
        if entry.get("version") is None:
            out.append(finding(node, "package", name + " version", deb["version"], None,
                               "%s is not installed (dpkg status %s)" % (name, entry.get("status"))))
            continue
        if entry["version"] != deb["version"] or entry.get("status") != "installed":
            shown = entry["version"] if entry.get("status") == "installed" else "%s (%s)" % (
                entry["version"], entry.get("status"))
            out.append(finding(node, "package", name + " version", deb["version"], shown))
        if desired.get("hold", True) and not entry.get("held"):
            out.append(finding(node, "package", name + " hold", "hold", entry.get("want"),
                               "%s is not held: apt or unattended-upgrades may move it" % name))
    return out


def _files(node, desired, actual):
    out = []
    have = actual.get("files") or {}
    for path in sorted(desired.get("files") or {}):
        want = desired["files"][path]
        got = have.get(path) or {"exists": False}
        content = want.get("content")
        if not got.get("exists"):
            out.append(finding(node, "env", path, _sha(content) if content is not None else "present",
                               "missing"))
            continue
        if got.get("type", "file") != "file":
            out.append(finding(node, "env", path, "a regular file", "a %s" % got.get("type")))
            continue
        if content is not None and got.get("sha256") != _sha(content)[len("sha256:"):]:
            detail = None
            if got.get("content") is not None:
                detail = "".join(difflib.unified_diff(
                    content.splitlines(True), got["content"].splitlines(True),
                    fromfile="expected " + path, tofile="actual " + path, n=0))
            out.append(finding(node, "env", path, _sha(content), "sha256:%s" % got.get("sha256"), detail))
        for key in ("mode", "owner", "group"):
            if want.get(key) is not None and got.get(key) != want[key]:
                out.append(finding(node, "env", "%s %s" % (path, key), want[key], got.get(key)))
    return out


def _wheel(node, desired, actual):
    py = actual.get("python")
    if py is None:
        return []
    if py.get("error"):
        return [finding(node, "wheel", "training python", desired.get("python") or py.get("path"),
                        None, py["error"])]
    wheels = [f for f in desired.get("manifest", {}).get("files", [])
              if f.get("type") == "wheel" and f.get("package") in ("torch_gcu", "torch-gcu")]
    wheel = [w for w in wheels if w.get("python") == py.get("python")]
    out = []
    if not wheel:
        have = ", ".join(sorted(w.get("python", "?") for w in wheels))
        out.append(finding(node, "wheel", "torch_gcu wheel for python %s" % py.get("python"),
                           "a wheel in the bundle", None, "the bundle has wheels for Python %s only" % have))
        return out
    wheel = wheel[0]
    if py.get("torch_gcu") != wheel["version"]:
        out.append(finding(node, "wheel", "torch_gcu version", wheel["version"], py.get("torch_gcu"),
                           "in %s" % py.get("path")))
    want_torch = wheel.get("requires_torch")
    # The collection's one torch rule (eccl_probe and torch_gcu_wheel judge the same way).
    if want_torch and torch_matches(py.get("torch"), "==" + want_torch) is not True:
        out.append(finding(node, "wheel", "torch version", want_torch, py.get("torch"), "in %s" % py.get("path")))
    return out


def _library(node, desired, actual):
    lib = actual.get("library")
    if lib is None or not desired.get("library"):
        return []
    name = lib.get("name") or desired["library"].get("name")
    if lib.get("error"):
        return [finding(node, "library", name + " resolves", "resolvable", None, lib["error"])]
    owned = [c["path"] for c in lib.get("owned") or []]
    owned_real = set(c["realpath"] for c in lib.get("owned") or [])
    resolved = lib.get("resolved") or []
    expected = owned or ["a copy from %s" % (lib.get("package") or "its package")]
    if not resolved:
        return [finding(node, "library", name + " resolves", expected, [],
                        "%s is not in the loader cache (ldconfig -p)" % name)]
    foreign = [c["path"] for c in resolved if c["realpath"] not in owned_real]
    if foreign:
        return [finding(node, "library", name + " resolves", expected, [c["path"] for c in resolved],
                        "not from %s: %s" % (lib.get("package") or "the package", ", ".join(foreign)))]
    return []


def _devices(node, desired, actual):
    dev = actual.get("devices")
    if dev is None:
        return []
    if dev.get("error"):
        return [finding(node, "device", "cards visible", desired.get("expected_count") or "efsmi lists the cards",
                        None, dev["error"])]
    out = []
    expected = desired.get("expected_count")
    if expected in (None, ""):
        expected = dev.get("pci_count")
    else:
        # -e topsrider_expected_count=8 arrives as the string "8"
        expected = int(expected)
    if expected is not None and dev.get("count") != expected:
        detail = "the driver sees %s card(s)" % dev.get("count")
        if dev.get("pci_count") is not None:
            detail += ", PCI sees %s" % dev.get("pci_count")
        out.append(finding(node, "device", "card count", expected, dev.get("count"), detail))
    if desired.get("require_healthy", True):
        for card in dev.get("cards") or []:
            if card.get("health") is False:
                out.append(finding(node, "health", "gcu%s health" % card.get("index"), "healthy", "unhealthy",
                                   "GCU %s (%s, serial %s) reports Health: False" % (
                                       card.get("index"), card.get("bus_id"), card.get("serial"))))
    return out


def _probe_category(code):
    if code.startswith("LIBRARY"):
        return "library"
    if code == "NO_DEVICES":
        return "device"
    return "wheel"


def _probe(node, actual):
    probe = actual.get("probe")
    if not probe or probe.get("skipped"):
        return []
    out = []
    for p in probe.get("problems") or []:
        code = p.get("code", "PROBE_FAILED")
        out.append(finding(node, _probe_category(code), "eccl_probe " + code, "no problem",
                           p.get("message") or code, p.get("hint")))
    return out


def node_findings(node, desired, actual):
    """Every difference between the desired and the actual state of one node."""
    if not isinstance(actual, dict):
        raise DriftError("actual state of %s is not a dict" % node)
    found = (_packages(node, desired, actual) + _files(node, desired, actual) + _wheel(node, desired, actual)
             + _library(node, desired, actual) + _devices(node, desired, actual) + _probe(node, actual))
    order = dict((c, i) for i, c in enumerate(CATEGORIES))
    return sorted(found, key=lambda f: (order[f["category"]], f["check"]))


def _short_value(value):
    text = "none" if value is None else str(value)
    return text if len(text) <= 24 else text[:21] + "..."


def deploy_pending_reasons(findings, files, manifest, manifest_sha256, stage_path, facts_path):
    """Why deploying this manifest could still change this node; [] when it
    would change nothing (deploy.yml's fast path). `findings` are
    node_findings() for the release, `files` is topsrider_state's `files`
    (it must cover facts_path and every staged file). Besides the drift
    findings, a deploy also keeps the staged bundle (root-only copies of
    every manifest file and the manifest itself) and the local facts that
    name the deployed manifest."""
    reasons = ["%s %s: expected %s, found %s" % (f["category"], f["check"], _short_value(f["expected"]),
                                                 _short_value(f["actual"])) for f in findings]
    facts = (files or {}).get(facts_path) or {}
    recorded = None
    if facts.get("exists") and facts.get("content") is not None:
        try:
            recorded = json.loads(facts["content"]).get("manifest_sha256")
        except (ValueError, AttributeError):
            recorded = None
    if recorded != manifest_sha256:
        reasons.append("local facts %s do not record this manifest" % facts_path)
    wanted = [(f["file"], f["sha256"]) for f in (manifest or {}).get("files", [])]
    wanted.append(("manifest.json", manifest_sha256))
    for name, sha in wanted:
        path = "%s/%s" % (stage_path.rstrip("/"), name)
        got = (files or {}).get(path) or {}
        if not got.get("exists"):
            reasons.append("staged bundle: %s is missing" % path)
        elif got.get("sha256") != sha:
            reasons.append("staged bundle: %s differs from the manifest" % path)
        elif (got.get("mode"), got.get("owner"), got.get("group")) != ("0600", "root", "root"):
            reasons.append("staged bundle: %s is %s %s:%s, not 0600 root:root" % (
                path, got.get("mode"), got.get("owner"), got.get("group")))
    return reasons


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
            found = list(res.get("findings") or [])
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
