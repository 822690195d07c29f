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


# ---------------------------------------------------------------------------
# The deploy snapshot, and the state a restore of it must end in
# ---------------------------------------------------------------------------

# How a deploy writes the files it manages (eccl_env's environment file,
# tops_sdk's loader config, the local facts), and so how a restore writes
# them back when the snapshot recorded no mode and owner (snapshots written
# before 2026-11-26) or the file did not exist.
DEPLOY_FILE_MODE = {"mode": "0644", "owner": "root", "group": "root"}


def snapshot_record(state, deploy_id, time, to_version, managed_files, journal, journalled, python, environment,
                    cache_root, local_facts, slurped=None):
    """The deploy snapshot (/var/lib/topsrider/deploys/<id>.json): what a
    rollback returns to, from the preflight's topsrider_state read `state`
    (packages, files) before anything changed:

    {id, time, from_version, to_version, packages_journalled, journal,
     packages: {name: {version (None: not installed), held}},
     files: {path: base64 content, or None: the file did not exist},
     modes: {path: {mode, owner, group}} (each regular file that existed),
     torch_gcu: {python, before, before_cache, before_url}, facts_before}

    `managed_files`: the paths a restore puts back; `slurped`: the results of
    a slurp loop over those whose content `state` did not return (too large
    or not UTF-8); `environment`: the training Python as topsrider_state
    reads it (torch_gcu, torch_gcu_url); `local_facts`: the node's local facts
    (their `topsrider` entry names the release before)."""
    files_now = state.get("files") or {}
    facts = (local_facts or {}).get("topsrider")
    from_version = facts.get("version") if isinstance(facts, dict) else None
    slurped_content = dict((r["item"], r["content"]) for r in slurped or [] if "content" in r and "item" in r)
    files, modes = {}, {}
    for path in managed_files:
        now = files_now.get(path) or {"exists": False}
        if not now.get("exists"):
            files[path] = None
            continue
        if path in slurped_content:
            files[path] = slurped_content[path]
        elif now.get("content") is not None:
            files[path] = base64.b64encode(now["content"].encode("utf-8")).decode("ascii")
        else:
            raise ValueError("%s exists but its content was neither read nor slurped" % path)
        if now.get("type", "file") == "file":
            modes[path] = dict((k, now.get(k)) for k in ("mode", "owner", "group"))
    env = environment or {}
    return {
        "id": deploy_id,
        "time": time,
        "from_version": from_version,
        "to_version": to_version,
        "packages_journalled": bool(journalled),
        # The journal deb_bundle writes under the same id, named so a restore can refuse when it is gone.
        "journal": journal,
        "packages": dict((name, {"version": rec.get("version"), "held": rec.get("held")})
                         for name, rec in sorted((state.get("packages") or {}).items())),
        "files": files,
        "modes": modes,
        "torch_gcu": {
            "python": python,
            "before": env.get("torch_gcu"),
            "before_cache": "%s/%s" % (cache_root.rstrip("/"), from_version) if from_version else None,
            # e.g. file:///var/cache/topsrider/2.5.136/torch_gcu-...whl: reinstalled from there, the same source.
            "before_url": env.get("torch_gcu_url") if env.get("torch_gcu") else None,
        },
        "facts_before": facts,
    }


def restore_desired(deploy_snapshot, journal, facts_file, node=None):
    """The desired state (module_utils/_compare.py, topsrider_state's
    `desired`) a restore of `deploy_snapshot` (the deploy snapshot file) with
    the deb_bundle `journal` of the same id (or None) must end in:

    packages: the state the snapshot recorded and, for the packages the
    journal recorded, its "before" (what the rollback puts back), each
    version (None: not installed) and hold; files: each managed file's
    sha256, mode and owner as the snapshot recorded them (0644 root:root,
    as a deploy writes them, where it recorded none), or absent; the local
    facts (0644 root:root, as the deploy and the restore write them, the
    same mapping) or none; torch_gcu in the training Python at its version,
    from the file it came from where the snapshot recorded one. The cards are
    not read (a restore does not change them)."""
    snap = deploy_snapshot or {}
    packages = {}
    for name, rec in sorted((snap.get("packages") or {}).items()):
        packages[name] = {"version": rec.get("version"), "held": bool(rec.get("held"))}
    for name, rec in sorted(((journal or {}).get("packages") or {}).items()):
        packages[name] = {"version": rec.get("before"), "held": bool(rec.get("before_held"))}
    modes = snap.get("modes") or {}
    files = {}
    for path, content in sorted((snap.get("files") or {}).items()):
        if content is None:
            files[path] = {"absent": True}
        else:
            files[path] = dict(DEPLOY_FILE_MODE, sha256=hashlib.sha256(base64.b64decode(content)).hexdigest())
            files[path].update((k, v) for k, v in (modes.get(path) or {}).items() if k in DEPLOY_FILE_MODE and v)
    facts = snap.get("facts_before")
    files[facts_file] = dict(DEPLOY_FILE_MODE) if facts is not None else {"absent": True}
    wheel = snap.get("torch_gcu") or {}
    return {
        "node": node,
        "snapshot": snap.get("id") or "unnamed",
        "manifest": {"version": snap.get("from_version"), "files": []},
        "devices": False,
        "packages": packages,
        "files": files,
        "python": wheel.get("python"),
        "torch_gcu": {"version": wheel.get("before") or None, "url": wheel.get("before_url") or None},
        "facts": {"path": facts_file, "content": facts},
    }


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
SENTENCE_ACTIONS = frozenset(["assert", "fail", "topsrider_inputs"])
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
