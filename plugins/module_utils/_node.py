# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node I/O helpers shared by the gcu.topsrider modules.

One home for what several modules read from a node: the C locale every
command runs under, the PCI view of the accelerators (sysfs), the efsmi
"query, then the summary table" fallback, and the ``ldconfig -p`` cache.
The parsing lives in ``_efsmi`` / ``_nvsmi``; this file only reads and runs.
Runs on the node: Python 3.6+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re
import signal
import threading

from ansible_collections.gcu.topsrider.plugins.module_utils._efsmi import (
    EfsmiParseError, merge_summary_into_query, parse_efsmi, pci_view,
)
from ansible_collections.gcu.topsrider.plugins.module_utils._vendors import vendor_spec

C_LOCALE = {"LC_ALL": "C", "LANG": "C"}
PCI_ROOT = "/sys/bus/pci/devices"
EFSMI_DIRS = vendor_spec("enflame")["tool_dirs"]


def read_text(path):
    """The whole text of a file, or None when it cannot be read."""
    try:
        with open(path) as f:
            return f.read()
    except (IOError, OSError):
        return None


def read_pci(root=PCI_ROOT, vendor="enflame"):
    """The accelerators sysfs lists under `root` (pci_view), for `vendor` (a name
    of the vendor table). An unreadable root gives count None and no devices."""
    spec = vendor_spec(vendor)
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return {"count": None, "device_ids": [], "bus_ids": []}
    wanted = ["vendor", "device"] + (["class"] if spec["pci_class_prefix"] else [])
    return pci_view(([n] + [read_text(os.path.join(root, n, f)) for f in wanted] for n in names),
                    vendor_id=spec["pci_vendor_id"], class_prefix=spec["pci_class_prefix"])


# How long efsmi or nvidia-smi may take before it counts as hung (a wedged
# driver makes them block forever in an ioctl): seconds.
TOOL_TIMEOUT_S = 60


def _descendants(pid, proc="/proc"):
    """The pids of every process below pid (Linux /proc; [] where it cannot be read)."""
    children = {}
    try:
        names = [n for n in os.listdir(proc) if n.isdigit()]
    except OSError:
        return []
    for name in names:
        try:
            with open(os.path.join(proc, name, "stat")) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (IOError, OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _kill_tree(pid):
    for p in [pid] + _descendants(pid):
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


def run_c(module, argv, timeout=None, **kwargs):
    """module.run_command under the C locale, as a dict: argv, cmd, rc, stdout,
    stderr, timed_out. timeout (seconds): past it the command and whatever it
    started are killed (SIGKILL) and timed_out is True (run_command itself
    cannot bound a command)."""
    timers = []
    expired = []

    def arm(proc):
        def expire():
            expired.append(True)
            _kill_tree(proc.pid)
        t = threading.Timer(timeout, expire)
        t.daemon = True
        timers.append(t)
        t.start()

    if timeout:
        kwargs["before_communicate_callback"] = arm
    try:
        rc, out, err = module.run_command(argv, environ_update=C_LOCALE, **kwargs)
    finally:
        for t in timers:
            t.cancel()
    return {"argv": argv, "cmd": " ".join(argv), "rc": rc, "stdout": out, "stderr": err,
            "timed_out": bool(expired), "timeout": timeout}


def timeout_message(r):
    """The failure text of a run_c result that timed out: the tool, the command and the limit."""
    return "`%s` did not finish within %ss and was killed: %s hangs (timeout %ss)" % (
        r["cmd"], r["timeout"], os.path.basename(r["argv"][0]), r["timeout"])


def read_efsmi(module, efsmi, source, timeout=None):
    """Run efsmi for one source (query: `efsmi -q`; summary: `efsmi`) and parse it,
    killed after timeout seconds (None: TOOL_TIMEOUT_S).
    Returns run_c's dict plus parsed (None unless rc 0 and it parsed) and error
    (the parse error's text, or the timeout's; None when it parsed or rc was not 0)."""
    r = run_c(module, [efsmi, "-q"] if source == "query" else [efsmi], timeout=timeout or TOOL_TIMEOUT_S)
    r.update(parsed=None, error=None)
    if r["timed_out"]:
        r["error"] = timeout_message(r)
    elif r["rc"] == 0:
        try:
            r["parsed"] = parse_efsmi(r["stdout"], source)
        except EfsmiParseError as e:
            r["error"] = str(e)
    return r


def query_then_summary(module, efsmi, merge=False, timeout=None):
    """`efsmi -q` first, the summary table when -q is not usable.
    merge: when -q parsed, also read the summary table, best effort, for what only it has.
    Returns (parsed or None, source used or None, the -q attempt, the summary attempt or None);
    the attempts are read_efsmi's dicts, for the caller's messages. A -q that
    timed out is not followed by the summary (a hung driver hangs both)."""
    q = read_efsmi(module, efsmi, "query", timeout)
    if q["timed_out"]:
        return None, None, q, None
    if q["parsed"] is not None:
        parsed = q["parsed"]
        if merge:
            s = read_efsmi(module, efsmi, "summary", timeout)
            if s["parsed"] is not None:
                parsed = merge_summary_into_query(parsed, s["parsed"])
        return parsed, "query", q, None
    s = read_efsmi(module, efsmi, "summary", timeout)
    return s["parsed"], "summary" if s["parsed"] is not None else None, q, s


def parse_ldconfig_cache(text, name):
    """Paths of `name` (and name.N...) in `ldconfig -p` output."""
    paths = []
    pattern = re.compile(r"^\s*(%s(?:\.[0-9.]+)?)\s+\(.*\)\s+=>\s+(\S.*)$" % re.escape(name))
    for line in (text or "").splitlines():
        m = pattern.match(line)
        if m and m.group(2).strip() not in paths:
            paths.append(m.group(2).strip())
    return paths
