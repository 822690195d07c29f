# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one rule for environment variables that the collection writes into
shell files or passes to child processes (eccl_env's profile file, dist_launch's
scripts, eccl_probe's children). Pure, no Ansible import, Python 3.6+: used by
the filter gcu.topsrider.env_problems on the controller and by module code on
the node.

Names: ``^[A-Z_][A-Z0-9_]*\\Z``. Values: strings or numbers (not booleans, not
dicts, lists or null) made only of ``[A-Za-z0-9_.,:/=+@%-]``. ``\\Z`` and not
``$``: ``$`` also matches before a trailing newline, and a newline must never
pass. So spaces, quotes, ``$``, backticks, ``; | &``, newlines and NUL are all
refused.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re

from collections.abc import Mapping

ENV_NAME_PATTERN = r"^[A-Z_][A-Z0-9_]*\Z"
ENV_VALUE_PATTERN = r"^[A-Za-z0-9_.,:/=+@%-]*\Z"
ENV_NAME_RE = re.compile(ENV_NAME_PATTERN)
ENV_VALUE_RE = re.compile(ENV_VALUE_PATTERN)

# What the problems say about the rules (the same words in every caller's message).
ENV_RULES = ("Names must match %s (upper-case letters, digits, _); values must be strings or numbers "
             "made only of letters, digits and _ . , : / = + @ %% - (no spaces, quotes, $, backticks, "
             "; | &, newlines or NUL)." % ENV_NAME_PATTERN)


def _type_name(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, Mapping):
        return "dict"
    if isinstance(value, (list, tuple, set, frozenset)):
        return "list"
    return type(value).__name__


def _quoted(value):
    """JSON-quoted text, so a newline shows as \\n and a NUL as \\u0000."""
    return json.dumps(value if isinstance(value, str) else str(value))


def env_name_ok(name):
    return isinstance(name, str) and ENV_NAME_RE.match(name) is not None


def env_value_ok(value):
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return False
    return ENV_VALUE_RE.match(value if isinstance(value, str) else str(value)) is not None


def _origin(name, sources):
    """The label of the last source that sets `name` (sources: label -> mapping, in combine order)."""
    found = None
    if isinstance(sources, Mapping):
        for label, layer in sources.items():
            if isinstance(layer, Mapping) and name in layer:
                found = label
    elif isinstance(sources, str):
        found = sources
    return found


def env_problems(mapping, sources=None):
    """One line per bad name or value of `mapping`, in its order; [] when all is well.

    `sources` (optional) says where the names came from, for the messages:
    either one label for all of them, or a mapping of label -> mapping in the
    order they were combined (the last one that has a name is named).
    """
    if not isinstance(mapping, Mapping):
        return ["the environment is a %s, not a dict of names and values" % _type_name(mapping)]
    problems = []
    for name in mapping:
        value = mapping[name]
        label = _origin(name, sources)
        where = " (from %s)" % label if label else ""
        if not env_name_ok(name):
            problems.append("variable name %s%s is not a valid name" % (_quoted(name), where))
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            problems.append("the value of %s%s is a %s, not a string or number" % (
                _quoted(name), where, _type_name(value)))
        elif not env_value_ok(value):
            problems.append("the value of %s%s, %s, has characters that are not allowed" % (
                _quoted(name), where, _quoted(value)))
    return problems
