# The collective probe's old rank code (before issue 13), kept as a test input:
# it all-reduces a tensor in host memory, which a T20 (and NCCL on a GPU) refuses.
# molecule/eccl_probe runs it against the stand-in torch_gcu and expects the
# same refusal; if the stand-in ever accepts it, the simulator is too lenient.
import datetime
import os

import torch
import torch.distributed as dist
# torch_gcu registers the eccl backend when imported.
import torch_gcu  # noqa: F401 pylint: disable=unused-import

dist.init_process_group("eccl", init_method="env://", timeout=datetime.timedelta(seconds=60))
t = torch.full((1024,), float(int(os.environ["RANK"]) + 1), dtype=torch.float32)
dist.all_reduce(t)
print("CPU tensor accepted")
