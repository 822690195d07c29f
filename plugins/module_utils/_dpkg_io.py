# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node side of gcu.topsrider.deb_bundle that is not a dpkg command: the
dpkg locks (taken as apt takes them) and the deb files a rollback can
reinstall (recorded in the journal, or found in the cache directories).

The pure dpkg logic stays in ``_dpkg``. No Ansible import; Python 3.6+.
`clock` and `sleep` are passed in so the waiting is tested without waiting.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import errno
import fcntl
import os
import time

from ansible_collections.gcu.topsrider.plugins.module_utils._dpkg import strip_epoch

LOCK_FRONTEND = "/var/lib/dpkg/lock-frontend"
LOCK_DB = "/var/lib/dpkg/lock"


def acquire_dpkg_lock(timeout, frontend=LOCK_FRONTEND, database=LOCK_DB,
                      sleep=time.sleep, clock=time.time):
    """Take the dpkg frontend lock as apt does (fcntl write lock on the whole
    file; a flock one too, see _take), waiting up to `timeout` seconds, then wait (same deadline) until the
    database lock is free, so that dpkg will not find it taken. Returns
    (the open fd holding the frontend lock, None), or (None, the lock that was
    busy) on timeout."""
    deadline = clock() + timeout
    fd = os.open(frontend, os.O_RDWR | os.O_CREAT, 0o640)
    if not _wait_lock(fd, deadline, sleep, clock, keep=True):
        os.close(fd)
        return None, frontend
    dfd = os.open(database, os.O_RDWR | os.O_CREAT, 0o640)
    try:
        if not _wait_lock(dfd, deadline, sleep, clock, keep=False):
            os.close(fd)
            return None, database
    finally:
        os.close(dfd)
    return fd, None


def release_dpkg_lock(fd):
    """Give back the frontend lock acquire_dpkg_lock returned (None: nothing held)."""
    if fd is None:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
        fcntl.lockf(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def dpkg_lock_busy(frontend=LOCK_FRONTEND, database=LOCK_DB):
    """The one lock reader's answer without waiting: None when both dpkg locks
    are free (taken and given back at once, as apt would take them), else the
    path of the lock another process holds. topsrider_state reports it so that
    a deploy's preflight refuses while apt or dpkg runs, before anything changes."""
    fd, busy = acquire_dpkg_lock(0, frontend, database)
    release_dpkg_lock(fd)
    return busy


def _take(fd):
    """Both kinds of lock on fd, or neither: apt and dpkg take fcntl locks, and a
    script that wraps a package run in flock(1) takes a flock one; on Linux the two
    do not see each other, so a free lock is one that neither kind holds."""
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (IOError, OSError) as e:
        if e.errno not in (errno.EACCES, errno.EAGAIN):
            raise
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (IOError, OSError) as e:
        fcntl.lockf(fd, fcntl.LOCK_UN)
        if e.errno not in (errno.EACCES, errno.EAGAIN, errno.EWOULDBLOCK):
            raise
        return False
    return True


def _wait_lock(fd, deadline, sleep, clock, keep):
    while True:
        if not _take(fd):
            if clock() >= deadline:
                return False
            sleep(0.5)
            continue
        if not keep:
            fcntl.flock(fd, fcntl.LOCK_UN)
            fcntl.lockf(fd, fcntl.LOCK_UN)
        return True


def find_cached_deb(cache_dirs, package, version, arch=None, max_depth=4):
    """Paths of files named like the deb of package=version in cache_dirs."""
    wanted_prefix = "%s_%s_" % (package, strip_epoch(version))
    found = []
    for top in cache_dirs:
        if not os.path.isdir(top):
            continue
        top_depth = top.rstrip(os.sep).count(os.sep)
        for root, dirs, files in os.walk(top):
            if root.count(os.sep) - top_depth >= max_depth:
                dirs[:] = []
            dirs.sort()
            for name in sorted(files):
                if name.startswith(wanted_prefix) and name.endswith(".deb"):
                    if arch is None or name[len(wanted_prefix):-len(".deb")] in (arch, "all"):
                        found.append(os.path.join(root, name))
    return found


def deb_candidates(cache_dirs, package, version, arch, recorded=None, indexed=None):
    """Files that may be the deb of package=version, best first, each once and
    existing: the one the snapshot recorded, the one the deb index names, then
    those found in cache_dirs. Returns [(path, recorded sha256 or None)]."""
    candidates = []
    for rec in (recorded, indexed):
        if rec and rec.get("path"):
            candidates.append((rec["path"], rec.get("sha256")))
    for path in find_cached_deb(cache_dirs, package, version, arch):
        candidates.append((path, None))
    seen = set()
    out = []
    for path, sha in candidates:
        if path in seen or not os.path.isfile(path):
            continue
        seen.add(path)
        out.append((path, sha))
    return out
