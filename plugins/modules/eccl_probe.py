#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: eccl_probe
short_description: Prove that ECCL and torch_gcu work on a GCU node, level by level
version_added: "0.1.0"
description:
  - A stack that is installed is not necessarily working. This module checks, in levels that each include the ones before
    them, that the Enflame collective library works in the interpreter that trains.
  - The O(backend) decides what is checked. C(eccl) (T20) checks libeccl.so and torch_gcu; C(nccl) (NVIDIA)
    checks CUDA devices and NCCL and raises no libeccl or torch_gcu problem; C(gloo) runs in host memory.
  - C(library) finds every copy of the backend's library (C(libeccl.so); for C(nccl) the system's
    C(libnccl.so*)) in the ldconfig cache, C(/etc/ld.so.conf) and C(/etc/ld.so.conf.d),
    O(library_dirs), C(LD_LIBRARY_PATH) from O(environment) and the vendor's default directories, loads it by
    soname and every copy by path with ctypes in a child process, and reads its version
    (C(ecclGetVersion) / C(ecclGetVersionString) / C(ncclGetVersion)). For C(nccl) this is information only,
    since a CUDA torch wheel carries its own NCCL; no system copy is no problem.
  - C(framework) runs a child process of O(python) that imports torch (and torch_gcu for C(eccl)), detects the
    API generation (torch_gcu 1.x C(torch_gcu.device_count), 2.x C(torch.gcu.device_count); C(cuda) for
    C(nccl)), counts the visible devices, asks C(torch.distributed) whether O(backend) is registered, compares
    the installed torch with the C(Requires-Dist) of the installed torch_gcu distribution, and reads which
    collective library the interpreter loaded (its own C(/proc/self/maps)) and its version; a libeccl.so of
    another release than the torch_gcu wheel's is C(LIBRARY_VERSION_MISMATCH).
  - C(collective) starts one child per rank (O(world_size)), each places its tensors on its own device
    (torch_gcu 1.x C(torch_gcu.gcu_device(LOCAL_RANK)), 2.x C(torch.gcu.set_device) and
    C(torch.device("gcu", LOCAL_RANK)), NVIDIA C(torch.device("cuda", LOCAL_RANK)); host memory only for
    C(gloo)), runs C(init_process_group) with O(backend) over 127.0.0.1 and an all-reduce at each of O(sizes)
    with the sum checked on every rank. Timing follows nccl-tests, with O(warmup) calls, the device synchronized
    before and after O(iterations) timed calls; algbw = bytes / time, busbw = algbw x 2(n-1)/n. Each rank
    reports the collective library it really loaded (path and version, from its own memory maps and the
    library's version call). The rank code is C(module_utils/_collective_rank.py), the same file the
    dist_launch role installs for its smoke job. The whole run is bounded by O(timeout); on timeout every
    child's process group is killed.
  - One node's share of a multi-node job (the fabric check, C(playbooks/fabric_check.yml)) - O(job_world_size)
    ranks in all, this node's O(world_size) of them with global ranks O(rank_offset) onwards (C(LOCAL_RANK) from 0,
    C(LOCAL_WORLD_SIZE) the local count), rendezvous at O(master_addr):O(master_port). Every node of the job runs
    its share at the same time (one Ansible task over the job's hosts); the sum is checked against the whole job's
    and busbw uses the job's rank count. Each node reports its own ranks; latency is its slowest local rank.
  - Every failure becomes a problem C({code, message, hint}); see RV(problems) for the codes.
  - Read-only. It never reports C(changed). Check mode runs the same probes, since they change nothing.
author:
  - gcu.topsrider contributors (@gcu-topsrider)
options:
  level:
    description:
      - How far to probe. Each level includes the ones before it.
    type: str
    choices: [library, framework, collective]
    default: framework
  python:
    description:
      - The interpreter of the training environment, a path or a command name.
      - Defaults to the node's C(python3).
      - A path that does not exist gives the problem C(PYTHON_MISSING).
    type: str
  library_dirs:
    description:
      - Extra directories to search for C(libeccl.so), searched first.
    type: list
    elements: path
    default: []
  world_size:
    description:
      - Number of ranks of the C(collective) level.
      - Defaults to the number of devices the framework level reports for O(backend) (1 is valid); C(gloo)
        defaults to 2.
      - A device backend never gets more ranks than visible devices (C(WORLD_SIZE_TOO_LARGE)).
    type: int
  backend:
    description:
      - The C(torch.distributed) backend to check and to run the all-reduce with, one of the collective backends
        of the collection's vendor table (C(plugins/module_utils/_vendors.py), a vendor row's C(collective)),
        which says what is checked; another name fails, naming those the table has.
      - C(eccl) on Enflame nodes (imports torch_gcu in the ranks), C(nccl) on NVIDIA nodes, C(gloo) in host
        memory for comparison.
    type: str
    default: eccl
  timeout:
    description:
      - Seconds. Bounds each probe child and the whole collective run (all ranks together).
      - Ranks still running after it are killed with their process groups and reported as C(RANK_TIMEOUT).
    type: int
    default: 120
  environment:
    description:
      - Extra environment variables for every child process, for example C(ECCL_DEBUG), C(ECCL_*),
        C(ENFLAME_VISIBLE_DEVICES) or C(LD_LIBRARY_PATH).
      - Checked by the collection's one environment rule, the filter C(gcu.topsrider.env_problems). Names
        must match C(^[A-Z_][A-Z0-9_]*\Z); values are strings or numbers made only of letters, digits and the
        characters C(_.,:/=+@%-). Anything else, a trailing newline included, fails before any child starts.
      - >-
        A name the loader, the shell or an interpreter acts on (C(LD_PRELOAD), C(LD_AUDIT), C(PATH), C(BASH_ENV),
        every C(LD_*), ...: the table in C(plugins/module_utils/_envcheck.py)) fails too, unless O(allow_names)
        names it. A search path (C(PATH), C(LD_LIBRARY_PATH), C(PYTHONPATH), C(PERL5LIB), C(NODE_PATH)) is
        appended to the value the module itself runs with, never replaces it, and each of its entries must be an
        absolute directory.
    type: dict
    default: {}
  allow_names:
    description:
      - The guarded names (see O(environment)) that O(environment) may set.
      - The default allows the two search paths that point a probe at a library or a framework that is not
        installed system-wide; only the probe's own children get them, nothing is written on the node.
    type: list
    elements: str
    default: [LD_LIBRARY_PATH, PYTHONPATH]
    version_added: 0.3.0
  sizes:
    description:
      - Payload sizes of the all-reduce, in bytes (float32 elements, rounded down to a multiple of 4).
    type: list
    elements: int
    default: [4096, 1048576]
  iterations:
    description:
      - Timed all-reduce calls per size; latency is the time per call on the slowest rank.
    type: int
    default: 5
  warmup:
    description:
      - Untimed all-reduce calls per size before the timed ones (after the one whose sum is checked).
    type: int
    default: 2
  master_port:
    description:
      - Rendezvous port at O(master_addr) for the C(collective) level.
      - Defaults to a free port chosen by the module; required with O(job_world_size), since every node of a
        job must use the same one.
    type: int
  master_addr:
    description:
      - Rendezvous address (C(MASTER_ADDR)) of the C(collective) level, the address of the node that holds rank 0.
    type: str
    default: 127.0.0.1
  job_world_size:
    description:
      - Total number of ranks of a multi-node job (C(WORLD_SIZE)), of which this node starts O(world_size).
      - Defaults to O(world_size) (a single-node job). Must be at least O(rank_offset) + O(world_size).
    type: int
  rank_offset:
    description:
      - Global rank of this node's first rank in a multi-node job (C(RANK) = O(rank_offset) + C(LOCAL_RANK)).
    type: int
    default: 0
  framework_check:
    description:
      - Run the C(framework) level before the C(collective) level. V(false) skips it (saves one import of torch
        per call) for repeated jobs after a first full probe, as the fabric check does; O(world_size) is then
        required.
    type: bool
    default: true
  fail_on_problem:
    description:
      - Fail the task when any problem is found, with the problems in C(msg).
      - Set to V(false) for reporting runs; RV(healthy) and RV(problems) still tell.
    type: bool
    default: true
extends_documentation_fragment:
  - gcu.topsrider.attributes
  - gcu.topsrider.attributes.torch_rule
  - gcu.topsrider.attributes.read_only
attributes:
  platform:
    description: Linux nodes with the TopsRider stack (or the gcu.topsrider simulator).
notes:
  - The children get the module's environment plus O(environment), not a login shell's; settings from
    C(/etc/profile.d/topsrider.sh) must be passed in O(environment) to take effect.
  - On 8 ranks each importing torch on a small machine the collective level takes tens of seconds;
    keep O(sizes) small.
seealso:
  - module: gcu.topsrider.gcu_devices
'''

EXAMPLES = r'''
- name: Is libeccl.so installed once and loadable?
  gcu.topsrider.eccl_probe:
    level: library

- name: Does the training venv have a working torch_gcu with the eccl backend?
  gcu.topsrider.eccl_probe:
    level: framework
    python: /opt/venvs/train/bin/python

- name: All-reduce on every card, report without failing
  gcu.topsrider.eccl_probe:
    level: collective
    python: /opt/venvs/train/bin/python
    sizes: [4096, 1048576, 16777216]
    timeout: 180
    environment:
      ECCL_DEBUG: INFO
    fail_on_problem: false
  register: eccl

- name: Show the bus bandwidth per size
  ansible.builtin.debug:
    msg: "{{ eccl.collective.results | map(attribute='busbw_gbps') | list }}"
  when: eccl.healthy

- name: An NVIDIA node - NCCL on every GPU, 1 MiB to 256 MiB
  gcu.topsrider.eccl_probe:
    level: collective
    backend: nccl
    python: /opt/venvs/train/bin/python
    sizes: [1048576, 16777216, 268435456]

- name: This node's share of a 2-node job (8 cards each) whose rank 0 is on 10.0.0.11
  gcu.topsrider.eccl_probe:
    level: collective
    python: /opt/venvs/train/bin/python
    world_size: 8
    job_world_size: 16
    rank_offset: 8
    master_addr: 10.0.0.11
    master_port: 29600
    framework_check: false

- name: Compare with gloo on four ranks
  gcu.topsrider.eccl_probe:
    level: collective
    python: /opt/venvs/train/bin/python
    backend: gloo
    world_size: 4
'''

RETURN = r'''
healthy:
  description: True when no problem was found at the levels run.
  returned: always
  type: bool
  sample: true
problems:
  description:
    - Every problem found, each with a C(code), a C(message) naming what was seen and a C(hint) saying what to do.
    - C(LIBRARY_MISSING) no libeccl.so anywhere; install tops-eccl from the bundle.
    - C(LIBRARY_NOT_ON_LOADER_PATH) installed but C(dlopen) of C(libeccl.so) by soname fails; add its directory to
      C(/etc/ld.so.conf.d/topsrider.conf) and run ldconfig.
    - C(LIBRARY_UNLOADABLE) a copy cannot be loaded; check C(ldd), reinstall tops-eccl.
    - C(LIBRARY_DUPLICATE) more than one distinct copy; remove the stray ones (C(dpkg -S) names owners).
    - C(PYTHON_MISSING) O(python) does not exist; point it at the training interpreter.
    - C(TORCH_MISSING) torch not importable by O(python); install it or probe the right interpreter.
    - C(TORCH_GCU_MISSING) torch_gcu not installed for O(python) (the cause of C(Invalid backend 'eccl'));
      install the wheel for that Python minor version.
    - C(TORCH_GCU_IMPORT_FAILED) C(import torch_gcu) raised; the message carries the error.
    - C(TORCH_GCU_API_UNKNOWN) neither the 1.x nor the 2.x API is present; reinstall torch_gcu.
    - C(TORCH_VERSION_MISMATCH) torch is not the version torch_gcu requires; install the required torch.
    - C(BACKEND_NOT_REGISTERED) C(torch.distributed) rejects O(backend) (C(Invalid backend)); import torch_gcu
      in the training interpreter before C(init_process_group).
    - C(NO_DEVICES) torch_gcu sees no card; check the driver and C(ENFLAME_VISIBLE_DEVICES).
    - C(LIBRARY_VERSION_MISMATCH) the libeccl.so torch_gcu loads is from another release than the wheel;
      deploy tops-eccl and torch_gcu from one bundle.
    - C(WORLD_SIZE_TOO_LARGE) more ranks asked for than visible devices; leave O(world_size) unset.
    - C(MASTER_PORT_IN_USE) the rendezvous port is taken; leave O(master_port) unset.
    - C(RANK_TIMEOUT) ranks did not report within O(timeout) and were killed; the message names the stage
      each was in; check card health and run with C(ECCL_DEBUG=INFO).
    - C(RANK_FAILED) a rank exited with an error; the message carries its stderr.
    - C(WRONG_RESULT) an all-reduce sum was wrong on a rank; check card health, unset C(ECCL_ALGO)/C(ECCL_PROTO).
    - C(PROBE_FAILED) a probe child crashed or timed out without a report.
  returned: always
  type: list
  elements: dict
  sample:
    - code: TORCH_VERSION_MISMATCH
      message: torch_gcu 2.3.0+2.5.136 requires torch ==2.3.0 but /opt/venvs/train/bin/python has torch 2.13.0+cpu
      hint: Install torch==2.3.0 into /opt/venvs/train/bin/python, or the torch_gcu wheel built for torch 2.13.0.
msg:
  description: One line summing up the result; on failure the problems, code by code.
  returned: always
  type: str
library:
  description: What the C(library) level found.
  returned: always
  type: dict
  contains:
    name:
      description: The soname looked for.
      type: str
      sample: libeccl.so
    path:
      description: The file the loader resolves C(libeccl.so) to, null when it cannot.
      type: str
      sample: /usr/local/tops/lib/libeccl.so
    version:
      description: Version of that library (from C(ecclGetVersion), else C(ecclGetVersionString)), null when unknown.
      type: str
      sample: 2.5.136
    loadable:
      description: Whether C(dlopen) of C(libeccl.so) by soname succeeds.
      type: bool
    error:
      description: The loader's error when it does not.
      type: str
    copies:
      description: Every distinct file found (symlinks and hard links to one file count once).
      type: list
      elements: dict
      sample:
        - path: /usr/local/tops/lib/libeccl.so
          realpath: /usr/local/tops/lib/libeccl.so
          found_in: [ld.so.conf, default, ldconfig cache]
          links: []
          in_loader_cache: true
          loaded_by_soname: true
          loadable: true
          error: null
          size: 15144
          version: 2.5.136
          version_string: 2.5.136
    search_dirs:
      description: The directories searched, in order.
      type: list
      elements: str
framework:
  description: What the C(framework) level found; null when that level was not run.
  returned: always
  type: dict
  contains:
    python:
      description: The interpreter probed (C(sys.executable) of the child).
      type: str
    python_version:
      description: Its version.
      type: str
      sample: 3.11.2
    torch_version:
      description: C(torch.__version__), null when torch cannot be imported.
      type: str
      sample: 2.13.0+cpu
    torch_location:
      description: Directory of the imported torch package.
      type: str
    torch_gcu_version:
      description: C(torch_gcu.__version__), null when it cannot be imported.
      type: str
      sample: 2.13.0+2.5.136
    torch_gcu_location:
      description: Directory of the imported torch_gcu package.
      type: str
    torch_gcu_warnings:
      description: Warnings raised by C(import torch_gcu).
      type: list
      elements: str
    api_generation:
      description: V(2.x) when C(torch.gcu.device_count) exists, V(1.x) when only C(torch_gcu.device_count) does.
      type: str
      sample: 2.x
    is_available:
      description: The result of the API's C(is_available).
      type: bool
    device_count:
      description: The result of the API's C(device_count).
      type: int
      sample: 8
    distributed_available:
      description: The result of C(torch.distributed.is_available).
      type: bool
    backend:
      description: The backend checked.
      type: str
      sample: eccl
    backend_registered:
      description: Whether C(torch.distributed.Backend) accepts O(backend) after C(import torch_gcu).
      type: bool
    torch_required:
      description: The torch version (or specifier) the installed torch_gcu distribution requires.
      type: str
      sample: 2.13.0
    torch_matches:
      description: Whether the installed torch satisfies it; null when either is unknown.
      type: bool
    loaded_library:
      description: The collective library the probed interpreter has loaded (C(eccl) after C(import torch_gcu);
        C(nccl) with CUDA), from its own C(/proc/self/maps); null for C(gloo).
      type: dict
      sample: {name: libnccl, path: /opt/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2,
               version: 2.28.9}
    cuda_version:
      description: C(torch.version.cuda) (C(nccl) only).
      type: str
collective:
  description: What the C(collective) level found; null when not run (or when the framework level already
    showed that it cannot run; the problems say why).
  returned: always
  type: dict
  contains:
    backend:
      description: The backend used.
      type: str
    world_size:
      description: Number of ranks started on this node.
      type: int
      sample: 8
    job_world_size:
      description: Number of ranks of the whole job (all nodes); equals RV(collective.world_size) on one node.
      type: int
      sample: 16
    rank_offset:
      description: Global rank of this node's first rank.
      type: int
      sample: 0
    master_addr:
      description: The rendezvous address.
      type: str
      sample: 127.0.0.1
    master_port:
      description: The rendezvous port at RV(collective.master_addr).
      type: int
    ranks_reported:
      description: How many ranks finished and reported.
      type: int
      sample: 8
    timed_out:
      description: Whether the run hit O(timeout).
      type: bool
    elapsed_s:
      description: Wall time of the whole run, seconds.
      type: float
    bandwidth:
      description: How algbw and busbw are computed (nccl-tests' all_reduce formulas).
      type: str
    libraries:
      description: The collective library the ranks really loaded (path and version, read inside each rank);
        one entry unless ranks differ.
      type: list
      elements: dict
      sample: [{name: libeccl, path: /usr/local/tops/lib/libeccl.so, version: 2.5.136}]
    devices:
      description: The devices the ranks placed their tensors on.
      type: list
      elements: str
      sample: ["gcu:0", "gcu:1"]
    api:
      description: The device API the ranks used (V(1.x), V(2.x), V(cuda), V(cpu)).
      type: str
    results:
      description: One entry per size; latency is the time per call on the slowest rank (device synchronized
        around the timed loop); C(algbw_gbps) and C(busbw_gbps) in GB/s (1e9 bytes).
      type: list
      elements: dict
      sample:
        - size_bytes: 1048576
          latency_us: 2150.3
          algbw_gbps: 0.4876
          busbw_gbps: 0.8533
          ranks: 8
          correct: true
    ranks:
      description: Per rank, its pid, exit code, whether it reported, the last stage it reached and whether
        it was killed (V(timeout), or V(aborted) after another rank failed).
      type: list
      elements: dict
collective_skipped:
  description: Why the C(collective) level was not run although requested (torch missing, torch_gcu missing or
    broken, backend not registered, no devices).
  returned: when O(level=collective) and the framework level showed it cannot run
  type: str
  sample: collective level not run because of TORCH_GCU_MISSING
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gcu.topsrider.plugins.module_utils._eccl_probe import LEVELS, run


def main():
    module = AnsibleModule(
        argument_spec=dict(
            level=dict(type="str", default="framework", choices=list(LEVELS)),
            python=dict(type="str"),
            library_dirs=dict(type="list", elements="path", default=[]),
            world_size=dict(type="int"),
            backend=dict(type="str", default="eccl"),
            timeout=dict(type="int", default=120),
            environment=dict(type="dict", default={}),
            allow_names=dict(type="list", elements="str", default=["LD_LIBRARY_PATH", "PYTHONPATH"]),
            sizes=dict(type="list", elements="int", default=[4096, 1048576]),
            iterations=dict(type="int", default=5),
            warmup=dict(type="int", default=2),
            master_port=dict(type="int"),
            master_addr=dict(type="str", default="127.0.0.1"),
            job_world_size=dict(type="int"),
            rank_offset=dict(type="int", default=0),
            framework_check=dict(type="bool", default=True),
            fail_on_problem=dict(type="bool", default=True),
        ),
        required_by={"job_world_size": ["master_port", "world_size"]},
        required_if=[("framework_check", False, ["world_size"])],
        supports_check_mode=True,
    )
    run(module)


if __name__ == "__main__":
    main()
