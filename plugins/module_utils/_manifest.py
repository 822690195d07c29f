# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The TopsRider bundle manifest (docs/manifest.md): load, validate, verify.

Pure Python, no ansible imports: the deb_bundle module uses it on the node and
scripts/topsrider-manifest imports it by path on the controller. Python 3.6+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib
import json
import os
import re

from ansible_collections.gcu.topsrider.plugins.module_utils._pep440 import packaging_source, satisfies
from ansible_collections.gcu.topsrider.plugins.module_utils._torch_rule import torch_requirement
from ansible_collections.gcu.topsrider.plugins.module_utils._values import value_problem

FORMAT = 1
MANIFEST_NAME = "manifest.json"
FILE_TYPES = ("deb", "wheel", "other")
# \Z, not $: $ lets a trailing newline through.
SHA256_RE = re.compile(r"^[0-9a-f]{64}\Z")
_PYTHON_RE = re.compile(r"^3\.\d+$")
REQUIRED_KEYS = {
    "deb": ("package", "version", "architecture"),
    "wheel": ("package", "version", "python", "requires_torch"),
    "other": (),
}


class ManifestError(Exception):
    """The manifest is unreadable or does not follow the format."""


def load(path):
    """Read and validate a manifest file; returns the manifest dict."""
    try:
        with open(path, "r") as f:
            data = json.load(f)
    except (IOError, OSError) as e:
        raise ManifestError("cannot read manifest %s: %s" % (path, e))
    except ValueError as e:
        raise ManifestError("manifest %s is not valid JSON: %s" % (path, e))
    return validate(data)


def file_problems(entry, seen):
    """What is wrong with one entry of a manifest's file list ([] when nothing):
    its name (the collection's name rule, _values: a plain file name), sha256
    and size. seen: the names before it (a name listed twice is a problem);
    this entry's name is added. validate() and bundle_fetch share it."""
    problems = []
    name = entry.get("file")
    problem = value_problem(name, "name")
    if problem:
        problems.append("file %s %s" % (json.dumps(name) if isinstance(name, str) else repr(name), problem))
    else:
        if name in seen:
            problems.append("listed twice")
        seen.add(name)
    if not isinstance(entry.get("sha256"), str) or not SHA256_RE.match(entry["sha256"]):
        problems.append("sha256 must be 64 lower-case hex digits")
    size = entry.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        problems.append("size must be a non-negative integer (bytes)")
    return problems


def validate(data):
    """Check a manifest dict against format 1; returns it or raises ManifestError
    listing every problem found."""
    problems = []
    if not isinstance(data, dict):
        raise ManifestError("manifest must be a JSON object")
    if data.get("format") != FORMAT:
        problems.append("format must be %d (got %r)" % (FORMAT, data.get("format")))
    for key in ("product", "version"):
        if not isinstance(data.get(key), str) or not data.get(key):
            problems.append("%s must be a non-empty string" % key)
    if "origin" in data:
        problems.extend(_origin_problems(data["origin"]))
    files = data.get("files")
    if not isinstance(files, list) or not files:
        problems.append("files must be a non-empty list")
        files = []
    seen_files = set()
    seen_debs = set()
    for i, entry in enumerate(files):
        where = "files[%d]" % i
        if not isinstance(entry, dict):
            problems.append("%s must be an object" % where)
            continue
        name = entry.get("file")
        if value_problem(name, "name") is None:
            where = "%s (%s)" % (where, name)
        problems.extend("%s: %s" % (where, p) for p in file_problems(entry, seen_files))
        if "installed_size" in entry:
            unpacked = entry["installed_size"]
            if not isinstance(unpacked, int) or isinstance(unpacked, bool) or unpacked < 0:
                problems.append("%s: installed_size must be a non-negative integer (bytes)" % where)
        ftype = entry.get("type")
        if ftype not in FILE_TYPES:
            problems.append("%s: type must be one of %s (got %r)" % (where, ", ".join(FILE_TYPES), ftype))
            continue
        for key in REQUIRED_KEYS[ftype]:
            if not isinstance(entry.get(key), str) or not entry.get(key):
                problems.append("%s: %s entries need a non-empty %s" % (where, ftype, key))
        if ftype == "wheel" and isinstance(entry.get("python"), str) \
                and not _PYTHON_RE.match(entry["python"]):
            problems.append("%s: python must look like 3.11 (got %r)" % (where, entry["python"]))
        if ftype == "deb" and isinstance(entry.get("package"), str):
            if entry["package"] in seen_debs:
                problems.append("%s: package %s has two debs" % (where, entry["package"]))
            seen_debs.add(entry["package"])
    if problems:
        raise ManifestError("invalid manifest: " + "; ".join(problems))
    return data


def _origin_problems(origin):
    """The optional origin: the installer the files were extracted from,
    {"type": "makeself", "file": plain name, "sha256": 64 hex, "size": bytes}."""
    if not isinstance(origin, dict):
        return ["origin must be an object"]
    problems = []
    if origin.get("type") != "makeself":
        problems.append("origin: type must be makeself (got %r)" % origin.get("type"))
    name = origin.get("file")
    if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
        problems.append("origin: file must be a plain file name (got %r)" % name)
    if not isinstance(origin.get("sha256"), str) or not SHA256_RE.match(origin["sha256"]):
        problems.append("origin: sha256 must be 64 lower-case hex digits")
    size = origin.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        problems.append("origin: size must be a non-negative integer")
    return problems


def entries(manifest, ftype=None):
    return [e for e in manifest["files"] if ftype is None or e["type"] == ftype]


def sha256_file(path, bufsize=1 << 20):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            chunk = f.read(bufsize)
            if not chunk:
                break
            h.update(chunk)
    return h.hexdigest()


def verify(directory, manifest, names=None):
    """Check the files of `manifest` in `directory`.

    Returns a list of problems, empty when every file is there with the right
    size and sha256: {"file", "problem": missing|not a regular file|size
    mismatch|sha256 mismatch, "expected", "actual"}. `names` limits the check
    to those file names.
    """
    problems = []
    for entry in manifest["files"]:
        if names is not None and entry["file"] not in names:
            continue
        path = os.path.join(directory, entry["file"])
        if not os.path.lexists(path):
            problems.append({"file": entry["file"], "problem": "missing",
                             "expected": entry["sha256"], "actual": None})
            continue
        if not os.path.isfile(path):
            problems.append({"file": entry["file"], "problem": "not a regular file",
                             "expected": entry["sha256"], "actual": None})
            continue
        size = os.path.getsize(path)
        if size != entry["size"]:
            problems.append({"file": entry["file"], "problem": "size mismatch",
                             "expected": entry["size"], "actual": size})
            continue
        digest = sha256_file(path)
        if digest != entry["sha256"]:
            problems.append({"file": entry["file"], "problem": "sha256 mismatch",
                             "expected": entry["sha256"], "actual": digest})
    return problems


def describe_problems(problems):
    """One line per problem, for messages."""
    out = []
    for p in problems:
        if p["problem"] in ("missing", "not a regular file"):
            out.append("%s: %s" % (p["file"], p["problem"]))
        else:
            out.append("%s: %s (manifest %s, file %s)"
                       % (p["file"], p["problem"], p["expected"], p["actual"]))
    return out


def unlisted_files(directory, manifest):
    """Files in `directory` that the manifest does not list (manifest itself excepted)."""
    listed = set(e["file"] for e in manifest["files"])
    listed.add(MANIFEST_NAME)
    return sorted(f for f in os.listdir(directory)
                  if f not in listed and os.path.isfile(os.path.join(directory, f)))


# ---------------------------------------------------------------------------
# Building a manifest (scripts/topsrider-manifest create)
# ---------------------------------------------------------------------------

def parse_wheel_metadata(text):
    """Name, Version, Requires-Python and Requires-Dist from a wheel's METADATA."""
    meta = {"requires_dist": []}
    for line in text.splitlines():
        if not line.strip():
            break  # the body (long description) starts here
        if ":" not in line or line[0] in " \t":
            continue
        key, value = line.split(":", 1)
        key = key.strip().lower()
        value = value.strip()
        if key == "name":
            meta["name"] = value
        elif key == "version":
            meta["version"] = value
        elif key == "requires-python":
            meta["requires_python"] = value
        elif key == "requires-dist":
            meta["requires_dist"].append(value)
    return meta


def python_from_wheel(filename, requires_python=None):
    """The Python minor version a wheel is for ("3.11"): the one 3.x whose releases Requires-Python
    admits (==3.11.*, ~=3.11.0, >=3.11,<3.12; packaging decides), else the file name tag (py311, py3.11,
    cp311)."""
    if requires_python:
        minors = [m for m in range(100) if any(satisfies("3.%d.%d" % (m, patch), requires_python)
                                               for patch in (0, 9999))]
        if len(minors) == 1:
            return "3.%d" % minors[0]
    parts = filename[:-len(".whl")].split("-") if filename.endswith(".whl") else []
    if len(parts) >= 5:
        for tag in parts[-3].split("."):
            m = re.match(r"^(?:py|cp)3\.?(\d+)$", tag)
            if m:
                return "3." + m.group(1)
        m = re.match(r"^(?:py|cp)3\.(\d+)$", parts[-3])
        if m:
            return "3." + m.group(1)
    return None


def requires_torch(requires_dist):
    """The exact torch version a wheel requires (torch==X or torch (==X), as the torch rule reads
    Requires-Dist), or None when it names a range or no torch."""
    spec = torch_requirement(requires_dist)
    clauses = list(packaging_source()[0](spec)) if spec else []
    if len(clauses) == 1 and clauses[0].operator == "==" and not clauses[0].version.endswith(".*"):
        return clauses[0].version
    return None


def make_manifest(version, entries_, product="TopsRider", origin=None):
    """A validated manifest dict from file entries, sorted by file name;
    `origin` (optional) names the .run installer they came from."""
    data = {"format": FORMAT, "product": product, "version": version,
            "files": sorted(entries_, key=lambda e: e["file"])}
    if origin is not None:
        data["origin"] = origin
    return validate(data)


def dumps(manifest):
    return json.dumps(manifest, indent=2, sort_keys=True) + "\n"
