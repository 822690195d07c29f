#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: topsrider_state
short_description: Read what TopsRider state a node has, in one pass, for drift checks
version_added: "0.1.0"
description:
  - Collects, in one call, everything a drift check compares with the desired state
    (C(playbooks/drift.yml) and the filter P(gcu.topsrider.topsrider_drift_findings#filter)), namely the
    installed versions and holds of Debian packages (one C(dpkg-query) call), sha256, mode,
    owner and (small UTF-8 files) content of files, the Python, torch, torch_gcu and pip versions
    of a training interpreter (from package metadata, without importing torch; the role
    C(gcu.topsrider.torch_gcu) reads them here too), where the loader
    resolves a library (C(ldconfig -p)) and which copies of it a package installed
    (C(dpkg-query -L)), the GCUs the driver sees (C(efsmi -q), the summary table as
    fall-back) with the PCI view, the processes that hold a card (who uses the node),
    and the node as Slurm sees it (drain state and reason, features, the jobs on it).
  - Read-only; never reports C(changed). Something it cannot read (efsmi fails, the
    interpreter is missing) is returned as an C(error) in that part of the result, not a
    failure, so that a drift report can name it.
author:
  - gcu.topsrider contributors (@gcu-topsrider)
options:
  packages:
    description:
      - Debian package names whose installed version, status and hold are read.
    type: list
    elements: str
    default: []
  files:
    description:
      - Absolute paths of files to describe.
    type: list
    elements: path
    default: []
  python:
    description:
      - Interpreter of the training environment whose Python, torch, torch_gcu and pip versions are read.
    type: path
  library:
    description:
      - File name of a shared library (C(libeccl.so)) whose resolution in the loader cache is read.
    type: str
  library_package:
    description:
      - Debian package that installs O(library); the copies it installed are listed so that
        they compare with what the loader resolves.
    type: str
  devices:
    description:
      - Read the GCUs the driver sees (efsmi) and the Enflame devices on PCI.
    type: bool
    default: false
  efsmi_path:
    description:
      - Path of efsmi; by default looked up in C(PATH), C(/usr/sbin) and C(/usr/local/bin).
    type: path
  dpkg_lock:
    description:
      - Read whether another process (apt, dpkg, unattended-upgrades) holds the dpkg locks now,
        with the same reader C(gcu.topsrider.deb_bundle) takes them with (never waits).
    type: bool
    default: false
  space:
    description:
      - A directory whose file system's free space is read (its nearest existing parent when it
        does not exist yet), e.g. the bundle cache root before the first deploy.
    type: path
  system:
    description:
      - Read the node's OS family and architecture (C(/etc/os-release), the kernel's machine name) and its
        local facts (every C(*.fact) JSON file in O(facts_dir), as C(ansible_local) has them), what a deploy's
        preflight would otherwise gather with C(ansible.builtin.setup).
    type: bool
    default: false
  facts_dir:
    description: Where the local facts are (C(ansible.builtin.setup)'s C(fact_path) default).
    type: path
    default: /etc/ansible/facts.d
  holders:
    description:
      - Read who uses the node's cards, from C(/proc) (the one busy reader,
        C(plugins/module_utils/_holders.py)), every process that holds a card's device file open
        (C(/dev/gcu<N>); on NVIDIA nodes C(/dev/nvidia<N>)) with its pid, user, command, cards and
        Slurm job (C(SLURM_JOB_ID) in its environment). Needs root to see other users' processes.
    type: bool
    default: false
  slurm_node:
    description:
      - The node's Slurm NodeName. When set, read the node as Slurm sees it (C(sinfo) - state, drain
        reason, features) and the jobs Slurm runs on it (C(squeue -w)). Needs the Slurm client commands.
    type: str
  slurm_jobs:
    description:
      - Job ids whose records are read (C(scontrol show job) - state, restarts, exit code, nodes), e.g. the
        jobs that left a node while a deploy waited for them. Needs O(slurm_node).
    type: list
    elements: str
    default: []
  slurm_cluster:
    description:
      - Also read every running job of the cluster with its nodes and every node's features, and name the
        jobs whose nodes carry different release features (O(feature_prefix)). Needs O(slurm_node).
    type: bool
    default: false
  feature_prefix:
    description: The prefix of the node feature that names the deployed release (C(tops_2.5.140)).
    type: str
    default: tops_
extends_documentation_fragment:
  - gcu.topsrider.attributes
  - gcu.topsrider.attributes.read_only
attributes:
  platform:
    description: Debian-family nodes (dpkg).
notes:
  - Commands run with C(LC_ALL=C); the training interpreter runs a short metadata-only probe.
  - Files above 64 KiB, or not UTF-8, are described without content.
seealso:
  - module: gcu.topsrider.gcu_devices
  - module: gcu.topsrider.eccl_probe
"""

EXAMPLES = r"""
- name: Read a node's TopsRider state in one pass
  gcu.topsrider.topsrider_state:
    packages: [tops-sdk, topsfactor, tops-eccl]
    files:
      - /etc/profile.d/topsrider.sh
      - /etc/ld.so.conf.d/topsrider.conf
    python: /opt/venvs/train/bin/python
    library: libeccl.so
    library_package: tops-eccl
    devices: true
  register: node_state

- name: Who uses the node (processes holding a card) and what Slurm runs there
  gcu.topsrider.topsrider_state:
    holders: true
    slurm_node: t20-01
  register: node_use

- name: Show the installed ECCL version and where libeccl.so resolves
  ansible.builtin.debug:
    msg: "{{ node_state.state.packages['tops-eccl'].version }} {{ node_state.state.library.resolved | map(attribute='path') }}"
"""

RETURN = r"""
state:
  description: What the node has. Parts that were not asked for are null.
  returned: always
  type: dict
  contains:
    packages:
      description: Per package name, C(version) (null when not installed), dpkg C(status), C(want) and C(held).
      type: dict
      sample: {"tops-eccl": {"version": "2.5.136-1", "status": "installed", "want": "hold", "held": true}}
    files:
      description: >-
        Per path, C(exists) and for an existing one C(type) (file, link, other), C(mode), C(owner), C(group),
        C(size), C(sha256) and C(content) (null above 64 KiB or when not UTF-8).
      type: dict
      sample: {"/etc/ld.so.conf.d/topsrider.conf": {"exists": true, "type": "file", "mode": "0644", "owner": "root",
               "group": "root", "size": 120, "sha256": "9f2c...", "content": "/usr/local/tops/lib\n"}}
    python:
      description: >-
        C(path) of the interpreter, C(python) (major.minor), C(executable), C(torch), C(torch_gcu) and C(pip)
        versions (null when not installed), or C(error) when the interpreter could not be probed.
      type: dict
      sample: {"path": "/opt/venvs/train/bin/python", "python": "3.11", "executable": "/opt/venvs/train/bin/python",
               "torch": "2.13.0", "torch_gcu": "2.13.0+2.5.136", "pip": "23.0.1", "error": null}
    library:
      description: >-
        C(name), C(package), C(resolved) (the loader cache's entries, in its order) and C(owned) (the package's
        copies), each a list of C(path) and C(realpath); C(error) when ldconfig failed.
      type: dict
      sample: {"name": "libeccl.so", "package": "tops-eccl", "error": null,
               "resolved": [{"path": "/usr/local/tops/lib/libeccl.so", "realpath": "/usr/local/tops/lib/libeccl.so"}],
               "owned": [{"path": "/usr/local/tops/lib/libeccl.so", "realpath": "/usr/local/tops/lib/libeccl.so"}]}
    devices:
      description: >-
        C(count) and C(cards) (index, bus_id, serial, health) the driver sees, C(source) (query or summary),
        C(pci_count) (Enflame PCI functions, null when unreadable), or C(error) when efsmi failed or
        hung (killed after 60 seconds, the error says so).
      type: dict
      sample: {"count": 8, "source": "query", "pci_count": 8, "error": null,
               "cards": [{"index": 0, "bus_id": "0000:3d:00.0", "serial": "W28001150301", "health": true}]}
    dpkg_lock:
      description: C(busy) (the path of the lock another process holds, null when both are free) or C(error).
      type: dict
      sample: {"busy": null, "error": null}
    space:
      description: C(path) as asked, C(checked) (the existing directory read), C(free) bytes available, or C(error).
      type: dict
      sample: {"path": "/var/cache/topsrider", "checked": "/var/cache", "free": 52428800000, "error": null}
    system:
      description: >-
        C(os_family) (C(Debian) for Debian and its derivatives, as C(ansible_facts.os_family)), C(distribution)
        (C(/etc/os-release)'s C(ID)), C(distribution_version) (C(VERSION_ID)), C(architecture) (the machine name)
        and C(local), the local facts by file name without C(.fact) (a file that is not a JSON object: its error
        as a string, as C(ansible_local) has it).
      type: dict
      sample: {"os_family": "Debian", "distribution": "debian", "distribution_version": "12", "architecture": "x86_64",
               "local": {"topsrider": {"version": "2.5.136", "snapshot": "20261124T070404Z"}}}
    holders:
      description: >-
        C(processes), the processes that hold a card (C(pid), C(ppid), C(user), C(command), C(devices),
        C(cards), C(slurm_job_id)), and C(error) when C(/proc) could not be read.
      type: dict
      sample: {"error": null, "processes": [{"pid": 4242, "ppid": 4200, "user": "alice", "command": "python train.py",
               "devices": ["gcu0"], "cards": [0], "slurm_job_id": "17"}]}
    slurm:
      description: >-
        C(node) (C(name), C(state) as sinfo's C(%T), C(drain), C(reason), C(features), C(active_features)),
        C(jobs) on it (C(id), C(state), C(user), C(time_left), C(name)), C(records) of O(slurm_jobs)
        (null for a job Slurm no longer knows), C(cluster) (with O(slurm_cluster): C(running), C(features),
        C(two_releases)), or C(error) when Slurm could not be asked.
      type: dict
      sample: {"error": null, "node": {"name": "t20-01", "state": "draining", "drain": true,
               "reason": "gcu.topsrider deploy 20261125T140000Z: draining", "features": ["tops_2.5.136"],
               "active_features": ["tops_2.5.136"]},
               "jobs": [{"id": "17", "state": "RUNNING", "user": "alice", "time_left": "1:02:03", "name": "train"}],
               "records": {}, "cluster": null}
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gcu.topsrider.plugins.module_utils._dpkg import QUERY_FORMAT
from ansible_collections.gcu.topsrider.plugins.module_utils._dpkg_io import dpkg_lock_busy
from ansible_collections.gcu.topsrider.plugins.module_utils._holders import holders_state
from ansible_collections.gcu.topsrider.plugins.module_utils._node import (
    C_LOCALE, EFSMI_DIRS, PCI_ROOT, parse_ldconfig_cache, query_then_summary, read_pci,
)
from ansible_collections.gcu.topsrider.plugins.module_utils._slurm import NODE_NAME, slurm_state
from ansible_collections.gcu.topsrider.plugins.module_utils._state import (
    file_state, library_state, owned_files, packages_state, read_python, space_state, system_state,
)


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


def read_dpkg_lock():
    try:
        return {"busy": dpkg_lock_busy(), "error": None}
    except (IOError, OSError) as e:
        return {"busy": None, "error": "cannot read the dpkg locks: %s" % e}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            packages=dict(type="list", elements="str", default=[]),
            files=dict(type="list", elements="path", default=[]),
            python=dict(type="path"),
            library=dict(type="str"),
            library_package=dict(type="str"),
            devices=dict(type="bool", default=False),
            efsmi_path=dict(type="path"),
            dpkg_lock=dict(type="bool", default=False),
            space=dict(type="path"),
            system=dict(type="bool", default=False),
            facts_dir=dict(type="path", default="/etc/ansible/facts.d"),
            holders=dict(type="bool", default=False),
            slurm_node=dict(type="str"),
            slurm_jobs=dict(type="list", elements="str", default=[]),
            slurm_cluster=dict(type="bool", default=False),
            feature_prefix=dict(type="str", default="tops_"),
        ),
        required_by={"library_package": "library"},
        supports_check_mode=True,
    )
    p = module.params
    bad = [f for f in p["files"] if not os.path.isabs(f)]
    if bad:
        module.fail_json(msg="files must be absolute paths, got: %s" % ", ".join(bad))
    if p["library"] is not None and (not p["library"] or "/" in p["library"]):
        module.fail_json(msg="library is a file name such as libeccl.so, got %r" % p["library"])
    if p["slurm_node"] is not None and not NODE_NAME.match(p["slurm_node"]):
        module.fail_json(msg="slurm_node is a Slurm NodeName (letters, digits, _ . -), got %r" % p["slurm_node"])
    if (p["slurm_jobs"] or p["slurm_cluster"]) and p["slurm_node"] is None:
        module.fail_json(msg="slurm_jobs and slurm_cluster need slurm_node")
    bad_jobs = [j for j in p["slurm_jobs"] if not j.replace("_", "").isdigit()]
    if bad_jobs:
        module.fail_json(msg="slurm_jobs are Slurm job ids (digits, or 12_3 for an array task), got %s" % bad_jobs)

    state = {
        "packages": read_packages(module, p["packages"]),
        "files": dict((f, file_state(f)) for f in p["files"]),
        "python": read_python(module, p["python"]) if p["python"] else None,
        "library": read_library(module, p["library"], p["library_package"]) if p["library"] else None,
        "devices": read_devices(module, p["efsmi_path"]) if p["devices"] else None,
        "dpkg_lock": read_dpkg_lock() if p["dpkg_lock"] else None,
        "space": space_state(p["space"]) if p["space"] else None,
        "system": system_state(p["facts_dir"]) if p["system"] else None,
        "holders": holders_state() if p["holders"] else None,
        "slurm": slurm_state(module, p["slurm_node"], p["slurm_jobs"], p["slurm_cluster"], p["feature_prefix"])
        if p["slurm_node"] is not None else None,
    }
    module.exit_json(changed=False, state=state)


if __name__ == "__main__":
    main()
