# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report of deploy.yml, verify.yml and rollback.yml
(playbooks/tasks/finish.yml builds it) as plain text and as JUnit XML.

Pure functions, no ansible imports: the filter plugin gcu.topsrider.report
calls them on the controller and the unit tests call them directly.

A report is {kind, id, check_mode, written: 'YYYY-MM-DDTHH:MM:SSZ',
summary: {ok, failed, unreachable, pending, not_started, changed},
unreachable_hosts: [...], hosts: [{host, result, version, changed,
duration_s, detail}, ...]}; a host's result is one of RESULTS.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re
from xml.etree import ElementTree

from ansible_collections.gcu.topsrider.plugins.module_utils._drift import xml_document

RESULTS = ("ok", "failed", "unreachable", "pending", "not started")
# A host that never got this far: its checks did not run (JUnit <skipped>).
NOT_RUN = ("pending", "not started")

# Anything a terminal or YAML's block scalar would not show as one plain line.
_UNPRINTABLE = re.compile(u"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\\u2028\\u2029\\ufeff]")


class FleetReportError(ValueError):
    pass


def _one_line(value):
    """The value as one printable line (no newline, tab or control character)."""
    text = u"" if value is None else u"%s" % (value,)
    text = _UNPRINTABLE.sub(u" ", text.replace(u"\t", u" ").replace(u"\r\n", u" ").replace(u"\n", u" "))
    return u" ".join(text.split())


def _rows(report):
    rows = report.get("hosts")
    if not isinstance(rows, list):
        raise FleetReportError("the report has no list of hosts")
    for r in rows:
        if not isinstance(r, dict) or not r.get("host"):
            raise FleetReportError("a host line without a host: %r" % (r,))
        if r.get("result") not in RESULTS:
            raise FleetReportError("%s: unknown result %r (want one of %s)" % (
                r["host"], r.get("result"), ", ".join(RESULTS)))
    return rows


def _seconds(value):
    if value is None or value == "":
        return None
    value = float(value)
    return value if value >= 0 else 0.0


def _count(report, key):
    return int((report.get("summary") or {}).get(key) or 0)


def to_text(report):
    """The report as plain text for a terminal: a heading, the summary line and
    an aligned table, one line per host, nothing wrapped or cut, no trailing
    space (so that Ansible's YAML output shows it as a literal block, line for line)."""
    rows = _rows(report)
    check = u" (check mode)" if report.get("check_mode") in (True, "True", "true") else u""
    title = u"TopsRider %s %s%s" % (_one_line(report.get("kind")), _one_line(report.get("id")), check)
    summary = u"%d ok, %d failed, %d unreachable, %d changed" % (
        _count(report, "ok"), _count(report, "failed"), _count(report, "unreachable"), _count(report, "changed"))
    for key, label in (("pending", "pending"), ("not_started", "not started")):
        if _count(report, key):
            summary += u", %d %s" % (_count(report, key), label)
    lines = [title, u"", summary + u"."]
    if report.get("unreachable_hosts"):
        lines.append(u"Unreachable: %s." % u", ".join(_one_line(h) for h in report["unreachable_hosts"]))
    head = (u"host", u"result", u"version", u"changed", u"seconds", u"detail")
    table = [head]
    for r in rows:
        secs = _seconds(r.get("duration_s"))
        table.append((_one_line(r["host"]), r["result"], _one_line(r.get("version")) or u"-",
                      u"yes" if r.get("changed") in (True, "True", "true") else u"no",
                      u"-" if secs is None else u"%.1f" % secs, _one_line(r.get("detail"))))
    widths = [max(len(t[i]) for t in table) for i in range(len(head) - 1)]
    lines.append(u"")
    for t in table:
        lines.append((u"  ".join(c.ljust(w) for c, w in zip(t, widths)) + u"  " + t[-1]).rstrip())
    return u"\n".join(lines) + u"\n"


def to_junit(report):
    """JUnit XML: one testsuite (the run) with a testcase per host. ok passes,
    failed is a <failure>, unreachable an <error>, a host the run never
    reached (pending, not started) is <skipped>: its checks did not run."""
    rows = _rows(report)
    kind = _one_line(report.get("kind")) or "report"
    written = u"%s" % (report.get("written") or "")
    if not re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ?$", written):
        raise FleetReportError("written: want YYYY-MM-DDTHH:MM:SSZ, got %r" % (written,))
    # A host's seconds count from the start of the run (batches wait their turn): the run took the longest.
    total = max([_seconds(r.get("duration_s")) or 0.0 for r in rows] or [0.0])
    root = ElementTree.Element("testsuites", {"name": "topsrider-%s" % kind, "time": "%.1f" % total})
    suite = ElementTree.SubElement(root, "testsuite", {
        "name": "%s %s" % (kind, _one_line(report.get("id"))), "package": "topsrider-%s" % kind, "id": "0",
        "hostname": "controller", "timestamp": written.rstrip("Z"), "time": "%.1f" % total})
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for r in rows:
        secs = _seconds(r.get("duration_s"))
        case = ElementTree.SubElement(suite, "testcase", {
            "name": _one_line(r["host"]), "classname": "topsrider-%s" % kind,
            "time": "%.1f" % (secs or 0.0)})
        counts["tests"] += 1
        detail = _one_line(r.get("detail"))
        if r["result"] == "failed":
            ElementTree.SubElement(case, "failure", {"message": detail, "type": "failed"}).text = detail
            counts["failures"] += 1
        elif r["result"] == "unreachable":
            ElementTree.SubElement(case, "error", {"message": detail, "type": "unreachable"}).text = detail
            counts["errors"] += 1
        elif r["result"] in NOT_RUN:
            ElementTree.SubElement(case, "skipped", {
                "message": detail if detail.startswith(r["result"]) else "%s: %s" % (r["result"], detail)})
            counts["skipped"] += 1
        elif detail:
            ElementTree.SubElement(case, "system-out").text = detail
    for k, v in counts.items():
        suite.set(k, str(v))
        if k != "skipped":
            root.set(k, str(v))
    return xml_document(root)
