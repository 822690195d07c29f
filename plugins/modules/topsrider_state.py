#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: topsrider_state
short_description: Read what TopsRider state a node has, in one pass, and compare it with the desired state
version_added: "0.1.0"
description:
  - Collects, in one call, everything a drift check compares with the desired state
    (C(playbooks/drift.yml) and the filter P(gcu.topsrider.topsrider_drift_findings#filter)), namely the
    installed versions and holds of Debian packages (one C(dpkg-query) call), sha256, mode,
    owner and (small UTF-8 files) content of files, the Python, torch, torch_gcu and pip versions
    of a training interpreter (from package metadata, without importing torch; the role
    C(gcu.topsrider.torch_gcu) reads them here too), where the loader
    resolves a library (C(ldconfig -p)) and which copies of it a package installed
    (C(dpkg-query -L)), the files of packages that differ from what dpkg installed (C(dpkg --verify)),
    what a training job needs (the launcher's files, the library's identity), the GCUs the driver sees (C(efsmi -q), the summary table as
    fall-back) with the PCI view, the processes that hold a card (who uses the node),
    and the node as Slurm sees it (drain state and reason, features, the jobs on it).
  - Given O(desired), reads what it names and compares the node with it in the same call (RV(findings),
    RV(pending)); the deploy's fast path and end-state proof and the drift check all use that one read and
    one comparison.
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
  package_files:
    description:
      - Debian package names whose installed files are verified against what dpkg recorded when it installed them
        (one C(dpkg --verify) call for all of them - the md5 of every file, conffiles too, and files that are
        missing); RV(state.package_files) names each file that differs. A package that is not installed is
        skipped (its version is null in RV(state.packages)).
      - Reads every byte of the packages' files; the drift check runs it on every round (C(playbooks/drift.yml),
        C(topsrider_drift_package_files)).
    type: list
    elements: str
    default: []
    version_added: 0.3.0
  job:
    description:
      - A vendor name (C(enflame)). Read what a training job needs on a node of that vendor - the files the
        C(gcu.topsrider.dist_launch) scripts refuse to start without, with the same rule and message
        (C(plugins/module_utils/_compare.py)), and the identity of its collective library (where the loader
        resolves it, its package's files as dpkg installed them) - into RV(state.job). C(playbooks/verify.yml) uses it.
    type: str
    version_added: 0.3.0
  job_env_file:
    description:
      - The environment file a job sources, when it is not the vendor's (the role's C(dist_launch_env_file));
        empty for none. Needs O(job).
    type: path
    version_added: 0.3.0
  files:
    description:
      - Absolute paths of files to describe.
    type: list
    elements: path
    default: []
  records:
    description:
      - Absolute paths of the collection's own JSON records on the node (a deploy snapshot
        C(deploys/<id>.json), its package journal C(snapshots/<id>.json), the open-deploy mark
        C(open-deploy.json)), each read and parsed here, whole up to 16 MiB, into RV(state.records).
      - A record that cannot be used is a named problem there, not a failure of the module.
    type: list
    elements: path
    default: []
    version_added: 0.4.0
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
  desired:
    description:
      - The state the node should be in (C(desired_state) of C(playbooks/vars/desired_state.yml)) - C(manifest)
        (the bundle's C(manifest.json)), C(hold), C(files) (each path's C(content), C(mode), C(owner), C(group)),
        C(python), C(library) (C(name), C(package)), C(expected_count), C(require_healthy) and C(node) (the name
        findings carry); for a deploy also C(stage_path), C(manifest_sha256) and C(facts_file) (all three);
        optionally C(services), systemd unit names (C(playbooks/drift.yml) names the
        P(gcu.topsrider.card_exporter#role)'s C(topsrider-card-exporter.service)) -
        a unit whose file is in C(/etc/systemd/system) must be active (C(systemctl is-active)), a finding of
        category C(service) otherwise; a unit without that file is not deployed there and not checked.
      - A restore's desired state (P(gcu.topsrider.topsrider_restore_desired#filter), from a deploy snapshot) names
        C(snapshot) (its id) and, instead of a release, C(packages) (each C(version), null for not installed, and
        C(held)), C(files) (each C(sha256), C(mode), C(owner), C(group), or C(absent)), C(torch_gcu) (C(version)
        and C(url) in C(python)), C(facts) (C(path) and the mapping the local facts hold, or null) and
        C(devices=false) (the cards are not read).
      - What it names is read besides what the other options ask for (every deb of the manifest, the files, the
        Python, the library, the cards; for a deploy also the local facts and every staged file), and the node is
        compared with it - the collection's one comparison (C(plugins/module_utils/_compare.py)), the same
        as the filter P(gcu.topsrider.topsrider_drift_findings#filter). See RV(findings) and RV(pending).
      - A desired state that cannot be compared (no manifest, a relative path) fails before anything is read.
    type: dict
    version_added: 0.2.0
  efsmi_path:
    description:
      - Path of efsmi; by default looked up in C(PATH), C(/usr/sbin) and C(/usr/local/bin).
    type: path
  dpkg_lock:
    description:
      - Read whether another process (apt, dpkg, unattended-upgrades) holds the dpkg locks now,
        with the same reader C(gcu.topsrider.deb_bundle) takes them with (never waits).
    type: bool
    version_added: 0.2.0
    default: false
  space:
    description:
      - A directory whose file system's free space is read (its nearest existing parent when it
        does not exist yet), e.g. the bundle cache root before the first deploy.
    type: path
    version_added: 0.2.0
  system:
    description:
      - Read the node's OS family and architecture (C(/etc/os-release), the kernel's machine name) and its
        local facts (every C(*.fact) JSON file in O(facts_dir), as C(ansible_local) has them), what a deploy's
        preflight would otherwise gather with C(ansible.builtin.setup).
    type: bool
    version_added: 0.2.0
    default: false
  facts_dir:
    description: Where the local facts are (C(ansible.builtin.setup)'s C(fact_path) default).
    type: path
    version_added: 0.2.0
    default: /etc/ansible/facts.d
  holders:
    description:
      - Read who uses the node's cards, from C(/proc) (the one busy reader,
        C(plugins/module_utils/_holders.py)), every process that holds a card's device file open
        (C(/dev/gcu<N>); on NVIDIA nodes C(/dev/nvidia<N>)) with its pid, user, command, cards and
        Slurm job (C(SLURM_JOB_ID) in its environment). Needs root to see other users' processes.
    type: bool
    version_added: 0.2.0
    default: false
  slurm_node:
    description:
      - The node's Slurm NodeName. When set, read the node as Slurm sees it (C(sinfo) - state, drain
        reason, features) and the jobs Slurm runs on it (C(squeue -w)). Needs the Slurm client commands.
    type: str
    version_added: 0.2.0
  slurm_jobs:
    description:
      - Job ids whose records are read (C(scontrol show job) - state, restarts, exit code, nodes), e.g. the
        jobs that left a node while a deploy waited for them. Needs O(slurm_node).
    type: list
    version_added: 0.2.0
    elements: str
    default: []
  slurm_cluster:
    description:
      - Also read every running job of the cluster with its nodes and every node's features, and name the
        jobs whose nodes carry different release features (O(feature_prefix)). Needs O(slurm_node).
    type: bool
    version_added: 0.2.0
    default: false
  feature_prefix:
    description: The prefix of the node feature that names the deployed release (C(tops_2.5.140)).
    type: str
    version_added: 0.2.0
    default: tops_
extends_documentation_fragment:
  - gcu.topsrider.attributes
  - gcu.topsrider.attributes.torch_rule
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

- name: Compare the node with the release it should run (the drift check's one call)
  gcu.topsrider.topsrider_state:
    desired: "{{ desired_state }}"
  register: node_check

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
findings:
  description: >-
    With O(desired), every difference between the node and it, in report order - C(node), C(category) (package,
    integrity, env, wheel, library, device, health), C(check), C(expected), C(actual), C(detail); empty when the node is in
    the desired state.
  returned: when O(desired) is given
  type: list
  elements: dict
  sample: [{"node": "t20-01", "category": "package", "check": "tops-eccl version", "expected": "2.5.140-1",
            "actual": "2.5.136-1", "detail": null}]
  version_added: 0.2.0
pending:
  description: >-
    With a deploy's O(desired) (C(stage_path) given), why deploying the release could still change the node, one
    line per reason (the findings, the staged bundle, the local facts); empty when it would change nothing.
    With a restore's (C(snapshot) given), what differs from the snapshot, one line per finding.
    Null for a drift check's desired state.
  returned: when O(desired) is given
  type: list
  elements: str
  sample: ["package tops-eccl version: expected 2.5.140-1, found 2.5.136-1"]
  version_added: 0.2.0
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
    records:
      description: >-
        Per path of O(records), C(exists), C(value) (the parsed JSON object; null when the record is absent or
        cannot be used) and C(problem) (null, or why it cannot be used: not a regular file, over 16 MiB,
        unreadable, not UTF-8, not JSON, not a JSON object).
      type: dict
      sample: {"/var/lib/topsrider/open-deploy.json": {"exists": true, "problem": null,
               "value": {"id": "20261125T140000Z", "to_version": "2.5.140"}}}
      version_added: 0.4.0
    python:
      description: >-
        C(path) of the interpreter, C(python) (major.minor), C(executable), C(torch), C(torch_gcu) and C(pip)
        versions (null when not installed), C(torch_gcu_url) (the file or URL pip installed torch_gcu from, as
        C(pip freeze) shows it after C(@); null when it came from an index or C(--find-links)), or C(error) when
        the interpreter could not be probed.
      type: dict
      sample: {"path": "/opt/venvs/train/bin/python", "python": "3.11", "executable": "/opt/venvs/train/bin/python",
               "torch": "2.13.0", "torch_gcu": "2.13.0+2.5.136", "pip": "23.0.1", "error": null,
               "torch_gcu_url": "file:///var/cache/topsrider/2.5.136/torch_gcu-2.13.0%2B2.5.136-cp311-none-any.whl"}
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
    package_files:
      description: >-
        With O(package_files) (or a desired state that sets C(package_files)): C(packages), per verified package
        the files that differ from what dpkg installed - C(path), C(problem) (changed: the md5 differs; missing;
        differs: another attribute C(dpkg --verify) checks), C(conffile), C(attrs) (dpkg's nine characters) - and
        C(error) when dpkg could not verify them.
      type: dict
      sample: {"error": null, "packages": {"tops-eccl": [{"path": "/usr/local/tops/lib/libeccl.so",
               "problem": "changed", "conffile": false, "attrs": "??5??????"}]}}
    job:
      description: >-
        With O(job): C(vendor), C(files) (what a job needs, in the launcher's order) and C(problems), each
        C(check), C(path) (a job file's, else null) and C(message) (for a job file, the launcher's own exit-72 message);
        empty when a job can start here.
      type: dict
      sample: {"vendor": "enflame", "files": ["/etc/profile.d/topsrider.sh", "/etc/ld.so.conf.d/topsrider.conf",
               "/etc/ansible/facts.d/topsrider.fact"],
               "problems": [{"check": "/etc/profile.d/topsrider.sh", "path": "/etc/profile.d/topsrider.sh",
                             "message": "/etc/profile.d/topsrider.sh is missing or unreadable: ..."}]}
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
    services:
      description: >-
        With O(desired) naming C(services): per unit, C(deployed) (its file is in C(/etc/systemd/system)),
        C(active) (what C(systemctl is-active) printed) and C(error) (systemctl's complaint when it printed no
        state, such as on a node whose PID 1 is not systemd). Null otherwise.
      type: dict
      sample: {"topsrider-card-exporter.service": {"deployed": true, "active": "failed", "error": null}}
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

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gcu.topsrider.plugins.module_utils._compare import DriftError
from ansible_collections.gcu.topsrider.plugins.module_utils._pep440 import NoPackagingError
from ansible_collections.gcu.topsrider.plugins.module_utils._state_read import param_problems, read_state


def main():
    module = AnsibleModule(
        argument_spec=dict(
            packages=dict(type="list", elements="str", default=[]),
            files=dict(type="list", elements="path", default=[]),
            records=dict(type="list", elements="path", default=[]),
            package_files=dict(type="list", elements="str", default=[]),
            job=dict(type="str"),
            job_env_file=dict(type="path"),
            python=dict(type="path"),
            library=dict(type="str"),
            library_package=dict(type="str"),
            devices=dict(type="bool", default=False),
            desired=dict(type="dict"),
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
    problems = param_problems(module.params)
    if problems:
        module.fail_json(msg="; ".join(problems))
    try:
        result = read_state(module, module.params)
    except DriftError as e:
        module.fail_json(msg="cannot compare with the desired state: %s" % e)
    except NoPackagingError as e:
        module.fail_json(msg="topsrider_state: %s" % e)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
