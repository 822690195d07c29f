"""SIMULATOR: stand-in for Enflame's torch_gcu, built by gcu.topsrider sim/wheel.

This is NOT the real torch_gcu and drives no hardware. It behaves the way the
deployment cares about:

- `import torch_gcu` loads libeccl.so by soname with ctypes, so a library that
  is not on the loader path fails the import with an ImportError naming
  libeccl.so, as the real C extension does;
- it warns when the installed torch is not the version it was built for (the
  real one fails later, at the first GCU operation);
- it registers the `eccl` backend in torch.distributed (gloo underneath, CPU
  tensors), so init_process_group(backend='eccl') and all_reduce really run;
- it exposes the 1.x API (torch_gcu.is_available(), torch_gcu.device_count())
  and the 2.x API (torch.gcu.is_available(), torch.gcu.device_count()); the
  device count comes from the simulator state file (/etc/topsrider-sim/state.json):
  cards with `present` true when `driver_loaded`, filtered by
  ENFLAME_VISIBLE_DEVICES / TOPS_VISIBLE_DEVICES.
"""
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


from . import _eccl_backend  # noqa: E402

_eccl_backend.register()

if int(_release(_build_info.TORCH_VERSION).split(".")[0]) >= 2:
    # torch_gcu 2.x: the device module lives at torch.gcu.
    _gcu = types.ModuleType("torch.gcu", "SIMULATED GCU device module (gcu.topsrider sim/)")
    _gcu.is_available = is_available
    _gcu.device_count = device_count
    torch.gcu = _gcu
    sys.modules["torch.gcu"] = _gcu
