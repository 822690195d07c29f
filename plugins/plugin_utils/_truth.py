# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure helpers that let deploy.yml and rollback.yml prove an end state
before they say ok (issue 14). (The rule for operator values is _values.py.)

No Ansible import; Python 3.6+. Used by the filters in plugins/filter/truth.py.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import base64
import hashlib
import os
import re

try:
    from urllib.parse import unquote
except ImportError:  # pragma: no cover - Python 2 controllers are not supported
    from urllib import unquote


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


# ---------------------------------------------------------------------------
# One sentence for a failed task
# ---------------------------------------------------------------------------

# Tasks whose message is written, by this collection, as the whole sentence of
# what failed and why: their name is a claim ("There is a snapshot to go back
# to") or a step, and reads as the opposite of the truth in front of it.
SENTENCE_ACTIONS = frozenset(["assert", "fail"])
# A speaker's label in front of a message ("eccl_env: ", "t20-node-1: ").
LABEL_RE = re.compile(r"^[A-Za-z0-9_.-]+: \Z")


# ansible-core's words in front of a message, which say nothing of the failure.
CORE_PREFIX_RE = re.compile(r"^(?:(?:Task|Module|Action) failed: )+")
# A file Ansible's atomic move could not put in place because its file system
# is full (the copy, template and file modules): said as the collection's own
# writers say it (the report writer, the node lock, the journal).
NO_SPACE_RE = re.compile(r"Failed to replace '(?P<path>[^']+)' with .*No space left on device")


def result_message(result):
    """The message of a failed task's result: a loop's "One or more items
    failed" is the first failed item's message; a string is itself."""
    if not isinstance(result, dict):
        return result
    for item in result.get("results") or []:
        if isinstance(item, dict) and (item.get("failed") or item.get("unreachable")):
            return result_message(item)
    return result.get("msg")


def failure_text(msg, action="", name="", prefix=""):
    """What failed and why, each part once, from a rescue's
    ansible_failed_result (or its msg) and ansible_failed_task's action and
    name: the message of an assert or fail task alone; any other task's
    message after the task's name (which step); a loop's, its first failed
    item's; a file system that was full, named as such. `prefix` (e.g.
    "refused, nothing was changed") goes first; a message that already says
    it keeps it once (first, where only a label such as "eccl_env: " was in
    front of it)."""
    msg = CORE_PREFIX_RE.sub("", " ".join(str(result_message(msg) or "failed").split())) or "failed"
    full = NO_SPACE_RE.search(msg)
    if full:
        path = full.group("path")
        msg = ("the file system of %s is full (No space left on device): %s was not written and is as it was;"
               " free space there and run again" % (os.path.dirname(path), path))
    action = str(action or "").rsplit(".", 1)[-1]
    name = " ".join(str(name or "").split())
    text = msg if action in SENTENCE_ACTIONS or not name else "%s: %s" % (name, msg)
    if not prefix:
        return text
    at = msg.lower().find(prefix.lower())
    if at < 0:
        return "%s: %s" % (prefix, text)
    # Said already: first, after at most a speaker's label ("eccl_env: "), which goes.
    if at > 0 and LABEL_RE.match(msg[:at]):
        return msg[at:]
    return text


# What a connection plugin says, as a task's failure rather than as
# unreachable, when the node itself is gone (community.docker's docker
# connection: the container stopped or was removed). SSH reports a lost node
# as unreachable, which no rescue sees.
LOST_NODE_MESSAGES = ("is not running", "No such container")


def node_lost(lock_result, probe_result):
    """Whether the node stopped answering, from a play's rescue: the lock task
    (tasks/start.yml's topsrider_lock_taken) could not reach it, or a one-command
    probe run in the rescue (raw "true", ignore_unreachable, failed_when false;
    skipped when the lock task was unreachable) could not run there."""
    lock = lock_result if isinstance(lock_result, dict) else {}
    probe = probe_result if isinstance(probe_result, dict) else {}
    if lock.get("unreachable") or probe.get("unreachable"):
        return True
    stderr = str(lock.get("module_stderr") or "")
    if any(m in stderr for m in LOST_NODE_MESSAGES):
        return True
    if probe.get("skipped"):
        return False
    return probe.get("rc", 1) != 0
