"""SIMULATOR: the stand-in's GCU device, so that device code is needed where hardware needs it.

Not Enflame code, and no device memory: a "GCU tensor" here is a CPU tensor
whose storage the stand-in has recorded as placed on card N. What matters is
that the stand-in refuses what a T20 refuses:

- a process that uses a card (``set_device``, or a tensor placed on it) opens
  the card's device file /dev/gcu<N> and holds it until it exits, as the
  real runtime does, so a node's busy cards can be found in /proc; a card
  without its device file (driver not loaded) fails there;
- tensors are placed only through the device APIs real training code uses:
  torch_gcu 1.x ``torch_gcu.gcu_device(i)`` (an ``xla`` device) and torch_gcu 2.x
  ``torch.device("gcu", i)`` (``torch.gcu.set_device``, ``current_device``,
  ``synchronize``), with ``.to(device)``, ``model.to(device)`` or a factory call
  with ``device=``; an ordinal past the visible cards is refused;
- a tensor created in host memory (a factory call without a GCU device, or
  ``.cpu()``) is marked as host memory, and the ``eccl`` backend
  (_eccl_backend.py) refuses a collective on it, as a device backend does;
  DistributedDataParallel over host parameters is refused the same way;
- results of operations on placed tensors are placed.

How: a TorchFunctionMode, entered when torch_gcu is imported, sees every
Python-level torch call of the importing thread. Storages are recorded in a
weak map (so nothing is kept alive). Tensors made inside torch's C++ code
(DDP's buckets, autograd's gradients) are neither placed nor host here: the
stand-in cannot tell where real hardware would have put them, so it accepts
them; the checks that matter (the user's tensors, DDP's parameters) are on
what Python code made. Limit: ``tensor.device`` still reads ``cpu``.

On a torch without TorchFunctionMode (an old one of the torch_gcu 1.x
generation, e.g. Debian bullseye's torch 1.7) nothing sees every call, so the
stand-in wraps torch's Python entry points instead: the factory functions,
``Tensor.to``, ``Tensor.cpu`` and ``Module.to``, and marks the tensor object
itself (old torch hands out a new storage object at every ``.storage()``).
Results of other operations are not followed there (neither placed nor host:
accepted), and DistributedDataParallel (torch_gcu.nn.parallel) refuses a
model whose parameters were not all moved to a GCU with ``model.to``.
"""
import threading
import types
import weakref

import torch
import torch.distributed as dist

try:
    from torch.overrides import TorchFunctionMode
    MODES = True
except ImportError:  # an old torch (Debian bullseye's 1.7)
    TorchFunctionMode = object
    MODES = False

from . import _sim_state

HOST = "host"
DEVICE_TYPES = ("gcu", "xla", "privateuseone")
_MARK_ATTR = "_topsrider_sim_placement"
_marks = weakref.WeakKeyDictionary()
_current = threading.local()
# The originals, before _wrap_entry_points replaces them on an old torch.
_TENSOR_TO = torch.Tensor.to
_TENSOR_CPU = torch.Tensor.cpu


class PlacementError(RuntimeError):
    """Raised where a GCU device would refuse (SIMULATED)."""


def _storage(tensor):
    try:
        return tensor.untyped_storage()
    except (RuntimeError, TypeError, NotImplementedError):
        return None


def mark_of(tensor):
    """The card index a tensor was placed on, HOST, or None (made by torch's C++ code)."""
    if not isinstance(tensor, torch.Tensor):
        return None
    if not MODES:
        return getattr(tensor, _MARK_ATTR, None)
    storage = _storage(tensor)
    return _marks.get(storage) if storage is not None else None


def _record(value, mark):
    if isinstance(value, torch.Tensor):
        # A placed tensor stays placed: .cpu() of a tensor already on the CPU returns itself.
        if mark == HOST and mark_of(value) not in (None, HOST):
            return
        if not MODES:
            setattr(value, _MARK_ATTR, mark)
            return
        storage = _storage(value)
        if storage is not None:
            _marks[storage] = mark
    elif isinstance(value, (list, tuple)):
        for item in value:
            _record(item, mark)


def _device_mark(device):
    """HOST, a card index, or None when `device` names no device."""
    if device is None or isinstance(device, (int, torch.Tensor)):
        return None
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError):
        return None
    if device.type not in DEVICE_TYPES:
        return HOST
    index = device.index if device.index is not None else current_device()
    return use_card(index)


def _tensors(args, kwargs):
    for value in list(args) + list(kwargs.values()):
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, torch.Tensor):
                    yield item


def _placed_call(func, args, kwargs):
    """Call `func` with a GCU device replaced by the CPU; record where its result lives."""
    kwargs = dict(kwargs or {})
    args = tuple(args)
    mark = _device_mark(kwargs.get("device"))
    if mark is not None and mark != HOST:
        kwargs["device"] = torch.device("cpu")
    elif mark is None and func is _TENSOR_TO:
        for pos, value in enumerate(args[1:], 1):
            if isinstance(value, (str, torch.device)):
                mark = _device_mark(value)
                if mark is not None and mark != HOST:
                    args = args[:pos] + (torch.device("cpu"),) + args[pos + 1:]
                break
    if mark is None and func is _TENSOR_CPU:
        mark = HOST
    if mark is None:
        marks = [mark_of(t) for t in _tensors(args, kwargs)]
        placed = [m for m in marks if m not in (None, HOST)]
        mark = placed[0] if placed else HOST
    out = func(*args, **kwargs)
    _record(out, mark)
    return out


class _PlacementMode(TorchFunctionMode):
    """SIMULATED: records where each tensor made by Python code lives."""

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        return _placed_call(func, args, kwargs)


# Without TorchFunctionMode: the entry points training code places tensors through.
_FACTORIES = ("tensor", "as_tensor", "ones", "zeros", "full", "empty", "rand", "randn", "randint",
              "arange", "linspace", "ones_like", "zeros_like", "full_like", "empty_like",
              "rand_like", "randn_like")


def _wrapped(func):
    def call(*args, **kwargs):
        return _placed_call(func, args, kwargs)
    call.__name__ = getattr(func, "__name__", "call")
    call.__doc__ = getattr(func, "__doc__", None)
    return call


def _module_to(original):
    def to(module, *args, **kwargs):
        out = original(module, *args, **kwargs)
        device = torch._C._nn._parse_to(*args, **kwargs)[0]  # pylint: disable=protected-access
        mark = _device_mark(device)
        if mark is not None:
            for tensor in list(module.parameters()) + list(module.buffers()):
                _record(tensor, mark)
        return out
    return to


def _wrap_entry_points():
    for name in _FACTORIES:
        if hasattr(torch, name):
            setattr(torch, name, _wrapped(getattr(torch, name)))
    torch.Tensor.to = _wrapped(_TENSOR_TO)
    torch.Tensor.cpu = _wrapped(_TENSOR_CPU)
    torch.nn.Module.to = _module_to(torch.nn.Module.to)


_mode = None


def enable():
    """Follow placements from now on (once): the placement mode for the importing
    thread, or on a torch without modes, wrappers around its entry points."""
    global _mode  # pylint: disable=global-statement
    if _mode is None:
        if MODES:
            _mode = _PlacementMode()
            _mode.__enter__()
        else:
            _wrap_entry_points()
            _mode = "wrapped"


# ---- the device APIs --------------------------------------------------------

def current_device():
    return getattr(_current, "index", 0)


def use_card(index):
    """The visible ordinal `index`, checked, with its card's device file open (as
    the runtime opens /dev/gcu<N> when a process first uses a card, and holds it
    until the process exits); a missing device file fails as on a T20."""
    cards = _sim_state.visible_cards()
    if not 0 <= index < len(cards):
        raise PlacementError("GCU error [simulated]: invalid device ordinal %d: %d GCU(s) visible to this process"
                             % (index, len(cards)))
    try:
        _sim_state.open_card(cards[index].get("index", index))
    except _sim_state.DeviceFileError as exc:
        raise PlacementError(str(exc))
    return index


def set_device(device):
    index = device.index if isinstance(device, torch.device) else int(device)
    _current.index = use_card(index)


def synchronize(device=None):  # pylint: disable=unused-argument
    """SIMULATED: CPU work is done when the call returns."""
    return None


def gcu_device(index=None):
    """torch_gcu 1.x: the rank's device (an xla device)."""
    return torch.device("xla", current_device() if index is None else int(index))


def device_module(is_available, device_count):
    """torch.gcu for the 2.x API, registered as torch's PrivateUse1 device 'gcu'."""
    module = types.ModuleType("torch.gcu", "SIMULATED GCU device module (gcu.topsrider sim/)")
    module.is_available = is_available
    module.device_count = device_count
    module.current_device = current_device
    module.set_device = set_device
    module.synchronize = synchronize
    module.is_initialized = lambda: True
    module._is_in_bad_fork = lambda: False  # pylint: disable=protected-access
    module.manual_seed = lambda seed: None
    module.manual_seed_all = lambda seed: None
    return module


def register_gcu_device(module):
    if getattr(torch, "gcu", None) is module:
        return
    torch.utils.rename_privateuse1_backend("gcu")
    torch._register_device_module("gcu", module)  # pylint: disable=protected-access
    # torch asks the current accelerator for its C++ hooks (dist.barrier, for
    # one); the stand-in has none: its device memory is host memory.
    torch._C._get_accelerator = _host_accelerator  # pylint: disable=protected-access


def _host_accelerator(check=False):  # pylint: disable=unused-argument
    return torch.device("cpu")


# ---- DistributedDataParallel over host parameters -------------------------------

def backend_of(group=None):
    """The backend name of `group` (the default group when None), or None when there is none."""
    try:
        return dist.get_backend(group) if group is not None else dist.get_backend()
    except (RuntimeError, ValueError):
        return None


def _refuse_host_parameters(count):
    if count:
        raise PlacementError(
            "ECCL error [simulated]: DistributedDataParallel over %d parameter(s) in host memory "
            "(device cpu): eccl reduces GCU tensors only; move the model to the rank's GCU first "
            "(model.to(torch.device('gcu', LOCAL_RANK)) / torch_gcu.gcu_device(LOCAL_RANK))" % count)


def refuse_host_parameters():
    """DDP checks its parameters' shapes with a collective on the parameters'
    device; on a T20 with host parameters that collective fails. Same here."""
    original = getattr(dist, "_verify_params_across_processes", None)
    if original is None or getattr(original, "_topsrider_sim", False):
        return  # an old torch: distributed_data_parallel() checks the parameters instead

    def verify(process_group, tensors, *args, **kwargs):
        if backend_of(process_group) == "eccl":
            _refuse_host_parameters(len([t for t in tensors if mark_of(t) == HOST]))
        return original(process_group, tensors, *args, **kwargs)

    verify._topsrider_sim = True  # pylint: disable=protected-access
    dist._verify_params_across_processes = verify  # pylint: disable=protected-access


def distributed_data_parallel():
    """torch_gcu 1.x's DistributedDataParallel: torch's own where torch checks the
    parameters with a collective (refuse_host_parameters); on an old torch, a
    subclass that refuses, on an eccl group, parameters not moved to a GCU."""
    base = torch.nn.parallel.DistributedDataParallel
    if hasattr(dist, "_verify_params_across_processes"):
        return base

    class DistributedDataParallel(base):  # pylint: disable=abstract-method
        """SIMULATED: torch's DDP, after the placement check a GCU would make."""

        def __init__(self, module, *args, **kwargs):
            if backend_of(kwargs.get("process_group")) == "eccl":
                _refuse_host_parameters(len([p for p in module.parameters() if mark_of(p) in (None, HOST)]))
            super(DistributedDataParallel, self).__init__(module, *args, **kwargs)

    return DistributedDataParallel
