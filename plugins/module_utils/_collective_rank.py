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

Every tensor goes to the rank's own device, per vendor and API generation:

- ``eccl``, torch_gcu 1.x: ``torch_gcu.gcu_device(LOCAL_RANK)`` (an ``xla`` device);
- ``eccl``, torch_gcu 2.x: ``torch.gcu.set_device(LOCAL_RANK)`` and ``torch.device("gcu", LOCAL_RANK)``;
- ``nccl``: ``torch.cuda.set_device(LOCAL_RANK)`` and ``torch.device("cuda", LOCAL_RANK)``;
- ``gloo``: the CPU (the comparison run; gloo is a host-memory backend).

Timing follows nccl-tests: warm-up, then the device is synchronized before and
after the timed loop; algbw = bytes / time, busbw = algbw x 2(n-1)/n.
The library each rank really loaded (libeccl / libnccl) is read from the rank's
own /proc/self/maps, with its version from the library's own version call.

Python 3.6+, standard library plus torch (and torch_gcu for eccl), imported
only inside functions so that importing this file needs neither.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ctypes
import datetime
import json
import os
import sys
import time

REPORT_MARKER = "@@ECCL_PROBE_REPORT@@"
STAGE_MARKER = "@@ECCL_PROBE_STAGE@@"
# The collective library a backend loads, as its file name starts in /proc/self/maps.
LIBRARY_PREFIX = {"eccl": "libeccl", "nccl": "libnccl"}
BUSBW_FORMULA = "nccl-tests all_reduce: algbw = bytes / time per call; busbw = algbw * 2(n-1)/n"


def stage(name):
    sys.stdout.write("\n%s %s\n" % (STAGE_MARKER, name))
    sys.stdout.flush()


class Placement(object):
    """Where one rank's tensors live: device, API generation and how to synchronize."""

    def __init__(self, backend, device, api, synchronize, torch_gcu=None):
        self.backend = backend
        self.device = device
        self.api = api
        self._synchronize = synchronize
        self.torch_gcu = torch_gcu

    def synchronize(self, tensor=None):
        """Wait for the device's queued work. On a lazy (xla) device without a
        synchronize call, reading one value back forces the work to run."""
        if self._synchronize is not None:
            self._synchronize()
        elif tensor is not None and self.api == "1.x":
            float(tensor.reshape(-1)[0].cpu())

    def ddp(self, model):
        """The DistributedDataParallel wrapper this API generation uses."""
        if self.api == "1.x":
            return self.torch_gcu.nn.parallel.DistributedDataParallel(model)
        from torch.nn.parallel import DistributedDataParallel  # pylint: disable=import-error
        if self.backend == "nccl":
            return DistributedDataParallel(model, device_ids=[self.device.index])
        return DistributedDataParallel(model)


def place(backend, local_rank):
    """The rank's Placement for `backend`. Imports torch_gcu for eccl (which
    registers the backend). Raises RuntimeError naming what is missing."""
    import torch  # pylint: disable=import-error
    local_rank = int(local_rank)
    if backend == "eccl":
        import torch_gcu  # noqa: F401 pylint: disable=import-error
        gcu = getattr(torch, "gcu", None)
        if gcu is not None and hasattr(gcu, "set_device"):
            gcu.set_device(local_rank)
            return Placement(backend, torch.device("gcu", local_rank), "2.x", gcu.synchronize)
        if hasattr(torch_gcu, "gcu_device"):
            return Placement(backend, torch_gcu.gcu_device(local_rank), "1.x",
                             getattr(torch_gcu, "synchronize", None), torch_gcu)
        raise RuntimeError("torch_gcu offers neither torch.gcu.set_device (2.x) nor torch_gcu.gcu_device (1.x)")
    if backend == "nccl":
        if not torch.cuda.is_available():
            raise RuntimeError("backend nccl needs CUDA, but torch.cuda.is_available() is False in %s"
                               % sys.executable)
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        return Placement(backend, device, "cuda", lambda: torch.cuda.synchronize(device))
    return Placement(backend, torch.device("cpu"), "cpu", None)


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


def format_version(backend, number):
    """ecclGetVersion: M*1000000+m*1000+p; ncclGetVersion: M*10000+m*100+p (2.9 on), M*1000+m*100+p before."""
    if number is None:
        return None
    if backend == "nccl":
        if number >= 10000:
            return "%d.%d.%d" % (number // 10000, (number // 100) % 100, number % 100)
        return "%d.%d.%d" % (number // 1000, (number // 100) % 10, number % 100)
    return "%d.%d.%d" % (number // 1000000, (number // 1000) % 1000, number % 1000)


def loaded_library(backend, maps="/proc/self/maps"):
    """{name, path, version} of the collective library this process loaded, or None for gloo."""
    prefix = LIBRARY_PREFIX.get(backend)
    if prefix is None:
        return None
    path = mapped_library(prefix, maps)
    out = {"name": prefix, "path": path, "version": None}
    if path is None:
        return out
    func = "ecclGetVersion" if backend == "eccl" else "ncclGetVersion"
    try:
        fn = getattr(ctypes.CDLL(path), func)
        value = ctypes.c_int(0)
        fn.argtypes = [ctypes.POINTER(ctypes.c_int)]
        fn.restype = ctypes.c_int
        if fn(ctypes.byref(value)) == 0:
            out["version"] = format_version(backend, value.value)
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
    placement = place(args["backend"], local_rank)
    stage("init_process_group")
    dist.init_process_group(args["backend"], init_method="env://", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=args["timeout"]))
    results = all_reduce_sizes(args, placement, rank, world)
    stage("report")
    report = {"rank": rank, "local_rank": local_rank, "world_size": world, "backend": dist.get_backend(),
              "device": str(placement.device), "api": placement.api,
              "library": loaded_library(args["backend"]), "results": results}
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
