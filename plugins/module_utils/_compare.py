# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one comparison of a node with the state it should be in (issue 29).

topsrider_state runs it on the node when it is given the desired state (the
deploy's fast path and end-state proof, the drift check); the filters
gcu.topsrider.topsrider_drift_findings and topsrider_deploy_pending call the
same functions on the controller. No Ansible import; Python 3.6+.

A finding is {node, category, check, expected, actual, detail}; categories
are CATEGORIES. The desired state of one node is:
    {manifest: <bundle manifest.json>, hold: bool,
     files: {path: {content, mode, owner, group}},
     python: path, library: {name, package} or None,
     expected_count: int or None, require_healthy: bool, node: name,
     package_files: bool (optional: verify the files of every deb against
     what dpkg installed; the drift check sets it),
     services: [unit name, ...] (optional: each unit whose file the collection
     installed in /etc/systemd/system must be active; the drift check names
     the card_exporter role's service)}
and, for a deploy, where the release is staged and what names it:
    {stage_path, manifest_sha256, facts_file}
A restore's desired state (plugin_utils/_truth.py restore_desired, from a
deploy snapshot) names instead of a release what the snapshot recorded:
    {snapshot: its id, manifest: {files: []}, node, devices: false,
     packages: {name: {version (None: not installed), held}},
     files: {path: {sha256, mode, owner, group} or {absent: true}},
     python, torch_gcu: {version (None: not installed), url (None: not compared)},
     facts: {path, content: the local facts as a mapping, or None: no file}}
The actual state is topsrider_state's `state`, plus optionally `probe`: an
eccl_probe result.

What a training job needs on a node is compared here too (the last part):
the files are the vendor table's ``job_files`` (module_utils/_vendors.py: the
environment file, the loader configuration, the local facts on an Enflame
node). The dist_launch scripts are rendered from ``job_files()`` (the filter
gcu.topsrider.topsrider_job_files) and refuse to start, exit 72, with
``message`` when a file fails ``SHELL_RULE``; topsrider_state's ``job`` read
(playbooks/verify.yml) applies ``usable()``, the same rule in Python, to the
same list and reports the same message, so the launcher and verify cannot
disagree. ``job_problems()`` adds the collective library's identity (where the
loader resolves it, its package's files as dpkg installed them: this
comparison's own library and integrity findings).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import difflib
import hashlib
import json
import os
import re

from ansible_collections.gcu.topsrider.plugins.module_utils._torch_rule import torch_matches
from ansible_collections.gcu.topsrider.plugins.module_utils._vendors import vendor_spec

# revoked: the release the node runs is on the operators' signed revocation
# list (docs/signing.md); drift.yml adds it on the controller, where the list is checked.
# service: a systemd unit the collection installed (the card_exporter role's) is not running.
CATEGORIES = ("package", "integrity", "env", "wheel", "library", "device", "health", "service", "revoked",
              "unreachable")
# The checks every reachable node gets (one JUnit test case each).
CHECKS = ("package", "integrity", "env", "wheel", "library", "device", "health", "service", "revoked")
# A systemd unit name the services check accepts (desired.services).
UNIT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9@_.:-]*\.service\Z")
# How many files of one package the integrity check names (the rest are counted in one more finding).
MAX_NAMED_FILES = 20
# What a deploy's desired state adds to the drift check's.
STAGE_KEYS = ("stage_path", "manifest_sha256", "facts_file")
# What a restore's desired state (a snapshot's) names instead of a release's packages and wheel.
RESTORE_KEYS = ("packages", "torch_gcu", "facts")


class DriftError(ValueError):
    """A desired or actual state that cannot be compared."""


def finding(node, category, check, expected, actual, detail=None):
    if category not in CATEGORIES:
        raise DriftError("unknown category %r" % category)
    return {"node": node, "category": category, "check": check,
            "expected": expected, "actual": actual, "detail": detail}


def _sha(text):
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------- compare --

def _packages(node, desired, actual):
    out = []
    debs = [f for f in desired.get("manifest", {}).get("files", []) if f.get("type") == "deb"]
    have = actual.get("packages") or {}
    for deb in sorted(debs, key=lambda d: d["package"]):
        name = deb["package"]
        entry = have.get(name) or {"version": None, "status": "not-installed", "held": False, "want": "unknown"}
        if entry.get("version") is None:
            out.append(finding(node, "package", name + " version", deb["version"], None,
                               "%s is not installed (dpkg status %s)" % (name, entry.get("status"))))
            continue
        if entry["version"] != deb["version"] or entry.get("status") != "installed":
            shown = entry["version"] if entry.get("status") == "installed" else "%s (%s)" % (
                entry["version"], entry.get("status"))
            out.append(finding(node, "package", name + " version", deb["version"], shown))
        if desired.get("hold", True) and not entry.get("held"):
            out.append(finding(node, "package", name + " hold", "hold", entry.get("want"),
                               "%s is not held: apt or unattended-upgrades may move it" % name))
    return out


def _held_word(held):
    return "held" if held else "not held"


def _package_map(node, desired, actual):
    """desired.packages (a restore's): each package at its version (None: not
    installed) and held or not, exactly."""
    out = []
    have = actual.get("packages") or {}
    for name, want in sorted((desired.get("packages") or {}).items()):
        entry = have.get(name) or {"version": None, "status": "not-installed", "held": False}
        version = want.get("version")
        if entry.get("version") != version:
            out.append(finding(node, "package", name + " version", version or "not installed",
                               entry.get("version") or "not installed"))
        elif version is not None and entry.get("status") != "installed":
            out.append(finding(node, "package", name + " version", version, "%s (%s)" % (version, entry.get("status"))))
        elif version is not None and bool(entry.get("held")) != bool(want.get("held")):
            out.append(finding(node, "package", name + " hold", _held_word(want.get("held")),
                               _held_word(entry.get("held"))))
    return out


def _file_line(name, item):
    what = {"changed": "changed (md5 differs from what dpkg installed)",
            "missing": "missing (dpkg installed it)"}.get(item["problem"], "differs (dpkg --verify %s)" % item.get("attrs"))
    return "%s: %s%s %s" % (name, item["path"], " (conffile)" if item.get("conffile") else "", what)


def reinstall_hint(name, version):
    """How to put a package's files back as dpkg installed them."""
    return ("reinstall %s %s from the release's deb (dpkg -i; a deploy at the same version does not reinstall it)"
            % (name, version or "at its installed version"))


def package_file_findings(node, names, actual, limit=MAX_NAMED_FILES):
    """One `integrity` finding per file of the packages `names` that differs
    from what dpkg installed (topsrider_state's package_files read: changed,
    missing; conffiles too), at most `limit` per package, then one that counts
    the rest; one finding when the files could not be verified."""
    read = actual.get("package_files")
    if read is None:
        return []
    if read.get("error"):
        return [finding(node, "integrity", "package files", "as dpkg installed them", None, read["error"])]
    out = []
    have = actual.get("packages") or {}
    for name in sorted(names):
        changed = (read.get("packages") or {}).get(name) or []
        version = (have.get(name) or {}).get("version")
        for item in changed[:limit]:
            out.append(finding(node, "integrity", "%s %s" % (name, item["path"]), "as dpkg installed it",
                               item["problem"], "%s; %s" % (_file_line(name, item), reinstall_hint(name, version))))
        if len(changed) > limit:
            out.append(finding(node, "integrity", "%s more files" % name, "as dpkg installed them",
                               "%d more changed or missing" % (len(changed) - limit),
                               "%s: %d more file(s) differ from what dpkg installed; %s"
                               % (name, len(changed) - limit, reinstall_hint(name, version))))
    return out


def _package_files(node, desired, actual):
    if not desired.get("package_files"):
        return []
    debs = [f["package"] for f in desired.get("manifest", {}).get("files", []) if f.get("type") == "deb"]
    return package_file_findings(node, debs, actual)


def _files(node, desired, actual):
    out = []
    have = actual.get("files") or {}
    for path in sorted(desired.get("files") or {}):
        want = desired["files"][path]
        got = have.get(path) or {"exists": False}
        content = want.get("content")
        sha = _sha(content) if content is not None else (
            "sha256:" + want["sha256"] if want.get("sha256") else None)
        if want.get("absent"):
            if got.get("exists"):
                out.append(finding(node, "env", path, "absent", "a %s" % got.get("type", "file")))
            continue
        if not got.get("exists"):
            out.append(finding(node, "env", path, sha or "present", "missing"))
            continue
        if got.get("type", "file") != "file":
            out.append(finding(node, "env", path, "a regular file", "a %s" % got.get("type")))
            continue
        if content is None and sha is not None and got.get("sha256") != sha[len("sha256:"):]:
            out.append(finding(node, "env", path, sha, "sha256:%s" % got.get("sha256")))
        elif content is not None and got.get("sha256") != sha[len("sha256:"):]:
            detail = None
            if got.get("content") is not None:
                detail = "".join(difflib.unified_diff(
                    content.splitlines(True), got["content"].splitlines(True),
                    fromfile="expected " + path, tofile="actual " + path, n=0))
            out.append(finding(node, "env", path, _sha(content), "sha256:%s" % got.get("sha256"), detail))
        for key in ("mode", "owner", "group"):
            if want.get(key) is not None and got.get(key) != want[key]:
                out.append(finding(node, "env", "%s %s" % (path, key), want[key], got.get(key)))
    return out


def _url_base(url):
    """A wheel's URL without its fragment (pip freeze adds #sha256=...; direct_url.json keeps it apart)."""
    return url.split("#", 1)[0] if url else url


def _wheel_version(node, want, py):
    """A restore's torch_gcu: the version the snapshot recorded (None: not installed), and where it
    came from when the snapshot recorded that."""
    version = want.get("version") or None
    if py.get("torch_gcu") != version:
        return [finding(node, "wheel", "torch_gcu version", version or "not installed",
                        py.get("torch_gcu") or "not installed", "in %s" % py.get("path"))]
    if version and want.get("url") and _url_base(want["url"]) != _url_base(py.get("torch_gcu_url")):
        return [finding(node, "wheel", "torch_gcu source", want["url"],
                        py.get("torch_gcu_url") or "an index or --find-links")]
    return []


def _wheel(node, desired, actual):
    py = actual.get("python")
    if py is None:
        return []
    if py.get("error"):
        return [finding(node, "wheel", "training python", desired.get("python") or py.get("path"),
                        None, py["error"])]
    if desired.get("torch_gcu") is not None:
        return _wheel_version(node, desired["torch_gcu"], py)
    wheels = [f for f in desired.get("manifest", {}).get("files", [])
              if f.get("type") == "wheel" and f.get("package") in ("torch_gcu", "torch-gcu")]
    wheel = [w for w in wheels if w.get("python") == py.get("python")]
    out = []
    if not wheel:
        have = ", ".join(sorted(w.get("python", "?") for w in wheels))
        out.append(finding(node, "wheel", "torch_gcu wheel for python %s" % py.get("python"),
                           "a wheel in the bundle", None, "the bundle has wheels for Python %s only" % have))
        return out
    wheel = wheel[0]
    if py.get("torch_gcu") != wheel["version"]:
        out.append(finding(node, "wheel", "torch_gcu version", wheel["version"], py.get("torch_gcu"),
                           "in %s" % py.get("path")))
    want_torch = wheel.get("requires_torch")
    # The collection's one torch rule (eccl_probe and torch_gcu_wheel judge the same way).
    if want_torch and torch_matches(py.get("torch"), "==" + want_torch) is not True:
        out.append(finding(node, "wheel", "torch version", want_torch, py.get("torch"), "in %s" % py.get("path")))
    return out


def library_findings(node, desired, actual):
    """Where the loader resolves desired.library: not at all, or (also) a copy its package did not install."""
    lib = actual.get("library")
    if lib is None or not desired.get("library"):
        return []
    name = lib.get("name") or desired["library"].get("name")
    if lib.get("error"):
        return [finding(node, "library", name + " resolves", "resolvable", None, lib["error"])]
    owned = [c["path"] for c in lib.get("owned") or []]
    owned_real = set(c["realpath"] for c in lib.get("owned") or [])
    resolved = lib.get("resolved") or []
    expected = owned or ["a copy from %s" % (lib.get("package") or "its package")]
    if not resolved:
        return [finding(node, "library", name + " resolves", expected, [],
                        "%s is not in the loader cache (ldconfig -p)" % name)]
    foreign = [c["path"] for c in resolved if c["realpath"] not in owned_real]
    if foreign:
        return [finding(node, "library", name + " resolves", expected, [c["path"] for c in resolved],
                        "not from %s: %s" % (lib.get("package") or "the package", ", ".join(foreign)))]
    return []


def _devices(node, desired, actual):
    dev = actual.get("devices")
    if dev is None:
        return []
    if dev.get("error"):
        return [finding(node, "device", "cards visible", desired.get("expected_count") or "efsmi lists the cards",
                        None, dev["error"])]
    out = []
    expected = desired.get("expected_count")
    if expected in (None, ""):
        expected = dev.get("pci_count")
    else:
        # -e topsrider_expected_count=8 arrives as the string "8"
        expected = int(expected)
    if expected is not None and dev.get("count") != expected:
        detail = "the driver sees %s card(s)" % dev.get("count")
        if dev.get("pci_count") is not None:
            detail += ", PCI sees %s" % dev.get("pci_count")
        out.append(finding(node, "device", "card count", expected, dev.get("count"), detail))
    if desired.get("require_healthy", True):
        for card in dev.get("cards") or []:
            if card.get("health") is False:
                out.append(finding(node, "health", "gcu%s health" % card.get("index"), "healthy", "unhealthy",
                                   "GCU %s (%s, serial %s) reports Health: False" % (
                                       card.get("index"), card.get("bus_id"), card.get("serial"))))
    return out


def service_findings(node, actual):
    """A unit the collection installed (its file exists) that is not active: one finding each. A unit
    whose file is absent was never deployed on the node and is not checked."""
    out = []
    for name, svc in sorted((actual.get("services") or {}).items()):
        if not svc.get("deployed") or svc.get("active") == "active":
            continue
        state = svc.get("active") or "unknown"
        detail = "%s is %s" % (name, state)
        if svc.get("error"):
            detail += ": %s" % svc["error"]
        out.append(finding(node, "service", name + " running", "active", state,
                           detail + " (systemctl status %s; the card_exporter role starts it)" % name))
    return out


def _probe_category(code):
    if code.startswith("LIBRARY"):
        return "library"
    if code == "NO_DEVICES":
        return "device"
    return "wheel"


def probe_findings(node, probe):
    """The findings of one eccl_probe result (none for a skipped probe)."""
    if not probe or probe.get("skipped"):
        return []
    out = []
    for p in probe.get("problems") or []:
        code = p.get("code", "PROBE_FAILED")
        out.append(finding(node, _probe_category(code), "eccl_probe " + code, "no problem",
                           p.get("message") or code, p.get("hint")))
    return out


def sorted_findings(found):
    """Findings in report order: by category, then check."""
    order = dict((c, i) for i, c in enumerate(CATEGORIES))
    return sorted(found, key=lambda f: (order[f["category"]], f["check"]))


def _facts_words(facts):
    if facts is None:
        return "none"
    if not isinstance(facts, dict):
        return "not a JSON object"
    return "version %s (snapshot %s)" % (facts.get("version"), facts.get("snapshot"))


def _facts(node, desired, actual):
    """A restore's local facts: the mapping the snapshot recorded, or no file (None)."""
    want = desired.get("facts")
    if not want:
        return []
    got = (actual.get("files") or {}).get(want["path"]) or {"exists": False}
    # A file that should not be there, or is not: the files' own finding names it.
    if want.get("content") is None or not got.get("exists"):
        return []
    try:
        have = json.loads(got.get("content") or "")
    except ValueError:
        have = "unreadable"
    if have == want["content"]:
        return []
    return [finding(node, "env", "local facts " + want["path"], _facts_words(want["content"]), _facts_words(have))]


def node_findings(node, desired, actual):
    """Every difference between the desired and the actual state of one node."""
    if not isinstance(actual, dict):
        raise DriftError("actual state of %s is not a dict" % node)
    found = (_packages(node, desired, actual) + _package_map(node, desired, actual)
             + _package_files(node, desired, actual) + _files(node, desired, actual) + _facts(node, desired, actual)
             + _wheel(node, desired, actual) + library_findings(node, desired, actual) + _devices(node, desired, actual)
             + service_findings(node, actual) + probe_findings(node, actual.get("probe")))
    return sorted_findings(found)


def _short_value(value, width=24):
    text = "none" if value is None else str(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def finding_reason(f, width=24):
    """One line for a finding: category, check, expected and found (each cut to `width` characters)."""
    return "%s %s: expected %s, found %s" % (f["category"], f["check"], _short_value(f["expected"], width),
                                             _short_value(f["actual"], width))


def deploy_pending_reasons(findings, files, manifest, manifest_sha256, stage_path, facts_path):
    """Why deploying this manifest could still change this node; [] when it
    would change nothing (deploy.yml's fast path). `findings` are
    node_findings() for the release, `files` is topsrider_state's `files`
    (it must cover facts_path and every staged file). Besides the drift
    findings, a deploy also keeps the staged bundle (root-only copies of
    every manifest file and the manifest itself) and the local facts that
    name the deployed manifest."""
    reasons = [finding_reason(f) for f in findings]
    facts = (files or {}).get(facts_path) or {}
    recorded = None
    if facts.get("exists") and facts.get("content") is not None:
        try:
            recorded = json.loads(facts["content"]).get("manifest_sha256")
        except (ValueError, AttributeError):
            recorded = None
    if recorded != manifest_sha256:
        reasons.append("local facts %s do not record this manifest" % facts_path)
    wanted = [(f["file"], f["sha256"]) for f in (manifest or {}).get("files", [])]
    wanted.append(("manifest.json", manifest_sha256))
    for name, sha in wanted:
        path = "%s/%s" % (stage_path.rstrip("/"), name)
        got = (files or {}).get(path) or {}
        if not got.get("exists"):
            reasons.append("staged bundle: %s is missing" % path)
        elif got.get("sha256") != sha:
            reasons.append("staged bundle: %s differs from the manifest" % path)
        elif (got.get("mode"), got.get("owner"), got.get("group")) != ("0600", "root", "root"):
            reasons.append("staged bundle: %s is %s %s:%s, not 0600 root:root" % (
                path, got.get("mode"), got.get("owner"), got.get("group")))
    return reasons


# ------------------------------------------------------------ the one call --

def _is_abs_path(value):
    return isinstance(value, str) and value.startswith("/") and "\n" not in value and "\x00" not in value


def desired_problems(desired):
    """What makes `desired` unusable (a list of messages; [] when it is
    fine), checked before anything is read."""
    if not isinstance(desired, dict):
        return ["desired is a mapping (playbooks/vars/desired_state.yml's desired_state), got %s"
                % type(desired).__name__]
    out = []
    manifest = desired.get("manifest")
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), list):
        out.append("desired.manifest is a bundle manifest (a mapping with a files list)")
    else:
        for f in manifest["files"]:
            if not isinstance(f, dict) or not isinstance(f.get("file", ""), str):
                out.append("desired.manifest.files holds mappings with a file name, got %r" % (f,))
                break
            if f.get("type") == "deb" and not f.get("package"):
                out.append("desired.manifest.files: the deb %s names no package" % f.get("file"))
    files = desired.get("files") or {}
    if not isinstance(files, dict):
        out.append("desired.files maps absolute paths to {content, mode, owner, group}")
    else:
        out.extend("desired.files: %r is not an absolute path" % p for p in files if not _is_abs_path(p))
    lib = desired.get("library")
    if lib and (not isinstance(lib, dict) or not lib.get("name") or "/" in str(lib.get("name"))):
        out.append("desired.library is {name: a file name such as libeccl.so, package: its Debian package}")
    if desired.get("package_files") not in (None, True, False):
        out.append("desired.package_files is true or false, got %r" % (desired.get("package_files"),))
    services = desired.get("services")
    if services is not None and (not isinstance(services, list)
                                 or not all(isinstance(u, str) and UNIT_NAME.match(u) for u in services)):
        out.append("desired.services is a list of systemd unit names (name.service), got %r" % (services,))
    if desired.get("python") is not None and not _is_abs_path(desired.get("python")):
        out.append("desired.python is the training interpreter's absolute path, got %r" % desired.get("python"))
    if desired.get("devices") not in (None, True, False):
        out.append("desired.devices is true or false, got %r" % (desired.get("devices"),))
    if desired.get("snapshot") not in (None, ""):
        out.extend(restore_problems(desired))
    given = [k for k in STAGE_KEYS if desired.get(k) not in (None, "")]
    if given and len(given) != len(STAGE_KEYS):
        out.append("desired: %s go together (a deploy's staged bundle), got only %s"
                   % (", ".join(STAGE_KEYS), ", ".join(given)))
    for key in ("stage_path", "facts_file"):
        if desired.get(key) not in (None, "") and not _is_abs_path(desired[key]):
            out.append("desired.%s is an absolute path, got %r" % (key, desired[key]))
    return out


def restore_problems(desired):
    """What makes a restore's desired state (desired.snapshot given) unusable."""
    out = []
    packages = desired.get("packages")
    if not isinstance(packages, dict) or not all(
            isinstance(v, dict) and isinstance(v.get("version"), (str, type(None))) for v in packages.values()):
        out.append("desired.packages maps package names to {version (null: not installed), held}")
    wheel = desired.get("torch_gcu")
    if not isinstance(wheel, dict) or not desired.get("python"):
        out.append("desired.torch_gcu is {version, url} in desired.python (a restore's training Python)")
    facts = desired.get("facts")
    if not isinstance(facts, dict) or not _is_abs_path(facts.get("path")) or not isinstance(
            facts.get("content"), (dict, type(None))):
        out.append("desired.facts is {path: the local facts file, content: a mapping or null}")
    if any(desired.get(k) not in (None, "") for k in STAGE_KEYS):
        out.append("desired: a restore (snapshot) names no staged release (%s)" % ", ".join(STAGE_KEYS))
    return out


def is_restore(desired):
    """Does `desired` name a deploy snapshot (a restore's proof)?"""
    return desired.get("snapshot") not in (None, "")


def restore_reasons(findings):
    """A restore's differences, one line each: the finding, and its detail when that is one line."""
    return [finding_reason(f, 80) + (" (%s)" % f["detail"] if f.get("detail") and "\n" not in f["detail"] else "")
            for f in findings]


def is_deploy(desired):
    """Does `desired` name a staged release (a deploy's comparison)?"""
    return all(desired.get(k) not in (None, "") for k in STAGE_KEYS)


def desired_reads(desired):
    """What topsrider_state reads to compare a node with `desired`:
    {packages, package_files, files, python, library, library_package,
    devices, services}. A deploy's desired state adds the local facts and every staged
    file; package_files (the debs whose files are verified) only when
    desired.package_files is true; a restore's its packages and its local
    facts; the cards unless desired.devices is false."""
    manifest = desired.get("manifest") or {}
    packages = [f["package"] for f in manifest.get("files") or [] if f.get("type") == "deb"]
    packages += [name for name in sorted(desired.get("packages") or {}) if name not in packages]
    files = list(desired.get("files") or {})
    facts = (desired.get("facts") or {}).get("path")
    if facts and facts not in files:
        files.append(facts)
    if is_deploy(desired):
        stage = desired["stage_path"].rstrip("/")
        files += [desired["facts_file"]]
        files += ["%s/%s" % (stage, f["file"]) for f in manifest.get("files") or []]
        files += [stage + "/manifest.json"]
    lib = desired.get("library") or {}
    return {"packages": packages, "package_files": packages if desired.get("package_files") else [],
            "files": files, "python": desired.get("python"),
            "library": lib.get("name"), "library_package": lib.get("package"),
            "devices": desired.get("devices") is not False,
            "services": list(desired.get("services") or [])}


def compare(desired, state):
    """The comparison topsrider_state returns: {findings, pending}; pending
    (why a deploy of the release would still change the node; for a
    restore's desired state, what differs from the snapshot) only for a
    deploy's or a restore's desired state, else None."""
    node = desired.get("node") or "this node"
    found = node_findings(node, desired, state)
    pending = restore_reasons(found) if is_restore(desired) else None
    if is_deploy(desired):
        pending = deploy_pending_reasons(found, state.get("files"), desired.get("manifest"),
                                         desired["manifest_sha256"], desired["stage_path"], desired["facts_file"])
    return {"findings": found, "pending": pending}


# ------------------------------------------------------- what a job needs --

# The launcher's test of one file ("$f"): a regular file (after links) that it can read.
SHELL_RULE = '[ -f "$f" ] && [ -r "$f" ]'
REMEDY = "run playbooks/deploy.yml"


def missing_message(entry):
    """The launcher's exit-72 message, and verify's, for a job file that fails the rule."""
    return "%s is missing or unreadable: %s is not deployed (%s; %s writes it)" % (
        entry["path"], entry["what"], REMEDY, entry["writer"])


def job_files(vendor, env_file=None):
    """The files a job on a `vendor` node needs, in the order the launcher
    checks them, each {path, what, writer, env_file (true for the environment
    file), message, test (SHELL_RULE: the launcher's test of "$f")}. `env_file` (the
    dist_launch_env_file setting) replaces the environment file's path; ''
    drops it (nothing is sourced); None keeps the table's."""
    row = vendor_spec(vendor)
    out = []
    for entry in row["job_files"]:
        entry = dict(entry, env_file=entry["path"] == row["env_file"])
        if entry["env_file"] and env_file is not None:
            if env_file == "":
                continue
            entry["path"] = env_file
        entry["message"] = missing_message(entry)
        entry["test"] = SHELL_RULE
        out.append(entry)
    return out


def usable(path):
    """SHELL_RULE in Python: a regular file (after links) this process can read."""
    return os.path.isfile(path) and os.access(path, os.R_OK)


def file_problems(entries, check=None):
    """[{check, path, message}] for every entry that fails the rule (`check`, default usable)."""
    check = check or usable
    return [{"check": entry["path"], "path": entry["path"], "message": entry["message"]}
            for entry in entries if not check(entry["path"])]


def identity_problems(state):
    """The collective library's identity, from topsrider_state's `library` and
    `package_files` reads: the drift check's own findings (where the loader
    resolves it; its package's files as dpkg installed them), as messages."""
    library = state.get("library")
    if library is None:
        return []
    found = library_findings("this node", {"library": {"name": library.get("name")}}, state)
    found += package_file_findings("this node", [library.get("package")] if library.get("package") else [], state)
    return [{"check": f["check"], "path": None,
             "message": f["detail"] if f["category"] == "integrity" else "%s: %s" % (f["check"], f["detail"])}
            for f in found]


def job_problems(vendor, state, env_file=None, check=None):
    """Everything verify reports for a job on this node: the launcher's files
    (the same list, rule and message), then the library's identity."""
    return file_problems(job_files(vendor, env_file), check) + identity_problems(state)
