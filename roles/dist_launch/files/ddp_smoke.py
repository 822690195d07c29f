# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tiny DistributedDataParallel smoke job, installed by the gcu.topsrider
dist_launch role next to the launch scripts.

Start it with a launcher, one process per card:

    /opt/topsrider/launch/launch-single.sh /opt/topsrider/launch/ddp_smoke.py

A two-layer linear model with a fixed seed trains for a few steps on CPU
tensors; every rank draws its own batch (seeded by its rank), DDP averages the
gradients, and the loss printed at the end is the mean over all ranks, so a
healthy job prints the same loss on every rank. Each rank prints one JSON line:
rank, local_rank, world_size, backend, loss and the training config it was
given. The backend comes from DIST_LAUNCH_BACKEND (eccl by default; nccl on
NVIDIA nodes, gloo for a plain CPU run). For eccl, torch_gcu is imported first
so that the backend is registered in this interpreter.

--hold SECONDS keeps every rank alive (idle) after training, for the launch
check to look at a running job.
"""
import argparse
import json
import os
import socket
import sys
import time


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3, help="training steps (default 3)")
    parser.add_argument("--hold", type=float, default=0.0,
                        help="seconds every rank stays alive after training (default 0)")
    parser.add_argument("--config", default=None, help="training config picked by the launcher (echoed)")
    parser.add_argument("--result-dir", default=None,
                        help="also write each rank's JSON line to RESULT_DIR/rank-<rank>.json")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds the process group waits for the other ranks (default 120)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    backend = os.environ.get("DIST_LAUNCH_BACKEND", "eccl")
    if backend == "eccl":
        # Registers the eccl backend; without it: "Invalid backend: 'eccl'".
        import torch_gcu  # noqa: F401 pylint: disable=import-error,unused-import,import-outside-toplevel
    import datetime
    import torch  # pylint: disable=import-error,import-outside-toplevel
    import torch.distributed as dist  # pylint: disable=import-error,import-outside-toplevel
    from torch.nn.parallel import DistributedDataParallel  # pylint: disable=import-error,import-outside-toplevel

    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        if name not in os.environ:
            sys.stderr.write("ddp_smoke: %s is not set; start this script with a launcher "
                             "(launch-single.sh, launch-platform.sh, torchrun)\n" % name)
            return 2
    dist.init_process_group(backend=backend, timeout=datetime.timedelta(seconds=args.timeout))
    rank = dist.get_rank()
    world = dist.get_world_size()

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    ddp = DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(1000 + rank)
    target_w = torch.arange(8, dtype=torch.float32).unsqueeze(1) / 8.0
    loss = None
    for _step in range(args.steps):
        x = torch.randn(32, 8, generator=gen)
        y = x @ target_w
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        opt.step()
    mean_loss = loss.detach().clone()
    dist.all_reduce(mean_loss)
    mean_loss /= world
    checksum = sum(float(p.detach().sum()) for p in model.parameters())
    line = json.dumps({
        "rank": rank, "local_rank": int(os.environ["LOCAL_RANK"]), "world_size": world,
        "backend": backend, "loss": round(float(mean_loss), 6), "param_checksum": round(checksum, 5),
        "config": args.config, "pid": os.getpid(), "host": socket.gethostname(),
        "total_cards": os.environ.get("DIST_LAUNCH_TOTAL_CARDS"),
    }, sort_keys=True)
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
    if args.result_dir:
        path = os.path.join(args.result_dir, "rank-%d.json" % rank)
        with open(path + ".tmp", "w") as f:
            f.write(line + "\n")
        os.rename(path + ".tmp", path)
    if args.hold > 0:
        time.sleep(args.hold)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
