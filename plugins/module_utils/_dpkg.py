# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure helpers around dpkg: control fields, dpkg-query output, Debian version
comparison, dependency expressions and the install plan.

No ansible imports and no side effects, so that the module, its unit tests and
the controller tool (scripts/topsrider-manifest) can all use it. Runs on
Python 3.6+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

DIGITS = "0123456789"
LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

# The dpkg-query format the module uses; parse_dpkg_query() reads it back.
QUERY_FIELDS = ("Package", "Architecture", "Version", "db:Status-Abbrev",
                "Provides", "Depends", "Pre-Depends")
QUERY_FORMAT = "\t".join("${%s}" % f for f in QUERY_FIELDS) + "\n"

# Fields read from every deb with `dpkg-deb --field`.
DEB_FIELDS = ("Package", "Version", "Architecture", "Depends", "Pre-Depends", "Provides")

_UPSTREAM_RE = re.compile(r"^[A-Za-z0-9.+~:-]+$")
_REVISION_RE = re.compile(r"^[A-Za-z0-9.+~]*$")
_RELATION_RE = re.compile(
    r"^(?P<name>[a-z0-9][a-z0-9+.-]*)(?::(?P<arch>[a-z0-9-]+))?\s*"
    r"(?:\(\s*(?P<op><<|<=|>=|>>|=|<|>)\s*(?P<version>[^)\s]+)\s*\))?\s*"
    r"(?:\[[^\]]*\])?\s*(?:<[^>]*>\s*)*$")


class DpkgError(Exception):
    """Bad input to one of these helpers (a version, a relation, a field)."""


# ---------------------------------------------------------------------------
# Debian version comparison (dpkg's lib/dpkg/version.c, in Python)
# ---------------------------------------------------------------------------

def parse_version(text):
    """Split a Debian version into (epoch, upstream, revision), as dpkg does:
    the epoch up to the first colon, the revision after the last hyphen."""
    if not isinstance(text, str) or not text.strip():
        raise DpkgError("empty version")
    text = text.strip()
    if any(c.isspace() for c in text):
        raise DpkgError("invalid Debian version %r: contains white space" % text)
    epoch = 0
    rest = text
    if ":" in text:
        head, rest = text.split(":", 1)
        if not head.isdigit():
            raise DpkgError("invalid Debian version %r: epoch is not a number" % text)
        epoch = int(head)
    upstream, revision = rest, ""
    if "-" in rest:
        upstream, revision = rest.rsplit("-", 1)
        if not revision:
            raise DpkgError("invalid Debian version %r: empty revision" % text)
    if not upstream or not _UPSTREAM_RE.match(upstream) or not _REVISION_RE.match(revision):
        raise DpkgError("invalid Debian version %r" % text)
    return epoch, upstream, revision


def _order(s, i):
    if i >= len(s):
        return 0
    c = s[i]
    if c in DIGITS:
        return 0
    if c in LETTERS:
        return ord(c)
    if c == "~":
        return -1
    return ord(c) + 256


def _verrevcmp(a, b):
    i = j = 0
    while i < len(a) or j < len(b):
        first_diff = 0
        while (i < len(a) and a[i] not in DIGITS) or (j < len(b) and b[j] not in DIGITS):
            ac = _order(a, i)
            bc = _order(b, j)
            if ac != bc:
                return ac - bc
            i += 1
            j += 1
        while i < len(a) and a[i] == "0":
            i += 1
        while j < len(b) and b[j] == "0":
            j += 1
        while i < len(a) and a[i] in DIGITS and j < len(b) and b[j] in DIGITS:
            if not first_diff:
                first_diff = ord(a[i]) - ord(b[j])
            i += 1
            j += 1
        if i < len(a) and a[i] in DIGITS:
            return 1
        if j < len(b) and b[j] in DIGITS:
            return -1
        if first_diff:
            return first_diff
    return 0


def compare_versions(a, b):
    """-1, 0 or 1 as Debian version a sorts before, equal to or after b."""
    ea, ua, ra = parse_version(a)
    eb, ub, rb = parse_version(b)
    if ea != eb:
        return -1 if ea < eb else 1
    r = _verrevcmp(ua, ub) or _verrevcmp(ra, rb)
    return (r > 0) - (r < 0)


def version_satisfies(version, op, wanted):
    """Does installed `version` satisfy the relation `op wanted`?"""
    if op is None:
        return True
    c = compare_versions(version, wanted)
    if op == "=":
        return c == 0
    if op in ("<<",):
        return c < 0
    if op in ("<=", "<"):
        return c <= 0
    if op in (">>",):
        return c > 0
    if op in (">=", ">"):
        return c >= 0
    raise DpkgError("unknown relation operator %r" % op)


def strip_epoch(version):
    """The version as it appears in a .deb file name (no epoch)."""
    return version.split(":", 1)[1] if ":" in version else version


# ---------------------------------------------------------------------------
# Control data
# ---------------------------------------------------------------------------

def parse_control(text):
    """Parse deb822 control text (`dpkg-deb --field DEB` output) into a dict.

    Continuation lines are joined with newlines; field names keep their case.
    """
    fields = {}
    current = None
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break  # only the first paragraph
            continue
        if line[0] in " \t":
            if current is None:
                raise DpkgError("continuation line before any field: %r" % line)
            fields[current] += "\n" + line.strip()
            continue
        if ":" not in line:
            raise DpkgError("not a control field line: %r" % line)
        name, value = line.split(":", 1)
        current = name.strip()
        fields[current] = value.strip()
    return fields


def deb_info(control_text):
    """The fields the bundle needs from one deb's control text, validated."""
    fields = parse_control(control_text)
    missing = [f for f in ("Package", "Version", "Architecture") if not fields.get(f)]
    if missing:
        raise DpkgError("control data lacks %s" % ", ".join(missing))
    parse_version(fields["Version"])
    return {
        "package": fields["Package"],
        "version": fields["Version"],
        "architecture": fields["Architecture"],
        "depends": fields.get("Depends", ""),
        "pre_depends": fields.get("Pre-Depends", ""),
        "provides": fields.get("Provides", ""),
        # What dpkg unpacks, in bytes (the control field is in KiB); None when
        # the deb does not say.
        "installed_size": int(fields["Installed-Size"]) * 1024 if fields.get("Installed-Size", "").isdigit() else None,
    }


def parse_status_abbrev(abbrev):
    """`${db:Status-Abbrev}` ("ii ", "hi ", "rc ", "iF ", ...) -> (want, status, error)."""
    abbrev = (abbrev or "").ljust(3)
    wants = {"u": "unknown", "i": "install", "h": "hold", "r": "deinstall", "p": "purge"}
    states = {"n": "not-installed", "c": "config-files", "H": "half-installed",
              "U": "unpacked", "F": "half-configured", "W": "triggers-awaited",
              "t": "triggers-pending", "i": "installed"}
    return (wants.get(abbrev[0], "unknown"), states.get(abbrev[1], "not-installed"),
            "reinst-required" if abbrev[2] == "R" else "")


def parse_dpkg_query(text):
    """Parse `dpkg-query -W -f=QUERY_FORMAT` output.

    Returns {name: entry}; an entry has version, architecture, want, status,
    error, provides, depends, pre_depends. With several architectures of one
    package the installed one wins, then the first one seen.
    """
    result = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split("\t")
        parts += [""] * (len(QUERY_FIELDS) - len(parts))
        name, arch, version, abbrev, provides, depends, pre = parts[:len(QUERY_FIELDS)]
        want, status, error = parse_status_abbrev(abbrev)
        entry = {"version": version or None, "architecture": arch, "want": want,
                 "status": status, "error": error, "provides": provides,
                 "depends": depends, "pre_depends": pre}
        old = result.get(name)
        if old is None or (old["status"] != "installed" and status == "installed"):
            result[name] = entry
    return result


def installed_version(entry):
    """The version a dpkg-query entry counts as present at, or None when absent.

    Anything that has files on disk (unpacked, half-configured, ...) counts as
    present; only not-installed and config-files count as absent.
    """
    if not entry or entry["status"] in ("not-installed", "config-files"):
        return None
    return entry["version"]


def is_held(entry):
    return bool(entry) and entry.get("want") == "hold"


# ---------------------------------------------------------------------------
# Dependency relations
# ---------------------------------------------------------------------------

def parse_relations(text):
    """'a (>= 1), b | c' -> [[(name, arch, op, version)], [(b...), (c...)]]."""
    groups = []
    for group in (text or "").replace("\n", " ").split(","):
        group = group.strip()
        if not group:
            continue
        alts = []
        for alt in group.split("|"):
            m = _RELATION_RE.match(alt.strip())
            if not m:
                raise DpkgError("invalid dependency %r" % alt.strip())
            op = m.group("op")
            op = {"<": "<=", ">": ">="}.get(op, op)
            alts.append((m.group("name"), m.group("arch"), op, m.group("version")))
        groups.append(alts)
    return groups


def format_relation(alts):
    out = []
    for name, arch, op, version in alts:
        s = name + (":" + arch if arch else "")
        if op:
            s += " (%s %s)" % (op, version)
        out.append(s)
    return " | ".join(out)


def _provided(world):
    """{virtual name: [(provider, version or None)]} from the packages' Provides."""
    provided = {}
    for name, pkg in world.items():
        for alts in parse_relations(pkg.get("provides", "")):
            vname, _arch, op, version = alts[0]
            provided.setdefault(vname, []).append((name, version if op == "=" else None))
    return provided


def relation_satisfied(alts, world, provided=None):
    """Is one dependency group satisfied by `world` ({name: {version, provides}})?"""
    if provided is None:
        provided = _provided(world)
    for name, _arch, op, version in alts:
        pkg = world.get(name)
        if pkg is not None and version_satisfies(pkg["version"], op, version):
            return True
        for _provider, pversion in provided.get(name, []):
            if op is None or (pversion is not None and version_satisfies(pversion, op, version)):
                return True
    return False


def unmet_dependencies(world, check):
    """Dependencies of the packages named in `check` that `world` does not meet.

    `world` is the set of packages present after the change:
    {name: {version, depends, pre_depends, provides}}. Returns a sorted list of
    {"package", "version", "requires"} (requires: the unmet relation as text).
    """
    provided = _provided(world)
    unmet = []
    for name in sorted(check):
        pkg = world.get(name)
        if pkg is None:
            continue
        for field in ("pre_depends", "depends"):
            for alts in parse_relations(pkg.get(field, "")):
                if not relation_satisfied(alts, world, provided):
                    unmet.append({"package": name, "version": pkg["version"],
                                  "requires": format_relation(alts)})
    return unmet


def dependents_of(world, names):
    """Packages in `world` whose dependencies mention any of `names`."""
    names = set(names)
    out = set()
    for pkg_name, pkg in world.items():
        for field in ("pre_depends", "depends"):
            for alts in parse_relations(pkg.get(field, "")):
                if any(a[0] in names for a in alts):
                    out.add(pkg_name)
    return out


def world_after(installed, changes):
    """The present-package world after applying `changes`.

    installed: parse_dpkg_query() output. changes: {name: None (removed) or a
    deb_info() dict (installed at that version)}.
    """
    world = {}
    for name, entry in installed.items():
        version = installed_version(entry)
        if version is not None:
            world[name] = {"version": version, "depends": entry["depends"],
                           "pre_depends": entry["pre_depends"], "provides": entry["provides"]}
    for name, info in changes.items():
        if info is None:
            world.pop(name, None)
        else:
            world[name] = {"version": info["version"], "depends": info.get("depends", ""),
                           "pre_depends": info.get("pre_depends", ""),
                           "provides": info.get("provides", "")}
    return world


def check_transaction(installed, changes):
    """Unmet dependencies after `changes`: of the changed packages themselves
    and of every installed package that depends on one of them."""
    world = world_after(installed, changes)
    check = set(n for n, info in changes.items() if info is not None)
    check |= dependents_of(world, changes.keys())
    return unmet_dependencies(world, check)


def architecture_ok(arch, native, foreign=()):
    return arch == "all" or arch == native or arch in foreign


# ---------------------------------------------------------------------------
# Planning
# ---------------------------------------------------------------------------

def _version_action(before, after):
    if before is None:
        return "install"
    c = compare_versions(after, before)
    if c > 0:
        return "upgrade"
    if c < 0:
        return "downgrade"
    return None


def plan_present(debs, installed, hold):
    """Plan for state=present.

    debs: [deb_info() + {"path"}] for the selected packages. installed:
    parse_dpkg_query() output. hold: True to hold, False to unhold.
    Returns a list of {package, action, before, after} (hold/unhold entries
    carry the version the package ends at in both before and after).
    """
    plan = []
    for deb in sorted(debs, key=lambda d: d["package"]):
        name = deb["package"]
        entry = installed.get(name)
        before = installed_version(entry)
        action = _version_action(before, deb["version"])
        if action is None and entry is not None and entry["status"] != "installed":
            action = "reinstall"  # same version but not fully installed
        if action:
            plan.append({"package": name, "action": action, "before": before,
                         "after": deb["version"]})
        held = is_held(entry)
        if hold and not held:
            plan.append({"package": name, "action": "hold", "before": deb["version"],
                         "after": deb["version"]})
        elif not hold and held:
            plan.append({"package": name, "action": "unhold", "before": deb["version"],
                         "after": deb["version"]})
    return plan


def plan_absent(names, installed):
    """Plan for state=absent: remove every named package that is present."""
    plan = []
    for name in sorted(set(names)):
        before = installed_version(installed.get(name))
        if before is not None:
            plan.append({"package": name, "action": "remove", "before": before, "after": None})
    return plan


def plan_restore(targets, installed):
    """Plan to bring packages back to a snapshot.

    targets: {name: {"version": v or None, "held": bool}}. Returns plan entries
    (install/upgrade/downgrade/remove/reinstall, then hold/unhold).
    """
    plan = []
    for name in sorted(targets):
        target = targets[name]
        entry = installed.get(name)
        before = installed_version(entry)
        want = target.get("version")
        if want is None:
            if before is not None:
                plan.append({"package": name, "action": "remove", "before": before, "after": None})
            continue
        action = _version_action(before, want)
        if action is None and entry is not None and entry["status"] != "installed":
            action = "reinstall"
        if action:
            plan.append({"package": name, "action": action, "before": before, "after": want})
        held = is_held(entry)
        if target.get("held") and not held:
            plan.append({"package": name, "action": "hold", "before": want, "after": want})
        elif not target.get("held") and held:
            plan.append({"package": name, "action": "unhold", "before": want, "after": want})
    return plan


VERSION_ACTIONS = ("install", "upgrade", "downgrade", "reinstall")


def split_plan(plan):
    """(install names, remove names, hold names, unhold names) of a plan."""
    install = [p["package"] for p in plan if p["action"] in VERSION_ACTIONS]
    remove = [p["package"] for p in plan if p["action"] == "remove"]
    hold = [p["package"] for p in plan if p["action"] == "hold"]
    unhold = [p["package"] for p in plan if p["action"] == "unhold"]
    return install, remove, hold, unhold


def audit_problems(stdout):
    """`dpkg --audit` prints nothing when the database is clean."""
    return stdout.strip()
