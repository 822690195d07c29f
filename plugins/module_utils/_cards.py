# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gcu_devices' work on the node: find the vendor's tool, read the cards with
it, check them, and say who holds them.

Which tool, where it lives, which kernel module and device files, and the
words of a failure come from the vendor table (_vendors); the reader of each
tool is READERS[tool]. Runs on the node: Python 3.6+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import os
import re

from ansible_collections.gcu.topsrider.plugins.module_utils._card_checks import check_expectations
from ansible_collections.gcu.topsrider.plugins.module_utils._holders import card_holders, merge_listed, read_processes
from ansible_collections.gcu.topsrider.plugins.module_utils._node import (
    PCI_ROOT, query_then_summary, read_efsmi, read_pci, run_c, timeout_message,
)
from ansible_collections.gcu.topsrider.plugins.module_utils._nvsmi import (
    COMPUTE_APPS_FIELDS, QUERY_GPU_FIELDS, NvsmiParseError, attach_processes, parse_compute_apps, parse_query_gpu,
)
from ansible_collections.gcu.topsrider.plugins.module_utils._vendors import VENDORS, vendor_spec

# Where the kernel shows a loaded module (<it>/<kernel_module>/version) and the device files live.
SYS_MODULE_ROOT = "/sys/module"
DEV_ROOT = "/dev"


def driver_hint(spec):
    """What to do when the vendor's driver does not answer, with what the node
    shows of it. In containers (the simulator) none of these exist, so absence
    alone fails nothing."""
    facts = []
    module_dir = os.path.join(SYS_MODULE_ROOT, spec["kernel_module"])
    if not os.path.isdir(module_dir):
        facts.append("%s is missing (the %s kernel module is not loaded)" % (module_dir, spec["kernel_module"]))
    prefix, ctl = spec["card_prefix"], spec["control_device"]
    names = [os.path.basename(n) for n in glob.glob(os.path.join(DEV_ROOT, prefix + "*"))]
    if ctl not in names:
        facts.append("/dev/%s is missing" % ctl)
    cards = sorted(os.path.join(DEV_ROOT, n) for n in names if re.match(r"^%s[0-9]+$" % re.escape(prefix), n))
    facts.append("device nodes: %s" % (", ".join(cards) if cards else "no /dev/%s[0-9]*" % prefix))
    return ("Hint: load the driver (`modprobe %s`, or reinstall %s for the running kernel), check `%s`, and that "
            "/dev/%s and /dev/%s[0-9]* exist. On this node: %s." % (
                spec["kernel_module"], spec["driver_package"], spec["dmesg"], ctl, prefix, "; ".join(facts)))


def read_driver_version(spec):
    """The loaded driver's version as sysfs shows it, None when it cannot be read."""
    try:
        with open(os.path.join(SYS_MODULE_ROOT, spec["kernel_module"], "version")) as f:
            return f.read().strip() or None
    except (IOError, OSError):
        return None


def fail_timeout(module, r, hint):
    """Fail on a tool run that was killed at its timeout."""
    module.fail_json(msg="%s. %s" % (timeout_message(r), hint), cmd=r["cmd"], rc=r["rc"], stdout=r["stdout"],
                     stderr=r["stderr"], timeout=r["timeout"], problems=[])


def fail_rc(module, r, hint, also=None):
    """Fail on a tool run that exited non-zero, with the driver hint."""
    msg = "`%s` failed (rc=%d): %s. %s" % (r["cmd"], r["rc"], (r["stderr"] or r["stdout"] or "").strip()
                                           or "no output", hint)
    if also:
        msg += " (%s)" % also
    module.fail_json(msg=msg, cmd=r["cmd"], rc=r["rc"], stdout=r["stdout"], stderr=r["stderr"], problems=[])


def read_with_efsmi(module, spec, efsmi, source, timeout):
    """Run efsmi as source says; returns (parsed, used source, warnings, driver version) or fails.
    The driver version: sysfs first (efsmi prints it only in some shapes)."""
    warnings = []
    if source in ("query", "summary"):
        r = read_efsmi(module, efsmi, source, timeout)
        if r["timed_out"]:
            fail_timeout(module, r, driver_hint(spec))
        if r["rc"] != 0:
            fail_rc(module, r, driver_hint(spec))
        if r["error"] is not None:
            module.fail_json(msg="`%s`: %s" % (r["cmd"], r["error"]), cmd=r["cmd"], rc=r["rc"], stdout=r["stdout"],
                             stderr=r["stderr"], problems=[])
        parsed = r["parsed"]
        return parsed, source, warnings, read_driver_version(spec) or parsed.get("driver_version")
    # auto: -q first (with the summary table merged in, best effort), the summary table as fall-back
    parsed, used, q, s = query_then_summary(module, efsmi, merge=True, timeout=timeout)
    if used == "query":
        return parsed, used, warnings, read_driver_version(spec) or parsed.get("driver_version")
    for r in (q, s):
        if r is not None and r["timed_out"]:
            fail_timeout(module, r, driver_hint(spec))
    q_error = q["error"]
    if s["rc"] != 0:
        fail_rc(module, s, driver_hint(spec), also="`%s` before it: rc=%d, %s" % (
            q["cmd"], q["rc"], (q["stderr"] or "").strip() or q_error or "no stderr"))
    if s["error"] is not None:
        module.fail_json(msg="`%s`: %s. `%s` before it: %s" % (
            s["cmd"], s["error"], q["cmd"], q_error or "rc=%d, %s" % (q["rc"], (q["stderr"] or "").strip())),
            cmd=s["cmd"], rc=s["rc"], stdout=s["stdout"], stderr=s["stderr"], problems=[])
    warnings.append("`%s` was not usable (%s); read the summary table instead, which has no health "
                    "or memory-used columns" % (q["cmd"], q_error.split(". First lines", 1)[0] if q_error
                                                else "rc=%d" % q["rc"]))
    return parsed, "summary", warnings, read_driver_version(spec) or parsed.get("driver_version")


def read_with_nvidia_smi(module, spec, nvidia_smi, source, timeout):
    """Run the two nvidia-smi queries; returns (parsed, 'query-gpu', warnings, driver version) or fails.
    The driver version: nvidia-smi's first, sysfs when it prints none."""
    if source != "auto":
        module.fail_json(msg="source=%s reads efsmi output; this node is read with nvidia-smi (vendor=%s), "
                             "leave source unset" % (source, module.params["vendor"]), problems=[])
    warnings = []
    argv = [nvidia_smi, "--query-gpu=" + ",".join(QUERY_GPU_FIELDS), "--format=csv,noheader,nounits"]
    cmd = " ".join(argv)
    r = run_c(module, argv, timeout=timeout)
    if r["timed_out"]:
        fail_timeout(module, r, driver_hint(spec))
    rc, out, err = r["rc"], r["stdout"], r["stderr"]
    if rc != 0:
        fail_rc(module, r, driver_hint(spec))
    try:
        parsed = parse_query_gpu(out, QUERY_GPU_FIELDS)
    except NvsmiParseError as e:
        module.fail_json(msg="`%s`: %s" % (cmd, e), cmd=cmd, rc=rc, stdout=out, stderr=err, problems=[])
    # Which process runs on which GPU. Best effort: without it the cards are still
    # known, so a failure here warns and leaves processes null.
    apps_argv = [nvidia_smi, "--query-compute-apps=" + ",".join(COMPUTE_APPS_FIELDS), "--format=csv,noheader,nounits"]
    a = run_c(module, apps_argv, timeout=timeout)
    if a["timed_out"]:
        fail_timeout(module, a, driver_hint(spec))
    arc, aout, aerr = a["rc"], a["stdout"], a["stderr"]
    apps = None
    if arc != 0:
        warnings.append("`%s` failed (rc=%d): %s; processes per GPU are unknown (null)" % (
            " ".join(apps_argv), arc, (aerr or aout or "").strip() or "no output"))
    else:
        try:
            apps = parse_compute_apps(aout, COMPUTE_APPS_FIELDS)
        except NvsmiParseError as e:
            warnings.append("`%s`: %s; processes per GPU are unknown (null)" % (" ".join(apps_argv), e))
    cards, unmatched = attach_processes(parsed["cards"], apps)
    if unmatched:
        warnings.append("nvidia-smi lists process(es) on GPU UUIDs that --query-gpu did not: %s" % ", ".join(
            "pid %d on %s" % (a["pid"], a["gpu_uuid"]) for a in unmatched))
    parsed = dict(parsed, cards=cards)
    return parsed, "query-gpu", warnings, parsed.get("driver_version") or read_driver_version(spec)


# The reader of each vendor's tool (the vendor table's `tool`).
READERS = {
    "efsmi": read_with_efsmi,
    "nvidia-smi": read_with_nvidia_smi,
}


def executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _missing(spec):
    return "%s not found in PATH or %s: %s is not installed, or %s lives elsewhere (set %s)" % (
        spec["tool"], ", ".join(spec["tool_dirs"]), spec["tool_package"], spec["tool"], spec["tool_option"])


def find_tool(module, vendor):
    """(vendor's row, tool path) for the vendor asked for, or the first one auto
    finds (in the table's order); fails when none."""
    p = module.params
    for spec in VENDORS:
        path = p.get(spec["tool_option"])
        if path:
            if not executable(path):
                module.fail_json(msg="%s %s is not an executable file. %s" % (
                    spec["tool_option"], path, driver_hint(spec)), problems=[])
            return dict(spec), path
    # required=False on purpose: a missing tool gets the failures below, with the hint
    # on what to install and check, instead of get_bin_path's generic message.
    wanted = list(VENDORS) if vendor == "auto" else [vendor_spec(vendor)]
    for spec in wanted:
        path = module.get_bin_path(spec["tool"], required=False, opt_dirs=spec["tool_dirs"])
        if path:
            return dict(spec), path
    if vendor != "auto":
        module.fail_json(msg="%s. %s" % (_missing(wanted[0]), driver_hint(wanted[0])), problems=[])
    module.fail_json(msg="neither %s found (vendor=auto). %s. %s" % (
        " nor ".join(v["tool"] for v in VENDORS), "; ".join(
            "%s (%s nodes)" % (_missing(v), v["label"]) for v in VENDORS), driver_hint(VENDORS[0])), problems=[])


def run(module):
    """gcu_devices: the checks of its parameters, then read, check and report."""
    p = module.params
    if p["expected_count"] is not None and p["expected_count"] < 0:
        module.fail_json(msg="expected_count must be 0 or more, got %d" % p["expected_count"], problems=[])
    if p["timeout"] < 1:
        module.fail_json(msg="timeout must be 1 second or more, got %d" % p["timeout"], problems=[])
    if p["min_utilization"] is not None and not 0 <= p["min_utilization"] < 100:
        module.fail_json(msg="min_utilization is a percentage in [0, 100), got %s" % p["min_utilization"],
                         problems=[])
    try:
        match = re.compile(p["process_match"]) if p["process_match"] else None
    except re.error as e:
        module.fail_json(msg="process_match is not a regular expression: %s" % e, problems=[])
    for spec in VENDORS:
        if p.get(spec["tool_option"]) and p["vendor"] not in ("auto", spec["name"]):
            module.fail_json(msg="vendor=%s does not go with %s" % (p["vendor"], spec["tool_option"]), problems=[])

    spec, tool = find_tool(module, p["vendor"])
    parsed, used, warnings, driver_version = READERS[spec["tool"]](module, spec, tool, p["source"], p["timeout"])
    cards = sorted(parsed["cards"], key=lambda c: c["index"])
    pci = read_pci(PCI_ROOT, spec["name"])
    problems, notes = check_expectations(
        cards, pci, expected_count=p["expected_count"], require_healthy=p["require_healthy"],
        max_temperature=p["max_temperature"], min_utilization=p["min_utilization"], vendor=spec["name"])
    for w in warnings + notes:
        module.warn(w)

    try:
        procs = read_processes(match=match)
    except OSError as e:
        module.fail_json(msg="cannot read /proc to tell who uses the cards: %s" % e, problems=[])
    # the holders of the device files, and those the tool lists (nvidia-smi's compute apps)
    holders = merge_listed(card_holders(procs), [(a["pid"], c["index"], a.get("process_name"))
                                                 for c in cards for a in c.get("processes") or []],
                           spec["card_prefix"])
    facts = {
        "gcu_holders": holders,
        "gcu_vendor": spec["name"],
        "gcu_devices": cards,
        "gcu_device_count": len(cards),
        "gcu_driver_version": driver_version,
        "gcu_efsmi_version": parsed.get("efsmi_version"),
        "gcu_pci_devices": pci,
    }
    result = dict(changed=False, ansible_facts=facts, problems=problems, source=used)
    if p["processes"]:
        result["processes"] = procs
    result[spec["tool_result"]] = tool
    if problems:
        module.fail_json(msg="gcu_devices: %d problem(s): %s" % (len(problems), " | ".join(problems)), **result)
    module.exit_json(**result)
