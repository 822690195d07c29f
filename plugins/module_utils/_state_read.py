# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""topsrider_state's one pass over a node: its options checked before
anything is read, every part asked for read (dpkg-query, the files, the
training Python, ldconfig, efsmi and PCI, the dpkg locks, free space, the
system and local facts, who holds the cards, Slurm), and, given the desired
state, what it names read too and compared with it (module_utils/_compare.py,
the collection's one comparison).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

from ansible_collections.gcu.topsrider.plugins.module_utils._compare import (
    compare, desired_problems, desired_reads, job_files, job_problems,
)
from ansible_collections.gcu.topsrider.plugins.module_utils._dpkg import QUERY_FORMAT
from ansible_collections.gcu.topsrider.plugins.module_utils._dpkg_io import dpkg_lock_busy
from ansible_collections.gcu.topsrider.plugins.module_utils._holders import holders_state
from ansible_collections.gcu.topsrider.plugins.module_utils._node import (
    C_LOCALE, EFSMI_DIRS, PCI_ROOT, parse_ldconfig_cache, query_then_summary, read_pci,
)
from ansible_collections.gcu.topsrider.plugins.module_utils._slurm import NODE_NAME, slurm_state
from ansible_collections.gcu.topsrider.plugins.module_utils._state import (
    file_state, library_state, record_state, listed_paths, owned_files, package_files_state, packages_state, parse_dpkg_verify,
    SYSTEMD_UNIT_DIR, read_python, service_state, space_state, system_state,
)
from ansible_collections.gcu.topsrider.plugins.module_utils._vendors import VendorError, vendor_spec


def _fail_cmd(module, argv, rc, out, err, what):
    module.fail_json(msg="`%s` failed (rc=%d) while reading %s: %s" % (
        " ".join(argv), rc, what, (err or out or "").strip() or "no output"),
        cmd=" ".join(argv), rc=rc, stdout=out, stderr=err)


def read_packages(module, names):
    if not names:
        return {}
    argv = [module.get_bin_path("dpkg-query", required=True), "-W", "-f=" + QUERY_FORMAT, "--"] + list(names)
    rc, out, err = module.run_command(argv, environ_update=C_LOCALE)
    # rc 1: some names are unknown to dpkg, which is an answer (not installed).
    if rc not in (0, 1):
        _fail_cmd(module, argv, rc, out, err, "package versions")
    return packages_state(names, out)


def read_package_files(module, names, packages):
    """The files of the installed packages among `names` that differ from
    what dpkg installed (md5; conffiles too; missing ones): one `dpkg --verify`
    call for all of them (dpkg hashes each file once; no other read). Only
    when it finds something and more than one package was verified, each
    package's listing (`dpkg-query -L`) says whose file it is. A package that
    is not installed has no entry (its version finding says so)."""
    names = [n for n in names if (packages.get(n) or {}).get("version") is not None]
    result = {"packages": dict((n, []) for n in names), "error": None}
    if not names:
        return result
    argv = [module.get_bin_path("dpkg", required=True), "--verify", "--verify-format=rpm", "--"] + names
    rc, out, err = module.run_command(argv, environ_update=C_LOCALE)
    problems = parse_dpkg_verify(out)
    # rc 1: some file differs (the lines say which); anything else, or rc 1 with no line, is dpkg failing.
    if rc not in (0, 1) or (rc == 1 and not problems):
        result["error"] = "`%s` failed (rc=%d): %s" % (" ".join(argv), rc, (err or out or "").strip()[:300]
                                                       or "no output")
        return result
    listings = {}
    if problems and len(names) > 1:
        for name in names:
            largv = [module.get_bin_path("dpkg-query", required=True), "-L", "--", name]
            lrc, listing, lerr = module.run_command(largv, environ_update=C_LOCALE)
            if lrc != 0:
                _fail_cmd(module, largv, lrc, listing, lerr, "the files of " + name)
            listings[name] = listed_paths(listing)
    result["packages"] = package_files_state(names, problems, listings)
    return result


def read_job(vendor, env_file, state):
    """What a training job needs on a `vendor` node (_compare: the
    launcher's files and rule, the library's identity from `state`)."""
    return {"vendor": vendor, "files": [f["path"] for f in job_files(vendor, env_file)],
            "problems": job_problems(vendor, state, env_file)}


def read_library(module, library, package):
    ldconfig = module.get_bin_path("ldconfig", required=True, opt_dirs=["/sbin", "/usr/sbin"])
    argv = [ldconfig, "-p"]
    rc, out, err = module.run_command(argv, environ_update=C_LOCALE)
    if rc != 0:
        state = library_state(library, package, [], [])
        state["error"] = "`%s` failed (rc=%d): %s" % (" ".join(argv), rc, (err or "").strip())
        return state
    resolved = parse_ldconfig_cache(out, library)
    owned = []
    if package:
        argv = [module.get_bin_path("dpkg-query", required=True), "-L", "--", package]
        rc, listing, err = module.run_command(argv, environ_update=C_LOCALE)
        # rc 1: the package is not installed, so it owns no copy.
        if rc not in (0, 1):
            _fail_cmd(module, argv, rc, listing, err, "the files of " + package)
        owned = owned_files(listing if rc == 0 else "", library)
    state = library_state(library, package, resolved, owned)
    state["error"] = None
    return state


def read_devices(module, efsmi_path):
    result = {"count": None, "cards": [], "source": None, "pci_count": read_pci(PCI_ROOT)["count"],
              "error": None}
    efsmi = efsmi_path or module.get_bin_path("efsmi", required=False, opt_dirs=EFSMI_DIRS)
    if not efsmi or not os.access(efsmi, os.X_OK):
        result["error"] = "efsmi not found (%s)" % (efsmi_path or "PATH, " + ", ".join(EFSMI_DIRS))
        return result
    parsed, source, q, s = query_then_summary(module, efsmi)
    if parsed is None:
        result["error"] = "; ".join(
            r["error"] if r["timed_out"]
            else "`%s` rc=%d: %s" % (r["cmd"], r["rc"], (r["stderr"] or r["stdout"] or "").strip()[:300])
            if r["rc"] != 0 else "`%s`: %s" % (r["cmd"], r["error"][:300]) for r in (q, s) if r is not None)
        return result
    cards = sorted(parsed["cards"], key=lambda c: c["index"])
    result.update(count=len(cards), source=source,
                  cards=[dict((k, c.get(k)) for k in ("index", "bus_id", "serial", "health")) for c in cards])
    return result


def read_services(module, names):
    """{unit: service_state} for the units `names`: only a unit whose file is
    in SYSTEMD_UNIT_DIR (the collection installed it) is asked about, with
    `systemctl is-active`."""
    out = {}
    for name in names:
        if not os.path.isfile(os.path.join(SYSTEMD_UNIT_DIR, name)):
            out[name] = service_state(False)
            continue
        systemctl = module.get_bin_path("systemctl", required=False)
        if not systemctl:
            out[name] = service_state(True, None, "", "systemctl not found: the node has no systemd")
            continue
        rc, stdout, stderr = module.run_command([systemctl, "is-active", "--", name], environ_update=C_LOCALE)
        out[name] = service_state(True, rc, stdout, stderr)
    return out


def read_dpkg_lock():
    try:
        return {"busy": dpkg_lock_busy(), "error": None}
    except (IOError, OSError) as e:
        return {"busy": None, "error": "cannot read the dpkg locks: %s" % e}


def param_problems(p):
    """What is wrong with the options (messages; [] when nothing is)."""
    out = []
    for option in ("files", "records"):
        bad = [f for f in p[option] if not os.path.isabs(f)]
        if bad:
            out.append("%s must be absolute paths, got: %s" % (option, ", ".join(bad)))
    if p["library"] is not None and (not p["library"] or "/" in p["library"]):
        out.append("library is a file name such as libeccl.so, got %r" % p["library"])
    if p["slurm_node"] is not None and not NODE_NAME.match(p["slurm_node"]):
        out.append("slurm_node is a Slurm NodeName (letters, digits, _ . -), got %r" % p["slurm_node"])
    if (p["slurm_jobs"] or p["slurm_cluster"]) and p["slurm_node"] is None:
        out.append("slurm_jobs and slurm_cluster need slurm_node")
    bad_jobs = [j for j in p["slurm_jobs"] if not j.replace("_", "").isdigit()]
    if bad_jobs:
        out.append("slurm_jobs are Slurm job ids (digits, or 12_3 for an array task), got %s" % bad_jobs)
    if p["job_env_file"] is not None and p["job"] is None:
        out.append("job_env_file needs job")
    if p["job_env_file"] and not os.path.isabs(p["job_env_file"]):
        out.append("job_env_file must be an absolute path (or empty: no environment file), got %r" % p["job_env_file"])
    if p["job"] is not None:
        try:
            vendor_spec(p["job"])
        except VendorError as e:
            out.append("job: %s" % e)
    if p["desired"] is not None:
        out.extend(desired_problems(p["desired"]))
        lib = (p["desired"].get("library") or {}) if not out else {}
        if p["library"] and lib.get("name") and lib["name"] != p["library"]:
            out.append("library %s and desired.library.name %s differ" % (p["library"], lib["name"]))
    return out


def read_state(module, p):
    """{state} of everything `p` (the module's options) asks for, and with
    `desired` also {findings, pending}."""
    reads = dict((k, p[k]) for k in ("packages", "package_files", "files", "python", "library", "library_package",
                                     "devices"))
    reads["services"] = []
    if p["job"] is not None:
        # The job's library: its resolution, its package's version and files.
        lib = vendor_spec(p["job"])["job_library"] or {}
        reads["library"] = reads["library"] or lib.get("name")
        reads["library_package"] = reads["library_package"] or lib.get("package")
        if lib.get("package"):
            reads["package_files"] = list(dict.fromkeys(list(reads["package_files"]) + [lib["package"]]))
    if p["desired"] is not None:
        want = desired_reads(p["desired"])
        reads["package_files"] = list(dict.fromkeys(list(reads["package_files"]) + want["package_files"]))
        reads["packages"] = list(dict.fromkeys(list(reads["packages"]) + want["packages"]))
        reads["files"] = list(dict.fromkeys(list(reads["files"]) + want["files"]))
        for key in ("python", "library", "library_package"):
            reads[key] = reads[key] or want[key]
        reads["devices"] = reads["devices"] or want["devices"]
        reads["services"] = want["services"]
    # A verified package's version is read too (the reinstall hint names it).
    reads["packages"] = list(dict.fromkeys(list(reads["packages"]) + list(reads["package_files"])))
    packages = read_packages(module, reads["packages"])
    state = {
        "packages": packages,
        "package_files": read_package_files(module, reads["package_files"], packages)
        if reads["package_files"] else None,
        "files": dict((f, file_state(f)) for f in reads["files"]),
        "records": dict((r, record_state(r)) for r in p["records"]),
        "python": read_python(module, reads["python"]) if reads["python"] else None,
        "library": read_library(module, reads["library"], reads["library_package"]) if reads["library"] else None,
        "devices": read_devices(module, p["efsmi_path"]) if reads["devices"] else None,
        "dpkg_lock": read_dpkg_lock() if p["dpkg_lock"] else None,
        "space": space_state(p["space"]) if p["space"] else None,
        "system": system_state(p["facts_dir"]) if p["system"] else None,
        "holders": holders_state() if p["holders"] else None,
        "slurm": slurm_state(module, p["slurm_node"], p["slurm_jobs"], p["slurm_cluster"], p["feature_prefix"])
        if p["slurm_node"] is not None else None,
        "services": read_services(module, reads["services"]) if reads["services"] else None,
    }
    state["job"] = read_job(p["job"], p["job_env_file"], state) if p["job"] is not None else None
    result = {"state": state}
    if p["desired"] is not None:
        result.update(compare(p["desired"], state))
    return result
