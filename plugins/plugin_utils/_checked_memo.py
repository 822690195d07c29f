# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the controller has already checked, remembered by the files' stat
(controller side; scripts/topsrider-manifest extract).

The vendor's .run is about 4 GB. Checking it (makeself's MD5 and SHA256, and
the sha256 of the whole file) and then the bundle extracted from it (the
sha256 of every file against the manifest) reads every byte twice; each
deploy or drift check did that again, though nothing had changed:
about 5 s per GiB on the controller (docs/performance.md).

A memo records, after a full check that passed, each file's identity and
times: device, inode, size, mtime and ctime in nanoseconds. The next run
trusts the check only when every one of them is unchanged: any write to a
file moves its ctime, which no program can set back (only a change of the
system clock can), and replacing a file (a copy, a rename, a new download)
gives it another inode or ctime. The same rule as git's index and rsync's
quick check, with ctime and the inode added. Anything else (no memo, an
unreadable or foreign one, a changed stat, --recheck) is a full check.

Timestamps are coarse (a kernel tick; a second on some file systems): a file
written again within the same tick as the stat keeps its ctime (git's "racy
clean" files). So a memo is written only when every file it names was last
changed at least SETTLE_NS before the check began; a bundle just extracted is
remembered by the next full check, not by the run that wrote it.

Nothing relies on the memo for what reaches a node: bundle_stage checks the
controller's copy of every file against the manifest before it sends any
(once per run), and the nodes check what they received."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib
import json
import os
import stat
import time

from ansible_collections.gcu.topsrider.plugins.module_utils._atomic import write_atomic

MEMO_DIR = ".checked"
FORMAT = 1
# How long before the check began each file must have last changed (see above).
SETTLE_NS = 2 * 10 ** 9


def stat_key(path, follow=True):
    """[device, inode, size, mtime_ns, ctime_ns, file type] of `path` (of the
    link itself when not `follow`), or None when it cannot be read."""
    try:
        st = os.stat(path) if follow else os.lstat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, stat.S_IFMT(st.st_mode)]


def tree_keys(directory):
    """{name: stat_key} of every entry of `directory` (not recursive; a link
    is its own entry, so a file replaced by a link to it is a change), or None
    when it cannot be listed."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return None
    return dict((name, stat_key(os.path.join(directory, name), follow=False)) for name in names)


def memo_path(cache, subject):
    """Where the memo of the file `subject` lives under `cache`: one file per path."""
    name = hashlib.sha256(os.path.realpath(subject).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return os.path.join(cache, MEMO_DIR, name + ".json")


def load(path):
    """The memo at `path`, or None when there is none or it is not one of ours (never an error)."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    return data


def still_checked(memo, subject, bundle):
    """The memo's record when `subject` and the directory `bundle` are exactly
    as they were when the memo was written (same stat for the subject and for
    every entry of the bundle, no entry more or less), else None."""
    if not memo or memo.get("subject") != os.path.realpath(subject) or memo.get("bundle") != bundle:
        return None
    key = stat_key(subject)
    if key is None or memo.get("subject_key") != key:
        return None
    entries = tree_keys(bundle)
    if not entries or any(v is None for v in entries.values()) or memo.get("bundle_keys") != entries:
        return None
    return memo.get("record")


def save(path, subject, subject_key, bundle, record, started_ns, settle_ns=SETTLE_NS):
    """Write the memo (module_utils/_atomic.py's writer, 0600, in a 0700 directory) for `subject`
    checked with stat `subject_key` (taken before it was read, at
    `started_ns`, time.time_ns()) and the checked `bundle`; `record` is what
    the check found (JSON). Nothing is written when the subject changed while
    it was read, or when a file was changed less than `settle_ns` before the
    check began (see the module's docstring). Returns True when written; an
    OSError (a read-only or full cache) only means no memo."""
    if subject_key is None or stat_key(subject) != subject_key:
        return False
    entries = tree_keys(bundle)
    if not entries or any(v is None for v in entries.values()):
        return False
    if any(key[4] > started_ns - settle_ns for key in [subject_key] + list(entries.values())):
        return False
    data = {"format": FORMAT, "subject": os.path.realpath(subject), "subject_key": subject_key, "bundle": bundle,
            "bundle_keys": entries, "checked_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started_ns / 1e9)),
            "record": record}
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        write_atomic(path, json.dumps(data, sort_keys=True), 0o600, prefix=".memo-")
        return True
    except OSError:
        return False
