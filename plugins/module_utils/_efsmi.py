# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parsing of Enflame efsmi output (and the PCI view of sysfs entries).

Private to the collection. No I/O here: callers pass text in and get plain
data (dicts, lists, strings) back, so every function is unit tested with real
output samples. Python 3.6+.

Shapes understood:
- the summary table (``efsmi``), with ``*`` borders (T20 drivers) or ``|``/``+``
  borders (newer drivers), two rows per card;
- the query blocks (``efsmi -q``), one ``DEV ID n`` block per card, with the
  old (``Mem Size``/``Mem Usage``) or new (``Total Size``/``Used Size``) keys.

Anything else raises EfsmiParseError quoting the first lines: a count is
never guessed.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

CARD_KEYS = (
    "index", "model", "bus_id", "serial", "uuid", "firmware", "device_id",
    "memory_total_mib", "memory_used_mib", "temperature_c", "power_w",
    "power_cap_w", "utilization_pct", "dpm", "ecc", "health",
)

# Keys only the query blocks (efsmi -q) have: the uncorrected (double-bit) ECC
# error count of "RMA Info / Total DBE" (nvidia-smi's cards have the same key).
QUERY_EXTRA_KEYS = ("ecc_errors_uncorrected",)

_NA = ("n/a", "na", "-", "--", "unknown", "")


class EfsmiParseError(ValueError):
    """The text is not an efsmi output shape this module understands."""


def normalize_newlines(text):
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def first_lines(text, count=8, width=100):
    """The first non-empty lines of text, for error messages."""
    lines = [line.rstrip() for line in normalize_newlines(text or "").split("\n") if line.strip()]
    shown = [line[:width] for line in lines[:count]]
    if not shown:
        return "(no output)"
    if len(lines) > count:
        shown.append("... (%d more lines)" % (len(lines) - count))
    return "\n".join(shown)


def _is_na(value):
    return value is None or value.strip().lower() in _NA


def _number(text):
    f = float(text)
    return int(f) if f.is_integer() and "." not in text else f


_TEMP_RE = re.compile(u"^(-?\\d+(?:\\.\\d+)?)\\s*(?:'\\s*C|\u00b0\\s*C|\u2103|C)?$", re.IGNORECASE)


def parse_temperature(value):
    """'30C', '39 C', '35 ℃', "30 'C", '41.5°C', '30' -> number; 'N/A' -> None."""
    if _is_na(value):
        return None
    m = _TEMP_RE.match(value.strip())
    if not m:
        raise ValueError("unrecognised temperature %r" % value)
    return _number(m.group(1))


_MEM_UNITS = {
    "k": 1.0 / 1024, "kb": 1.0 / 1024, "kib": 1.0 / 1024,
    "m": 1, "mb": 1, "mib": 1,
    "g": 1024, "gb": 1024, "gib": 1024,
    "t": 1024 * 1024, "tb": 1024 * 1024, "tib": 1024 * 1024,
}
_MEM_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*([KMGT]i?B?)$", re.IGNORECASE)


def parse_memory_mib(value):
    """'32G', '49120MiB', '42976 MiB', '32 GB' -> MiB (int). A unit is required:
    a bare number is ambiguous and raises. 'N/A' -> None."""
    if _is_na(value):
        return None
    m = _MEM_RE.match(value.strip())
    if not m:
        raise ValueError("unrecognised memory size %r (a unit such as MiB or G is required)" % value)
    return int(round(float(m.group(1)) * _MEM_UNITS[m.group(2).lower()]))


_POWER_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*W$", re.IGNORECASE)


def parse_power(value):
    """'212.0W', '300 W' -> float watts; 'N/A' -> None."""
    if _is_na(value):
        return None
    m = _POWER_RE.match(value.strip())
    if not m:
        raise ValueError("unrecognised power %r" % value)
    return float(m.group(1))


_PCT_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*%$")


def parse_percent(value):
    """'85.0%', '97.5 %' -> float; 'N/A' -> None."""
    if _is_na(value):
        return None
    m = _PCT_RE.match(value.strip())
    if not m:
        raise ValueError("unrecognised percentage %r" % value)
    return float(m.group(1))


def parse_count(value):
    """'0', '3' -> int; 'N/A' -> None; anything else raises ValueError."""
    if _is_na(value):
        return None
    if not re.match(r"^\d+$", value.strip()):
        raise ValueError("unrecognised count %r" % value)
    return int(value.strip())


def parse_bool(value):
    """'True'/'Yes'/'OK'/'Healthy' -> True, 'False'/'No'/... -> False, N/A -> None."""
    if _is_na(value):
        return None
    v = value.strip().lower()
    if v in ("true", "yes", "ok", "healthy", "good", "1"):
        return True
    if v in ("false", "no", "bad", "unhealthy", "error", "fail", "failed", "0"):
        return False
    raise ValueError("unrecognised boolean %r" % value)


def _text(value):
    return None if _is_na(value) else value.strip()


def normalize_bus_id(value):
    """PCI address as sysfs names it ('0000:3d:00.0').

    efsmi prints '00:3d:0.0' (T20 table), '00:01:00.0' (newer table) or the
    parts separately in -q; sysfs uses 'dddd:bb:dd.f'. None for N/A."""
    if _is_na(value):
        return None
    m = re.match(r"^(?:([0-9a-f]{1,8}):)?([0-9a-f]{1,2}):([0-9a-f]{1,2})\.([0-7])$", value.strip(), re.IGNORECASE)
    if not m:
        raise ValueError("unrecognised PCI bus id %r" % value)
    dom, bus, dev, fn = m.groups()
    return "%04x:%02x:%02x.%x" % (int(dom or "0", 16), int(bus, 16), int(dev, 16), int(fn, 16))


def _empty_card(index):
    card = dict((k, None) for k in CARD_KEYS)
    card["index"] = index
    return card


def repeated_index(cards):
    """The first card index listed twice, or None (efsmi and nvidia-smi output alike)."""
    seen = set()
    for card in cards:
        if card["index"] in seen:
            return card["index"]
        seen.add(card["index"])
    return None


def _check_unique(cards, text):
    twice = repeated_index(cards)
    if twice is not None:
        raise EfsmiParseError("efsmi output lists device index %d twice; refusing to guess the count. "
                              "First lines:\n%s" % (twice, first_lines(text)))


# ---------------------------------------------------------------- summary --

_BORDER = "*|+"
_VERSION_RE = re.compile(r"EFSMI\s+V?(\d[\w.\-]*)", re.IGNORECASE)
_DRIVER_RE = re.compile(r"Driver\s+Ver(?:sion)?\s*:?\s*(\d[\w.\-]*)", re.IGNORECASE)
_ROW1_RE = re.compile(r"^\s*(\d{1,3})\s+(.+?)\s*$")
_ROW2_LEFT_RE = re.compile(
    u"^\\s*(N/A|-?\\d+(?:\\.\\d+)?\\s*(?:'\\s*C|\u00b0\\s*C|\u2103|C)?)\\s+(\\S+)\\s+"
    u"(N/A|\\d+(?:\\.\\d+)?\\s*W)\\s*/?\\s*(N/A|\\d+(?:\\.\\d+)?\\s*W)\\s*$", re.IGNORECASE)
_MEM_TOKEN = r"(?:N/A|\d+(?:\.\d+)?\s*[KMGT]i?B?)"
_ROW2_MID_RE = re.compile(r"^\s*(?:(" + _MEM_TOKEN + r")\s*/\s*)?(" + _MEM_TOKEN + r")(?:\s+(.*?))?\s*$", re.IGNORECASE)
_ROW2_RIGHT_RE = re.compile(r"^\s*(N/A|\d+(?:\.\d+)?\s*%)(?:\s+(\S+))?\s*$", re.IGNORECASE)


def _inner(line):
    """Content between the border characters of a table line, or None."""
    s = line.strip()
    if len(s) >= 2 and s[0] in _BORDER and s[-1] in _BORDER:
        return s[1:-1]
    return None


def _is_rule(inner):
    return inner is not None and inner.strip() != "" and set(inner.strip()) <= set("-=+*")


def looks_like_summary(text):
    t = normalize_newlines(text)
    return bool(re.search(r"^\s*[*|+].*\bDEV\b.*\bNAME\b", t, re.MULTILINE))


def looks_like_query(text):
    return bool(re.search(r"^\s*DEV\s+ID\s*:?\s*\d+\s*$", normalize_newlines(text), re.MULTILINE))


def parse_summary(text):
    """Parse the efsmi summary table. Returns
    {'format': 'summary', 'style': 'star'|'pipe', 'efsmi_version', 'driver_version', 'cards': [...]}."""
    text = normalize_newlines(text)
    lines = text.split("\n")
    efsmi_version = driver_version = None
    header_at = None
    style = None
    for n, line in enumerate(lines):
        if efsmi_version is None and _VERSION_RE.search(line):
            efsmi_version = _VERSION_RE.search(line).group(1)
        if driver_version is None and _DRIVER_RE.search(line):
            driver_version = _DRIVER_RE.search(line).group(1)
        inner = _inner(line)
        if inner is not None and re.search(r"\bDEV\b", inner) and re.search(r"\bNAME\b", inner):
            header_at = n
            style = "star" if line.strip()[0] == "*" else "pipe"
            break
    if header_at is None:
        raise EfsmiParseError("not an efsmi summary table (no 'DEV NAME' header row). First lines:\n%s"
                              % first_lines(text))
    body = [line for line in lines[header_at + 1:] if line.strip()]
    # the second header row (TEMP ... ) follows the first
    if body and _inner(body[0]) is not None and re.search(r"\bTEMP\b", _inner(body[0]), re.IGNORECASE):
        body = body[1:]
    cards = []
    pending = None
    for line in body:
        inner = _inner(line)
        if inner is None:
            if pending is not None:
                raise EfsmiParseError("efsmi summary table: card %d has no second row. First lines:\n%s"
                                      % (pending["index"], first_lines(text)))
            # text after the table (legends, process lists) ends the device table
            break
        if _is_rule(inner):
            if pending is not None:
                raise EfsmiParseError("efsmi summary table: card %d has no second row. First lines:\n%s"
                                      % (pending["index"], first_lines(text)))
            continue
        segs = inner.split("|")
        try:
            if pending is None:
                pending = _summary_row1(segs)
            else:
                _summary_row2(pending, segs)
                cards.append(pending)
                pending = None
        except ValueError as e:
            raise EfsmiParseError("efsmi summary table: cannot read line %r (%s). First lines:\n%s"
                                  % (line.strip(), e, first_lines(text)))
    if pending is not None:
        raise EfsmiParseError("efsmi summary table: card %d has no second row. First lines:\n%s"
                              % (pending["index"], first_lines(text)))
    _check_unique(cards, text)
    return {"format": "summary", "style": style, "efsmi_version": efsmi_version,
            "driver_version": driver_version, "cards": cards}


def _summary_row1(segs):
    if len(segs) != 3:
        raise ValueError("expected 3 columns separated by '|', found %d" % len(segs))
    m = _ROW1_RE.match(segs[0])
    if not m:
        raise ValueError("expected 'INDEX NAME' in the first column")
    card = _empty_card(int(m.group(1)))
    card["model"] = _text(m.group(2))
    card["firmware"] = _text(segs[1])
    right = segs[2].split()
    if not right:
        raise ValueError("expected 'BUS-ID ECC' in the third column")
    card["bus_id"] = normalize_bus_id(right[0])
    card["ecc"] = _text(" ".join(right[1:]))
    return card


def _summary_row2(card, segs):
    if len(segs) != 3:
        raise ValueError("expected 3 columns separated by '|', found %d" % len(segs))
    m = _ROW2_LEFT_RE.match(segs[0])
    if not m:
        raise ValueError("expected 'TEMP DPM POWER CAP' in the first column")
    card["temperature_c"] = parse_temperature(m.group(1))
    card["dpm"] = _text(m.group(2))
    card["power_w"] = parse_power(m.group(3))
    card["power_cap_w"] = parse_power(m.group(4))
    m = _ROW2_MID_RE.match(segs[1])
    if not m:
        raise ValueError("expected a memory size with a unit in the second column")
    if m.group(1):
        card["memory_used_mib"] = parse_memory_mib(m.group(1))
    card["memory_total_mib"] = parse_memory_mib(m.group(2))
    m = _ROW2_RIGHT_RE.match(segs[2])
    if not m:
        raise ValueError("expected 'UTIL% SERIAL' in the third column")
    card["utilization_pct"] = parse_percent(m.group(1))
    card["serial"] = _text(m.group(2))


# ------------------------------------------------------------------ query --

_DEV_ID_RE = re.compile(r"^\s*DEV\s+ID\s*:?\s*(\d+)\s*$", re.IGNORECASE)
_KV_RE = re.compile(r"^\s*([^:]+?)\s*:\s*(.*?)\s*$")


def _key(k):
    return re.sub(r"\s+", " ", k.strip().lower())


def parse_query(text):
    """Parse ``efsmi -q``. Returns {'format': 'query', 'efsmi_version', 'driver_version', 'cards': [...]},
    cards with CARD_KEYS plus QUERY_EXTRA_KEYS."""
    text = normalize_newlines(text)
    blocks = []
    current = None
    section = None
    for line in text.split("\n"):
        if not line.strip():
            continue
        m = _DEV_ID_RE.match(line)
        if m:
            current = {"index": int(m.group(1)), "fields": {}, "lines": [line]}
            blocks.append(current)
            section = None
            continue
        if current is None:
            continue  # banner before the first device
        current["lines"].append(line)
        kv = _KV_RE.match(line)
        if kv and kv.group(1).strip():
            fields = current["fields"]
            k = _key(kv.group(1))
            fields.setdefault(k, kv.group(2))
            if section:
                fields.setdefault(section + "/" + k, kv.group(2))
        else:
            section = _key(line)
    if not blocks:
        raise EfsmiParseError("not efsmi -q output (no 'DEV ID n' block). First lines:\n%s" % first_lines(text))
    cards = []
    driver_version = None
    for block in blocks:
        try:
            card, drv = _query_card(block)
        except ValueError as e:
            raise EfsmiParseError("efsmi -q: cannot read the block of DEV ID %d (%s). Its first lines:\n%s"
                                  % (block["index"], e, first_lines("\n".join(block["lines"]))))
        driver_version = driver_version or drv
        cards.append(card)
    _check_unique(cards, text)
    vm = _VERSION_RE.search(text)
    return {"format": "query", "efsmi_version": vm.group(1) if vm else None,
            "driver_version": driver_version, "cards": cards}


def _get(fields, *names):
    for name in names:
        if name in fields:
            return fields[name]
    return None


def _query_card(block):
    f = block["fields"]
    card = _empty_card(block["index"])
    known = ("dev name", "device name", "product name", "bus", "bus id", "dev sn", "dev uuid", "health")
    if not any(k in f for k in known):
        raise ValueError("no device fields (Dev Name, Bus, Health, ...) found")
    card["model"] = _text(_get(f, "dev name", "device name", "product name"))
    card["uuid"] = _text(_get(f, "dev uuid", "uuid"))
    card["serial"] = _text(_get(f, "dev sn", "serial number", "sn")) or card["uuid"]
    card["health"] = parse_bool(_get(f, "health"))
    card["firmware"] = _text(_get(f, "fw ver", "fw version", "firmware version", "firmware ver", "firmware"))
    dev_id = _text(_get(f, "pcie info/device id", "device id"))
    card["device_id"] = dev_id.lower().replace("0x", "") if dev_id else None
    bus_id = _get(f, "bus id", "bus-id", "pci bus id", "bdf")
    if bus_id and not _is_na(bus_id):
        card["bus_id"] = normalize_bus_id(bus_id)
    elif not _is_na(_get(f, "bus")):
        card["bus_id"] = normalize_bus_id("%s:%s:%s.%s" % (
            _get(f, "domain") or "0", _get(f, "bus"), _get(f, "dev") or "0", _get(f, "func") or "0"))
    card["power_cap_w"] = parse_power(_get(f, "power capa", "power cap", "power limit"))
    card["power_w"] = parse_power(_get(f, "cur power", "power usage", "power draw"))
    card["dpm"] = _text(_get(f, "dpm level", "dpm"))
    total = _get(f, "total size", "mem size", "memory size", "total")
    card["memory_total_mib"] = parse_memory_mib(total)
    used = _get(f, "used size", "mem usage", "memory usage", "used")
    if used is not None and used.strip().endswith("%"):
        pct = parse_percent(used)
        card["memory_used_mib"] = None if pct is None or card["memory_total_mib"] is None \
            else int(round(card["memory_total_mib"] * pct / 100.0))
    else:
        card["memory_used_mib"] = parse_memory_mib(used)
    card["temperature_c"] = parse_temperature(_get(f, "gcu temp", "temperature", "temp", "chip temp"))
    card["utilization_pct"] = parse_percent(_get(f, "gcu usage", "dev util", "device usage", "usage", "utilization"))
    card["ecc"] = _text(_get(f, "ecc mode/current", "ecc mode", "ecc"))
    card["ecc_errors_uncorrected"] = parse_count(_get(f, "rma info/total dbe", "total dbe"))
    return card, _text(_get(f, "driver info/ver", "driver ver", "driver version"))


def parse_efsmi(text, source):
    """Parse text from efsmi; source 'query' or 'summary'."""
    if source == "query":
        return parse_query(text)
    if source == "summary":
        return parse_summary(text)
    raise ValueError("source must be 'query' or 'summary'")


def merge_summary_into_query(query, summary):
    """Fill the fields -q does not print (firmware, efsmi version) from the
    table, only when both list the same cards (index and bus id)."""
    qkeys = sorted((c["index"], c["bus_id"]) for c in query["cards"])
    skeys = sorted((c["index"], c["bus_id"]) for c in summary["cards"])
    merged = dict(query)
    merged["cards"] = [dict(c) for c in query["cards"]]
    if summary.get("efsmi_version") and not merged.get("efsmi_version"):
        merged["efsmi_version"] = summary["efsmi_version"]
    if qkeys != skeys:
        return merged
    by_index = dict((c["index"], c) for c in summary["cards"])
    for card in merged["cards"]:
        for key in ("firmware", "ecc", "serial"):
            if card.get(key) is None:
                card[key] = by_index[card["index"]].get(key)
    return merged


# -------------------------------------------------------------------- PCI --

def pci_view(entries, vendor_id, class_prefix=None):
    """entries: iterable of (sysfs name, vendor text, device text[, class
    text]) for every directory under /sys/bus/pci/devices. Returns the ones of
    vendor_id (the vendor table's pci_vendor_id) as {'count', 'device_ids', 'bus_ids'}
    (sorted by bus id). With class_prefix (e.g. '0x03', display controllers)
    only functions whose class starts with it count."""
    found = []
    for entry in entries:
        name, vendor, device = entry[:3]
        if (vendor or "").strip().lower().replace("0x", "") != vendor_id:
            continue
        pci_class = entry[3] if len(entry) > 3 else None
        if class_prefix and not (pci_class or "").strip().lower().startswith(class_prefix):
            continue
        found.append((name, (device or "").strip().lower().replace("0x", "")))
    found.sort()
    return {"count": len(found), "device_ids": [dev for name, dev in found],
            "bus_ids": [name for name, dev in found]}
