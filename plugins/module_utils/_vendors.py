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

import copy

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
        "visible_env_fallbacks": ["TOPS_VISIBLE_DEVICES"],  # read when visible_env is unset (the launchers)
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
        # What eccl_probe, the rank code and the smoke job need of the backend above
        # (COLLECTIVE_FIELDS says what each field is for; collective_spec adds "backend").
        "collective": {
            "torch_module": "torch_gcu",
            "device_type": "gcu",
            "api": "2.x",
            "plugin_api": {"api": "1.x", "device": "gcu_device", "synchronize": "synchronize",
                           "ddp": "nn.parallel.DistributedDataParallel"},
            "runtime": None,
            "runtime_version": None,
            "ddp_device_ids": False,
            "synchronize_device": False,
            "loaded_version_call": "torch_gcu.eccl_version",
            "library": {
                "name": "libeccl.so", "soname": "libeccl.so", "mapped": "libeccl", "required": True,
                # TopsRider releases put their libraries under one of these.
                "dirs": ["/usr/local/tops/lib", "/usr/local/tops/lib64", "/opt/tops/lib", "/opt/tops/lib64",
                         "/usr/lib", "/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/local/lib"],
                "version_call": "ecclGetVersion", "version_units": [[0, 1000000, 1000]],
                "version_string_call": "ecclGetVersionString",
            },
            "no_library": None,
            "default_world_size": None,
            "blocking": ["TORCH_GCU_MISSING", "TORCH_GCU_IMPORT_FAILED", "BACKEND_NOT_REGISTERED", "NO_DEVICES"],
            "no_devices": "torch_gcu ({api} API) sees {count} GCU{plural}{error}",
            "hints": {},
        },
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
        "visible_env_fallbacks": [],
        "backend": "nccl",
        "slurm_gres": "gpu",
        "k8s_resource": "nvidia.com/gpu",
        "env_file": "",                  # none: the NVIDIA stack needs no sourced file
        "job_files": [],                 # none that the collection writes
        "job_library": None,             # NCCL comes with torch's wheels, not from a package of the collection
        "collective": {
            "torch_module": None,
            "device_type": "cuda",
            "api": "cuda",
            "plugin_api": None,
            "runtime": "CUDA",
            "runtime_version": {"attribute": "cuda", "missing": "none: a CPU-only torch"},
            "ddp_device_ids": True,
            "synchronize_device": True,
            "loaded_version_call": "torch.cuda.nccl.version",
            # The system's NCCL: a torch CUDA wheel carries its own copy, so none on the system
            # is no problem (required: false); the collective level reports what is loaded.
            "library": {
                "name": "libnccl.so", "soname": "libnccl.so.2", "mapped": "libnccl", "required": False,
                "dirs": ["/usr/lib/x86_64-linux-gnu", "/usr/local/cuda/lib64", "/usr/local/nccl/lib", "/usr/lib64",
                         "/usr/local/lib"],
                # ncclGetVersion: M*10000+m*100+p from 2.9 on, M*1000+m*100+p before.
                "version_call": "ncclGetVersion", "version_units": [[10000, 10000, 100], [0, 1000, 100]],
                "version_string_call": None,
            },
            "no_library": None,
            "default_world_size": None,
            "blocking": ["NO_DEVICES", "BACKEND_NOT_REGISTERED"],
            "no_devices": "torch.cuda sees no GPU in {python} (torch {torch}, CUDA {runtime_version}){error}",
            "hints": {
                "NO_DEVICES": "Install a CUDA build of torch into the interpreter that trains, check the driver with "
                              "gcu.topsrider.gcu_devices (vendor nvidia) and that CUDA_VISIBLE_DEVICES is not empty.",
                "BACKEND_NOT_REGISTERED": "torch in {python} has no NCCL (a CPU-only build?): install a CUDA build "
                                          "of torch into the interpreter that trains.",
            },
        },
    },
)

NAMES = tuple(v["name"] for v in VENDORS)

# The CPU fallback every vendor's node has: gloo runs in host memory, loads no
# collective library and needs no card (the comparison run of eccl_probe and the smoke job).
CPU_COLLECTIVE = {
    "backend": "gloo",
    "torch_module": None,
    "device_type": "cpu",
    "api": "cpu",
    "plugin_api": None,
    "runtime": None,
    "runtime_version": None,
    "ddp_device_ids": False,
    "synchronize_device": False,
    "loaded_version_call": None,
    "library": None,
    "no_library": "gloo runs in host memory and loads no collective library",
    "default_world_size": 2,
    "blocking": ["BACKEND_NOT_REGISTERED"],
    "no_devices": None,
    "hints": {},
}

# What each field of a row's `collective` means (and CPU_COLLECTIVE's).
COLLECTIVE_FIELDS = {
    "backend": "the torch.distributed backend (init_process_group, eccl_probe's backend)",
    "torch_module": "the package imported before the device is used (it registers the device and the backend); "
                    "its import, version, torch requirement and API are checked (the TORCH_GCU_* codes); null: "
                    "torch alone",
    "device_type": "torch.device(<it>, LOCAL_RANK); torch.<it> is the device module (set_device, device_count, "
                   "is_available, synchronize); cpu: no device",
    "api": "the API generation reported for the device module (framework.api_generation, collective.api)",
    "plugin_api": "the torch_module's own older device API, used when torch.<device_type> is missing: its api "
                  "name and the torch_module functions for a device, synchronize and DistributedDataParallel; null: "
                  "none",
    "runtime": "the runtime torch must be built with: devices are counted and used only when "
               "torch.<device_type>.is_available(), and a rank without it stops, naming it; null: no such check",
    "runtime_version": "the torch.version attribute reported as cuda_version, and the words when it is missing",
    "ddp_device_ids": "DistributedDataParallel(model, device_ids=[the rank's device index])",
    "synchronize_device": "torch.<device_type>.synchronize(device) rather than synchronize()",
    "loaded_version_call": "the Python call (module.attribute...) giving the loaded library's version in the "
                           "framework child; without it, the library's version_string_call by ctypes",
    "library": "the collective library: file name searched, soname loaded, the name it is mapped under, whether a "
               "missing or duplicate system copy is a problem, the directories searched after the loader's, the "
               "version calls (int f(int *) and its units [at least, major unit, minor unit]; const char *f(void)); "
               "null: none",
    "no_library": "why the library level has nothing to look for (null when library is set)",
    "default_world_size": "ranks started when world_size is not given; null: the visible device count, never more",
    "blocking": "the problem codes that stop the collective level, in the order the reason names the first",
    "no_devices": "the NO_DEVICES message: {python} {torch} {api} {count} {plural} {runtime_version} {error}",
    "hints": "hints that replace the problem table's (eccl_probe's _eccl.PROBLEMS) for this backend; {python}",
}


class VendorError(ValueError):
    """A vendor name the table does not have."""


def vendor_spec(name):
    """The row of vendor `name` (a copy); VendorError for a name not in the table."""
    for row in VENDORS:
        if row["name"] == name:
            return copy.deepcopy(row)
    raise VendorError("unknown vendor %r: the collection knows %s (plugins/module_utils/_vendors.py)"
                      % (name, ", ".join(NAMES)))


def collectives():
    """Every collective backend's row (its vendor's `backend` in it), the vendors' in the table's order,
    then the CPU fallback."""
    return [dict(row["collective"], backend=row["backend"]) for row in VENDORS] + [CPU_COLLECTIVE]


BACKENDS = tuple(c["backend"] for c in collectives())


def collective_spec(backend):
    """The collective row of `backend` (a copy); VendorError for a backend not in the table."""
    for row in collectives():
        if row["backend"] == backend:
            return copy.deepcopy(row)
    raise VendorError("unknown collective backend %r: the collection knows %s (plugins/module_utils/_vendors.py)"
                      % (backend, ", ".join(BACKENDS)))


def node_collectives(name):
    """The collective rows a job on vendor `name`'s node may use: its own backend's, then the
    CPU fallback's (what dist_launch installs beside the rank code); VendorError for a name not in the table."""
    return [collective_spec(vendor_spec(name)["backend"]), copy.deepcopy(CPU_COLLECTIVE)]
