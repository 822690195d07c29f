# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The accelerator vendors the collection knows, as one table.

Everything that differs between an Enflame GCU node and an NVIDIA GPU node is
a field of a row here: the tool that reads the cards and where it lives, the
kernel module and its device files, the PCI ids, the words of a failure, the
collective backend, the Slurm GRES, the Kubernetes resource, the environment
file. Code asks ``vendor_spec(name)`` (YAML: the ``gcu.topsrider.topsrider_vendor``
filter) and never compares a vendor's name; an unknown name is an error,
never another vendor's values. Data only, no imports: node side (the modules)
and controller side (the filter) read the same rows. Python 3.6+.

Adding a vendor: a row here, the parser of its tool (like ``_efsmi`` /
``_nvsmi``) and its reader in ``_cards.READERS``, its health reader in the
Slurm gate (roles/slurm_node/files), and its tool-path option in
gcu_devices' documentation (docs/architecture.md, "Adding a vendor").
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

ENFLAME_ENV_FILE = "/etc/profile.d/topsrider.sh"

VENDORS = (
    {
        "name": "enflame",
        "label": "Enflame",              # the PCI vendor, in messages
        "unit": "GCU",                   # one card, in messages
        "pci_vendor_id": "1e36",
        "pci_class_prefix": None,        # every function of the vendor id is a card
        "tool": "efsmi",                 # reads the cards; a key of _cards.READERS
        "tool_option": "efsmi_path",     # gcu_devices' option (and result key) naming the tool
        "tool_result": "efsmi",
        "tool_dirs": ["/usr/sbin", "/usr/local/bin", "/usr/local/sbin", "/opt/tops/bin", "/usr/local/tops/bin"],
        "tool_package": "the Enflame driver package (which ships efsmi)",
        "kernel_module": "enflame",      # /sys/module/<it>, `modprobe <it>`
        "driver_package": "the Enflame driver package",
        "dmesg": "dmesg | grep -i enflame",
        "card_prefix": "gcu",            # /dev/gcu<N>: the device file of card N
        "control_device": "gcuctl",
        "unhealthy": "report Health: False; drain the node, check `efsmi -q` (RMA Info) and "
                     "`dmesg | grep -i enflame`, then reset or RMA the card",
        "health_unknown": "the summary table has no health column; use source=query",
        "visible_env": "ENFLAME_VISIBLE_DEVICES",
        "backend": "eccl",               # torch.distributed backend of a job
        "slurm_gres": "gcu",
        "k8s_resource": "enflame.com/gcu",
        "env_file": ENFLAME_ENV_FILE,    # sourced by jobs (eccl_env writes it)
        # What a training job needs on the node, in the order the launcher checks it
        # (plugins/module_utils/_compare.py: the rule and the message, for the
        # dist_launch scripts and verify.yml alike): the file, what it is, who writes it.
        "job_files": [
            {"path": ENFLAME_ENV_FILE, "what": "the collective library's environment",
             "writer": "the eccl_env role"},
            {"path": "/etc/ld.so.conf.d/topsrider.conf", "what": "the loader configuration of the TopsRider libraries",
             "writer": "the tops_sdk role"},
            {"path": "/etc/ansible/facts.d/topsrider.fact", "what": "the record of the deployed release (local facts)",
             "writer": "its record step"},
        ],
        # The collective library a job loads and the package that installs it (its identity: verify.yml).
        "job_library": {"name": "libeccl.so", "package": "tops-eccl"},
    },
    {
        "name": "nvidia",
        "label": "NVIDIA",
        "unit": "GPU",
        "pci_vendor_id": "10de",
        # GPU functions (0x0300 VGA, 0x0302 3D controller); an HGX board's
        # NVSwitches (0x0680) and a card's HDMI audio (0x0403) are not GPUs.
        "pci_class_prefix": "0x03",
        "tool": "nvidia-smi",
        "tool_option": "nvidia_smi_path",
        "tool_result": "nvidia_smi",
        "tool_dirs": ["/usr/bin", "/usr/local/nvidia/bin", "/usr/local/bin", "/usr/sbin", "/opt/nvidia/bin"],
        "tool_package": "the NVIDIA driver (which ships nvidia-smi)",
        "kernel_module": "nvidia",
        "driver_package": "the NVIDIA driver",
        "dmesg": "dmesg | grep -i -e NVRM -e Xid",
        "card_prefix": "nvidia",
        "control_device": "nvidiactl",
        "unhealthy": "report uncorrected ECC errors since the last reset, or need a reset; drain the node, check "
                     "`nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER` and `dmesg | grep -i -e NVRM -e Xid`, "
                     "reset the GPU (`nvidia-smi -r -i <index>` or reboot), RMA it if the errors return",
        "health_unknown": "ECC is off or not supported, so nvidia-smi reports no uncorrected-error count",
        "visible_env": "CUDA_VISIBLE_DEVICES",
        "backend": "nccl",
        "slurm_gres": "gpu",
        "k8s_resource": "nvidia.com/gpu",
        "env_file": "",                  # none: the NVIDIA stack needs no sourced file
        "job_files": [],                 # none that the collection writes
        "job_library": None,             # NCCL comes with torch's wheels, not from a package of the collection
    },
)

NAMES = tuple(v["name"] for v in VENDORS)


class VendorError(ValueError):
    """A vendor name the table does not have."""


def vendor_spec(name):
    """The row of vendor `name` (a copy); VendorError for a name not in the table."""
    for row in VENDORS:
        if row["name"] == name:
            return dict(row, tool_dirs=list(row["tool_dirs"]), job_files=[dict(f) for f in row["job_files"]],
                        job_library=dict(row["job_library"]) if row["job_library"] else None)
    raise VendorError("unknown vendor %r: the collection knows %s (plugins/module_utils/_vendors.py)"
                      % (name, ", ".join(NAMES)))
