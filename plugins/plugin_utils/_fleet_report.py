# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report of deploy.yml, verify.yml and rollback.yml: built from
the host lines a run kept on the controller (playbooks/tasks/finish.yml calls
build() through the filter gcu.topsrider.topsrider_fleet_report), and written
as JSON, Markdown and JUnit XML and printed as plain text.

Pure functions, no ansible imports: the filter plugin gcu.topsrider.report
calls them on the controller and the unit tests call them directly.

A report is {kind, id, check_mode, written: 'YYYY-MM-DDTHH:MM:SSZ',
status, summary: {ok, failed, unreachable, pending, not_started, deferred,
in_progress, interrupted, changed, status, slurm}, unreachable_hosts: [...],
hosts: [{host, result, version, changed, duration_s, detail, slurm
(optional)}, ...]}; a host's result is one of RESULTS.

"in progress": the host's batch has started and it has no result yet (its
line is written when its batch starts, so that a controller killed mid-batch
leaves a report that names the nodes it was working on); "interrupted": a
later run found that a run was stopped while it worked on the host.

The run's status (STATUSES): failed when a host failed, was unreachable or
interrupted; else "in progress" while hosts have no result yet (the report
rewritten when each batch of a rollout starts and ends); else deferred when
a node was in use and left for a later run ("not done yet"); else ok.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re
import time
from xml.etree import ElementTree

from ansible_collections.gcu.topsrider.plugins.plugin_utils._report_formats import safe_run_id, xml_document

RESULTS = ("ok", "failed", "unreachable", "pending", "not started", "deferred", "in progress", "interrupted")
# A host that never got this far: its checks did not run (JUnit <skipped>).
NOT_RUN = ("pending", "not started", "deferred", "in progress")
# A host whose run ended without its result: a JUnit <error>, like unreachable.
NO_RESULT = ("unreachable", "interrupted")
STATUSES = ("ok", "deferred", "failed", "in progress")

# The width of a host's line in the printed table: a terminal's (a longer
# detail is cut there; the JSON and Markdown reports keep all of it).
TEXT_WIDTH = 160

# Anything a terminal or YAML's block scalar would not show as one plain line.
_UNPRINTABLE = re.compile(u"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\\u2028\\u2029\\ufeff]")


class FleetReportError(ValueError):
    pass


def _one_line(value):
    """The value as one printable line (no newline, tab or control character)."""
    text = u"" if value is None else u"%s" % (value,)
    text = _UNPRINTABLE.sub(u" ", text.replace(u"\t", u" ").replace(u"\r\n", u" ").replace(u"\n", u" "))
    return u" ".join(text.split())


# The words of a detail that decide what the line says, kept whole when a line
# is cut (each a regular expression over the detail; a word they touch is kept):
DECISIVE = (
    ("a word in capitals (REVOKED, NOT restored, FAILED)", re.compile(r"\b[A-Z]{3,}\b")),
    ("a card (gcu3, GCU 3, gpu0)", re.compile(r"\b(?:gcu|gpu|GCU|GPU) ?[0-9]+\b")),
    ("a verdict", re.compile(r"\b(?:un)?health(?:y)?\b|\b(?:failed|refused|revoked|missing|interrupted)\b", re.I)),
    ("an override or a code (topsrider_rollback_allow_revoked=true, rc=1)", re.compile(r"\b[a-z][a-z0-9_]*=[^\s,;)]+")),
)
# Words either side of a decisive one kept with it while there is room (what it
# says of what), when they are short (a path is detail).
_CONTEXT = 2
_CONTEXT_CHARS = 24
# The detail's first words, what happened ("back from 2.5.140 to 2.5.136",
# "restored to the state before the deploy (proven)", "deferred, nothing was changed").
_HEAD_CHARS = 50
_MARK = u"..."
# Priorities of a detail's words, given up last to first: the decisive words,
# the detail's head, a decisive word's neighbours, the rest of the first
# clause, the rest.
_DECIDES, _HEAD, _NEAR, _REASON, _DETAIL = 0, 1, 2, 3, 4


def _word_priorities(words):
    """Each word's priority: _DECIDES for a word a DECISIVE expression
    touches; _HEAD for the first clause's words within its first _HEAD_CHARS
    characters; _REASON for the rest of the first clause (up to its first
    '; ': what happened); _NEAR for a short word next to a decisive one (in
    place of _REASON or _DETAIL); _DETAIL for the rest."""
    text = u" ".join(words)
    spans = [m.span() for dummy, rx in DECISIVE for m in rx.finditer(text)]
    prio, at, first_clause = [], 0, True
    for w in words:
        end = at + len(w)
        prio.append(_DECIDES if any(a < end and at < b for a, b in spans)
                    else _HEAD if first_clause and end <= _HEAD_CHARS
                    else _REASON if first_clause else _DETAIL)
        first_clause = first_clause and not w.endswith(u";")
        at = end + 1
    for i in [i for i, p in enumerate(prio) if p == _DECIDES]:
        for j in range(max(i - _CONTEXT, 0), min(i + _CONTEXT + 1, len(prio))):
            if prio[j] > _NEAR and len(words[j]) <= _CONTEXT_CHARS:
                prio[j] = _NEAR
    return prio


def _render(words, kept):
    out = []
    for w, k in zip(words, kept):
        if k:
            out.append(w)
        elif not out or out[-1] is not _MARK:
            out.append(_MARK)
    return u" ".join(out)


def _runs(prio, level):
    """Runs of consecutive word indexes of priority `level` or lower."""
    runs, run = [], []
    for i, p in enumerate(prio):
        if p >= level:
            run.append(i)
        elif run:
            runs.append(run)
            run = []
    return runs + [run] if run else runs


def cut_detail(text, width):
    """The detail in at most `width` characters, keeping the words that
    decide: words are given up lowest priority first (_word_priorities: the
    rest, the first clause, a decisive word's neighbours, the detail's head,
    the decisive words last), each from the middle of the longest run of
    words that can go (counted in characters), and every run of words given
    up shows as one '...'; then words given up next to a kept one are taken
    back, most important and first first, while they fit. A word is never
    cut inside but one longer than the whole width, which keeps its start."""
    text = _one_line(text)
    if len(text) <= width:
        return text
    words = text.split(u" ")
    prio = _word_priorities(words)
    kept = [True] * len(words)
    for level in (_DETAIL, _REASON, _NEAR, _HEAD, _DECIDES):
        while len(_render(words, kept)) > width:
            runs = [r for r in _runs(prio, level) if any(kept[i] for i in r)]
            if not runs:
                break
            longest = max(runs, key=lambda r: sum(len(words[i]) + 1 for i in r if kept[i]))
            # The middle of the run in characters, over all of its words (given up or not).
            centre, at = {}, 0
            for i in longest:
                centre[i] = at + len(words[i]) / 2.0
                at += len(words[i]) + 1
            middle = at / 2.0
            drop = min((i for i in longest if kept[i]), key=lambda i: (abs(centre[i] - middle), i))
            kept[drop] = False
    for i in sorted(range(len(words)), key=lambda i: (prio[i], i)):
        # A word taken back joins what is kept: never an island between two '...'.
        if not kept[i] and ((i > 0 and kept[i - 1]) or (i + 1 < len(words) and kept[i + 1])):
            kept[i] = True
            if len(_render(words, kept)) > width:
                kept[i] = False
    if not any(kept):
        kept[min(range(len(words)), key=lambda i: (prio[i], i))] = True
    line = _render(words, kept)
    if len(line) > width:
        line = line[:max(width - len(_MARK) - 1, 0)].rstrip() + u" " + _MARK
    return line[:width]


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


def summarize(rows):
    """The summary of a report's host lines: a count per result, how many
    changed, the run's status and, when any line has one, the Slurm totals."""
    counts = dict((r.replace(" ", "_"), 0) for r in RESULTS)
    for r in rows or []:
        key = str(r.get("result")).replace(" ", "_")
        if key in counts:
            counts[key] += 1
    counts["changed"] = len([r for r in rows or [] if r.get("changed") in (True, "True", "true")])
    counts["status"] = ("failed" if counts["failed"] or counts["unreachable"] or counts["interrupted"]
                        else "in progress" if counts["not_started"] or counts["pending"] or counts["in_progress"]
                        else "deferred" if counts["deferred"] else "ok")
    counts["slurm"] = slurm_totals(rows)
    return counts


# What a targeted host without a line of its own is, by report_missing_as.
_MISSING_DETAIL = {
    "lost": "unreachable: the run lost this host",
    "not started": "not started: the rollout has not reached this host (a later batch, or it stopped)",
    "pending": "no result yet: a later batch",
}
_NO_RESULT = "no result: unreachable, or the run stopped before this host"


def build(found, kind, run_id, targets, lost=(), missing_as="unreachable", check_mode=False, now=None):
    """The report of a run from the host lines it kept: `found` is the
    content of every file in <reports>/<kind>-<run id>.d/ (a host's own file
    is its line, a mapping; deploy.yml's _current.json a list of lines of the
    hosts already at the release); a host's own line wins. One row per
    target, in order: its line, else `unreachable` for a host the play lost
    (`lost`), else `missing_as` (unreachable; not started or pending while
    later batches of a rollout have not run)."""
    if missing_as not in RESULTS:
        raise FleetReportError("missing_as %r is not a result (want one of %s)" % (missing_as, ", ".join(RESULTS)))
    by_host = {}
    mine = []
    for item in found or []:
        if isinstance(item, dict):
            mine.append(item)
        elif isinstance(item, list):
            for line in item:
                if isinstance(line, dict) and line.get("host"):
                    by_host[line["host"]] = line
        else:
            raise FleetReportError("a host line file holds %s, not a line or a list of lines" % type(item).__name__)
    for line in mine:
        if not line.get("host"):
            raise FleetReportError("a host line without a host: %r" % (line,))
        by_host[line["host"]] = line
    lost = set(lost or ())
    rows = []
    for host in targets or []:
        if host in by_host:
            rows.append(by_host[host])
            continue
        missing = "unreachable" if host in lost else missing_as
        detail = _MISSING_DETAIL["lost"] if host in lost else _MISSING_DETAIL.get(missing, _NO_RESULT)
        rows.append({"host": host, "result": missing, "version": None, "changed": False, "duration_s": None,
                     "detail": detail})
    summary = summarize(rows)
    now = time.time() if now is None else float(now)
    report = {"kind": kind, "id": safe_run_id(run_id), "check_mode": check_mode in (True, "True", "true"),
              "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)), "hosts": rows,
              "summary": summary, "status": summary["status"],
              "unreachable_hosts": [r["host"] for r in rows if r.get("result") == "unreachable"]}
    _rows(report)
    return report


# The counts a summary line names only when there are any.
_EXTRA_COUNTS = (("deferred", "deferred"), ("pending", "pending"), ("not_started", "not started"),
                 ("in_progress", "in progress"), ("interrupted", "interrupted"))


def in_progress_lines(hosts, now=None):
    """The lines of a batch's hosts when the batch starts: "in progress
    (started <UTC time>)", replaced by each host's own line when it ends; a
    controller killed meanwhile leaves them, so that the report names the
    nodes that were being worked on, not "not started"."""
    now = time.time() if now is None else float(now)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
    return [{"host": h, "result": "in progress", "version": None, "changed": False, "duration_s": None,
             "detail": "in progress (started %s): no result yet; a run stopped here left the node as it was then" % started}
            for h in hosts or []]


def report_files(report, reports_dir):
    """The files a fleet report is written as, each [path, text]: <kind>-<id>
    as JSON, Markdown and JUnit XML, and <kind>-latest as JSON and XML."""
    base = "%s/%s-%s" % (reports_dir.rstrip("/") or "/", report["kind"], report["id"])
    latest = "%s/%s-latest" % (reports_dir.rstrip("/") or "/", report["kind"])
    text = json.dumps(report, indent=4, sort_keys=True, separators=(",", ": "), ensure_ascii=False)
    xml = to_junit(report)
    return [[base + ".json", text], [base + ".md", to_markdown(report)], [base + ".xml", xml],
            [latest + ".json", text], [latest + ".xml", xml]]


def lost_line(host, task, msg, failed_task=None, failed_msg=None, started=None, now=None):
    """The line of a host that stopped answering in the middle of its turn
    (Ansible drops such a host from the play: none of its rescue or always
    tasks run, so it never writes a line of its own)."""
    detail = u"unreachable: the node stopped answering during '%s' (%s)" % (_one_line(task), _one_line(msg) or u"no answer")
    if failed_task:
        detail += u", after '%s' failed (%s)" % (_one_line(failed_task), _one_line(failed_msg) or u"no message")
    detail += (u"; what it holds now is unknown: when it is back, run the same command again"
               u" (it finishes the job or names the one remedy)")
    now = time.time() if now is None else float(now)
    return {"host": host, "result": "unreachable", "version": None, "changed": False,
            "duration_s": None if started is None else round(max(now - float(started), 0.0), 1), "detail": detail}


def with_lost_hosts(report, lost, now=None):
    """The report again with the lines of `lost` (host -> its lost_line())
    in place of what it had for those hosts when it was written last; the
    other rows stay as they were, in order."""
    rows = list(_rows(report))
    targets = [r["host"] for r in rows]
    found = [rows] + [dict(line) for host, line in sorted((lost or {}).items()) if host in targets]
    return build(found, report.get("kind"), report.get("id"), targets, (), "unreachable",
                 report.get("check_mode"), now)


def _md_detail(value):
    return _one_line(value).replace(u"|", u"/")


def to_markdown(report):
    """The report as Markdown: a heading, the summary and status lines, the
    Slurm and unreachable lines when there are any, and a table, one row per
    host (the whole detail, on one line, no '|' in it)."""
    rows = _rows(report)
    s = report.get("summary") or {}
    check = u" (check mode)" if report.get("check_mode") in (True, "True", "true") else u""
    summary = u"%d ok, %d failed, %d unreachable, %d changed" % (
        _count(report, "ok"), _count(report, "failed"), _count(report, "unreachable"), _count(report, "changed"))
    for key, label in _EXTRA_COUNTS:
        if _count(report, key):
            summary += u", %d %s" % (_count(report, key), label)
    status = report.get("status") or s.get("status")
    note = u" (not done yet: the deferred nodes were in use; run again later)" if status == "deferred" else u""
    lines = [u"# TopsRider %s %s%s" % (report.get("kind"), report.get("id"), check), u"", summary + u".", u"",
             u"Status: **%s**%s" % (status, note)]
    if isinstance(s.get("slurm"), dict):
        lines += [u"", _slurm_sentence(s["slurm"])]
    if report.get("unreachable_hosts"):
        lines.append(u"Unreachable: %s." % u", ".join(u"%s" % h for h in report["unreachable_hosts"]))
    lines += [u"", u"| host | result | version | changed | seconds | detail |", u"|---|---|---|---|---|---|"]
    for r in rows:
        secs = r.get("duration_s")
        lines.append(u"| %s | %s | %s | %s | %s | %s |" % (
            r["host"], r["result"], r.get("version") or u"-", u"yes" if r.get("changed") in (True, "True", "true") else u"no",
            u"-" if secs is None else secs, _md_detail(r.get("detail"))))
    return u"\n".join(lines) + u"\n"


def slurm_line(info):
    """A host's Slurm part of its report line, from what the run registered:
    info = {node, drain (topsrider_slurm state=drained), wait (topsrider_wait_free),
    back (topsrider_slurm at the end; {} or skipped when it did not run)}."""
    drain = info.get("drain") or {}
    wait = info.get("wait") or {}
    back = info.get("back") or {}
    back_ran = bool(back) and not back.get("skipped") and not back.get("failed")
    before = drain.get("before") or {}
    owner_before = drain.get("owner")
    after = back.get("after") if back_ran else (drain.get("after") or before)
    owner_after = back.get("owner") if back_ran else None
    other = "before" if owner_before == "other" else "during" if owner_after == "other" else None
    jobs = [dict((k, j.get(k)) for k in ("id", "name", "user", "left", "end_state", "exit_code", "stopped_from_outside"))
            for j in wait.get("jobs_seen") or []]
    seen_mixed = list(wait.get("two_releases") or [])
    if back_ran:
        seen_mixed += (back.get("cluster") or {}).get("two_releases") or []
    two = sorted(set(j["id"] for j in seen_mixed))
    return {
        "node": info.get("node"),
        "drained_by_run": bool(drain.get("drained")),
        "owner_before": owner_before,
        "reason_before": before.get("reason") if other == "before" else None,
        "other_drain": other,
        # A drain by someone else is left as it was: still drained, with a reason not this run's.
        "other_drain_kept": None if other is None else bool(
            (after or {}).get("drain") and owner_after in (None, "other") and not back.get("resumed")
            and (other == "during" or (after or {}).get("reason") == before.get("reason"))),
        "resumed": bool(back.get("resumed")) if back_ran else False,
        "state_after": (after or {}).get("state"),
        "reason_after": (after or {}).get("reason"),
        "features_after": (after or {}).get("features"),
        "waited_s": wait.get("waited_s"),
        "jobs_waited": jobs,
        "two_releases": two,
    }


def slurm_totals(rows):
    """What the run did to the Slurm cluster, over the host lines that have a Slurm part; None when none has."""
    parts = [r["slurm"] for r in rows or [] if isinstance(r.get("slurm"), dict)]
    if not parts:
        return None
    jobs = {}
    for p in parts:
        for j in p.get("jobs_waited") or []:
            jobs.setdefault(j["id"], j)
    others = [p for p in parts if p.get("other_drain")]
    return {
        "drained": len([p for p in parts if p.get("drained_by_run")]),
        "resumed": len([p for p in parts if p.get("resumed")]),
        "jobs_waited_for": len(jobs),
        "jobs_killed_or_requeued": len([j for j in jobs.values() if j.get("stopped_from_outside")]),
        "jobs_on_two_releases": len(set(i for p in parts for i in p.get("two_releases") or [])),
        "other_drains": len(others),
        "other_drains_kept": len([p for p in others if p.get("other_drain_kept")]),
    }


def _slurm_sentence(s):
    return (u"Slurm: %d node(s) drained by this run, %d resumed; %d job(s) waited for, %d killed or requeued "
            u"while their node was held; %d job(s) seen on two releases; %d of %d drain(s) by others left as they were." % (
                s["drained"], s["resumed"], s["jobs_waited_for"], s["jobs_killed_or_requeued"],
                s["jobs_on_two_releases"], s["other_drains_kept"], s["other_drains"]))


def to_text(report):
    """The report as plain text for a terminal: a heading, the summary line and
    an aligned table, one line per host of at most TEXT_WIDTH characters (a
    longer detail is cut by cut_detail(), which keeps the words that decide and
    shows what it left out as '...', and a line under the table says where the
    whole of it is), nothing wrapped, no trailing space (so that
    Ansible's YAML output shows it as a literal block, line for line)."""
    rows = _rows(report)
    check = u" (check mode)" if report.get("check_mode") in (True, "True", "true") else u""
    title = u"TopsRider %s %s%s" % (_one_line(report.get("kind")), _one_line(report.get("id")), check)
    summary = u"%d ok, %d failed, %d unreachable, %d changed" % (
        _count(report, "ok"), _count(report, "failed"), _count(report, "unreachable"), _count(report, "changed"))
    for key, label in _EXTRA_COUNTS:
        if _count(report, key):
            summary += u", %d %s" % (_count(report, key), label)
    lines = [title, u"", summary + u"."]
    status = report.get("status") or (report.get("summary") or {}).get("status")
    if status:
        if status not in STATUSES:
            raise FleetReportError("unknown status %r (want one of %s)" % (status, ", ".join(STATUSES)))
        note = u" (not done yet: the deferred nodes were in use; run again later)" if status == "deferred" else u""
        lines.append(u"Status: %s%s" % (status, note))
    slurm = (report.get("summary") or {}).get("slurm")
    if isinstance(slurm, dict):
        lines.append(_slurm_sentence(slurm))
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
    cut = False
    for t in table:
        cells = u"  ".join(c.ljust(w) for c, w in zip(t, widths)) + u"  "
        detail = t[-1]
        if len(cells) + len(detail) > TEXT_WIDTH:
            detail = cut_detail(detail, max(TEXT_WIDTH - len(cells), 20))
            cut = True
        lines.append((cells + detail).rstrip())
    if cut:
        lines += [u"", u"(A line with ' ... ' is cut to fit a terminal: the JSON and Markdown reports have all of it.)"]
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
    # A host's seconds are its own (from its turn's start); hosts of a batch overlap: the suite's time is the longest host's.
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
        elif r["result"] in NO_RESULT:
            ElementTree.SubElement(case, "error", {"message": detail, "type": r["result"]}).text = detail
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
