#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: gcu_devices
short_description: Report Enflame GCUs (or NVIDIA GPUs) seen by the driver and check count, health, temperature and load
version_added: "0.1.0"
description:
  - On Enflame nodes runs C(efsmi) on the node, parses its output (the C(efsmi -q) per-device blocks with
    either memory key set, or the summary table with C(*) or C(|)/C(+) borders) and returns
    one entry per GCU as facts, together with the driver and efsmi versions and the PCI view
    (Enflame devices, vendor C(1e36), under C(/sys/bus/pci/devices)), so that
    "PCI sees 8, the driver sees 7" is visible.
  - On NVIDIA nodes (O(vendor=nvidia), or O(vendor=auto) where efsmi is absent and C(nvidia-smi) is found)
    runs C(nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits) and
    C(nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory,process_name --format=csv,noheader,nounits)
    and returns the same facts in the same schema (plus a few NVIDIA-only keys, among them the processes on
    each GPU); the PCI view then lists the NVIDIA GPU functions (vendor C(10de), display class C(03xx), so
    NVSwitches and audio functions do not count).
  - >-
    Also returns who uses the cards (C(gcu_holders)), read from C(/proc) with the collection's one busy reader
    (the same as M(gcu.topsrider.topsrider_state)'s O(gcu.topsrider.topsrider_state#module:holders)): every
    process holding a card's device file (C(/dev/gcu<N>), C(/dev/nvidia<N>)) with pid, user, command, cards and
    Slurm job; on NVIDIA nodes merged with C(nvidia-smi)'s compute processes (its card attribution is exact).
    With O(processes), also the processes a launch check counts (C(playbooks/launch_check.yml)).
  - Optionally checks expectations (device count, health, temperature, every card busy) and
    fails with a message naming the cards and the remedy.
  - Output that it does not understand fails with the first lines quoted; a device count is never guessed.
  - Read-only; never reports C(changed).
author:
  - gcu.topsrider contributors (@gcu-topsrider)
options:
  vendor:
    description:
      - Whose cards to read.
      - C(auto) reads Enflame cards with efsmi when efsmi is found, else NVIDIA GPUs with C(nvidia-smi) when
        that is found, and fails naming both tools when neither is. O(efsmi_path) or O(nvidia_smi_path) picks
        the vendor too.
      - C(enflame) only looks for efsmi, C(nvidia) only for C(nvidia-smi).
    type: str
    choices: [auto, enflame, nvidia]
    default: auto
  source:
    description:
      - Which efsmi output to read (Enflame only; NVIDIA GPUs are always read with C(--query-gpu), and any
        value but C(auto) fails there).
      - C(auto) runs C(efsmi -q) and falls back to the summary table (C(efsmi)) when C(-q)
        fails or prints something that is not per-device blocks. With C(-q) it also reads the
        table, best effort, for the fields C(-q) does not print (firmware, efsmi version).
      - C(query) reads only C(efsmi -q); C(summary) reads only the summary table (it has no
        health column, so O(require_healthy) cannot see unhealthy cards there).
    type: str
    choices: [auto, query, summary]
    default: auto
  efsmi_path:
    description:
      - Path of the efsmi binary. By default C(efsmi) is looked up in C(PATH), C(/usr/sbin)
        and C(/usr/local/bin).
    type: path
  nvidia_smi_path:
    description:
      - Path of the nvidia-smi binary (implies O(vendor=nvidia) under O(vendor=auto)). By default C(nvidia-smi)
        is looked up in C(PATH), C(/usr/bin), C(/usr/local/nvidia/bin), C(/usr/local/bin), C(/usr/sbin) and
        C(/opt/nvidia/bin).
    type: path
  expected_count:
    description:
      - Number of GCUs the driver must see. Fails when it sees another number, and says
        whether PCI sees the missing cards (a card the driver does not bring up) or not
        (a card missing from the bus).
    type: int
  require_healthy:
    description:
      - Fail when any card reports C(Health False), naming the cards.
      - On NVIDIA GPUs a card is unhealthy when it counts uncorrected ECC errors since the last reset
        (C(ecc.errors.uncorrected.volatile.total) > 0) or C(nvidia-smi) says C([GPU requires reset]) or
        C([GPU is lost]); its health is null when ECC is off or not supported.
    type: bool
    default: false
  max_temperature:
    description:
      - Fail when any card is hotter than this, in degrees Celsius.
    type: int
  min_utilization:
    description:
      - The busy check for a running job. When set, every card must be above this
        utilization (percent); the failure names the sleeping cards (the classic
        one-process launch keeps card 0 busy and the others asleep).
      - A card whose utilization is C(N/A) counts as not busy. NVIDIA GPUs in MIG mode report no
        utilization, so they always fail this check; the message says so.
    type: float
  processes:
    description:
      - Also return RV(processes), every process that holds a card, carries C(LOCAL_RANK) in its environment
        (a launcher's rank) or whose command line matches O(process_match), for a launch check.
    type: bool
    version_added: 0.2.0
    default: false
  process_match:
    description: A regular expression; processes whose command line matches count for O(processes) too.
    type: str
    version_added: 0.2.0
  timeout:
    description:
      - Seconds each run of efsmi or C(nvidia-smi) may take. A run that takes longer (a wedged driver
        blocks them forever) is killed and the module fails, naming the tool, the command and the timeout.
    type: int
    version_added: 0.2.0
    default: 60
extends_documentation_fragment:
  - gcu.topsrider.attributes
  - gcu.topsrider.attributes.read_only
attributes:
  platform:
    description: Linux nodes with the Enflame driver and efsmi, or the NVIDIA driver and nvidia-smi, installed.
notes:
  - C(gcu_driver_version) comes from C(/sys/module/enflame/version) when present, else from efsmi.
  - Bus ids are returned in the sysfs form C(0000:3d:00.0), whatever form efsmi prints,
    so that they compare with C(gcu_pci_devices.bus_ids).
  - When efsmi fails the message carries the command, rc, stderr and a hint (is the
    C(enflame) module loaded, do C(/dev/gcuctl) and C(/dev/gcu*) exist); for nvidia-smi the same with
    the C(nvidia) module and C(/dev/nvidiactl), C(/dev/nvidia*).
  - "On NVIDIA GPUs: C(gcu_driver_version) is nvidia-smi's C(driver_version), C(firmware) the VBIOS version,
    C(device_id) the PCI device id (C(2330) for H100 SXM), C(dpm) the performance state (C(P0)...),
    C(ecc) the ECC mode as nvidia-smi prints it (C(Enabled)/C(Disabled)). Fields nvidia-smi prints as
    C([N/A]), C([Not Supported]) or any other bracketed placeholder are null; output with another column
    count, a header or units fails with its first lines quoted."
"""

EXAMPLES = r"""
- name: Read the GCUs of every T20 node
  gcu.topsrider.gcu_devices:

- name: Demand eight healthy cards below 85 C before a job starts
  gcu.topsrider.gcu_devices:
    expected_count: 8
    require_healthy: true
    max_temperature: 85

- name: While a job runs, prove it uses every card
  gcu.topsrider.gcu_devices:
    min_utilization: 10
  register: gcu_busy

- name: Read the summary table only, with an efsmi outside PATH
  gcu.topsrider.gcu_devices:
    source: summary
    efsmi_path: /opt/tops/bin/efsmi

- name: Read the GPUs of an NVIDIA node (auto would find nvidia-smi too, where there is no efsmi)
  gcu.topsrider.gcu_devices:
    vendor: nvidia
    expected_count: 8
    require_healthy: true

- name: Show PCI and driver counts side by side
  ansible.builtin.debug:
    msg: "PCI sees {{ gcu_pci_devices.count }}, the driver sees {{ gcu_device_count }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts about the node's GCUs (or GPUs).
  returned: always
  type: dict
  contains:
    gcu_vendor:
      description: Whose cards these are, C(enflame) (read with efsmi) or C(nvidia) (read with nvidia-smi).
      returned: always
      type: str
      sample: enflame
    gcu_devices:
      description: One entry per GCU the driver sees, sorted by index. Fields efsmi does not print in the chosen output are null.
      returned: always
      type: list
      elements: dict
      contains:
        index:
          description: "Device index as efsmi numbers it."
          type: int
        model:
          description: "Product name (T20, S60, ...)."
          type: str
        bus_id:
          description: "PCI address in sysfs form (0000:3d:00.0)."
          type: str
        serial:
          description: "Serial number (C(Dev SN) in C(-q); the C(UUID) or C(SN) column of the table)."
          type: str
        uuid:
          description: "C(Dev UUID) from C(-q); null from the table."
          type: str
        firmware:
          description: "Firmware version (from the table; C(-q) does not print it)."
          type: str
        device_id:
          description: "PCI device id (C(0021) for T20 32 GB), from C(-q); null from the table."
          type: str
        memory_total_mib:
          description: "Device memory in MiB."
          type: int
        memory_used_mib:
          description: "Memory in use in MiB (null from the summary table)."
          type: int
        temperature_c:
          description: "Temperature in degrees Celsius."
          type: float
        power_w:
          description: "Current power draw in watts."
          type: float
        power_cap_w:
          description: "Power cap in watts."
          type: float
        utilization_pct:
          description: "Device utilization in percent."
          type: float
        dpm:
          description: "Power state (Sleep, Active, ...)."
          type: str
        ecc:
          description: "ECC mode (Enable or Disable)."
          type: str
        health:
          description:
            - "Health as C(efsmi -q) reports it; null when not reported (summary table)."
            - "NVIDIA: false with uncorrected volatile ECC errors or a GPU that needs a reset or is lost,
              true when ECC counts none, null when ECC is off or not supported."
          type: bool
        ecc_errors_uncorrected:
          description:
            - "Uncorrected ECC errors: C(efsmi -q)'s RMA Info / Total DBE (absent from the summary table's cards);"
            - "NVIDIA: since the last reset (null when not counted)."
          type: int
          returned: when gcu_vendor is nvidia, or source is query
        mig_mode:
          description: "NVIDIA only: MIG mode (C(Enabled), C(Disabled)); null where MIG is not supported."
          type: str
          returned: when gcu_vendor is nvidia
        persistence_mode:
          description: "NVIDIA only: persistence mode (C(Enabled), C(Disabled))."
          type: str
          returned: when gcu_vendor is nvidia
        compute_mode:
          description: "NVIDIA only: compute mode (C(Default), C(Exclusive_Process), C(Prohibited))."
          type: str
          returned: when gcu_vendor is nvidia
        processes:
          description:
            - "NVIDIA only: the processes with a context on this GPU (from C(--query-compute-apps)), by pid;
              null when that query failed (a warning says why)."
            - "In a container with its own PID namespace the pids are the host's."
          type: list
          elements: dict
          returned: when gcu_vendor is nvidia
          contains:
            pid:
              description: Process id.
              type: int
            used_memory_mib:
              description: GPU memory the process holds, in MiB (null when nvidia-smi cannot tell).
              type: int
            process_name:
              description: Process name as nvidia-smi prints it.
              type: str
      sample:
        - {index: 0, model: T20, bus_id: "0000:3d:00.0", serial: W28001150301, uuid: null, firmware: 10.19.3,
           device_id: null, memory_total_mib: 32768, memory_used_mib: null, temperature_c: 52, power_w: 212.0,
           power_cap_w: 300.0, utilization_pct: 85.0, dpm: Active, ecc: Enable, health: null}
    gcu_device_count:
      description: Number of GCUs the driver sees (efsmi lists).
      returned: always
      type: int
      sample: 8
    gcu_driver_version:
      description: Enflame driver version, from /sys/module/enflame/version or efsmi; null if neither says.
        NVIDIA - nvidia-smi's driver_version, else /sys/module/nvidia/version.
      returned: always
      type: str
      sample: "2.4.20230829"
    gcu_efsmi_version:
      description: efsmi version from the summary table header; null when only -q was readable, and on NVIDIA nodes.
      returned: always
      type: str
      sample: "1.20.0"
    gcu_pci_devices:
      description: Enflame devices (vendor 1e36) under /sys/bus/pci/devices; on NVIDIA nodes the NVIDIA GPU functions
        (vendor 10de, PCI class 03xx).
      returned: always
      type: dict
      contains:
        count:
          description: Number of Enflame (NVIDIA GPU) PCI functions; null when /sys/bus/pci/devices cannot be read.
          type: int
        device_ids:
          description: Their PCI device ids.
          type: list
          elements: str
        bus_ids:
          description: Their PCI addresses.
          type: list
          elements: str
      sample: {count: 8, device_ids: ["0021", "0021", "0021", "0021", "0021", "0021", "0021", "0021"],
               bus_ids: ["0000:3d:00.0", "0000:3e:00.0", "0000:40:00.0", "0000:41:00.0",
                         "0000:b1:00.0", "0000:b2:00.0", "0000:b4:00.0", "0000:b5:00.0"]}
    gcu_holders:
      description:
        - The processes that hold a card (C(pid), C(ppid), C(user), C(command), C(devices), C(cards),
          C(slurm_job_id)); empty when nobody uses the node. Needs root to see other users' processes.
        - On NVIDIA nodes the cards are nvidia-smi's where it lists the process.
      returned: always
      type: list
      elements: dict
      sample: [{"pid": 4242, "ppid": 4200, "user": "alice", "command": "python train.py", "devices": ["gcu0"],
                "cards": [0], "slurm_job_id": "17"}]
processes:
  description: >-
    With O(processes): the processes a launch check counts (C(pid), C(ppid), C(user), C(cmdline), C(env) with the
    rank variables, C(environ_readable), C(cards), C(slurm_job_id)).
  returned: when O(processes) is true
  type: list
  elements: dict
problems:
  description: Failed expectations, each naming the cards and the remedy. Empty on success.
  returned: always
  type: list
  elements: str
  sample: ["7 of 8 GCUs not busy (utilization <= 10.0%): cards 1-7 sleeping, only card(s) 0 working; ..."]
source:
  description: Which output the facts come from - C(query) or C(summary) (efsmi), C(query-gpu) (nvidia-smi).
  returned: always
  type: str
  sample: query
efsmi:
  description: Path of the efsmi binary used.
  returned: when found
  type: str
  sample: /usr/sbin/efsmi
nvidia_smi:
  description: Path of the nvidia-smi binary used.
  returned: when the node is read with nvidia-smi
  type: str
  sample: /usr/bin/nvidia-smi
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gcu.topsrider.plugins.module_utils._cards import run
from ansible_collections.gcu.topsrider.plugins.module_utils._vendors import NAMES, VENDORS


def main():
    module = AnsibleModule(
        argument_spec=dict(
            vendor=dict(type="str", default="auto", choices=["auto"] + list(NAMES)),
            source=dict(type="str", default="auto", choices=["auto", "query", "summary"]),
            expected_count=dict(type="int"),
            require_healthy=dict(type="bool", default=False),
            max_temperature=dict(type="int"),
            min_utilization=dict(type="float"),
            processes=dict(type="bool", default=False),
            process_match=dict(type="str"),
            timeout=dict(type="int", default=60),
            # the path of each vendor's tool (efsmi_path, nvidia_smi_path), at most one
            **dict((v["tool_option"], dict(type="path")) for v in VENDORS)
        ),
        mutually_exclusive=[tuple(v["tool_option"] for v in VENDORS)],
        supports_check_mode=True,
    )
    run(module)


if __name__ == "__main__":
    main()
