# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Peer staging's client side (module bundle_fetch): which bundle files a node
lacks, and fetching them over HTTP with their sha256 checked before use.

Each file is streamed once: written to the partial directory and hashed as it
arrives (get_url reads a downloaded file three more times: SHA1, the asked-for
checksum, MD5), then moved into place only when its size and sha256 are the
manifest's. The opener is passed in (the module gives Ansible's
ansible.module_utils.urls.open_url) so this file is plain Python, Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib
import os
import shutil

try:
    from urllib.parse import quote
except ImportError:  # pragma: no cover - Python 2 is not a node Python we support
    from urllib import quote

from ansible_collections.gcu.topsrider.plugins.module_utils._manifest import file_problems, sha256_file

CHUNK = 1 << 20


class FetchError(Exception):
    """A file could not be fetched, or what came is not the manifest's file."""

    def __init__(self, name, msg):
        super(FetchError, self).__init__(msg)
        self.name = name


def spec_problems(files):
    """Why the file list is not usable ([] when it is): the manifest's own check
    of each entry (_manifest.file_problems: plain names, 64-hex sha256, sizes >= 0)."""
    problems = []
    seen = set()
    for entry in files:
        name = entry.get("file")
        problems.extend("file %s: %s" % (name, p) if isinstance(name, str) and not p.startswith("file ") else p
                        for p in file_problems(entry, seen))
    return problems


def sha256_of(path):
    """The file's sha256, or None when it is not a readable regular file."""
    if not os.path.isfile(path):
        return None
    try:
        return sha256_file(path, CHUNK)
    except (IOError, OSError):
        return None


def missing(dest, files):
    """The names of `files` not in `dest` with their manifest sha256 (in the given order)."""
    return [e["file"] for e in files if sha256_of(os.path.join(dest, e["file"])) != e["sha256"]]


def make_dirs(path, mode=0o700, dry_run=False):
    """`path` and its missing parents as directories with `mode`, and `path`
    itself set to `mode`; the directories made or changed (top first).
    dry_run: change nothing, say what would be made or changed."""
    todo = []
    top = os.path.abspath(path)
    while not os.path.isdir(top):
        todo.append(top)
        top = os.path.dirname(top)
    changed = []
    for directory in reversed(todo):
        if not dry_run:
            os.mkdir(directory, mode)
            os.chmod(directory, mode)
        changed.append(directory)
    if not todo and (os.stat(path).st_mode & 0o7777) != mode:
        if not dry_run:
            os.chmod(path, mode)
        changed.append(os.path.abspath(path))
    return changed


def file_url(base, name):
    return base.rstrip("/") + "/" + quote(name)


def empty_dir(path):
    """`path` as an empty root-only directory (what an interrupted transfer left is dropped)."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)
    os.makedirs(path, 0o700)
    os.chmod(path, 0o700)


def _stream(response, out, digest):
    """Copy response into out, hashing; returns the bytes copied. Disk errors come out as WriteError."""
    received = 0
    while True:
        chunk = response.read(CHUNK)
        if not chunk:
            break
        digest.update(chunk)
        try:
            out.write(chunk)
        except (IOError, OSError) as e:
            raise _WriteError(e)
        received += len(chunk)
    try:
        out.flush()
    except (IOError, OSError) as e:
        raise _WriteError(e)
    return received


class _WriteError(Exception):
    """The node's disk refused a write (told apart from the network's errors)."""


def fetch_one(opener, url, entry, partial_dir, dest):
    """Stream one file into partial_dir, hashing it; move it into dest only if size and sha256 match.

    Returns the bytes received. Raises FetchError naming the URL otherwise (the
    partial file is removed; dest is left as it was)."""
    name = entry["file"]
    partial = os.path.join(partial_dir, name)
    digest = hashlib.sha256()
    try:
        response = opener(url)
        try:
            try:
                out = open(partial, "wb")
                os.chmod(partial, 0o600)
            except (IOError, OSError) as e:
                raise _WriteError(e)
            with out:
                received = _stream(response, out, digest)
        finally:
            response.close()
    except _WriteError as e:
        _remove(partial)
        raise FetchError(name, "cannot write %s (fetching %s): %s" % (partial, url, e.args[0]))
    except Exception as e:  # pylint: disable=broad-except  # urllib, http.client and socket errors alike
        _remove(partial)
        raise FetchError(name, "cannot fetch %s: %s" % (url, _reason(e)))
    if received != entry["size"] or digest.hexdigest() != entry["sha256"]:
        _remove(partial)
        raise FetchError(name, "%s sent %d bytes with sha256 %s; the manifest says %d bytes with sha256 %s "
                         "(nothing was moved into place)"
                         % (url, received, digest.hexdigest(), entry["size"], entry["sha256"]))
    shutil.move(partial, os.path.join(dest, name))
    return received


def fetch_all(opener, base_url, files, dest, partial_dir):
    """Fetch every file of `files` that `dest` lacks (sha256), one after another.

    Returns [{"file", "changed", "bytes"}] for every file. A file already held
    is left alone; a wrong one in dest is removed before its fetch (it is
    replaced anyway, and progress counts the bytes in dest and partial_dir).
    The first failure raises FetchError; files fetched before it stay."""
    needed = set(missing(dest, files))
    empty_dir(partial_dir)
    for entry in files:
        if entry["file"] in needed:
            _remove(os.path.join(dest, entry["file"]))
    results = []
    for entry in files:
        if entry["file"] not in needed:
            results.append({"file": entry["file"], "changed": False, "bytes": 0})
            continue
        got = fetch_one(opener, file_url(base_url, entry["file"]), entry, partial_dir, dest)
        results.append({"file": entry["file"], "changed": True, "bytes": got})
    shutil.rmtree(partial_dir, ignore_errors=True)
    return results


def _remove(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def _reason(e):
    reason = getattr(e, "reason", None)
    code = getattr(e, "code", None)
    if code is not None:
        return "HTTP %s %s" % (code, reason or "")
    return str(reason or e) or e.__class__.__name__
