# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one torch rule: does an installed torch satisfy what a torch_gcu wheel
requires (its Requires-Dist), and which TopsRider release a torch_gcu
version was built for. eccl_probe's framework level, torch_gcu_wheel and
drift judge torch with it. Pure; Python 3.6+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re


def release_of(version):
    """'2.13.0+cpu' -> '2.13.0': a version without its local label."""
    return str(version or "").split("+", 1)[0].strip()


def torch_requirement(requires):
    """The torch requirement spec in Requires-Dist lines ('==2.13.0'), or None."""
    for line in requires or []:
        spec = line.split(";", 1)[0].strip()
        m = re.match(r"^torch(?![\w.-])\s*\(?\s*([^)]*)\)?\s*$", spec, re.IGNORECASE)
        if m:
            return m.group(1).replace(" ", "") or None
    return None


def torch_matches(installed, spec):
    """Does torch `installed` (e.g. '2.13.0+cpu') satisfy `spec`? None when unknown."""
    if not installed or not spec:
        return None
    have = release_of(installed)
    clauses = [c for c in spec.split(",") if c]
    for clause in clauses:
        m = re.match(r"^(===|==|!=|>=|<=|~=|>|<)?(.+)$", clause)
        op, want = m.group(1) or "==", m.group(2)
        if want.endswith(".*"):
            prefix = want[:-2]
            hit = have == prefix or have.startswith(prefix + ".")
            if (op == "==" and not hit) or (op == "!=" and hit):
                return False
            continue
        want = release_of(want)
        have_t, want_t = _vtuple(have), _vtuple(want)
        if op in ("==", "===", "!="):
            # A pre-release is not its release (1.7.0a0 != 1.7.0), as deploy's preflight and drift judge it.
            same = have_t == want_t and _prerelease_of(have) == _prerelease_of(want)
            if same != (op != "!="):
                return False
            continue
        if op == "~=":
            parts = _vtuple(want, strip=False)
            ok = have_t >= want_t and _vtuple(have, strip=False)[:len(parts) - 1] == parts[:-1]
        else:
            ok = {">=": have_t >= want_t, "<=": have_t <= want_t, ">": have_t > want_t, "<": have_t < want_t}[op]
        if not ok:
            return False
    return True


def _prerelease_of(version):
    """'1.7.0a0' -> 'a0', '2.1.0.dev1' -> '.dev1', '2.13.0' -> ''."""
    return re.sub(r"^[0-9.]*[0-9]", "", version)


def _vtuple(version, strip=True):
    out = []
    for part in version.split("."):
        m = re.match(r"^(\d+)", part)
        out.append(int(m.group(1)) if m else 0)
    while strip and len(out) > 1 and out[-1] == 0:
        out.pop()
    return tuple(out)


def stack_of(torch_gcu_version):
    """'2.13.0+2.5.136' -> '2.5.136' (the TopsRider release a torch_gcu wheel was built for), or None."""
    parts = str(torch_gcu_version or "").split("+", 1)
    return parts[1].strip() if len(parts) == 2 and parts[1].strip() else None
