# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who uses a node's accelerators: the one reader of "is this node busy, and by whom".

A process uses a card while it holds the card's device file open: the T20
runtime opens ``/dev/gcu<N>`` for each card a process works on (NVIDIA's
``/dev/nvidia<N>``) and the kernel keeps it open until the process exits, so
``/proc/<pid>/fd`` names every holder, whatever launched it. For each holder:
pid, parent, user, command, the cards, and the Slurm job it belongs to
(``SLURM_JOB_ID`` in its environment). The same scan also returns the
processes a launch check counts (``LOCAL_RANK`` in the environment, or a
command line that matches a pattern), so gcu_devices' launch check and the
deploy's busy check read the node once, the same way.

Root sees every process; another user sees only its own (the result says so
with ``environ_readable``/``fds_readable``). Runs on the node: Python 3.6+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import pwd
import re

from ansible_collections.gcu.topsrider.plugins.module_utils._vendors import VENDORS

# The device file of one card, per vendor (a node has one vendor's cards; all are scanned).
CARD_FILES = tuple((v["card_prefix"], re.compile(r"^/dev/%s([0-9]+)$" % re.escape(v["card_prefix"])))
                   for v in VENDORS)
# The environment a holder's line reports (Slurm's job, torchrun's rank).
ENV_NAMES = ("SLURM_JOB_ID", "LOCAL_RANK", "RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "TORCHELASTIC_RUN_ID")
COMMAND_CHARS = 200


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _user(uid, cache):
    if uid not in cache:
        try:
            cache[uid] = pwd.getpwuid(uid).pw_name
        except KeyError:
            cache[uid] = str(uid)
    return cache[uid]


def _cards(fd_dir):
    """({device name: index}, readable) of the card device files a process holds open."""
    found = {}
    try:
        fds = os.listdir(fd_dir)
    except OSError:
        return found, False
    for fd in fds:
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        for prefix, pattern in CARD_FILES:
            m = pattern.match(target)
            if m:
                found["%s%s" % (prefix, m.group(1))] = int(m.group(1))
    return found, True


def read_process(proc_root, pid, users=None):
    """One process as a dict, or None when it is gone or a kernel thread (no command line)."""
    base = os.path.join(proc_root, str(pid))
    try:
        raw_cmd = _read(os.path.join(base, "cmdline"))
        stat = _read(os.path.join(base, "stat")).decode("utf-8", "replace")
        status = _read(os.path.join(base, "status")).decode("utf-8", "replace")
    except (IOError, OSError):
        return None
    cmdline = [a.decode("utf-8", "replace") for a in raw_cmd.split(b"\0") if a]
    if not cmdline:
        return None
    try:
        # stat: "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
    except (ValueError, IndexError):
        ppid = None
    uid = None
    for line in status.splitlines():
        if line.startswith("Uid:"):
            uid = int(line.split()[1])
            break
    env = {}
    environ_readable = True
    try:
        for item in _read(os.path.join(base, "environ")).split(b"\0"):
            name, sep, value = item.partition(b"=")
            if sep and name.decode("utf-8", "replace") in ENV_NAMES:
                env[name.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    except (IOError, OSError):
        environ_readable = False
    devices, fds_readable = _cards(os.path.join(base, "fd"))
    command = " ".join(cmdline)
    return {
        "pid": int(pid), "ppid": ppid, "uid": uid,
        "user": _user(uid, users if users is not None else {}) if uid is not None else None,
        "cmdline": cmdline,
        "command": command if len(command) <= COMMAND_CHARS else command[:COMMAND_CHARS - 3] + "...",
        "env": env, "environ_readable": environ_readable, "fds_readable": fds_readable,
        "devices": sorted(devices, key=lambda d: (re.sub(r"[0-9]+$", "", d), devices[d])),
        "cards": sorted(set(devices.values())),
        "slurm_job_id": env.get("SLURM_JOB_ID"),
    }


def read_processes(proc_root="/proc", match=None):
    """The processes that matter on this node, by pid: each that holds a card's
    device file, has LOCAL_RANK in its environment (a launcher's rank), or
    whose command line matches `match` (a compiled regular expression or None).
    This process itself is left out. OSError when proc_root cannot be listed."""
    own = os.getpid()
    users = {}
    out = []
    # Unreadable: OSError, for the caller to say (never "nobody uses the node").
    for name in os.listdir(proc_root):
        if not name.isdigit() or int(name) == own:
            continue
        proc = read_process(proc_root, name, users)
        if proc is None:
            continue
        if proc["cards"] or "LOCAL_RANK" in proc["env"] or (match is not None and match.search(" ".join(proc["cmdline"]))):
            out.append(proc)
    return sorted(out, key=lambda p: p["pid"])


def card_holders(processes):
    """The processes that hold a card, as the busy check reports them."""
    keys = ("pid", "ppid", "user", "command", "devices", "cards", "slurm_job_id")
    return [dict((k, p.get(k)) for k in keys) for p in processes if p.get("cards")]


def holders_state(proc_root="/proc"):
    """{processes: the card holders, error} as gcu.topsrider.topsrider_state returns it."""
    try:
        return {"processes": card_holders(read_processes(proc_root)), "error": None}
    except (IOError, OSError) as e:
        return {"processes": [], "error": "cannot read %s: %s" % (proc_root, e)}


def merge_listed(holders, listed, prefix):
    """Add what the vendor's tool lists per card (NVIDIA: nvidia-smi's compute
    processes, [(pid, card index, process name)]) to the holders read from /proc,
    naming cards as the vendor's device files (prefix: the vendor table's card_prefix):
    the tool's card attribution is exact (a CUDA process opens every
    /dev/nvidia<N>), and a pid /proc does not show (another PID namespace) is a
    holder too, with what the tool knows of it."""
    by_pid = dict((h["pid"], dict(h)) for h in holders)
    listed_cards = {}
    for pid, index, name in listed:
        listed_cards.setdefault(int(pid), {"name": name, "cards": set()})["cards"].add(int(index))
    for pid, info in listed_cards.items():
        cards = sorted(info["cards"])
        if pid in by_pid:
            by_pid[pid]["cards"] = cards
            by_pid[pid]["devices"] = ["%s%d" % (prefix, i) for i in cards]
        else:
            by_pid[pid] = {"pid": pid, "ppid": None, "user": None, "command": info["name"],
                           "devices": ["%s%d" % (prefix, i) for i in cards], "cards": cards, "slurm_job_id": None}
    return [by_pid[p] for p in sorted(by_pid)]


def describe(holder):
    """'pid 4242 (alice: python train.py) holds gcu0,gcu1 (Slurm job 17)'."""
    text = "pid %s (%s: %s) holds %s" % (holder.get("pid"), holder.get("user") or "?", holder.get("command") or "?",
                                         ",".join(holder.get("devices") or [str(c) for c in holder.get("cards", [])]))
    if holder.get("slurm_job_id"):
        text += " (Slurm job %s)" % holder["slurm_job_id"]
    return text


def describe_all(holders, limit=4):
    """The holders in one sentence, at most `limit` named."""
    parts = [describe(h) for h in holders[:limit]]
    if len(holders) > limit:
        parts.append("and %d more" % (len(holders) - limit))
    return "; ".join(parts)


def _span(numbers):
    """[1, 2, 3, 5] -> '1-3,5'."""
    parts = []
    for n in sorted(set(numbers)):
        if parts and parts[-1][1] == n - 1:
            parts[-1][1] = n
        else:
            parts.append([n, n])
    return ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in parts)


def brief(holders):
    """The holders in a few words, grouped by Slurm job, for a progress line:
    'Slurm job 17: pids 4242-4249 on gcu0-7; no Slurm job: pid 99 on gcu3'."""
    groups = {}
    for h in holders:
        groups.setdefault(h.get("slurm_job_id") or "", []).append(h)
    parts = []
    for job in sorted(groups, key=lambda j: (j == "", j)):
        members = groups[job]
        prefixes = sorted(set(d.rstrip("0123456789") for h in members for d in h.get("devices") or []))
        cards = _span([c for h in members for c in h.get("cards") or []])
        parts.append("%s: pid%s %s on %s%s" % (
            "Slurm job %s" % job if job else "no Slurm job", "s" if len(members) > 1 else "",
            _span([h["pid"] for h in members]), "/".join(prefixes) or "card", cards))
    return "; ".join(parts)
