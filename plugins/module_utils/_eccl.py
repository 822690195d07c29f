# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What eccl_probe's checks found, as problems: the problem codes and their
hints, parsing of the child processes' reports, and the classification of
the framework and collective reports. What a backend checks is its row of
the vendor table (``_vendors.collective_spec``). Where the library lives and
what its load says: ``_eccl_library``; the torch rule: ``_torch_rule``; the
child-process probe scripts: ``_eccl_children``. Pure; Python 3.6+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

from ansible_collections.gcu.topsrider.plugins.module_utils._collective_rank import BUSBW_FORMULA, REPORT_MARKER
from ansible_collections.gcu.topsrider.plugins.module_utils._torch_rule import (
    release_of, stack_of, torch_matches, torch_requirement,
)
from ansible_collections.gcu.topsrider.plugins.module_utils._vendors import collective_spec

STAGE_MARKER = "@@ECCL_PROBE_STAGE@@"

# code -> (what it means, what to do). Every code the module can return.
PROBLEMS = {
    "LIBRARY_MISSING": (
        "libeccl.so was not found in the loader cache, the ld.so.conf directories, "
        "the given library_dirs or TopsRider's default directories",
        "Install the tops-eccl package of the TopsRider bundle (role gcu.topsrider.eccl_env / "
        "module gcu.topsrider.deb_bundle), or pass its directory in library_dirs."),
    "LIBRARY_NOT_ON_LOADER_PATH": (
        "libeccl.so exists but dlopen('libeccl.so') fails, so torch_gcu cannot load it",
        "Put its directory in /etc/ld.so.conf.d/topsrider.conf and run ldconfig "
        "(role gcu.topsrider.tops_sdk does both: its tops_sdk_ld_conf)."),
    "LIBRARY_UNLOADABLE": (
        "a copy of libeccl.so cannot be loaded (corrupt file, wrong architecture or a missing dependency)",
        "Run `ldd <path>` to see what is missing; reinstall the tops-eccl package from the bundle."),
    "LIBRARY_DUPLICATE": (
        "more than one distinct libeccl.so is installed; which one a process gets depends on the loader path",
        "Keep only the copy from the deployed TopsRider version: `dpkg -S <path>` names the owner of each; "
        "remove stray copies and run ldconfig."),
    "PYTHON_MISSING": (
        "the training interpreter given in `python` does not exist or is not executable",
        "Point `python` at the interpreter that trains, e.g. /opt/venvs/train/bin/python."),
    "TORCH_MISSING": (
        "torch cannot be imported by the training interpreter",
        "Install the torch version torch_gcu is built for into that interpreter, "
        "or probe the interpreter that really trains (option python)."),
    "TORCH_GCU_MISSING": (
        "torch_gcu is not installed in the training interpreter, so init_process_group(backend='eccl') "
        "fails with Invalid backend: 'eccl'",
        "Install the torch_gcu wheel of the bundle that matches this Python minor version "
        "(role gcu.topsrider.torch_gcu) into the interpreter that trains."),
    "TORCH_GCU_IMPORT_FAILED": (
        "`import torch_gcu` raised an error",
        "Read the error: 'libeccl.so: cannot open shared object file' means the loader path "
        "(role gcu.topsrider.tops_sdk writes it and runs ldconfig); otherwise reinstall the matching torch_gcu wheel."),
    "TORCH_GCU_API_UNKNOWN": (
        "torch_gcu imported but offers neither the 1.x API (torch_gcu.device_count) nor the 2.x API (torch.gcu)",
        "Reinstall the torch_gcu wheel from the TopsRider bundle; a partial or foreign package shadows it."),
    "TORCH_VERSION_MISMATCH": (
        "the installed torch is not the version torch_gcu was built for",
        "Install the torch version torch_gcu requires (see torch_required), or the torch_gcu wheel built "
        "for the installed torch."),
    "BACKEND_NOT_REGISTERED": (
        "the backend is not registered in torch.distributed: init_process_group fails with Invalid backend",
        "The eccl backend exists only after `import torch_gcu` in the same interpreter: install torch_gcu "
        "there and import it in the training script before init_process_group."),
    "NO_DEVICES": (
        "no GCU is visible to the training interpreter",
        "Check the driver with gcu.topsrider.gcu_devices (driver loaded, cards present) and that "
        "ENFLAME_VISIBLE_DEVICES / TOPS_VISIBLE_DEVICES are not 'none' or wrong indices."),
    "LIBRARY_VERSION_MISMATCH": (
        "the libeccl.so that torch_gcu loads is from another TopsRider release than the one torch_gcu was built "
        "for; ECCL refuses to start (a T20 fails at init_process_group)",
        "Install tops-eccl and the torch_gcu wheel of one release (playbooks/deploy.yml with one bundle); "
        "`dpkg -l tops-eccl` and the torch_gcu version's +<release> suffix must agree."),
    "WORLD_SIZE_TOO_LARGE": (
        "more ranks were asked for than the backend has visible devices; a device backend needs one card per rank",
        "Leave world_size unset (the visible device count is used) or lower it; check ENFLAME_VISIBLE_DEVICES / "
        "CUDA_VISIBLE_DEVICES."),
    "MASTER_PORT_IN_USE": (
        "the rendezvous port on 127.0.0.1 is already taken",
        "Leave master_port unset (a free port is chosen) or choose a free one."),
    "RANK_TIMEOUT": (
        "ranks did not report within the timeout; they were killed",
        "A wedged card or a rank that never joins: check gcu.topsrider.gcu_devices (health, a busy card), "
        "rerun with environment ECCL_DEBUG=INFO, and make sure the launcher starts one process per card."),
    "RANK_FAILED": (
        "a rank exited with an error before reporting",
        "Read the rank's stderr in the message; rerun with environment ECCL_DEBUG=INFO."),
    "WRONG_RESULT": (
        "the all-reduce returned a wrong sum on at least one rank",
        "A card computes or transfers wrong data: check gcu.topsrider.gcu_devices health and ECC, "
        "and unset experimental ECCL_ALGO / ECCL_PROTO settings."),
    "PROBE_FAILED": (
        "a probe child process failed or timed out without reporting",
        "Read stderr in the message; the interpreter or an import may hang or crash."),
}


def problem(code, message=None, hint=None):
    """A problem dict; message/hint default to the table's."""
    meaning, default_hint = PROBLEMS[code]
    return {"code": code, "message": message or meaning, "hint": hint or default_hint}


def failure_message(problems):
    return "eccl_probe found %d problem(s): %s" % (
        len(problems), "; ".join("%s: %s" % (p["code"], p["message"]) for p in problems))


def tail(text, lines=15):
    text = (text or "").rstrip()
    return "\n".join(text.splitlines()[-lines:])


def parse_report(stdout):
    """The JSON report a probe child printed after REPORT_MARKER, or None."""
    for line in reversed((stdout or "").splitlines()):
        if line.startswith(REPORT_MARKER):
            try:
                value = json.loads(line[len(REPORT_MARKER):])
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None


def last_stage(stdout):
    stage = None
    for line in (stdout or "").splitlines():
        if line.startswith(STAGE_MARKER):
            stage = line[len(STAGE_MARKER):].strip()
    return stage


# --------------------------------------------------------------------------
# Classification


def classify_framework(report, backend):
    """FRAMEWORK_SCRIPT report -> (framework result, problems).

    The backend's row decides what is checked: its torch_module (torch_gcu
    for eccl: its import, its torch requirement, API generation and the
    library release) only where it has one; the devices of a device backend
    (CUDA's for nccl); nothing device-side for gloo. An unknown backend is a
    VendorError.
    """
    spec = collective_spec(backend)
    plugin = spec["torch_module"]
    problems = []
    requirement = torch_requirement(report.get("torch_gcu_requires"))
    required = requirement[2:] if requirement and requirement.startswith("==") and not requirement.startswith(
        "===") else requirement
    matches = torch_matches(report.get("torch_version"), requirement)
    result = {
        "python": report.get("python"),
        "python_version": report.get("python_version"),
        "torch_version": report.get("torch_version"),
        "torch_location": report.get("torch_location"),
        "torch_gcu_version": report.get("torch_gcu_version"),
        "torch_gcu_location": report.get("torch_gcu_location"),
        "torch_gcu_warnings": report.get("torch_gcu_warnings") or [],
        "api_generation": report.get("api_generation"),
        "is_available": report.get("is_available"),
        "device_count": report.get("device_count"),
        "distributed_available": report.get("distributed_available"),
        "backend": backend,
        "backend_registered": report.get("backend_registered"),
        "torch_required": required,
        "torch_matches": matches,
        "loaded_library": report.get("loaded_library"),
        "cuda_version": report.get("cuda_version"),
    }
    python = report.get("python")
    if report.get("torch_version") is None:
        problems.append(problem("TORCH_MISSING", "torch cannot be imported by %s: %s" % (
            python, report.get("torch_error"))))
        if plugin and report.get("torch_gcu_installed") is False:
            problems.append(problem("TORCH_GCU_MISSING", "%s is not installed for %s either" % (plugin, python)))
        return result, problems
    plugin_ok = not plugin
    if plugin:
        if report.get("torch_gcu_missing"):
            problems.append(problem("TORCH_GCU_MISSING", "%s is not installed for %s (torch %s is)" % (
                plugin, python, report.get("torch_version"))))
        elif report.get("torch_gcu_error"):
            problems.append(problem("TORCH_GCU_IMPORT_FAILED", "import %s failed in %s: %s" % (
                plugin, python, report.get("torch_gcu_error"))))
        else:
            plugin_ok = True
    if plugin and plugin_ok and matches is False:
        message = "%s %s requires torch %s but %s has torch %s" % (
            plugin, report.get("torch_gcu_version"), requirement, python, report.get("torch_version"))
        hint = "Install torch==%s into %s, or the %s wheel built for torch %s." % (
            required, python, plugin, release_of(report.get("torch_version")))
        problems.append(problem("TORCH_VERSION_MISMATCH", message, hint))
    if plugin_ok and spec["no_devices"]:
        if plugin and report.get("api_generation") is None:
            problems.append(problem("TORCH_GCU_API_UNKNOWN"))
        elif not report.get("device_count"):
            runtime = spec["runtime_version"]
            message = spec["no_devices"].format(
                python=python, torch=report.get("torch_version"), api=report.get("api_generation"),
                count=report.get("device_count") or 0, plural="" if report.get("device_count") == 1 else "s",
                runtime_version=report.get("cuda_version") or (runtime or {}).get("missing"),
                error=(": " + report["device_error"]) if report.get("device_error") else "")
            problems.append(problem("NO_DEVICES", message, backend_hint(spec, "NO_DEVICES", python)))
    if plugin and plugin_ok:
        loaded = report.get("loaded_library") or {}
        want = stack_of(report.get("torch_gcu_version"))
        have = loaded.get("version")
        if want and have and release_of(have) != release_of(want):
            problems.append(problem("LIBRARY_VERSION_MISMATCH", "%s %s (built for TopsRider %s) loads %s "
                                    "version %s" % (plugin, report.get("torch_gcu_version"), want,
                                                    loaded.get("path") or spec["library"]["name"], have)))
    if report.get("backend_registered") is False:
        if report.get("distributed_available") is False:
            why = report.get("backend_error") or "torch built without distributed"
            msg = "torch.distributed is not available in %s (%s)" % (python, why)
        else:
            msg = "%s in %s%s, so init_process_group(backend='%s') fails (Invalid backend / Unknown c10d backend)" % (
                report.get("backend_error") or "backend '%s' is not registered" % backend, python,
                " after import %s" % plugin if plugin and plugin_ok else "", backend)
        problems.append(problem("BACKEND_NOT_REGISTERED", msg, backend_hint(spec, "BACKEND_NOT_REGISTERED", python)))
    return result, problems


def backend_hint(spec, code, python):
    """The backend row's own hint for `code` (None: the problem table's)."""
    hint = spec["hints"].get(code)
    return hint.format(python=python) if hint else None


def _ranks_text(ranks):
    return ", ".join(str(r) for r in ranks)


def classify_collective(outcomes, world_size, timed_out, timeout, job_world_size=None):
    """Per-rank outcomes -> (collective fields, problems).

    world_size: the ranks started here; job_world_size: the ranks of the whole
    (multi-node) job, which busbw's 2(n-1)/n counts (default world_size).

    outcomes: list of {rank, rc, report, last_stage, stderr, killed, pid}
    where killed is None, "timeout" (the run hit `timeout`) or "aborted"
    (killed after another rank failed).
    """
    problems = []
    reported = [o for o in outcomes if o.get("report")]
    by_size = {}
    order = []
    for o in reported:
        for res in o["report"].get("results") or []:
            size = res["size_bytes"]
            if size not in by_size:
                by_size[size] = []
                order.append(size)
            by_size[size].append((o["rank"], res))
    results = []
    for size in order:
        entries = by_size[size]
        slowest = max(res["seconds"] for _rank, res in entries)
        algbw = (size / slowest / 1e9) if slowest > 0 else None
        n = job_world_size or world_size
        busbw = algbw * 2.0 * (n - 1) / n if algbw is not None else None
        wrong = [(rank, res) for rank, res in entries if not res.get("correct")]
        results.append({
            "size_bytes": size,
            "latency_us": round(slowest * 1e6, 1),
            "algbw_gbps": round(algbw, 6) if algbw is not None else None,
            "busbw_gbps": round(busbw, 6) if busbw is not None else None,
            "ranks": len(entries),
            "correct": not wrong and len(entries) == world_size,
        })
        for rank, res in wrong:
            problems.append(problem("WRONG_RESULT", "all_reduce of %d bytes: rank %d got %s, expected %s" % (
                size, rank, res.get("got"), res.get("expected"))))
    hung = [o for o in outcomes if not o.get("report") and o.get("killed") == "timeout"]
    if hung:
        stages = {}
        for o in hung:
            stages.setdefault(o.get("last_stage") or "start", []).append(o["rank"])
        where = "; ".join("rank %s in %s" % (_ranks_text(r), s) for s, r in sorted(stages.items()))
        problems.append(problem("RANK_TIMEOUT", "%d of %d ranks did not report within %ss and were killed (%s)" % (
            len(hung), world_size, timeout, where)))
    failed = [o for o in outcomes if not o.get("report") and not o.get("killed")]
    for o in failed:
        err = tail(o.get("stderr"), 8)
        if "does not match TopsRider" in err:
            problems.append(problem("LIBRARY_VERSION_MISMATCH", "rank %d: %s" % (o["rank"], err.splitlines()[-1])))
        elif "Invalid backend" in err or "Unknown c10d backend" in err:
            problems.append(problem("BACKEND_NOT_REGISTERED", "rank %d: %s" % (o["rank"], err.splitlines()[-1])))
        elif "address already in use" in err.lower() or "EADDRINUSE" in err:
            problems.append(problem("MASTER_PORT_IN_USE", "rank %d could not use the rendezvous port: %s" % (
                o["rank"], err.splitlines()[-1])))
        else:
            problems.append(problem("RANK_FAILED", "rank %d exited with rc=%s in %s: %s" % (
                o["rank"], o.get("rc"), o.get("last_stage") or "start", err or "(no stderr)")))
    aborted = [o["rank"] for o in outcomes if not o.get("report") and o.get("killed") == "aborted"]
    if aborted and problems:
        problems[-1]["message"] += "; ranks %s were killed after that" % _ranks_text(aborted)
    libraries = []
    for o in reported:
        lib = o["report"].get("library")
        if lib and lib not in libraries:
            libraries.append(lib)
    fields = {
        "ranks_reported": len(reported),
        "timed_out": bool(timed_out),
        "bandwidth": BUSBW_FORMULA,
        # What the ranks really loaded (their own /proc/self/maps): one entry unless ranks differ.
        "libraries": libraries,
        "devices": sorted(set(o["report"].get("device") for o in reported if o["report"].get("device"))),
        "api": (reported[0]["report"].get("api") if reported else None),
        "results": results,
        "ranks": [{"rank": o["rank"], "pid": o.get("pid"), "rc": o.get("rc"), "reported": bool(o.get("report")),
                   "last_stage": o.get("last_stage"), "killed": o.get("killed")} for o in outcomes],
    }
    return fields, problems
