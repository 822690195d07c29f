# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A run's inputs on one host, judged before anything is compared or changed
(playbooks/tasks/inputs.yml's one task, the action
gcu.topsrider.topsrider_inputs). In this order, the first that fails is the
answer, as one sentence:

1. release: the vendor's .run refused by its checks, or the release's
   signature or revocation list refused (both checked once per run, on the
   controller: the tasks' results are handed in);
2. python: the node's Python (what one raw command printed, python_command:
   its path and version, or why none ran) against the floor of the module
   code of the ansible-core that runs the play; the command runs only when
   the release passed (a refused release reaches no node);
3. settings: the manifest's names and the operator's paths by the
   collection's one rule (module_utils/_values.py), the cache's size, then
   the ECCL environment settings (plugin_utils/_eccl_settings.py, the role's
   argument spec included; the messages name the operator's variables).

Python, not Jinja: ansible-core compiles a task's templates again in every
worker process, once a host; and one task, not a raw check and an assert:
this is a task on every host of every run (docs/performance.md)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re
import shlex

from ansible_collections.gcu.topsrider.plugins.module_utils._pep440 import packaging_source
from ansible_collections.gcu.topsrider.plugins.module_utils._values import value_problems
from ansible_collections.gcu.topsrider.plugins.plugin_utils._eccl_settings import settings_problems

CHECKS = ("release", "python", "settings")
NOTHING_SENT = ". Nothing was sent to any node."
# The operator's variables the ECCL settings' messages name.
ECCL_LABELS = {"eccl_env_profile": "topsrider_profile", "eccl_env_vars": "topsrider_env_vars",
               "eccl_env_allow_names": "topsrider_env_allow_names",
               "eccl_env_visible_devices": "topsrider_visible_devices"}
# The raw check's exit codes it judges: 0, a Python answered; 3, none of the
# candidates runs. Any other is the connection's (a node that is down): the
# next task that contacts the node reports it as unreachable.
PYTHON_ANSWERED, NO_PYTHON = 0, 3


def python_command(candidates):
    """The one shell command that finds the node's Python, before any module is
    sent: the path and version (two lines) of the first of `candidates` that
    runs, exit 0; none runs: a line saying so on stderr, exit 3."""
    names = [str(c) for c in candidates]
    words = " ".join(shlex.quote(n) for n in names)
    none_runs = shlex.quote("none of %s runs" % ", ".join(names))
    return ("for p in %s; do if command -v \"$p\" >/dev/null 2>&1; then "
            "v=$(\"$p\" -c 'import sys; print(\"%%d.%%d.%%d\" %% sys.version_info[:3])') "
            "&& printf '%%s\\n%%s\\n' \"$(command -v \"$p\")\" \"$v\" && exit 0; fi; done; "
            "echo %s >&2; exit 3" % (words, none_runs))


def node_input_problems(checks, release, run_python, host, settings, core_version=None):
    """input_problems, each check asked for only when the ones before it
    passed: run_python() (the node's answer to python_command, as a raw
    task's result: rc, stdout, stderr) only when the release passed, and
    settings() (settings_problem_lines' input) only when the Python passed
    too, so that a host refused for its Python is asked about nothing else."""
    checks = _checks(checks)
    if "release" in checks:
        problems = input_problems({"checks": ["release"], "release": release}, core_version)
        if problems:
            return problems
    if "python" in checks:
        problems = input_problems({"checks": ["python"], "python": {"raw": run_python(), "host": host}}, core_version)
        if problems:
            return problems
    if "settings" in checks:
        return input_problems({"checks": ["settings"], "settings": settings()}, core_version)
    return []


def _checks(checks):
    checks = list(CHECKS if checks is None else checks)
    unknown = [c for c in checks if c not in CHECKS]
    if unknown:
        raise ValueError("checks are some of %s, got %s" % (", ".join(CHECKS), ", ".join(map(str, unknown))))
    return checks


def _version(text):
    """`text` as a PEP 440 version (packaging's, which ansible-core itself depends on), or None."""
    try:
        return packaging_source()[1](str(text or "").strip())
    except ValueError:  # InvalidVersion
        return None


def core_floor(core_version):
    """The node Python floor of ansible-core `core_version`'s module code: 3.8 on 2.19, 3.9 on 2.20 and later
    (its pre-releases too: 2.20.0rc1 runs 2.20's module code)."""
    core = _version(core_version)
    return "3.9" if core is not None and core.release[:2] >= (2, 20) else "3.8"


def release_problems(release):
    """release: {bundle (topsrider_bundle), installer (the .run extraction's
    result, None or skipped when there was none), trust (the signature
    check's result, None or skipped)}."""
    installer, trust = release.get("installer"), release.get("trust")
    if isinstance(installer, dict) and not installer.get("skipped") and installer.get("rc") != 0:
        why = re.sub(r"^refused: ", "", (installer.get("stderr") or "").strip())
        return ["%s: %s%s" % (release.get("bundle") or "", why, NOTHING_SENT)]
    if isinstance(trust, dict) and not trust.get("skipped") and trust.get("problem", "the check did not finish") is not None:
        return ["%s%s" % (trust.get("msg", "the signature check did not finish"), NOTHING_SENT)]
    return []


def python_problems(raw, host, core_version):
    """raw: the raw check's result (None or skipped: not checked)."""
    if not isinstance(raw, dict) or raw.get("skipped") or raw.get("rc", -1) not in (PYTHON_ANSWERED, NO_PYTHON):
        return []
    floor = core_floor(core_version)
    lines = (raw.get("stdout") or "").strip().split("\n")
    path, version = lines[0].strip(), lines[-1].strip()
    if raw["rc"] == PYTHON_ANSWERED:
        if _version(version) is not None and _version(version) >= _version(floor):
            return []
        found = "%s is %s" % (path, version)
    else:
        found = "could not be run (%s)" % (raw["stderr"] if "stderr" in raw else raw.get("msg", "")).strip()
    major, minor = (list(_version(core_version).release if _version(core_version) else ()) + [0, 0])[:2]
    return ["the node's Python %s; gcu.topsrider needs Python %s or newer on managed nodes (the floor of the module "
            "code of ansible-core %d.%d, which runs this play). Install a newer Python on the node and point "
            "ansible_python_interpreter at it. No module was sent to %s." % (found, floor, major, minor, host)]


def _cache_keep_problems(keep):
    if re.match(r"^[0-9]+\Z", str(keep)) and int(str(keep)) >= 2:
        return []
    return ["topsrider_cache_keep %s is not a whole number of at least 2" % json.dumps(keep)]


def settings_problem_lines(settings):
    """settings: {bundle_dir, manifest, python (desired_python), cache_keep,
    eccl: the eccl_env_* values (eccl_env_profiles only when the operator set it)}."""
    manifest = settings.get("manifest") or {}
    bundle_dir = settings.get("bundle_dir") or ""
    files = [f.get("file") for f in manifest.get("files") or []]
    names = dict([("the manifest version (%s/manifest.json)" % bundle_dir, manifest.get("version"))]
                 + [("the manifest file %s" % f, f) for f in files])
    problems = (value_problems(names, "name") + value_problems({"topsrider_python": settings.get("python")}, "path")
                + _cache_keep_problems(settings.get("cache_keep", 2)))
    if problems:
        return ["refused, nothing was changed: %s. Fix the manifest (scripts/topsrider-manifest check %s) or the "
                "variable named." % ("; ".join(problems), bundle_dir)]
    return settings_problems(settings.get("eccl") or {}, ECCL_LABELS, True)


def input_problems(inputs, core_version=None):
    """[] when the host's inputs pass, else [the first failing check's sentence].

    inputs: {checks (default: all three), release (release_problems' input),
    python: {raw, host}, settings (settings_problem_lines' input; needed only
    when the settings are checked)}; core_version: the running ansible-core's
    (default: this one)."""
    if core_version is None:
        from ansible.release import __version__ as core_version
    checks = _checks(inputs.get("checks"))
    if "release" in checks:
        problems = release_problems(inputs.get("release") or {})
        if problems:
            return problems
    if "python" in checks:
        python = inputs.get("python") or {}
        problems = python_problems(python.get("raw"), python.get("host"), core_version)
        if problems:
            return problems
    if "settings" in checks:
        return settings_problem_lines(inputs.get("settings") or {})
    return []
