# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a collective library (libeccl.so; the system's NCCL) may be on a
node, every copy of it, and what its load report says (eccl_probe's library
level). Which library, its directories and version calls: the ``library`` of
its backend's row in the vendor table (``_vendors.collective_spec``).
``ldconfig -p`` is read by ``_node.parse_ldconfig_cache``. Python 3.6+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import os
import re

from ansible_collections.gcu.topsrider.plugins.module_utils._collective_rank import format_version
from ansible_collections.gcu.topsrider.plugins.module_utils._eccl import problem


def read_ld_so_conf(path="/etc/ld.so.conf", _seen=None):
    """Directories listed in ld.so.conf and the files it includes, in order."""
    seen = _seen if _seen is not None else set()
    if path in seen:
        return []
    seen.add(path)
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except (IOError, OSError):
        return []
    dirs = []
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("hwcap"):
            continue
        if line.startswith("include"):
            pattern = line.split(None, 1)[1] if len(line.split(None, 1)) == 2 else ""
            if pattern and not os.path.isabs(pattern):
                pattern = os.path.join(os.path.dirname(path), pattern)
            for inc in sorted(glob.glob(pattern)):
                for d in read_ld_so_conf(inc, seen):
                    if d not in dirs:
                        dirs.append(d)
            continue
        for d in re.split(r"[:,\s]+", line):
            if d and d not in dirs:
                dirs.append(d)
    return dirs


def search_dirs(library_dirs, ld_conf_dirs, ld_library_path, defaults):
    """[(dir, [sources])] in search order, each directory once."""
    order = []
    sources = {}
    groups = (
        ("library_dirs", library_dirs or []),
        ("LD_LIBRARY_PATH", [d for d in (ld_library_path or "").split(":") if d]),
        ("ld.so.conf", ld_conf_dirs or []),
        ("default", defaults or []),
    )
    for source, dirs in groups:
        for d in dirs:
            d = os.path.normpath(d)
            if d not in sources:
                order.append(d)
                sources[d] = []
            if source not in sources[d]:
                sources[d].append(source)
    return [(d, sources[d]) for d in order]


def find_copies(dirs, cache_paths, name):
    """Distinct files named `name` or `name`.N found in dirs or the loader cache.

    Symlinks and hard links to the same file count once. Returns a list of
    {path, realpath, found_in, in_loader_cache}.
    """
    entries = []
    for d, srcs in dirs:
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for n in names:
            if n == name or n.startswith(name + "."):
                entries.append((os.path.join(d, n), list(srcs)))
    for p in cache_paths or []:
        entries.append((p, ["ldconfig cache"]))
    cache_real = set(os.path.realpath(p) for p in cache_paths or [])
    copies = []
    by_identity = {}
    for path, srcs in entries:
        real = os.path.realpath(path)
        try:
            st = os.stat(real)
        except OSError:
            continue
        if not os.path.isfile(real):
            continue
        key = (st.st_dev, st.st_ino)
        if key in by_identity:
            copy = by_identity[key]
            for s in srcs:
                if s not in copy["found_in"]:
                    copy["found_in"].append(s)
            if path not in copy["links"] and path != copy["path"]:
                copy["links"].append(path)
            continue
        copy = {"path": path, "realpath": real, "found_in": list(srcs), "links": [],
                "in_loader_cache": real in cache_real, "size": st.st_size}
        by_identity[key] = copy
        copies.append(copy)
    # Prefer the plain soname as the path shown, when there is one.
    for copy in copies:
        for link in copy["links"]:
            if os.path.basename(link) == name and os.path.basename(copy["path"]) != name:
                copy["links"].remove(link)
                copy["links"].insert(0, copy["path"])
                copy["path"] = link
                break
    return copies


def classify_library(copies, soname_report, library):
    """Merge the load report into copies; return (library result, problems).

    copies: find_copies() output. soname_report: the LIBRARY_SCRIPT report
    (None when the child failed, which the caller reports as PROBE_FAILED).
    library: the backend row's ``library`` (its name, its version units).
    """
    name = library["name"]
    problems = []
    if soname_report is None:
        # Nothing is known about loading: report the copies only (the caller adds PROBE_FAILED).
        result = {"name": name, "path": None, "version": None, "loadable": None, "error": None,
                  "copies": [dict(c, loadable=None, error=None, version=None, version_string=None) for c in copies]}
        return result, problems
    by_soname = soname_report.get("by_soname") or {}
    loads = dict((c.get("path"), c) for c in (soname_report or {}).get("copies") or [])
    out_copies = []
    for copy in copies:
        load = loads.get(copy["path"], {})
        entry = dict(copy)
        entry["loadable"] = load.get("loadable")
        entry["error"] = load.get("error")
        entry["version"] = format_version(library, load.get("version_number")) or load.get("version_string")
        entry["version_string"] = load.get("version_string")
        out_copies.append(entry)
    loaded_path = by_soname.get("path")
    version = format_version(library, by_soname.get("version_number")) or by_soname.get("version_string")
    loadable = bool(by_soname.get("loadable"))
    if loaded_path:
        real = os.path.realpath(loaded_path)
        for entry in out_copies:
            entry["loaded_by_soname"] = entry["realpath"] == real
    result = {
        "name": name,
        "path": loaded_path if loadable else None,
        "version": version if loadable else None,
        "loadable": loadable,
        "error": by_soname.get("error"),
        "copies": out_copies,
    }
    if not out_copies and not loadable:
        problems.append(problem("LIBRARY_MISSING", "%s not found anywhere (%s)" % (
            name, by_soname.get("error") or "no copy in the searched directories")))
        return result, problems
    bad = [c for c in out_copies if c["loadable"] is False]
    for c in bad:
        problems.append(problem("LIBRARY_UNLOADABLE", "%s cannot be loaded: %s" % (c["path"], c["error"])))
    if not loadable and len(bad) < len(out_copies):
        dirs = sorted(set(os.path.dirname(c["path"]) for c in out_copies if c["loadable"]))
        problems.append(problem(
            "LIBRARY_NOT_ON_LOADER_PATH",
            "%s is installed in %s but dlopen('%s') fails: %s" % (
                name, ", ".join(dirs), name, by_soname.get("error")),
            "Put %s in /etc/ld.so.conf.d/topsrider.conf and run ldconfig "
            "(role gcu.topsrider.tops_sdk does both: its tops_sdk_ld_conf)." % ", ".join(dirs)))
    if len(out_copies) > 1:
        desc = ", ".join("%s (%s)" % (c["realpath"], c["version"] or "version unknown") for c in out_copies)
        problems.append(problem("LIBRARY_DUPLICATE", "%d copies of %s: %s; the loader picks %s" % (
            len(out_copies), name, desc, loaded_path or "none")))
    return result, problems
