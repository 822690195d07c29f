"""SIMULATOR: the stand-in `eccl` torch.distributed backend.

Not Enflame's ECCL: every collective is delegated to torch's own gloo process
group on CPU tensors, so the collective level of gcu.topsrider.eccl_probe runs
for real on a simulated node. A rank bound to a simulated card whose state
carries `"hang": true` blocks inside the collective, as a wedged card would.
"""
import datetime
import os
import sys
import time

import torch.distributed as dist

from . import _sim_state

BACKEND_NAME = "eccl"


def _debug(msg):
    if os.environ.get("ECCL_DEBUG", "").upper() in ("INFO", "TRACE"):
        sys.stderr.write("ECCL INFO [simulated] %s\n" % msg)
        sys.stderr.flush()


def _card_for_rank(rank):
    """The simulated card a rank is bound to (LOCAL_RANK, else rank mod count)."""
    cards = _sim_state.visible_cards()
    if not cards:
        return None
    local = os.environ.get("LOCAL_RANK")
    slot = int(local) if local is not None and local.isdigit() else rank
    return cards[slot % len(cards)]


class ProcessGroupECCL(dist.ProcessGroup):
    """SIMULATED eccl process group: gloo underneath, hang injection on top."""

    def __init__(self, store, rank, size, timeout):
        super(ProcessGroupECCL, self).__init__(rank, size)
        card = _card_for_rank(rank)
        if card is None:
            raise RuntimeError("ECCL error [simulated]: no GCU device visible to rank %d "
                               "(driver not loaded, no card present, or "
                               "ENFLAME_VISIBLE_DEVICES/TOPS_VISIBLE_DEVICES=none)" % rank)
        self._card_index = card.get("index")
        self._gloo = dist.ProcessGroupGloo(store, rank, size, timeout)
        _debug("rank %d/%d bound to card %s (bus %s)" % (rank, size, self._card_index, card.get("bus_id")))

    def _maybe_hang(self, what):
        # Re-read the state at every collective so a test can wedge a card mid-run.
        for card in _sim_state.visible_cards():
            if card.get("index") == self._card_index and card.get("hang"):
                _debug("rank %d: card %s hangs in %s" % (self.rank(), self._card_index, what))
                while True:
                    time.sleep(3600)

    def getBackendName(self):
        return BACKEND_NAME

    def allreduce(self, tensors, opts=None):
        self._maybe_hang("allreduce")
        return self._gloo.allreduce(tensors, opts if opts is not None else dist.AllreduceOptions())

    def broadcast(self, tensors, opts=None):
        self._maybe_hang("broadcast")
        return self._gloo.broadcast(tensors, opts if opts is not None else dist.BroadcastOptions())

    def allgather(self, output_tensors, input_tensors, opts=None):
        self._maybe_hang("allgather")
        return self._gloo.allgather(output_tensors, input_tensors,
                                    opts if opts is not None else dist.AllgatherOptions())

    def reduce(self, tensors, opts=None):
        self._maybe_hang("reduce")
        return self._gloo.reduce(tensors, opts if opts is not None else dist.ReduceOptions())

    def barrier(self, opts=None):
        self._maybe_hang("barrier")
        return self._gloo.barrier(opts if opts is not None else dist.BarrierOptions())


def _create(store, rank, size, timeout):
    if not isinstance(timeout, datetime.timedelta):
        timeout = datetime.timedelta(seconds=float(timeout))
    return ProcessGroupECCL(store, rank, size, timeout)


def register():
    """Register `eccl` with torch.distributed (once). Returns True when registered."""
    if not dist.is_available():
        return False
    if getattr(dist.Backend, BACKEND_NAME.upper(), None) == BACKEND_NAME:
        return True
    try:
        dist.Backend.register_backend(BACKEND_NAME, _create, devices=["cpu"])
    except TypeError:
        # torch < 2.0: register_backend(name, func) only.
        dist.Backend.register_backend(BACKEND_NAME, _create)
    return True
