# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's one rule for values that become node paths, file names,
directory names, ids or lines: an operator's setting, a run id, a file name
in a manifest. Node side and controller side read the same rule (the
manifest checks on the node, the topsrider_value_problems and
topsrider_run_id filters on the controller). Pure; Python 3.6+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re
import time

# A plain name (a release version, a run or snapshot id, a file name): starts
# with a letter or digit, then letters, digits and . _ + ~ -. \Z, not $: $
# also matches before a trailing newline ("2.5.140\n" must not pass).
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._+~-]{0,127}\Z"
NAME_RE = re.compile(NAME_PATTERN)
# One component of a node path.
PATH_PART_RE = re.compile(r"^[A-Za-z0-9_.+~@-]+\Z")

VALUE_RULES = {
    "name": "a plain name: a letter or digit, then letters, digits and . _ + ~ - (at most 128; "
            "no /, no '..', no spaces, no newline)",
    "path": "an absolute node path whose parts are letters, digits and _ . + ~ @ - "
            "(no '.' or '..' parts, no empty parts, no spaces, no newline)",
    "line": "one line of printable text (no newline, carriage return, tab or other control character)",
}


def _describe(value):
    return json.dumps(value) if isinstance(value, str) else "%r (%s)" % (value, type(value).__name__)


def value_problem(value, kind):
    """None when `value` follows the rule of `kind` (name | path | line), else
    what is wrong, in a few words."""
    if kind not in VALUE_RULES:
        raise ValueError("unknown kind %r" % (kind,))
    if not isinstance(value, str) or isinstance(value, bool):
        return "is %s, not a string" % _describe(value)
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        return "has a newline or another control character"
    if kind == "line":
        return None
    if kind == "name":
        if value in (".", "..") or not NAME_RE.match(value):
            return "is not %s" % VALUE_RULES["name"]
        return None
    if not value.startswith("/"):
        return "is not absolute"
    parts = value[1:].split("/")
    if value != "/" and any(p == "" for p in parts):
        return "has an empty part (// or a trailing /)"
    for p in parts if value != "/" else []:
        if p in (".", ".."):
            return "has a %r part" % p
        if not PATH_PART_RE.match(p):
            return "is not %s" % VALUE_RULES["path"]
    return None


def value_problems(values, kind):
    """One line per value of the mapping {label: value} that breaks the rule
    of `kind`, in the mapping's order."""
    out = []
    for label, value in (values or {}).items():
        problem = value_problem(value, kind)
        if problem:
            out.append("%s %s %s" % (label, _describe(value), problem))
    return out


# The id of a run when the operator gives none: the UTC time it started.
RUN_ID_FORMAT = "%Y%m%dT%H%M%SZ"


def run_id(value, now=None):
    """The id of a run (deploy, verify, rollback, drift, fabric): the operator's
    `value` (topsrider_deploy_id, topsrider_drift_id, topsrider_fabric_id),
    which names report and snapshot files and so follows the name rule, or,
    for '' or None, the UTC time `now` (default: this moment) as 20261125T213000Z."""
    if value is None or value == "":
        return time.strftime(RUN_ID_FORMAT, time.gmtime(time.time() if now is None else float(now)))
    problem = value_problem(value, "name")
    if problem:
        raise ValueError("the run id %s %s" % (_describe(value), problem))
    return value
