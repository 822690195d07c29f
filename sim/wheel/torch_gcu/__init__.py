"""SIMULATOR: stand-in for Enflame's torch_gcu, built by gcu.topsrider sim/wheel.

This is NOT the real torch_gcu and drives no hardware. It behaves the way the
deployment cares about:

- `import torch_gcu` loads libeccl.so by soname with ctypes, so a library that
  is not on the loader path fails the import with an ImportError naming
  libeccl.so, as the real C extension does;
- it warns when the installed torch is not the version it was built for (the
  real one fails later, at the first GCU operation);
- it registers the `eccl` backend in torch.distributed (gloo underneath), so
  init_process_group(backend='eccl') and all_reduce really run; the backend
  refuses to start when the loaded libeccl.so is not the stack version this
  wheel was built for, and refuses a collective on a tensor in host memory
  (see _device.py: tensors must be placed through the device APIs);
- it exposes the 1.x API (torch_gcu.is_available(), torch_gcu.device_count(),
  torch_gcu.gcu_device(i), torch_gcu.nn.parallel.DistributedDataParallel) and,
  when built for torch 2.x, the 2.x API (torch.gcu.is_available(),
  device_count(), set_device(), current_device(), synchronize(), device type
  `gcu`); the device count comes from the simulator state file
  (/etc/topsrider-sim/state.json): cards with `present` true when
  `driver_loaded`, filtered by ENFLAME_VISIBLE_DEVICES / TOPS_VISIBLE_DEVICES.
  TOPSRIDER_SIM_TORCH_GCU_API=1 makes a 2.x build behave as 1.x (no torch.gcu),
  so the 1.x code paths of the collection run on the simulator too.
"""
import os
import ctypes
import sys
import types
import warnings

from . import _build_info
from . import _sim_state

__version__ = _build_info.VERSION
__torch_version__ = _build_info.TORCH_VERSION
__stack_version__ = _build_info.STACK_VERSION
SIMULATOR = True
ECCL_LIBRARY = "libeccl.so"

try:
    _libeccl = ctypes.CDLL(ECCL_LIBRARY)
except OSError as _exc:
    raise ImportError("%s (torch_gcu needs the ECCL library on the loader path: "
                      "ldconfig, /etc/ld.so.conf.d)" % (_exc,))

import torch  # noqa: E402  (after the library, as the real extension links it first)


def _release(version):
    return str(version).split("+", 1)[0]


if _release(torch.__version__) != _release(_build_info.TORCH_VERSION):
    warnings.warn("torch_gcu %s was built for torch %s but torch %s is installed; "
                  "GCU operations will fail" % (__version__, _build_info.TORCH_VERSION, torch.__version__),
                  RuntimeWarning, stacklevel=2)


def eccl_version():
    """libeccl's version string (ecclGetVersionString), or None if it exports none."""
    try:
        fn = _libeccl.ecclGetVersionString
    except AttributeError:
        return None
    fn.restype = ctypes.c_char_p
    value = fn()
    return value.decode("ascii", "replace") if value else None


def device_count():
    """Number of GCUs this process may use (simulated)."""
    return len(_sim_state.visible_cards())


def is_available():
    return device_count() > 0


def stack_version():
    """The TopsRider stack this wheel was built for (the part after '+')."""
    return _build_info.STACK_VERSION


from . import _device  # noqa: E402
from . import _eccl_backend  # noqa: E402

gcu_device = _device.gcu_device
synchronize = _device.synchronize
current_device = _device.current_device
set_device = _device.set_device

# torch_gcu 1.x: torch_gcu.nn.parallel.DistributedDataParallel (torch's, with the placement check).
nn = types.ModuleType("torch_gcu.nn", "SIMULATED")
nn.parallel = types.ModuleType("torch_gcu.nn.parallel", "SIMULATED")
nn.parallel.DistributedDataParallel = _device.distributed_data_parallel()
sys.modules["torch_gcu.nn"] = nn
sys.modules["torch_gcu.nn.parallel"] = nn.parallel

_eccl_backend.register()
_device.refuse_host_parameters()
_device.enable()

API_GENERATION = "2.x" if int(_release(_build_info.TORCH_VERSION).split(".")[0]) >= 2 else "1.x"
if os.environ.get("TOPSRIDER_SIM_TORCH_GCU_API") == "1":
    API_GENERATION = "1.x"
if API_GENERATION == "2.x":
    # torch_gcu 2.x: the device module lives at torch.gcu, device type "gcu".
    _device.register_gcu_device(_device.device_module(is_available, device_count))
