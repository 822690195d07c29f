"""SIMULATOR: the stand-in `eccl` torch.distributed backend.

Not Enflame's ECCL: every collective is delegated to torch's own gloo process
group (the simulated device memory is host memory), so the collective level of
gcu.topsrider.eccl_probe runs for real on a simulated node. What a T20 refuses,
this refuses too:

- a collective on a tensor in host memory (not placed through the device
  APIs, see _device.py), with a RuntimeError as a device backend raises;
- a process group when the libeccl.so loaded is not the stack version the
  wheel was built for (torch_gcu and libeccl come from one release).

A rank bound to a simulated card whose state carries `"hang": true` blocks
inside the collective, as a wedged card would.

Fabric faults (SIMULATED, `simctl link ...`, the state file's `link` key) act
only on a job that spans nodes (WORLD_SIZE > LOCAL_WORLD_SIZE): with
`slow=<factor>` every collective of this node's ranks takes `factor` times as
long (it sleeps (factor - 1) x the time the gloo op took), so the peers wait
for it as for a slow link; with `down` every collective raises, as a dead
link's transport error does, and the peers' collectives fail with it.
With TOPSRIDER_SIM_LINK_GBPS set (in every rank's environment), the links
get a bandwidth: a cross-node collective takes at least its nccl-tests bus
bytes (size x 2(n-1)/n) at that many GB/s, divided by this node's slow factor,
so that busbw measures the simulated link and not the CPU load of the machine
running the simulator (loopback gloo on shared cores varies tenfold).

A torch whose ProcessGroup cannot be subclassed in Python (an old one of the
torch_gcu 1.x generation, e.g. Debian bullseye's torch 1.7) gets torch's gloo
group itself, after the same library and card checks, and the same refusals,
hangs and link faults sit in wrappers around torch.distributed's collective
functions (all_reduce, broadcast, all_gather, reduce, barrier) instead.
"""
import datetime
import functools
import inspect
import os
import sys
import time

import torch.distributed as dist

from . import _build_info
from . import _device
from . import _sim_state

BACKEND_NAME = "eccl"


def _debug(msg):
    if os.environ.get("ECCL_DEBUG", "").upper() in ("INFO", "TRACE"):
        sys.stderr.write("ECCL INFO [simulated] %s\n" % msg)
        sys.stderr.flush()


def _link_gbps():
    """SIMULATED link bandwidth in GB/s (TOPSRIDER_SIM_LINK_GBPS), or None."""
    try:
        rate = float(os.environ.get("TOPSRIDER_SIM_LINK_GBPS", ""))
    except ValueError:
        return None
    return rate if rate > 0 else None


def _release(version):
    return str(version or "").split("+", 1)[0].split("-", 1)[0].strip()


def check_library_version():
    """Refuse a libeccl.so from another release than the wheel's (SIMULATED check)."""
    import torch_gcu  # the package, already imported: pylint: disable=import-outside-toplevel
    loaded = torch_gcu.eccl_version()
    if _release(loaded) != _release(_build_info.STACK_VERSION):
        raise RuntimeError(
            "ECCL error [simulated]: libeccl.so version %s does not match TopsRider %s, the stack this torch_gcu "
            "(%s) was built for: install the tops-eccl package and the torch_gcu wheel of one release"
            % (loaded or "unknown (no ecclGetVersionString)", _build_info.STACK_VERSION, _build_info.VERSION))


def _refuse_host(tensors, what):
    for tensor in tensors:
        if _device.mark_of(tensor) == _device.HOST:
            raise RuntimeError(
                "ECCL error [simulated]: %s on a tensor in host memory (device cpu): eccl works on GCU tensors "
                "only (no backend type for device type cpu); place it with torch.device('gcu', LOCAL_RANK) "
                "(torch_gcu 2.x) or torch_gcu.gcu_device(LOCAL_RANK) (1.x)" % what)


def _card_for_rank(rank):
    """The simulated card a rank is bound to (LOCAL_RANK, else rank mod count)."""
    cards = _sim_state.visible_cards()
    if not cards:
        return None
    local = os.environ.get("LOCAL_RANK")
    slot = int(local) if local is not None and local.isdigit() else rank
    return cards[slot % len(cards)]


def _hang_if_wedged(card_index, rank, what):
    # Re-read the state at every collective so a test can wedge a card mid-run.
    for card in _sim_state.visible_cards():
        if card.get("index") == card_index and card.get("hang"):
            _debug("rank %d: card %s hangs in %s" % (rank, card_index, what))
            while True:
                time.sleep(3600)


def _cross_node(size):
    local_size = os.environ.get("LOCAL_WORLD_SIZE", "")
    return local_size.isdigit() and size > int(local_size)


def _under_link_faults(what, rank, size, cross_node, payload_bytes, run):
    """Run one gloo op under this node's SIMULATED fabric faults (cross-node jobs only).
    `run` returns the op's work handle, or None when the op already completed."""
    if not cross_node:
        return run()
    down, slow = _sim_state.link_state()
    if down:
        raise RuntimeError("ECCL error [simulated]: %s: cross-node link of this node is down "
                           "(simctl link down); rank %d cannot reach its peers" % (what, rank))
    rate = _link_gbps()
    if slow <= 1.0 and rate is None:
        return run()
    started = time.perf_counter()
    work = run()
    if work is not None:
        work.wait()
    took = time.perf_counter() - started
    if rate is None:
        time.sleep((slow - 1.0) * took)
    else:
        floor = payload_bytes * 2.0 * (size - 1) / size / (rate * 1e9) * slow
        time.sleep(max(0.0, floor - took))
    return work


def _check_rank_can_start(rank, size):
    """The checks a process group makes when it starts; returns the rank's card."""
    check_library_version()
    card = _card_for_rank(rank)
    if card is None:
        raise RuntimeError("ECCL error [simulated]: no GCU device visible to rank %d "
                           "(driver not loaded, no card present, or "
                           "ENFLAME_VISIBLE_DEVICES/TOPS_VISIBLE_DEVICES=none)" % rank)
    _debug("rank %d/%d bound to card %s (bus %s)" % (rank, size, card.get("index"), card.get("bus_id")))
    return card


class ProcessGroupECCL(dist.ProcessGroup):
    """SIMULATED eccl process group: gloo underneath, hang injection on top."""

    def __init__(self, store, rank, size, timeout):
        super(ProcessGroupECCL, self).__init__(rank, size)
        card = _check_rank_can_start(rank, size)
        self._card_index = card.get("index")
        self._last_bytes = 0
        self._cross_node = _cross_node(size)
        self._gloo = dist.ProcessGroupGloo(store, rank, size, timeout)

    def _maybe_hang(self, what):
        _hang_if_wedged(self._card_index, self.rank(), what)

    def _link(self, what, run):
        return _under_link_faults(what, self.rank(), self.size(), self._cross_node,
                                  self._last_bytes if what == "allreduce" else 0, run)

    def getBackendName(self):
        return BACKEND_NAME

    def allreduce(self, tensors, opts=None):
        self._maybe_hang("allreduce")
        _refuse_host(tensors, "allreduce")
        self._last_bytes = sum(t.numel() * t.element_size() for t in tensors)
        return self._link("allreduce", lambda: self._gloo.allreduce(
            tensors, opts if opts is not None else dist.AllreduceOptions()))

    def broadcast(self, tensors, opts=None):
        self._maybe_hang("broadcast")
        _refuse_host(tensors, "broadcast")
        return self._link("broadcast", lambda: self._gloo.broadcast(
            tensors, opts if opts is not None else dist.BroadcastOptions()))

    def allgather(self, output_tensors, input_tensors, opts=None):
        self._maybe_hang("allgather")
        _refuse_host(input_tensors, "allgather")
        return self._link("allgather", lambda: self._gloo.allgather(
            output_tensors, input_tensors, opts if opts is not None else dist.AllgatherOptions()))

    def reduce(self, tensors, opts=None):
        self._maybe_hang("reduce")
        _refuse_host(tensors, "reduce")
        return self._link("reduce", lambda: self._gloo.reduce(
            tensors, opts if opts is not None else dist.ReduceOptions()))

    def barrier(self, opts=None):
        self._maybe_hang("barrier")
        return self._link("barrier", lambda: self._gloo.barrier(
            opts if opts is not None else dist.BarrierOptions()))


def _python_groups():
    """Can this torch's ProcessGroup be subclassed in Python (not on bullseye's torch 1.7)?"""
    try:
        dist.ProcessGroup.__init__(ProcessGroupECCL.__new__(ProcessGroupECCL), 0, 1)
    except TypeError:
        return False
    return True


def _create(store, rank, size, timeout):
    if not isinstance(timeout, datetime.timedelta):
        timeout = datetime.timedelta(seconds=float(timeout))
    if _PYTHON_GROUPS:
        return ProcessGroupECCL(store, rank, size, timeout)
    _check_rank_can_start(rank, size)
    return dist.ProcessGroupGloo(store, rank, size, timeout)


# Without Python process groups: torch.distributed's function, the name of its input tensor argument.
_GUARDED = (("all_reduce", "tensor"), ("broadcast", "tensor"), ("all_gather", "tensor"),
            ("reduce", "tensor"), ("barrier", None))


def _guarded(function, tensor_arg):
    signature = inspect.signature(function)
    what = function.__name__.replace("_", "")

    @functools.wraps(function)
    def collective(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        if _device.backend_of(bound.arguments.get("group")) != BACKEND_NAME:
            return function(*args, **kwargs)
        rank, size = dist.get_rank(), dist.get_world_size()
        card = _card_for_rank(rank)
        _hang_if_wedged(card.get("index") if card else None, rank, what)
        tensors = [bound.arguments[tensor_arg]] if tensor_arg else []
        if tensors:
            _refuse_host(tensors, what)
        # Bus bytes only for all_reduce, as ProcessGroupECCL counts them.
        payload = sum(t.numel() * t.element_size() for t in tensors) if what == "allreduce" else 0
        return _under_link_faults(what, rank, size, _cross_node(size), payload,
                                  lambda: function(*args, **kwargs))

    collective._topsrider_sim = True  # pylint: disable=protected-access
    return collective


def _guard_collectives():
    for name, tensor_arg in _GUARDED:
        function = getattr(dist, name)
        if not getattr(function, "_topsrider_sim", False):
            setattr(dist, name, _guarded(function, tensor_arg))


def register():
    """Register `eccl` with torch.distributed (once). Returns True when registered."""
    if not dist.is_available():
        return False
    if getattr(dist.Backend, BACKEND_NAME.upper(), None) == BACKEND_NAME:
        return True
    global _PYTHON_GROUPS  # pylint: disable=global-statement
    _PYTHON_GROUPS = _python_groups()
    if not _PYTHON_GROUPS:
        _guard_collectives()
    try:
        dist.Backend.register_backend(BACKEND_NAME, _create, devices=["cpu"])
    except TypeError:
        # torch < 2.0: register_backend(name, func) only.
        dist.Backend.register_backend(BACKEND_NAME, _create)
    return True


_PYTHON_GROUPS = True
