# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure helpers of the topsrider_state module: what a node has, as data.

Turns the output of dpkg-query, ldconfig and a metadata-only Python probe into
plain dicts, and describes files; read_python runs the probe (topsrider_state
and torch_gcu_wheel). No ansible imports; runs on Python 3.6+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import grp
import hashlib
import json
import os
import pwd
import re
import stat

from ansible_collections.gcu.topsrider.plugins.module_utils._dpkg import (
    installed_version, is_held, parse_dpkg_query,
)
from ansible_collections.gcu.topsrider.plugins.module_utils._node import C_LOCALE

# A line of `dpkg --verify`: nine attribute characters ("??5??????", or
# "missing" and two spaces), the conffile flag (c or a space), the path.
_VERIFY_LINE = re.compile(r"^(missing  |[^ ]{9}) ([c ]) (/.*)$")

# Files are read whole up to this size so that a report can show a diff;
# larger files are described by their sha256 only.
MAX_CONTENT_BYTES = 64 * 1024

# The collection's own JSON records on a node (a deploy snapshot, a package
# journal, the open-deploy mark) are parsed whole up to this size.
MAX_RECORD_BYTES = 16 * 1024 * 1024

# Run in the training interpreter (python -c, Python 3.6+): versions from
# package metadata, without importing torch or torch_gcu (fast, and works even
# when an import would fail). The collection's one answer to "which Python,
# torch, torch_gcu and pip does this interpreter have", for topsrider_state and
# through it the torch_gcu role. It looks as importlib.metadata does (the
# first *.dist-info or *.egg-info of the normalized name along sys.path, in
# each directory's listing order; its Version), without importing it (a third
# of the probe's time on every read); a name it does not find that way, or a
# sys.path entry that is a file (a zip), goes to importlib.metadata (or on
# Python 3.6 and 3.7 importlib_metadata or pkg_resources) for the answer.
PYTHON_PROBE = r'''
import json, os, re, sys
def norm(n):
    return re.sub(r"[-_.]+", "_", n).lower()
listings = {}
def scan(names):
    # The first metadata of `names` along sys.path: (path, is_dir); None when
    # none is found before a file on sys.path (a zip: importlib.metadata's to read).
    want = set(norm(n) for n in names)
    for entry in sys.path:
        root = entry or "."
        if root not in listings:
            try:
                listings[root] = os.listdir(root) if os.path.isdir(root) else None if os.path.exists(root) else []
            except OSError:
                listings[root] = []
        if listings[root] is None:
            return None
        for child in listings[root]:
            low = child.lower()
            if (low.endswith(".dist-info") or low.endswith(".egg-info")) and \
                    norm(low.rpartition(".")[0].partition("-")[0]) in want:
                path = os.path.join(root, child)
                return path, os.path.isdir(path)
    return None
def read(found, name):
    path, is_dir = found
    try:
        with open(os.path.join(path, name) if is_dir else path, "rb") as f:
            return f.read().decode("utf-8")
    except (IOError, OSError, ValueError):
        return None
def scanned_version(found):
    text = (read(found, "METADATA") or read(found, "PKG-INFO")) if found[1] else read(found, "")
    for line in (text or "").splitlines():
        if not line.strip():
            break
        if line.lower().startswith("version:"):
            return line.split(":", 1)[1].strip()
    return None
def v(names):
    found = scan(names)
    if found is not None:
        return scanned_version(found)
    try:
        from importlib.metadata import version, PackageNotFoundError  # novm (3.8+, guarded)
    except ImportError:
        try:
            from importlib_metadata import version, PackageNotFoundError
        except ImportError:
            version = None
    if version is None:
        import pkg_resources
        for n in names:
            try:
                return pkg_resources.get_distribution(n).version
            except pkg_resources.DistributionNotFound:
                pass
        return None
    for n in names:
        try:
            return version(n)
        except PackageNotFoundError:
            pass
    return None
def url(names):
    # Where pip installed it from, when it was a file or URL (PEP 610's direct_url.json; pip freeze's "@ URL").
    found = scan(names)
    if found is not None:
        text = read(found, "direct_url.json") if found[1] else None
    else:
        try:
            from importlib.metadata import distribution, PackageNotFoundError  # novm (3.8+, guarded)
        except ImportError:
            return None
        text = None
        for n in names:
            try:
                text = distribution(n).read_text("direct_url.json")
                break
            except PackageNotFoundError:
                continue
    try:
        return json.loads(text).get("url") if text else None
    except (ValueError, AttributeError):
        return None
print(json.dumps({"python": "%d.%d" % sys.version_info[:2], "executable": sys.executable,
                  "torch": v(["torch"]), "torch_gcu": v(["torch_gcu", "torch-gcu"]), "pip": v(["pip"]),
                  "torch_gcu_url": url(["torch_gcu", "torch-gcu"])}))
'''


class StateError(Exception):
    pass


def packages_state(names, query_stdout):
    """{name: {version, status, want, held}} for every asked name; a package
    dpkg does not know, or knows only as removed, has version None."""
    known = parse_dpkg_query(query_stdout or "")
    result = {}
    for name in names:
        entry = known.get(name)
        result[name] = {
            "version": installed_version(entry),
            "status": entry["status"] if entry else "not-installed",
            "want": entry["want"] if entry else "unknown",
            "held": is_held(entry),
        }
    return result


def owned_files(listing, library):
    """Paths from `dpkg-query -L PKG` whose name is `library` or `library`.N."""
    found = []
    for line in (listing or "").splitlines():
        path = line.strip()
        base = os.path.basename(path)
        if path.startswith("/") and (base == library or base.startswith(library + ".")) and path not in found:
            found.append(path)
    return found


def parse_dpkg_verify(stdout):
    """The lines of `dpkg --verify` (its rpm format: nine attribute characters,
    the conffile flag, the path) as [{path, problem, conffile, attrs}]:
    problem is missing, changed (the md5 differs from what dpkg installed) or
    differs (an attribute this dpkg checks besides the md5). Other lines (a
    warning) are not files and are left out."""
    out = []
    for line in (stdout or "").splitlines():
        m = _VERIFY_LINE.match(line)
        if not m:
            continue
        attrs, flag, path = m.group(1), m.group(2), m.group(3)
        problem = "missing" if attrs.startswith("missing") else ("changed" if attrs[2] == "5" else "differs")
        out.append({"path": path, "problem": problem, "conffile": flag == "c", "attrs": attrs.strip()})
    return out


def listed_paths(listing):
    """The paths of one `dpkg-query -L NAME` listing (its other lines, such as
    a diversion's, are not paths)."""
    return set(line for line in (listing or "").splitlines() if line.startswith("/"))


def package_files_state(names, problems, listings=None):
    """{name: [problem, ...]} for the verified packages `names`: each problem
    (parse_dpkg_verify) goes to the packages whose listing ({name: paths},
    listed_paths) has its path; with one package, every problem is its own."""
    out = dict((name, []) for name in names)
    for item in problems:
        owners = list(names) if len(names) == 1 else [n for n in names if item["path"] in (listings or {}).get(n, ())]
        for name in owners:
            out[name].append(item)
    return out


def library_state(library, package, resolved, owned, realpath=os.path.realpath):
    """Where the loader resolves `library` (ldconfig cache order) and which
    copies `package` installed, both with their real paths."""
    return {
        "name": library,
        "package": package,
        "resolved": [{"path": p, "realpath": realpath(p)} for p in resolved],
        "owned": [{"path": p, "realpath": realpath(p)} for p in owned],
    }


def parse_python_probe(rc, stdout, stderr):
    """The probe's JSON line, or a StateError naming what went wrong."""
    if rc != 0:
        tail = " | ".join((stderr or stdout or "").strip().splitlines()[-3:])
        raise StateError("the probe exited with rc=%d: %s" % (rc, tail or "no output"))
    for line in reversed((stdout or "").strip().splitlines()):
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and "python" in data:
            return data
    raise StateError("the probe printed no JSON report: %r" % (stdout or "")[:200])


def read_python(module, python):
    """What the interpreter `python` has (PYTHON_PROBE, run with the module's
    run_command): path, python (major.minor), executable, torch, torch_gcu,
    torch_gcu_url (the file or URL pip installed it from, None when it came
    from an index or find-links), pip; error (None, or why the interpreter
    did not answer)."""
    result = {"path": python, "python": None, "executable": None, "torch": None, "torch_gcu": None,
              "torch_gcu_url": None, "pip": None, "error": None}
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        result["error"] = "%s does not exist or is not executable" % python
        return result
    rc, out, err = module.run_command([python, "-c", PYTHON_PROBE], environ_update=dict(C_LOCALE), cwd="/")
    try:
        data = parse_python_probe(rc, out, err)
    except StateError as e:
        result["error"] = "%s: %s" % (python, e)
        return result
    for key in ("python", "executable", "torch", "torch_gcu", "torch_gcu_url", "pip"):
        result[key] = data.get(key)
    return result


# Where the collection's roles install their systemd units (the card_exporter role's).
SYSTEMD_UNIT_DIR = "/etc/systemd/system"


def service_state(deployed, rc=None, out=None, err=None):
    """One unit: deployed (its file is in SYSTEMD_UNIT_DIR), active (what
    `systemctl is-active` printed: active, inactive, failed, activating, ...;
    None when it printed nothing) and error (systemctl's complaint when it
    answered no state, such as a node whose PID 1 is not systemd)."""
    if not deployed:
        return {"deployed": False, "active": None, "error": None}
    words = (out or "").strip().split()
    active = words[0] if words else None
    error = None
    if active is None or (rc not in (0, None) and (err or "").strip()):
        error = " | ".join((err or "").strip().splitlines()[-2:]) or "systemctl printed no state (rc=%s)" % rc
    return {"deployed": True, "active": active, "error": error}


def file_state(path, max_bytes=MAX_CONTENT_BYTES):
    """exists, type, sha256, size, mode ('0644'), owner, group and, for a
    small UTF-8 file, its content."""
    try:
        st = os.lstat(path)
    except OSError:
        return {"exists": False}
    info = {"exists": True, "mode": "%04o" % stat.S_IMODE(st.st_mode), "size": st.st_size,
            "owner": _name(pwd.getpwuid, st.st_uid), "group": _name(grp.getgrgid, st.st_gid),
            "type": "file" if stat.S_ISREG(st.st_mode) else (
                "link" if stat.S_ISLNK(st.st_mode) else "other"),
            "sha256": None, "content": None}
    if info["type"] != "file":
        return info
    digest = hashlib.sha256()
    head = b""
    try:
        with open(path, "rb") as f:
            while True:
                chunk = f.read(1 << 16)
                if not chunk:
                    break
                digest.update(chunk)
                if len(head) <= max_bytes:
                    head += chunk
    except (IOError, OSError) as e:
        info["error"] = "cannot read: %s" % e
        return info
    info["sha256"] = digest.hexdigest()
    if st.st_size <= max_bytes:
        try:
            info["content"] = head.decode("utf-8")
        except UnicodeDecodeError:
            info["content"] = None
    return info


def record_state(path, max_bytes=MAX_RECORD_BYTES):
    """One of the collection's JSON records on the node, read and parsed here:
    exists, value (the JSON object; None when absent or unreadable) and
    problem (None, or why it cannot be used: not a regular file, too large,
    unreadable, not UTF-8, not JSON, not a JSON object), so a caller names the
    file's fault instead of failing on it."""
    try:
        st = os.lstat(path)
    except OSError:
        return {"exists": False, "value": None, "problem": None}
    out = {"exists": True, "value": None, "problem": None}
    if not stat.S_ISREG(st.st_mode):
        out["problem"] = "%s is not a regular file" % path
    elif st.st_size > max_bytes:
        out["problem"] = "%s is %d bytes, more than a record may be (%d)" % (path, st.st_size, max_bytes)
    if out["problem"]:
        return out
    try:
        with open(path, "rb") as f:
            value = json.loads(f.read(max_bytes + 1).decode("utf-8"))
    except (IOError, OSError) as e:
        out["problem"] = "%s cannot be read: %s" % (path, e)
        return out
    except UnicodeDecodeError as e:
        out["problem"] = "%s is not UTF-8 text: %s" % (path, e)
        return out
    except ValueError as e:
        out["problem"] = "%s is not JSON: %s" % (path, e)
        return out
    if not isinstance(value, dict):
        out["problem"] = "%s is not a JSON object" % path
        return out
    out["value"] = value
    return out


def space_state(path):
    """The bytes available under `path` (df's Available column), read on the
    file system of `path` or, when it does not exist yet, of its nearest
    existing parent (`checked`)."""
    where = os.path.abspath(path)
    while not os.path.isdir(where) and where != os.path.dirname(where):
        where = os.path.dirname(where)
    try:
        st = os.statvfs(where)
    except OSError as e:
        return {"path": path, "checked": where, "free": None, "error": "cannot read %s: %s" % (where, e)}
    return {"path": path, "checked": where, "free": st.f_bavail * st.f_frsize, "error": None}


def _name(lookup, ident):
    try:
        return lookup(ident)[0]
    except KeyError:
        return str(ident)


def parse_os_release(text):
    """KEY=value lines of /etc/os-release (values unquoted) as a dict."""
    out = {}
    for line in (text or "").splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key and not key.startswith("#"):
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            out[key] = value
    return out


def os_family(release):
    """'Debian' for Debian and its derivatives (ID or ID_LIKE names debian or ubuntu), as
    ansible_facts.os_family says; otherwise the ID as given, or None."""
    names = [release.get("ID", "")] + release.get("ID_LIKE", "").split()
    if any(n in ("debian", "ubuntu") for n in names):
        return "Debian"
    return release.get("ID") or None


def local_facts(facts_dir):
    """{name: the JSON object of <facts_dir>/<name>.fact}, as ansible_local has them: a file
    that cannot be read or is not a JSON object gives its error as a string. Executable
    facts are not run (the collection writes JSON ones)."""
    out = {}
    try:
        names = sorted(n for n in os.listdir(facts_dir) if n.endswith(".fact"))
    except OSError:
        return out
    for name in names:
        path = os.path.join(facts_dir, name)
        try:
            with open(path, "rb") as f:
                data = json.loads(f.read().decode("utf-8"))
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
        except (IOError, OSError, ValueError) as e:
            data = "error loading fact %s: %s" % (path, e)
        out[name[:-len(".fact")]] = data
    return out


def system_state(facts_dir, os_release="/etc/os-release"):
    """The OS family, distribution and architecture, and the local facts."""
    try:
        with open(os_release, "rb") as f:
            release = parse_os_release(f.read().decode("utf-8", "replace"))
    except (IOError, OSError):
        release = {}
    return {"os_family": os_family(release), "distribution": release.get("ID") or None,
            "distribution_version": release.get("VERSION_ID") or None,
            "architecture": os.uname()[4], "local": local_facts(facts_dir)}
