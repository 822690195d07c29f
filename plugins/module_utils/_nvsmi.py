# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parsing of NVIDIA nvidia-smi CSV queries into the card schema of _efsmi.

Private to the collection. No I/O here: callers pass text in and get plain
data back, so every function is unit tested with real output samples.
Python 3.6+.

Shapes understood (the machine-readable mode, never the table):
- ``nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits``: one line
  per GPU, values in the order of the fields asked for;
- ``nvidia-smi --query-compute-apps=<fields> --format=csv,noheader,nounits``:
  one line per process that holds a context on a GPU.

Placeholders (``[N/A]``, ``[Not Supported]``, ``[Unknown Error]``,
``[Insufficient Permissions]``, ``[Requested functionality has been
deprecated]``, bare ``N/A``, ...) read as None. Anything else that is not what
was asked for (a header, units, another column count, a row count that
disagrees with the ``count`` field) raises NvsmiParseError quoting the first
lines: a count is never guessed.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gcu.topsrider.plugins.module_utils._efsmi import (
    CARD_KEYS, first_lines, normalize_bus_id, normalize_newlines, repeated_index,
)


# What gcu_devices asks for. Every field is one that drivers of the last years
# accept (an unknown field makes nvidia-smi refuse the whole query); the
# deprecated display_mode is left out on purpose. The parser reads any subset
# in any order, by name.
QUERY_GPU_FIELDS = (
    "index", "name", "pci.bus_id", "pci.device_id", "serial", "uuid",
    "memory.total", "memory.used", "temperature.gpu", "power.draw", "power.limit",
    "utilization.gpu", "driver_version", "vbios_version", "ecc.mode.current",
    "ecc.errors.uncorrected.volatile.total", "mig.mode.current", "pstate",
    "persistence_mode", "compute_mode", "count",
)
# process_name last: a path may hold commas, the last column takes the rest.
COMPUTE_APPS_FIELDS = ("pid", "gpu_uuid", "used_memory", "process_name")

# Keys nvidia adds to the _efsmi card schema.
NVIDIA_EXTRA_KEYS = ("ecc_errors_uncorrected", "mig_mode", "persistence_mode", "compute_mode", "processes")

# nvidia-smi prints NVML's error text in brackets where a value cannot be read.
_PLACEHOLDER_RE = re.compile(r"^\[[^\]]*\]$")
_BARE_NA = ("n/a", "not supported", "unknown error", "insufficient permissions", "")
# NVML errors that mean the GPU itself is in trouble, not that a value is missing.
_BROKEN_GPU = ("[gpu requires reset]", "[gpu is lost]")
_NUMBER_RE = re.compile(r"^-?\d+(?:\.\d+)?$")
_NO_PROCESSES_RE = re.compile(r"^no running (?:compute )?process(?:es)? found$", re.IGNORECASE)


class NvsmiParseError(ValueError):
    """The text is not the nvidia-smi CSV that was asked for."""


def is_placeholder(value):
    if value is None:
        return True
    v = value.strip()
    return bool(_PLACEHOLDER_RE.match(v)) or v.lower() in _BARE_NA


def _text(value):
    return None if is_placeholder(value) else value.strip()


def _num(value, field):
    """'60' -> 60, '698.44' -> 698.44, placeholder -> None; anything else raises ValueError."""
    if is_placeholder(value):
        return None
    v = value.strip()
    if not _NUMBER_RE.match(v):
        raise ValueError("%s: %r is not a number (units? ask with --format=csv,noheader,nounits)" % (field, value))
    f = float(v)
    return int(f) if "." not in v else f


def _int(value, field):
    n = _num(value, field)
    if n is None:
        return None
    if n != int(n):
        raise ValueError("%s: %r is not a whole number" % (field, value))
    return int(n)


def _float(value, field):
    n = _num(value, field)
    return None if n is None else float(n)


def parse_device_id(value):
    """'0x233010DE' (device then vendor, as pci.device_id prints it) -> '2330'."""
    if is_placeholder(value):
        return None
    m = re.match(r"^(?:0x)?([0-9a-f]{4})([0-9a-f]{4})$", value.strip(), re.IGNORECASE)
    if not m:
        raise ValueError("pci.device_id: unrecognised %r" % value)
    return m.group(1).lower()


def _rows(text, fields, what, last_takes_rest=False):
    """Split CSV lines into dicts by field name; raises NvsmiParseError."""
    text = normalize_newlines(text or "")
    lines = [line for line in text.split("\n") if line.strip()]
    rows = []
    for line in lines:
        cols = [c.strip() for c in (line.split(",", len(fields) - 1) if last_takes_rest else line.split(","))]
        # a header names the first field where a value should be ('index', 'pid', 'memory.total [MiB]')
        if cols[0].split(" [", 1)[0].strip().lower() == fields[0].lower():
            raise NvsmiParseError("%s: a header line where none was asked for (use --format=csv,noheader,nounits). "
                                  "First lines:\n%s" % (what, first_lines(text)))
        if len(cols) != len(fields):
            raise NvsmiParseError(
                "%s: expected %d comma-separated values (%s), found %d in %r. First lines:\n%s"
                % (what, len(fields), ",".join(fields), len(cols), line.strip()[:100], first_lines(text)))
        rows.append((line, dict(zip(fields, cols))))
    return rows, text


def _card(row):
    """One --query-gpu row (dict by field name) -> card dict; raises ValueError."""
    card = dict((k, None) for k in CARD_KEYS + NVIDIA_EXTRA_KEYS)
    index = _int(row.get("index"), "index")
    if index is None:
        raise ValueError("index: %r is not a GPU index" % row.get("index"))
    card["index"] = index
    card["model"] = _text(row.get("name"))
    bus = row.get("pci.bus_id")
    card["bus_id"] = None if is_placeholder(bus) else normalize_bus_id(bus)
    card["device_id"] = parse_device_id(row.get("pci.device_id"))
    card["serial"] = _text(row.get("serial"))
    card["uuid"] = _text(row.get("uuid"))
    card["firmware"] = _text(row.get("vbios_version"))
    card["memory_total_mib"] = _int(row.get("memory.total"), "memory.total")
    card["memory_used_mib"] = _int(row.get("memory.used"), "memory.used")
    card["temperature_c"] = _num(row.get("temperature.gpu"), "temperature.gpu")
    card["power_w"] = _float(row.get("power.draw"), "power.draw")
    card["power_cap_w"] = _float(row.get("power.limit"), "power.limit")
    card["utilization_pct"] = _float(row.get("utilization.gpu"), "utilization.gpu")
    card["dpm"] = _text(row.get("pstate"))
    card["ecc"] = _text(row.get("ecc.mode.current"))
    card["mig_mode"] = _text(row.get("mig.mode.current"))
    card["persistence_mode"] = _text(row.get("persistence_mode"))
    card["compute_mode"] = _text(row.get("compute_mode"))
    errors = _int(row.get("ecc.errors.uncorrected.volatile.total"), "ecc.errors.uncorrected.volatile.total")
    card["ecc_errors_uncorrected"] = errors
    # Asked for by the card exporter only (gcu_devices' cards keep their keys).
    if "ecc.errors.corrected.volatile.total" in row:
        card["ecc_errors_corrected"] = _int(row["ecc.errors.corrected.volatile.total"],
                                            "ecc.errors.corrected.volatile.total")
    # Health: false on an uncorrected ECC error since the last reset (the page or
    # row is bad, the job that used it is corrupt; NVIDIA's remedy is a reset,
    # then RMA if it returns) or when NVML says the GPU needs a reset or is
    # lost; true when ECC counts and counted none; null when nothing tells.
    broken = any((v or "").strip().lower() in _BROKEN_GPU for v in row.values())
    if broken or (errors is not None and errors > 0):
        card["health"] = False
    elif errors is not None:
        card["health"] = True
    return card


def parse_query_gpu(text, fields=QUERY_GPU_FIELDS):
    """Parse ``nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits``.

    Returns {'format': 'query-gpu', 'driver_version', 'cards': [...]}, cards in
    the schema of _efsmi (CARD_KEYS) plus NVIDIA_EXTRA_KEYS, sorted by index,
    each with processes None (see attach_processes)."""
    fields = tuple(fields)
    if "index" not in fields:
        raise ValueError("the query must ask for index")
    rows, text = _rows(text, fields, "nvidia-smi --query-gpu")
    if not rows:
        raise NvsmiParseError("nvidia-smi --query-gpu printed no GPU. First lines:\n%s" % first_lines(text))
    cards = []
    drivers = set()
    counts = set()
    for line, row in rows:
        try:
            card = _card(row)
            if "count" in row:
                counts.add(_int(row["count"], "count"))
        except ValueError as e:
            raise NvsmiParseError("nvidia-smi --query-gpu: cannot read line %r (%s). First lines:\n%s"
                                  % (line.strip()[:100], e, first_lines(text)))
        driver = _text(row.get("driver_version"))
        if driver:
            drivers.add(driver)
        cards.append(card)
    twice = repeated_index(cards)
    if twice is not None:
        raise NvsmiParseError("nvidia-smi lists GPU index %d twice; refusing to guess the count. "
                              "First lines:\n%s" % (twice, first_lines(text)))
    counts.discard(None)
    if counts and counts != set([len(cards)]):
        raise NvsmiParseError("nvidia-smi prints %d GPU line(s) but its count field says %s; refusing to guess "
                              "the count. First lines:\n%s" % (len(cards), "/".join(str(c) for c in sorted(counts)),
                                                               first_lines(text)))
    if len(drivers) > 1:
        raise NvsmiParseError("nvidia-smi reports several driver versions (%s). First lines:\n%s"
                              % (", ".join(sorted(drivers)), first_lines(text)))
    cards.sort(key=lambda c: c["index"])
    return {"format": "query-gpu", "driver_version": drivers.pop() if drivers else None, "cards": cards}


def parse_compute_apps(text, fields=COMPUTE_APPS_FIELDS):
    """Parse ``nvidia-smi --query-compute-apps=<fields> --format=csv,noheader,nounits``.

    Returns a list of {'pid', 'gpu_uuid', 'used_memory_mib', 'process_name'}
    (fields not asked for are None), in the order printed. No process: []."""
    fields = tuple(fields)
    if "pid" not in fields or "gpu_uuid" not in fields:
        raise ValueError("the query must ask for pid and gpu_uuid")
    lines = [line for line in normalize_newlines(text or "").split("\n") if line.strip()]
    if len(lines) == 1 and _NO_PROCESSES_RE.match(lines[0].strip()):
        return []
    rows, text = _rows(text, fields, "nvidia-smi --query-compute-apps", last_takes_rest=fields[-1] == "process_name")
    apps = []
    for line, row in rows:
        try:
            pid = _int(row.get("pid"), "pid")
            if pid is None:
                raise ValueError("pid: %r is not a process id" % row.get("pid"))
            used = row.get("used_memory", row.get("used_gpu_memory"))
            apps.append({"pid": pid, "gpu_uuid": _text(row.get("gpu_uuid")),
                         "used_memory_mib": _int(used, "used_memory") if used is not None else None,
                         "process_name": _text(row.get("process_name"))})
        except ValueError as e:
            raise NvsmiParseError("nvidia-smi --query-compute-apps: cannot read line %r (%s). First lines:\n%s"
                                  % (line.strip()[:100], e, first_lines(text)))
    return apps


def attach_processes(cards, apps):
    """Give every card its processes (matched by GPU UUID), as new card dicts.

    apps None (the process query failed) leaves processes None on every card.
    Returns (cards, unmatched apps)."""
    out = [dict(c) for c in cards]
    if apps is None:
        return out, []
    by_uuid = dict((c["uuid"], c) for c in out if c.get("uuid"))
    for card in out:
        card["processes"] = []
    unmatched = []
    for app in apps:
        card = by_uuid.get(app["gpu_uuid"])
        if card is None:
            unmatched.append(app)
            continue
        card["processes"].append({"pid": app["pid"], "used_memory_mib": app["used_memory_mib"],
                                  "process_name": app["process_name"]})
    for card in out:
        card["processes"].sort(key=lambda p: p["pid"])
    return out, unmatched
