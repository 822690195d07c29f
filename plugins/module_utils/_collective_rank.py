# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One rank of a device-placed collective, and the device helpers training code shares.

This file has two users and is written for both:

- gcu.topsrider.eccl_probe (and later the fabric check) writes it to a temporary
  directory on the node and runs it once per rank with the training interpreter:
  ``python topsrider_rank.py '<json args>'``. It prints stage lines and one
  report line (the markers below) that the module parses.
- the dist_launch role installs it next to ``ddp_smoke.py`` as
  ``topsrider_rank.py``; the smoke job imports ``place()`` from it, so the smoke
  job and the probe put tensors on the card in the same way.

Every tensor goes to the rank's own device, as the backend's row of the vendor
table says (plugins/module_utils/_vendors.py, a row's ``collective``). This file
runs alone in the training Python and cannot import the table, so the row is
passed in: eccl_probe puts it in the rank's JSON arguments (``collective``),
dist_launch installs every row a node may use as ``topsrider_collectives.json``
beside this file (``installed_collective``). With the rows of today:

- ``eccl``, torch_gcu 1.x: ``torch_gcu.gcu_device(LOCAL_RANK)`` (an ``xla`` device; the row's ``plugin_api``);
- ``eccl``, torch_gcu 2.x: ``torch.gcu.set_device(LOCAL_RANK)`` and ``torch.device("gcu", LOCAL_RANK)``;
- ``nccl``: ``torch.cuda.set_device(LOCAL_RANK)`` and ``torch.device("cuda", LOCAL_RANK)``;
- ``gloo``: the CPU (the comparison run; gloo is a host-memory backend).

Timing follows nccl-tests: warm-up, then the device is synchronized before and
after the timed loop; algbw = bytes / time, busbw = algbw x 2(n-1)/n.
The library each rank really loaded (libeccl / libnccl) is read from the rank's
own /proc/self/maps, with its version from the library's own version call.

Python 3.6+, standard library plus torch (and the row's torch_module, torch_gcu
for eccl), imported only inside functions so that importing this file needs neither.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ctypes
import datetime
import importlib
import json
import os
import sys
import time

REPORT_MARKER = "@@ECCL_PROBE_REPORT@@"
STAGE_MARKER = "@@ECCL_PROBE_STAGE@@"
# The rows dist_launch installs beside this file (as topsrider_rank.py) for the smoke job.
INSTALLED_COLLECTIVES = "topsrider_collectives.json"
BUSBW_FORMULA = "nccl-tests all_reduce: algbw = bytes / time per call; busbw = algbw * 2(n-1)/n"


def stage(name):
    sys.stdout.write("\n%s %s\n" % (STAGE_MARKER, name))
    sys.stdout.flush()


class Placement(object):
    """Where one rank's tensors live: device, API generation and how to synchronize."""

    def __init__(self, collective, device, api, synchronize, plugin=None):
        self.collective = collective
        self.backend = collective["backend"]
        self.device = device
        self.api = api
        self._synchronize = synchronize
        # The torch_module when its own older API (the row's plugin_api) placed the tensors.
        self.plugin = plugin

    def synchronize(self, tensor=None):
        """Wait for the device's queued work. On a lazy (xla) device without a
        synchronize call, reading one value back forces the work to run."""
        if self._synchronize is not None:
            self._synchronize()
        elif tensor is not None and self.plugin is not None:
            float(tensor.reshape(-1)[0].cpu())

    def ddp(self, model):
        """The DistributedDataParallel wrapper this API generation uses."""
        if self.plugin is not None:
            return attribute(self.plugin, self.collective["plugin_api"]["ddp"])(model)
        from torch.nn.parallel import DistributedDataParallel  # pylint: disable=import-error
        if self.collective["ddp_device_ids"]:
            return DistributedDataParallel(model, device_ids=[self.device.index])
        return DistributedDataParallel(model)


def attribute(obj, dotted):
    """obj.a.b for dotted "a.b"; None when a part is missing."""
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
    return obj


def place(collective, local_rank):
    """The rank's Placement for the backend row `collective`. Imports its
    torch_module (torch_gcu for eccl, which registers the backend). Raises
    RuntimeError naming what is missing."""
    import torch  # pylint: disable=import-error
    local_rank = int(local_rank)
    plugin = importlib.import_module(collective["torch_module"]) if collective["torch_module"] else None
    kind = collective["device_type"]
    if kind == "cpu":
        return Placement(collective, torch.device("cpu"), collective["api"], None)
    module = getattr(torch, kind, None)
    if collective["runtime"] and (module is None or not module.is_available()):
        raise RuntimeError("backend %s needs %s, but torch.%s.is_available() is False in %s"
                           % (collective["backend"], collective["runtime"], kind, sys.executable))
    if module is not None and hasattr(module, "set_device"):
        module.set_device(local_rank)
        device = torch.device(kind, local_rank)
        if collective["synchronize_device"]:
            return Placement(collective, device, collective["api"], lambda: module.synchronize(device))
        return Placement(collective, device, collective["api"], module.synchronize)
    older = collective["plugin_api"]
    if older and hasattr(plugin, older["device"]):
        return Placement(collective, getattr(plugin, older["device"])(local_rank), older["api"],
                         getattr(plugin, older["synchronize"], None), plugin)
    raise RuntimeError("%s offers neither torch.%s.set_device (%s)%s" % (
        collective["torch_module"] or "torch", kind, collective["api"],
        " nor %s.%s (%s)" % (collective["torch_module"], older["device"], older["api"]) if older else ""))


def installed_collective(backend, directory=None):
    """The row of `backend` among those dist_launch installed beside this file
    (topsrider_collectives.json); the first row when `backend` is empty (the
    vendor's own). Raises RuntimeError for a backend the node has no row for."""
    path = os.path.join(directory or os.path.dirname(os.path.abspath(__file__)), INSTALLED_COLLECTIVES)
    with open(path) as f:
        rows = json.load(f)
    for row in rows:
        if not backend or row["backend"] == backend:
            return row
    raise RuntimeError("backend %r: %s has rows for %s only (the dist_launch role writes it from the vendor table)"
                       % (backend, path, ", ".join(row["backend"] for row in rows)))


def mapped_library(prefix, maps="/proc/self/maps"):
    """Path of the first mapped file whose name starts with `prefix`, or None."""
    try:
        with open(maps) as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6 and os.path.basename(parts[5].strip()).startswith(prefix):
                    return parts[5].strip()
    except (IOError, OSError):
        pass
    return None


def format_version(library, number):
    """A library's version number as 'M.m.p', by the row's version_units: the first
    [at least, major unit, minor unit] the number reaches (ecclGetVersion: M*1000000+m*1000+p;
    ncclGetVersion: M*10000+m*100+p from 2.9 on, M*1000+m*100+p before)."""
    if number is None:
        return None
    number = int(number)
    for least, major, minor in library["version_units"]:
        if number >= least:
            return "%d.%d.%d" % (number // major, (number % major) // minor, number % minor)
    return None


def loaded_library(collective, maps="/proc/self/maps"):
    """{name, path, version} of the collective library this process loaded, or None for a backend without one."""
    library = collective["library"]
    if library is None:
        return None
    path = mapped_library(library["mapped"], maps)
    out = {"name": library["mapped"], "path": path, "version": None}
    if path is None:
        return out
    try:
        fn = getattr(ctypes.CDLL(path), library["version_call"])
        value = ctypes.c_int(0)
        fn.argtypes = [ctypes.POINTER(ctypes.c_int)]
        fn.restype = ctypes.c_int
        if fn(ctypes.byref(value)) == 0:
            out["version"] = format_version(library, value.value)
    except (OSError, AttributeError):
        pass
    return out


def all_reduce_sizes(args, placement, rank, world):
    """All-reduce at every size on the device; the sum checked, the loop timed."""
    import torch  # pylint: disable=import-error
    import torch.distributed as dist  # pylint: disable=import-error
    expected = world * (world + 1) / 2.0
    results = []
    for size in args["sizes"]:
        n = max(1, size // 4)
        stage("all_reduce %d" % (n * 4))
        t = torch.full((n,), float(rank + 1), dtype=torch.float32, device=placement.device)
        dist.all_reduce(t)
        placement.synchronize(t)
        got = float(t[0].cpu())
        correct = bool(t.eq(expected).all().cpu())
        for _warm in range(args.get("warmup", 2)):
            dist.all_reduce(t)
        placement.synchronize(t)
        dist.barrier()
        placement.synchronize(t)
        t0 = time.perf_counter()
        for _timed in range(args["iterations"]):
            dist.all_reduce(t)
        placement.synchronize(t)
        seconds = (time.perf_counter() - t0) / args["iterations"]
        results.append({"size_bytes": n * 4, "seconds": seconds, "correct": correct,
                        "expected": expected, "got": got})
    return results


def run(args):
    """One rank: prints its report line, then leaves the process group (raises on any failure)."""
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    stage("import torch")
    import torch.distributed as dist  # pylint: disable=import-error
    stage("place on device")
    collective = args["collective"]
    placement = place(collective, local_rank)
    stage("init_process_group")
    dist.init_process_group(collective["backend"], init_method="env://", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=args["timeout"]))
    results = all_reduce_sizes(args, placement, rank, world)
    stage("report")
    report = {"rank": rank, "local_rank": local_rank, "world_size": world, "backend": dist.get_backend(),
              "device": str(placement.device), "api": placement.api,
              "library": loaded_library(collective), "results": results}
    sys.stdout.write("\n" + REPORT_MARKER + json.dumps(report) + "\n")
    sys.stdout.flush()
    dist.destroy_process_group()
    return report


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    run(json.loads(argv[0]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
