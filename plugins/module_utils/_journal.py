# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The deb_bundle journal: snapshots of the previous package state and the
index of which deb file provided which package version.

Layout under the journal directory (default /var/lib/topsrider, mode 0700):
  snapshots/<id>.json   one snapshot (mode 0600), written atomically
  debs.json             {package: {version: {"path", "sha256"}}} (mode 0600)

A snapshot:
  {"id", "time" (UTC ISO 8601), "state" (present|absent), "status"
   (pending|applied|failed-restored|failed), "packages": {name: {
     "before": version or null, "before_held": bool,
     "before_deb": {"path", "sha256"} or null,
     "after": version or null, "after_held": bool}},
   "events": [{"time", "event", "detail"}]}

Only the file operations touch the disk; the rest are pure functions.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import json
import os
import re

from ansible_collections.gcu.topsrider.plugins.module_utils._atomic import write_atomic

SNAPSHOT_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
RESTORABLE = ("applied",)


class JournalError(Exception):
    pass


def ensure_dir(path):
    """Create path (and parents) as a root-only directory; tighten an existing one."""
    if not os.path.isdir(path):
        os.makedirs(path, 0o700)
    os.chmod(path, 0o700)


def write_json_atomic(path, data):
    """Write JSON to path atomically (_atomic.write_atomic: temp file in the
    same directory, fsync, rename), readable by its owner only."""
    ensure_dir(os.path.dirname(path))
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n", 0o600)


def _read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except ValueError as e:
        raise JournalError("journal file %s is not valid JSON: %s" % (path, e))


def snapshots_dir(journal_dir):
    return os.path.join(journal_dir, "snapshots")


def snapshot_path(journal_dir, snapshot_id):
    if not SNAPSHOT_ID_RE.match(snapshot_id or ""):
        raise JournalError("invalid snapshot id %r: use letters, digits, '.', '_' and '-'"
                           % snapshot_id)
    return os.path.join(snapshots_dir(journal_dir), snapshot_id + ".json")


def load_snapshot(journal_dir, snapshot_id):
    """The snapshot dict, or None when there is no such snapshot."""
    path = snapshot_path(journal_dir, snapshot_id)
    if not os.path.exists(path):
        return None
    return _read_json(path)


def save_snapshot(journal_dir, snapshot):
    ensure_dir(journal_dir)
    write_json_atomic(snapshot_path(journal_dir, snapshot["id"]), snapshot)


def list_snapshots(journal_dir):
    """Every snapshot, oldest first (by time, then id)."""
    d = snapshots_dir(journal_dir)
    if not os.path.isdir(d):
        return []
    out = []
    for name in os.listdir(d):
        if name.endswith(".json") and not name.startswith("."):
            out.append(_read_json(os.path.join(d, name)))
    return sorted(out, key=lambda s: (s.get("time", ""), s.get("id", "")))


def latest_restorable(snapshots):
    """The newest snapshot whose change was applied (failed runs were already
    put back, so there is nothing to return to from them)."""
    good = [s for s in snapshots if s.get("status") in RESTORABLE]
    return good[-1] if good else None


def new_snapshot_id(now, existing_ids):
    """A timestamp id (20250101T120000Z), suffixed -2, -3... when taken."""
    base = now.strftime("%Y%m%dT%H%M%SZ")
    candidate = base
    n = 1
    while candidate in existing_ids:
        n += 1
        candidate = "%s-%d" % (base, n)
    return candidate


def merge_snapshot(existing, snapshot_id, now_iso, state, records):
    """The snapshot to write before applying.

    records: {name: {"before", "before_held", "before_deb", "after",
    "after_held"}} for the packages this run changes. Packages already in
    `existing` keep their first recorded previous state (so one deploy that
    calls the module twice under one id has one snapshot); their "after" is
    updated. Pure: returns a new dict.
    """
    if existing is None:
        snap = {"id": snapshot_id, "time": now_iso, "state": state, "status": "pending",
                "packages": {}, "events": []}
    else:
        snap = copy.deepcopy(existing)
        snap.setdefault("packages", {})
        snap.setdefault("events", [])
    for name, rec in records.items():
        old = snap["packages"].get(name)
        new = dict(rec)
        if old is not None:
            for key in ("before", "before_held", "before_deb"):
                new[key] = old.get(key)
        snap["packages"][name] = new
    return snap


def add_event(snapshot, now_iso, event, detail=None):
    snap = copy.deepcopy(snapshot)
    snap.setdefault("events", []).append({"time": now_iso, "event": event, "detail": detail})
    return snap


def restore_targets(snapshot, names=None):
    """{name: {"version", "held"}} that state=rolled_back returns to."""
    out = {}
    for name, rec in snapshot.get("packages", {}).items():
        if names is not None and name not in names:
            continue
        out[name] = {"version": rec.get("before"), "held": bool(rec.get("before_held"))}
    return out


# ---------------------------------------------------------------------------
# The deb index: which file provided which package version
# ---------------------------------------------------------------------------

def index_path(journal_dir):
    return os.path.join(journal_dir, "debs.json")


def load_index(journal_dir):
    path = index_path(journal_dir)
    if not os.path.exists(path):
        return {}
    return _read_json(path)


def save_index(journal_dir, index):
    ensure_dir(journal_dir)
    write_json_atomic(index_path(journal_dir), index)


def record_debs(index, debs):
    """A new index with debs ([{package, version, path, sha256}]) recorded."""
    new = copy.deepcopy(index)
    for d in debs:
        new.setdefault(d["package"], {})[d["version"]] = {"path": d["path"], "sha256": d["sha256"]}
    return new


def indexed_deb(index, package, version):
    return (index.get(package) or {}).get(version)
