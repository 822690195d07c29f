# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The card exporter's core: one reading of a node's cards -> a snapshot ->
the Prometheus text exposition format 0.0.4 (docs/metrics.md).

A reading is what the collection's own readers make of the vendor's tool
(``_efsmi.parse_efsmi`` of ``efsmi -q``, ``_nvsmi.parse_query_gpu`` with
``attach_processes``), the PCI link attributes the kernel shows under a PCI
root (``/sys/bus/pci/devices/<bdf>/{current,max}_link_{width,speed}``) and
the Slurm jobs of the job files the prolog writes (``_card_jobs``). No other
user's process is read: the processes on a card are those the vendor's tool
lists (nvidia-smi's compute apps). The daemon
(roles/card_exporter/files/topsrider-card-exporter) runs the tool, keeps the
newest good entry of each card with its reading time and renders with the
functions here; nothing here runs a command. A value the source does not give
is an absent series, never a made-up 0. Runs on the node: Python 3.6+, no
Ansible imports.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math
import os
import re
import shutil

from ansible_collections.gcu.topsrider.plugins.module_utils._efsmi import (
    EfsmiParseError, merge_summary_into_query, parse_efsmi,
)
from ansible_collections.gcu.topsrider.plugins.module_utils._card_jobs import card_jobs
from ansible_collections.gcu.topsrider.plugins.module_utils._nvsmi import (
    COMPUTE_APPS_FIELDS, QUERY_GPU_FIELDS, NvsmiParseError, attach_processes, parse_compute_apps, parse_query_gpu,
)
from ansible_collections.gcu.topsrider.plugins.module_utils._vendors import VENDORS, vendor_spec

# The module_utils files the daemon imports (this one and what it reaches): the
# role installs exactly these under <lib>/ansible_collections/gcu/topsrider/plugins/module_utils/.
EXPORTER_MODULE_UTILS = ("_card_jobs", "_card_metrics", "_efsmi", "_nvsmi", "_vendors", "_web_config")
DEFAULT_PORT = 9494
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
CARD_LABELS = ("card", "bus_id")
ERROR_REASONS = ("timeout", "exit", "parse", "missing_tool", "jobs", "too_large", "out_of_range", "internal")
# The largest integer a float (what Prometheus stores) holds exactly: a count or
# size beyond it is out of range, never served rounded.
MAX_EXACT_INT = 2 ** 53


def _m(name, kind, text, labels=CARD_LABELS):
    return {"name": name, "type": kind, "help": text, "labels": tuple(labels)}


METRICS = (
    _m("topsrider_card_info", "gauge", "Identity of the card (1).",
       CARD_LABELS + ("vendor", "model", "serial", "uuid", "firmware")),
    _m("topsrider_card_healthy", "gauge", "1 healthy, 0 unhealthy, as the vendor's tool reports the card's health."),
    _m("topsrider_card_temperature_celsius", "gauge", "Card temperature in degrees Celsius."),
    _m("topsrider_card_power_watts", "gauge", "Card power draw in watts."),
    _m("topsrider_card_power_limit_watts", "gauge", "Card power limit (cap) in watts."),
    _m("topsrider_card_utilization_ratio", "gauge", "Card utilization, 0 to 1."),
    _m("topsrider_card_memory_used_bytes", "gauge", "Card memory in use, bytes."),
    _m("topsrider_card_memory_total_bytes", "gauge", "Card memory size, bytes."),
    _m("topsrider_card_ecc_corrected_errors_total", "counter",
       "Corrected ECC errors (nvidia-smi ecc.errors.corrected.volatile.total; absent where the tool has none)."),
    _m("topsrider_card_ecc_uncorrected_errors_total", "counter",
       "Uncorrected ECC errors (efsmi -q RMA Info Total DBE; nvidia-smi ecc.errors.uncorrected.volatile.total)."),
    _m("topsrider_card_pcie_link_width", "gauge", "PCIe lanes now (sysfs current_link_width)."),
    _m("topsrider_card_pcie_link_width_max", "gauge", "PCIe lanes the link can train to (sysfs max_link_width)."),
    _m("topsrider_card_pcie_link_speed_gts", "gauge", "PCIe link speed now in GT/s (sysfs current_link_speed)."),
    _m("topsrider_card_pcie_link_speed_max_gts", "gauge", "PCIe link speed maximum in GT/s (sysfs max_link_speed)."),
    _m("topsrider_card_holder_info", "gauge",
       "The Slurm job the prolog's job file gives the card (1): job id (slurm_job: job is the scrape's), user; "
       "empty when none.",
       CARD_LABELS + ("slurm_job", "user")),
    _m("topsrider_card_processes", "gauge",
       "Processes the vendor's tool lists on the card (nvidia-smi's compute apps; absent where the tool lists none)."),
    _m("topsrider_card_reading_age_seconds", "gauge",
       "Seconds since this card's newest successful reading, at scrape time."),
    _m("topsrider_card_missing_info", "gauge",
       "The tool's last reading did not list this bus id (1): its values are its last good ones, ageing."),
    _m("topsrider_node_driver_info", "gauge", "The accelerator driver and tool of the node (1).",
       ("vendor", "driver_version", "tool", "tool_version")),
    _m("topsrider_exporter_reads_total", "counter", "Readings attempted.", ()),
    _m("topsrider_exporter_read_errors_total", "counter", "Failed readings by reason.", ("reason",)),
    _m("topsrider_exporter_read_duration_seconds", "gauge", "Duration of the last reading, seconds.", ()),
    _m("topsrider_exporter_last_success_timestamp_seconds", "gauge",
       "Unix time of the last wholly successful reading.", ()),
    _m("topsrider_exporter_interval_seconds", "gauge", "The configured reading interval, seconds.", ()),
)
BY_NAME = dict((m["name"], m) for m in METRICS)
AGE = "topsrider_card_reading_age_seconds"

# card key -> (metric, divisor or multiplier): the tool's values in the metric's unit.
_CARD_VALUES = (
    ("temperature_c", "topsrider_card_temperature_celsius", 1),
    ("power_w", "topsrider_card_power_watts", 1),
    ("power_cap_w", "topsrider_card_power_limit_watts", 1),
    ("utilization_pct", "topsrider_card_utilization_ratio", "percent"),
    ("memory_used_mib", "topsrider_card_memory_used_bytes", 1024 * 1024),
    ("memory_total_mib", "topsrider_card_memory_total_bytes", 1024 * 1024),
    ("ecc_errors_corrected", "topsrider_card_ecc_corrected_errors_total", 1),
    ("ecc_errors_uncorrected", "topsrider_card_ecc_uncorrected_errors_total", 1),
)
# metric -> (lowest, highest) a value may have (docs/metrics.md): a value outside,
# not finite, or an integer beyond MAX_EXACT_INT fails that card's reading
# (reason out_of_range) and its last good entry stays.
VALUE_RANGES = {
    "topsrider_card_healthy": (0, 1),
    "topsrider_card_temperature_celsius": (-50, 150),
    "topsrider_card_power_watts": (0, 5000),
    "topsrider_card_power_limit_watts": (0, 5000),
    "topsrider_card_utilization_ratio": (0, 1),
    "topsrider_card_memory_used_bytes": (0, MAX_EXACT_INT),
    "topsrider_card_memory_total_bytes": (0, MAX_EXACT_INT),
    "topsrider_card_ecc_corrected_errors_total": (0, MAX_EXACT_INT),
    "topsrider_card_ecc_uncorrected_errors_total": (0, MAX_EXACT_INT),
    "topsrider_card_pcie_link_width": (0, 32),
    "topsrider_card_pcie_link_width_max": (0, 32),
    "topsrider_card_pcie_link_speed_gts": (0, 128),
    "topsrider_card_pcie_link_speed_max_gts": (0, 128),
    "topsrider_card_processes": (0, MAX_EXACT_INT),
}
# sysfs attribute -> metric
LINK_FILES = (
    ("current_link_width", "topsrider_card_pcie_link_width"),
    ("max_link_width", "topsrider_card_pcie_link_width_max"),
    ("current_link_speed", "topsrider_card_pcie_link_speed_gts"),
    ("max_link_speed", "topsrider_card_pcie_link_speed_max_gts"),
)
# What the exporter asks nvidia-smi: gcu_devices' fields and the corrected ECC count.
NVIDIA_QUERY_FIELDS = QUERY_GPU_FIELDS + ("ecc.errors.corrected.volatile.total",)


class ToolMissing(Exception):
    """The vendor's tool is not on this node."""


# ------------------------------------------------------------------ tools --

def find_tool(vendor=None, tool=None, path_env=None):
    """(vendor's row, tool path): the vendor asked for (None: the first of the
    vendor table whose tool is found) and its tool, from `tool` or PATH plus
    the row's tool_dirs (as gcu_devices looks). ToolMissing when none is found."""
    rows = [vendor_spec(vendor)] if vendor else [dict(v) for v in VENDORS]
    if tool:
        if vendor is None:
            named = [r for r in rows if r["tool"] == os.path.basename(tool)]
            if not named:
                raise ValueError("%s is neither %s: name the vendor (--vendor)" % (
                    tool, " nor ".join(r["tool"] for r in rows)))
            rows = named
        if not (os.path.isfile(tool) and os.access(tool, os.X_OK)):
            raise ToolMissing("%s is not an executable file" % tool)
        return rows[0], tool
    dirs = (path_env if path_env is not None else os.environ.get("PATH", "")).split(os.pathsep)
    for row in rows:
        found = shutil.which(row["tool"], path=os.pathsep.join([d for d in dirs if d] + row["tool_dirs"]))
        if found:
            return row, found
    raise ToolMissing("%s not found in PATH or %s" % (
        " nor ".join(r["tool"] for r in rows), ", ".join(sorted(set(d for r in rows for d in r["tool_dirs"])))))


def _efsmi_commands(path):
    return {"query": [path, "-q"], "summary": [path]}


def _efsmi_reading(query, summary=None, apps=None):
    parsed = parse_efsmi(query, "query")
    if summary is not None:
        parsed = merge_summary_into_query(parsed, parse_efsmi(summary, "summary"))
    # efsmi lists no processes per card: listed None (unknown), never "none"
    return {"cards": parsed["cards"], "driver_version": parsed.get("driver_version"),
            "tool_version": parsed.get("efsmi_version"), "listed": None}


def _nvidia_smi_commands(path):
    fmt = "--format=csv,noheader,nounits"
    return {"query": [path, "--query-gpu=" + ",".join(NVIDIA_QUERY_FIELDS), fmt],
            "apps": [path, "--query-compute-apps=" + ",".join(COMPUTE_APPS_FIELDS), fmt]}


def _nvidia_smi_reading(query, summary=None, apps=None):
    parsed = parse_query_gpu(query, NVIDIA_QUERY_FIELDS)
    cards, _unmatched = attach_processes(parsed["cards"], None if apps is None else parse_compute_apps(apps))
    listed = None if apps is None else [(a["pid"], c["index"], a.get("process_name"))
                                        for c in cards for a in c.get("processes") or []]
    # nvidia-smi ships with the driver: its version is the driver's
    return {"cards": cards, "driver_version": parsed.get("driver_version"),
            "tool_version": parsed.get("driver_version"), "listed": listed}


# The exporter's reader of each vendor's tool (the vendor table's `tool`), as
# _cards.READERS is gcu_devices': (the commands of one reading, their parser).
READERS = {
    "efsmi": (_efsmi_commands, _efsmi_reading),
    "nvidia-smi": (_nvidia_smi_commands, _nvidia_smi_reading),
}
PARSE_ERRORS = (EfsmiParseError, NvsmiParseError, ValueError)


def tool_commands(spec, path):
    """{step: argv} of one reading: efsmi: query (and summary, for what -q lacks);
    nvidia-smi: query-gpu (and compute-apps, who runs on which GPU)."""
    return READERS[spec["tool"]][0](path)


def parse_reading(spec, query, summary=None, apps=None):
    """The tool's text -> {cards, driver_version, tool_version, listed}. query:
    `efsmi -q` / nvidia-smi --query-gpu output; summary: the efsmi table (or
    None), merged in for the firmware; apps: --query-compute-apps output (or
    None: processes unknown). listed: [(pid, card index, name)] the tool lists,
    None where it lists none (efsmi) or was not asked.
    Raises one of PARSE_ERRORS."""
    return READERS[spec["tool"]][1](query, summary, apps)


# -------------------------------------------------------------- PCI links --

_SPEED_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*GT/s", re.IGNORECASE)


def parse_link_width(text):
    """sysfs current_link_width / max_link_width ('16') -> int; None when unreadable."""
    text = (text or "").strip()
    return int(text) if text.isdigit() else None


def parse_link_speed(text):
    """sysfs current_link_speed ('16.0 GT/s PCIe', '8 GT/s', 'Unknown') -> GT/s as a float or None."""
    m = _SPEED_RE.match((text or "").strip())
    return float(m.group(1)) if m else None


def read_link(pci_root, bus_id):
    """{metric: value} of one card's link attributes under pci_root; the ones
    that cannot be read are left out."""
    out = {}
    if not bus_id:
        return out
    for name, metric in LINK_FILES:
        try:
            with open(os.path.join(pci_root, bus_id, name)) as f:
                text = f.read()
        except (IOError, OSError):
            continue
        value = parse_link_width(text) if name.endswith("width") else parse_link_speed(text)
        if value is not None:
            out[metric] = value
    return out


# --------------------------------------------------------------- snapshot --

def checked_value(metric, value):
    """value as a finite float within VALUE_RANGES[metric]; None when it is not
    (a bool, NaN, an infinity, an integer beyond MAX_EXACT_INT, out of range).
    Never raises on a number of any size."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int) and abs(value) > MAX_EXACT_INT:
        return None
    v = float(value)
    low, high = VALUE_RANGES[metric]
    if math.isnan(v) or not low <= v <= high:  # an infinity is outside every range
        return None
    return v


def short_number(value):
    """A value for a log line: an integer of more than 20 digits by its sign and length, never all of it."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10 ** 20:
        return "%sa %d-digit integer" % ("-" if value < 0 else "", len(str(abs(value))))
    return repr(value)


def card_key(card):
    """The key a card is kept by: its bus id (the tool's index is only a label
    and changes when the cards are renumbered); its index where the tool gives no bus id."""
    return card.get("bus_id") or "index:%s" % card.get("index")


def _processes(listed, index):
    """How many processes the tool lists on card `index`."""
    return len(set(pid for pid, card, _name in listed if card == index))


def card_entry(card, vendor, link=None, jobs=None, listed=None):
    """One card of a reading -> {key, card, bus_id, info, values, bad, holder}:
    key card_key's, info the labels of topsrider_card_info, values {metric:
    float} (present ones only, each checked_value's), bad [(metric, value as
    the tool gave it)] of the values out of range (left out of values), holder
    the labels of topsrider_card_holder_info (None when the job files are
    unknown). link: read_link's dict; jobs: _card_jobs.read_jobs' list or None;
    listed: the reading's listed processes or None."""
    raw = {}
    if card.get("health") is not None:
        raw["topsrider_card_healthy"] = 1 if card["health"] else 0
    for key, metric, factor in _CARD_VALUES:
        v = card.get(key)
        if v is not None:
            raw[metric] = v if factor == "percent" else v * factor
    raw.update(link or {})
    if listed is not None:
        raw["topsrider_card_processes"] = _processes(listed, card["index"])
    values, bad = {}, []
    for metric in sorted(raw):
        v = raw[metric]
        if metric == "topsrider_card_utilization_ratio" and not isinstance(v, bool) and isinstance(v, (int, float)):
            # a percentage: an int beyond MAX_EXACT_INT stays one (checked_value refuses it), never float() of it
            v = v if isinstance(v, int) and abs(v) > MAX_EXACT_INT else v / 100.0
        v = checked_value(metric, v)
        if v is None:
            bad.append((metric, raw[metric]))
        else:
            values[metric] = v
    holder = None if jobs is None else card_jobs(jobs, card["index"])
    return {"key": card_key(card), "card": str(card["index"]), "bus_id": card.get("bus_id") or "",
            "info": {"vendor": vendor, "model": card.get("model") or "", "serial": card.get("serial") or "",
                     "uuid": card.get("uuid") or "", "firmware": card.get("firmware") or ""},
            "values": values, "bad": bad, "holder": holder}


def snapshot(spec, reading, links, jobs):
    """A reading -> {node, cards}: node the labels of topsrider_node_driver_info,
    cards card_entry's dicts by index. links: {bus_id: read_link's dict};
    jobs: _card_jobs.read_jobs' list, or None when the job files are unknown."""
    cards = [card_entry(c, spec["name"], links.get(c.get("bus_id")), jobs, reading.get("listed"))
             for c in sorted(reading["cards"], key=lambda c: c["index"])]
    node = {"vendor": spec["name"], "driver_version": reading.get("driver_version") or "",
            "tool": spec["tool"], "tool_version": reading.get("tool_version") or ""}
    return {"node": node, "cards": cards}


# ----------------------------------------------------------------- render --

def escape_label(value):
    """A label value as the text format writes it (backslash, double quote, newline escaped)."""
    return str(value).replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def _escape_help(text):
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value):
    """A sample value as the text format writes it: an int as digits (the
    exporter's own counters), a float as repr gives it (NaN and infinities as
    Prometheus writes them; card values never are, checked_value sees to it)."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    v = float(value)
    if math.isnan(v):
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "+Inf" if v > 0 else "-Inf"
    return repr(v)


def _sample(name, labels, value):
    if labels:
        return "%s{%s} %s\n" % (name, ",".join('%s="%s"' % (k, escape_label(v)) for k, v in labels), value)
    return "%s %s\n" % (name, value)


def _family(name, samples):
    m = BY_NAME[name]
    head = "# HELP %s %s\n# TYPE %s %s\n" % (name, _escape_help(m["help"]), name, m["type"])
    return head + "".join(_sample(name, labels, format_value(v)) for labels, v in samples)


def _card_labels(entry, extra=()):
    return [("card", entry["card"]), ("bus_id", entry["bus_id"])] + list(extra)


def render_body(node, cards, stats):
    """The exposition text of everything but the ages: node (snapshot's node or
    None before the first good reading), cards (card entries, the newest good
    one of each card; an entry with "missing" true: the tool no longer lists
    it), stats {reads, errors: {reason: n}, duration, last_success, interval}."""
    out = []
    for m in METRICS:
        name = m["name"]
        samples = []
        if name == AGE:
            continue
        if name == "topsrider_card_info":
            samples = [(_card_labels(e, [(k, e["info"][k]) for k in m["labels"][2:]]), 1) for e in cards]
        elif name == "topsrider_card_holder_info":
            samples = [(_card_labels(e, [(k, e["holder"][k]) for k in m["labels"][2:]]), 1)
                       for e in cards if e["holder"] is not None]
        elif name == "topsrider_card_missing_info":
            samples = [(_card_labels(e), 1) for e in cards if e.get("missing")]
        elif name.startswith("topsrider_card_"):
            samples = [(_card_labels(e), e["values"][name]) for e in cards if name in e["values"]]
        elif name == "topsrider_node_driver_info":
            samples = [([(k, node[k]) for k in m["labels"]], 1)] if node else []
        elif name == "topsrider_exporter_reads_total":
            samples = [([], stats["reads"])]
        elif name == "topsrider_exporter_read_errors_total":
            samples = [([("reason", r)], stats["errors"].get(r, 0)) for r in ERROR_REASONS]
        elif name == "topsrider_exporter_read_duration_seconds":
            samples = [([], stats["duration"])] if stats.get("duration") is not None else []
        elif name == "topsrider_exporter_last_success_timestamp_seconds":
            samples = [([], stats["last_success"])] if stats.get("last_success") is not None else []
        elif name == "topsrider_exporter_interval_seconds":
            samples = [([], stats["interval"])]
        if samples:
            out.append(_family(name, samples))
    return "".join(out)


def render_ages(read_times, now):
    """The reading_age_seconds family: read_times [(card entry, unix time of its reading)]."""
    if not read_times:
        return ""
    return _family(AGE, [(_card_labels(e), round(max(0.0, now - t), 3)) for e, t in read_times])


def render(node, read_times, stats, now):
    """The whole exposition: render_body of the entries plus their ages at `now`."""
    return render_body(node, [e for e, _t in read_times], stats) + render_ages(read_times, now)
