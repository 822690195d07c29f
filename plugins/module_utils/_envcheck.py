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

Guarded names (GUARDED_NAMES, GUARDED_PREFIXES): a well-formed name that the
loader, the shell, glibc or an interpreter acts on (LD_PRELOAD, PATH,
BASH_ENV, ...) is refused unless the caller's allow list names it. A written
profile file is read by every login shell of the node, so such a name changes
what every program loads or runs. Allowed search paths (SEARCH_PATHS: PATH,
LD_LIBRARY_PATH, PYTHONPATH, ...) are extended, never replaced:
export_line() appends the value to the value the shell already has, and each
entry must be an absolute path (an empty or relative entry would put the
current directory on the search path).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re
import shlex

from collections.abc import Mapping

from ansible_collections.gcu.topsrider.plugins.module_utils._values import value_problem

ENV_NAME_PATTERN = r"^[A-Z_][A-Z0-9_]*\Z"
ENV_VALUE_PATTERN = r"^[A-Za-z0-9_.,:/=+@%-]*\Z"
ENV_NAME_RE = re.compile(ENV_NAME_PATTERN)
ENV_VALUE_RE = re.compile(ENV_VALUE_PATTERN)

# What the problems say about the rules (the same words in every caller's
# message): each rule once, and only where a name or value breaks it
# (broken_rules).
NAME_RULE = "Names must match %s (upper-case letters, digits, _)." % ENV_NAME_PATTERN
VALUE_RULE = ("Values must be strings or numbers made only of letters, digits and _ . , : / = + @ % - (no spaces, "
              "quotes, $, backticks, ; | &, newlines or NUL).")


# Search paths: lists of directories a program searches in order. Allowed,
# they are written as an extension of the value the shell has (appended:
# the node's own entries stay first, so nothing the node had is shadowed).
SEARCH_PATHS = {
    "PATH": "the shell's search path for commands",
    "LD_LIBRARY_PATH": "the loader's search path for shared libraries, before the system's",
    "PYTHONPATH": "Python's search path for modules, before site-packages",
    "PERL5LIB": "Perl's search path for modules",
    "NODE_PATH": "Node.js's search path for modules",
}
# Names the loader, the shell, glibc or an interpreter act on: setting one in
# every login shell changes what every program loads or runs. The glibc part
# is glibc's own list of variables it drops for setuid programs
# (UNSECURE_ENVVARS, sysdeps/generic/unsecvars.h), less the LD_ ones that
# GUARDED_PREFIXES covers.
GUARDED_NAMES = {
    # the shell
    "BASH_ENV": "a file every non-interactive bash runs",
    "ENV": "a file every interactive POSIX shell runs",
    "PROMPT_COMMAND": "a command bash runs before every prompt",
    "PS0": "text bash expands before every command",
    "PS4": "text bash expands on every traced line",
    "IFS": "how every shell splits words",
    "SHELLOPTS": "options (errexit, xtrace, ...) of every bash",
    "BASHOPTS": "shopt options of every bash",
    "GLOBIGNORE": "which files every bash glob leaves out",
    "CDPATH": "where cd looks for a relative directory in every shell",
    "BASH_LOADABLES_PATH": "where bash loads builtins (shared objects) from",
    "BASH_XTRACEFD": "where bash writes its trace",
    "POSIXLY_CORRECT": "how bash and GNU tools behave",
    "HOME": "each user's home, set at login",
    "SHELL": "each user's shell, set at login",
    "USER": "each user's name, set at login",
    "LOGNAME": "each user's name, set at login",
    # glibc (unsecvars.h)
    "GCONV_PATH": "where glibc loads character set converters (shared objects) from",
    "GETCONF_DIR": "where glibc's getconf runs its helpers from",
    "GLIBC_TUNABLES": "glibc's tunables (malloc, the loader's hardware capabilities)",
    "HOSTALIASES": "a file of host aliases for every lookup",
    "LOCALDOMAIN": "the resolver's search domains",
    "LOCPATH": "where glibc loads locale data from",
    "MALLOC_TRACE": "a file glibc's mtrace writes",
    "NIS_PATH": "NIS+ lookups",
    "NLSPATH": "where glibc loads message catalogs from",
    "RESOLV_HOST_CONF": "the resolver's host configuration file",
    "RES_OPTIONS": "the resolver's options",
    "TMPDIR": "where every program makes its temporary files",
    "TZDIR": "where glibc reads time zones from",
    # interpreters that run or load code named by the environment
    "PYTHONSTARTUP": "a file every interactive Python runs",
    "PYTHONHOME": "where Python finds its standard library",
    "PYTHONINSPECT": "an interactive prompt after every Python script",
    "PYTHONUSERBASE": "where Python finds user site-packages",
    "PERL5OPT": "options (such as -M modules) of every perl",
    "PERL5DB": "code perl's debugger runs",
    "PERLLIB": "Perl's search path for modules",
    "RUBYOPT": "options (such as -r libraries) of every ruby",
    "RUBYLIB": "Ruby's search path for libraries",
    "NODE_OPTIONS": "options (such as --require) of every node",
    "JAVA_TOOL_OPTIONS": "options (such as -javaagent) of every JVM",
    "_JAVA_OPTIONS": "options of every JVM",
    "JDK_JAVA_OPTIONS": "options of every java launcher",
    "LUA_INIT": "code every lua runs",
}
GUARDED_NAMES.update(SEARCH_PATHS)
# Whole families: every LD_ name is the dynamic loader's (LD_PRELOAD,
# LD_AUDIT, LD_LIBRARY_PATH, LD_BIND_NOW, LD_DEBUG_OUTPUT, ...); MALLOC_ names
# are glibc's allocator settings (MALLOC_CHECK_, MALLOC_PERTURB_, MALLOC_ARENA_MAX).
GUARDED_PREFIXES = {
    "LD_": "the dynamic loader's settings (what every program loads)",
    "MALLOC_": "glibc's allocator settings for every program",
}


def guarded_reason(name):
    """What the loader, the shell or an interpreter does with `name`, or None
    when it is not a guarded name."""
    if not isinstance(name, str):
        return None
    if name in GUARDED_NAMES:
        return GUARDED_NAMES[name]
    for prefix in sorted(GUARDED_PREFIXES):
        if name.startswith(prefix):
            return GUARDED_PREFIXES[prefix]
    return None


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


def allow_problems(allow, label="the allow list"):
    """One line when `allow` is not a list of valid names; [] when it is."""
    if allow is None:
        return []
    if isinstance(allow, (str, Mapping)) or not isinstance(allow, (list, tuple, set, frozenset)):
        return ["%s is a %s, not a list of variable names" % (label, _type_name(allow))]
    bad = [_quoted(n) for n in allow if not env_name_ok(n)]
    if bad:
        return ["%s names %s, not valid variable names" % (label, ", ".join(bad))]
    return []


def _search_path_problem(name, value, where):
    """The entries of an allowed search path must be absolute plain paths: an
    empty or relative entry would search the current directory."""
    if isinstance(value, bool) or not isinstance(value, str):
        return None
    for entry in value.split(":"):
        problem = value_problem(entry, "path")
        if problem:
            return ("the value of %s%s, %s, is a search path whose entry %s %s; each entry must be "
                    "an absolute directory" % (_quoted(name), where, _quoted(value), _quoted(entry), problem))
    return None


def env_problems(mapping, sources=None, allow=None, allow_label="the allow list"):
    """One line per bad name or value of `mapping`, in its order; [] when all is well.

    `sources` (optional) says where the names came from, for the messages:
    either one label for all of them, or a mapping of label -> mapping in the
    order they were combined (the last one that has a name is named).
    `allow` (optional): the guarded names (guarded_reason) the operator allows,
    named `allow_label` in the messages; every other guarded name is refused.
    """
    if not isinstance(mapping, Mapping):
        return ["the environment is a %s, not a dict of names and values" % _type_name(mapping)]
    problems = allow_problems(allow, allow_label)
    allowed = set(allow) if not problems and allow is not None else set()
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
        elif name in SEARCH_PATHS and name in allowed:
            problem = _search_path_problem(name, str(value), where)
            if problem:
                problems.append(problem)
        reason = guarded_reason(name)
        if reason and name not in allowed:
            problems.append("%s%s is %s: refused unless %s names it" % (
                _quoted(name), where, reason, allow_label))
    return problems


def broken_rules(mapping):
    """The rule sentences (NAME_RULE, VALUE_RULE) that some name or value of
    `mapping` breaks, joined by a space; '' when it breaks neither (a guarded
    name or a search path's problem says its own rule)."""
    if not isinstance(mapping, Mapping):
        return ""
    rules = []
    if any(not env_name_ok(name) for name in mapping):
        rules.append(NAME_RULE)
    if any(not env_value_ok(value) for value in mapping.values()):
        rules.append(VALUE_RULE)
    return " ".join(rules)


def extended_value(name, current, value):
    """What a child process gets for `name` when its parent has `current`
    (None when unset): a search path is appended to the parent's value (as
    export_line writes it into the profile), any other name is `value`."""
    text = value if isinstance(value, str) else str(value)
    if name in SEARCH_PATHS and current:
        return current + ":" + text
    return text


def export_line(name, value):
    """The profile line that sets `name` (a name and value env_problems
    passed): ``export NAME=value``; for a search path, the value appended to
    the shell's own, ``export PATH="${PATH:+$PATH:}"/opt/x``, so it is
    extended, never replaced."""
    text = value if isinstance(value, str) else str(value)
    quoted = shlex.quote(text)
    if name in SEARCH_PATHS:
        return 'export %s="${%s:+$%s:}"%s' % (name, name, name, quoted)
    return "export %s=%s" % (name, quoted)
