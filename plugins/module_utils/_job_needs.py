# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a training job needs on a node, and the one rule that judges it.

The files are the vendor table's ``job_files`` (plugins/module_utils/_vendors.py:
the environment file, the loader configuration, the local facts on an Enflame
node). The dist_launch scripts are rendered from ``job_files()`` (the filter
gcu.topsrider.topsrider_job_files) and refuse to start, exit 72, with
``message`` when a file fails ``SHELL_RULE``; topsrider_state's ``job`` read
(playbooks/verify.yml) applies ``usable()``, the same rule in Python, to the
same list and reports the same message, so the launcher and verify cannot
disagree. ``job_problems()`` adds the collective library's identity (where the
loader resolves it, and its package's files as dpkg installed them: the drift
check's own findings, module_utils/_compare.py). Pure: no Ansible import;
Python 3.6+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

from ansible_collections.gcu.topsrider.plugins.module_utils._compare import library_findings, package_file_findings
from ansible_collections.gcu.topsrider.plugins.module_utils._vendors import vendor_spec

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
