# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure helpers that let deploy.yml and rollback.yml prove an end state
before they say ok (issue 14), and the collection's one rule for operator
values that become node paths, file names, directory names or lines.

No Ansible import; Python 3.6+. Used by the filters in
plugins/filter/truth.py and by the node-lock module.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import base64
import hashlib
import json
import os
import re
import time

try:
    from urllib.parse import unquote
except ImportError:  # pragma: no cover - Python 2 controllers are not supported
    from urllib import unquote

# A plain name (a release version, a run or snapshot id, a file name): starts
# with a letter or digit, then letters, digits and . _ + ~ -. \Z, not $: $
# also matches before a trailing newline ("2.5.140\n" must not pass).
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._+~-]{0,127}\Z"
NAME_RE = re.compile(NAME_PATTERN)
# One component of a node path.
PATH_PART_RE = re.compile(r"^[A-Za-z0-9_.+~@-]+\Z")

VALUE_RULES = {
    "name": "a plain name: a letter or digit, then letters, digits and . _ + ~ - (at most 128; "
            "no /, no '..', no spaces, no newline)",
    "path": "an absolute node path whose parts are letters, digits and _ . + ~ @ - "
            "(no '.' or '..' parts, no empty parts, no spaces, no newline)",
    "line": "one line of printable text (no newline, carriage return, tab or other control character)",
}


def _describe(value):
    return json.dumps(value) if isinstance(value, str) else "%r (%s)" % (value, type(value).__name__)


def value_problem(value, kind):
    """None when `value` follows the rule of `kind` (name | path | line), else
    what is wrong, in a few words."""
    if kind not in VALUE_RULES:
        raise ValueError("unknown kind %r" % (kind,))
    if not isinstance(value, str) or isinstance(value, bool):
        return "is %s, not a string" % _describe(value)
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        return "has a newline or another control character"
    if kind == "line":
        return None
    if kind == "name":
        if value in (".", "..") or not NAME_RE.match(value):
            return "is not %s" % VALUE_RULES["name"]
        return None
    if not value.startswith("/"):
        return "is not absolute"
    parts = value[1:].split("/")
    if value != "/" and any(p == "" for p in parts):
        return "has an empty part (// or a trailing /)"
    for p in parts if value != "/" else []:
        if p in (".", ".."):
            return "has a %r part" % p
        if not PATH_PART_RE.match(p):
            return "is not %s" % VALUE_RULES["path"]
    return None


def value_problems(values, kind):
    """One line per value of the mapping {label: value} that breaks the rule
    of `kind`, in the mapping's order."""
    out = []
    for label, value in (values or {}).items():
        problem = value_problem(value, kind)
        if problem:
            out.append("%s %s %s" % (label, _describe(value), problem))
    return out


# The id of a run when the operator gives none: the UTC time it started.
RUN_ID_FORMAT = "%Y%m%dT%H%M%SZ"


def run_id(value, now=None):
    """The id of a run (deploy, verify, rollback, drift, fabric): the operator's
    `value` (topsrider_deploy_id, topsrider_drift_id, topsrider_fabric_id),
    which names report and snapshot files and so follows the name rule, or,
    for '' or None, the UTC time `now` (default: this moment) as 20261125T213000Z."""
    if value is None or value == "":
        return time.strftime(RUN_ID_FORMAT, time.gmtime(time.time() if now is None else float(now)))
    problem = value_problem(value, "name")
    if problem:
        raise ValueError("the run id %s %s" % (_describe(value), problem))
    return value


# ---------------------------------------------------------------------------
# The state a restore must end in, and what differs from it
# ---------------------------------------------------------------------------

def restore_expected(deploy_snapshot, journal=None):
    """What a node looks like after a restore of `deploy_snapshot` (the
    deploy snapshot file, /var/lib/topsrider/deploys/<id>.json) with the
    deb_bundle `journal` of the same id (or None):

    {"packages": {name: {"version", "held"}}, "files": {path: sha256 or None},
     "torch_gcu": {"version", "url"}, "facts": dict or None}

    Packages: the state the deploy snapshot recorded (all of the bundle's
    debs, when the snapshot has it), and for the packages the journal
    recorded, its "before" (what the rollback puts back)."""
    snap = deploy_snapshot or {}
    packages = {}
    for name, rec in sorted((snap.get("packages") or {}).items()):
        packages[name] = {"version": rec.get("version"), "held": bool(rec.get("held"))}
    for name, rec in sorted(((journal or {}).get("packages") or {}).items()):
        packages[name] = {"version": rec.get("before"), "held": bool(rec.get("before_held"))}
    files = {}
    for path, content in sorted((snap.get("files") or {}).items()):
        files[path] = None if content is None else hashlib.sha256(base64.b64decode(content)).hexdigest()
    wheel = snap.get("torch_gcu") or {}
    return {
        "packages": packages,
        "files": files,
        "torch_gcu": {"version": wheel.get("before"), "url": wheel.get("before_url") or None},
        "facts": snap.get("facts_before"),
    }


def freeze_torch_gcu(freeze_lines):
    """(version or None, url or None) of torch_gcu in `pip freeze --all` lines."""
    for line in freeze_lines or []:
        line = line.strip()
        m = re.match(r"^torch[_-]gcu\s*(==\s*(?P<v>\S+)|@\s*(?P<u>\S+))", line, re.I)
        if m:
            url = m.group("u")
            version = m.group("v")
            if url and version is None:
                # file:///var/cache/topsrider/2.5.136/torch_gcu-2.13.0+2.5.136-py311-none-any.whl
                # pip writes the file name URL-quoted: 2.13.0%2B2.5.136
                parts = unquote(os.path.basename(url)).split("-")
                version = parts[1] if len(parts) > 1 else None
            return version, url
    return None, None


def state_differences(expected, actual):
    """What differs between `expected` (restore_expected or the same shape)
    and `actual`:

    {"packages": {name: {"version", "held", "status"}} (topsrider_state),
     "files": {path: sha256 or None}, "torch_gcu": {"version", "url"},
     "facts": dict or None}

    One line per difference; empty when the node is in the expected state.
    A url of None in `expected` is not compared (older snapshots did not
    record where the wheel came from)."""
    out = []
    pk_actual = actual.get("packages") or {}
    for name, want in sorted((expected.get("packages") or {}).items()):
        have = pk_actual.get(name) or {"version": None, "held": False, "status": "not-installed"}
        if have.get("version") != want["version"]:
            out.append("package %s is %s, the snapshot has %s"
                       % (name, have.get("version") or "absent", want["version"] or "absent"))
        elif want["version"] is not None and have.get("status", "installed") != "installed":
            out.append("package %s %s is %s, not installed" % (name, want["version"], have.get("status")))
        elif want["version"] is not None and bool(have.get("held")) != want["held"]:
            out.append("package %s is %s, the snapshot has it %s"
                       % (name, "held" if have.get("held") else "not held",
                          "held" if want["held"] else "not held"))
    f_actual = actual.get("files") or {}
    for path, want in sorted((expected.get("files") or {}).items()):
        have = f_actual.get(path)
        if want != have:
            if want is None:
                out.append("file %s exists, the snapshot has none" % path)
            elif have is None:
                out.append("file %s is missing, the snapshot has one (sha256 %s)" % (path, want[:12]))
            else:
                out.append("file %s has sha256 %s, the snapshot %s" % (path, have[:12], want[:12]))
    w_want = expected.get("torch_gcu") or {}
    w_have = actual.get("torch_gcu") or {}
    if "version" in w_want and w_want.get("version") != w_have.get("version"):
        out.append("torch_gcu is %s, the snapshot has %s"
                   % (w_have.get("version") or "not installed", w_want.get("version") or "not installed"))
    elif w_want.get("url") and w_want.get("url") != w_have.get("url"):
        out.append("torch_gcu %s comes from %s, the snapshot's from %s"
                   % (w_want.get("version"), w_have.get("url") or "an unknown source", w_want["url"]))
    if "facts" in expected and expected.get("facts") != actual.get("facts"):
        want, have = expected.get("facts"), actual.get("facts")
        out.append("local facts %s, the snapshot's %s"
                   % ("are missing" if have is None else "name %s (snapshot %s)" % (have.get("version"), have.get("snapshot")),
                      "are none" if want is None else "name %s (snapshot %s)" % (want.get("version"), want.get("snapshot"))))
    return out


def snapshot_needs(deploy_snapshot, journal, cache_root):
    """The directories directly under `cache_root` (names, sorted) that a
    rollback to `deploy_snapshot` reads: the debs the journal would reinstall,
    the wheel the snapshot reinstalls, and the cache of the version it
    returns to."""
    root = cache_root.rstrip("/") + "/"
    names = set()

    def add(path):
        if path and path.startswith("file://"):
            path = path[len("file://"):]
        if path and path.startswith(root):
            top = path[len(root):].split("/", 1)[0]
            if top and top not in (".", ".."):
                names.add(top)

    snap = deploy_snapshot or {}
    if snap.get("from_version"):
        names.add(snap["from_version"])
    wheel = snap.get("torch_gcu") or {}
    add(wheel.get("before_cache"))
    add(wheel.get("before_url"))
    for rec in ((journal or {}).get("packages") or {}).values():
        add((rec.get("before_deb") or {}).get("path"))
    return sorted(names)
