# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What gcu_devices checks of the cards it read, for any vendor: the count
(against the PCI bus too), health, temperature, utilization. Pure: cards in
(as _efsmi / _nvsmi parse them), problems and notes out, worded from the
vendor table (_vendors). Python 3.6+.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gcu.topsrider.plugins.module_utils._vendors import vendor_spec


# ----------------------------------------------------------------- checks --

def format_indexes(indexes):
    """[1, 2, 3, 5, 7, 8] -> '1-3, 5, 7-8'."""
    runs = []
    for i in sorted(set(indexes)):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ", ".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in runs)


def _card_name(card, unit="GCU"):
    extra = [x for x in (card.get("bus_id"), card.get("serial") and "serial " + card["serial"]) if x]
    return "%s %d%s" % (unit, card["index"], " (%s)" % ", ".join(extra) if extra else "")


def check_expectations(cards, pci, expected_count=None, require_healthy=False,
                       max_temperature=None, min_utilization=None, vendor="enflame"):
    """Return (problems, notes): problems are failed expectations, each naming
    the cards and the remedy; notes are observations worth a warning.
    vendor (a name of the vendor table) picks the words (GCU or GPU, the tools)."""
    w = vendor_spec(vendor)
    unit = w["unit"]
    dmesg, reload_it = "`%s`" % w["dmesg"], "reload the %s driver" % w["kernel_module"]
    problems = []
    notes = []
    count = len(cards)
    pci_count = pci.get("count") if pci else None
    driver_bus = set(c["bus_id"] for c in cards if c.get("bus_id"))
    unseen = [b for b in (pci or {}).get("bus_ids", []) if b not in driver_bus]
    pci_text = ""
    if pci_count is not None and pci_count != count:
        pci_text = "PCI sees %d %s device(s), the driver sees %d" % (pci_count, w["label"], count)
        if unseen and driver_bus:
            pci_text += " (on PCI but not seen by the driver: %s)" % ", ".join(unseen)
    if expected_count is not None and count != expected_count:
        msg = "expected %d %ss, the driver sees %d" % (expected_count, unit, count)
        if pci_text:
            msg += "; " + pci_text + ": a card the driver does not bring up (check %s, %s, reseat or RMA " \
                                     "the card)" % (dmesg, reload_it)
        elif pci_count is not None and pci_count < expected_count:
            msg += "; PCI sees %d too: a card is missing from the bus (check seating, power, BIOS), " \
                   "or expected_count is wrong" % pci_count
        else:
            msg += ": check the node's inventory (expected_count) and %s" % dmesg
        problems.append(msg)
    elif pci_text:
        notes.append(pci_text + ": check %s and %s" % (dmesg, reload_it))
    if require_healthy:
        bad = [c for c in cards if c.get("health") is False]
        if bad:
            problems.append("unhealthy %s(s): %s %s" % (unit, ", ".join(_card_name(c, unit) for c in bad),
                                                        w["unhealthy"]))
        unknown = [c["index"] for c in cards if c.get("health") is None]
        if unknown:
            notes.append("health not reported for %s(s) %s (%s)"
                         % (unit, format_indexes(unknown), w["health_unknown"]))
    if max_temperature is not None:
        hot = [c for c in cards if c.get("temperature_c") is not None and c["temperature_c"] > max_temperature]
        if hot:
            problems.append("%s(s) above %s C: %s; check cooling and airflow, lower the load" % (
                unit, max_temperature, ", ".join("%s at %s C" % (_card_name(c, unit), c["temperature_c"])
                                                 for c in hot)))
    if min_utilization is not None:
        idle = [c for c in cards if c.get("utilization_pct") is None or c["utilization_pct"] <= min_utilization]
        if idle:
            busy = [c["index"] for c in cards if c not in idle]
            msg = "%d of %d %ss not busy (utilization <= %s%%): cards %s sleeping" % (
                len(idle), count, unit, min_utilization, format_indexes([c["index"] for c in idle]))
            if busy:
                msg += ", only card(s) %s working" % format_indexes(busy)
            msg += "; was the job started as one process? Launch one process per card " \
                   "(e.g. torchrun --nproc_per_node=%d) and check %s" % (count, w["visible_env"])
            mig = [c["index"] for c in idle if c.get("mig_mode") == "Enabled" and c.get("utilization_pct") is None]
            if mig:
                msg += "; MIG is enabled on %s(s) %s, where nvidia-smi reports no utilization ([N/A]): the busy " \
                       "check cannot prove them busy (watch the instances with DCGM, or leave min_utilization " \
                       "unset on MIG nodes)" % (unit, format_indexes(mig))
            problems.append(msg)
    return problems, notes
