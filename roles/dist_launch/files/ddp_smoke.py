# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tiny DistributedDataParallel smoke job, installed by the gcu.topsrider
dist_launch role next to the launch scripts.

Start it with a launcher, one process per card:

    /opt/topsrider/launch/launch-single.sh /opt/topsrider/launch/ddp_smoke.py

A two-layer linear model with a fixed seed trains for a few steps on the
rank's own card: the model and every batch are placed on the device the way
real training code does it (topsrider_rank.place(), installed beside this
file and shared with gcu.topsrider.eccl_probe): torch_gcu 1.x
`torch_gcu.gcu_device(LOCAL_RANK)` and torch_gcu's DDP, torch_gcu 2.x
`torch.gcu.set_device` + `torch.device("gcu", LOCAL_RANK)`, NVIDIA
`torch.cuda.set_device` + `torch.device("cuda", LOCAL_RANK)`; gloo runs on the
CPU. Every rank draws its own batch (seeded by its rank), DDP averages the
gradients, and the loss printed at the end is the mean over all ranks, so a
healthy job prints the same loss on every rank. Each rank prints one JSON line:
rank, local_rank, world_size, backend, device, loss and the training config it
was given. The backend comes from DIST_LAUNCH_BACKEND (by default the node
vendor's: eccl, nccl on NVIDIA nodes; gloo for a plain CPU run), and what it
needs (the package imported first, the device) from its row of the vendor
table, which the role installs beside this file (topsrider_collectives.json).
For eccl, torch_gcu is imported first so that the backend is registered in
this interpreter.

--hold SECONDS keeps every rank training (the same steps, on the card) for
that long after the first steps, so the launch check sees a running job.
--hold-work N adds an N x N matrix product on the card to every held step
(a real GPU then reports itself busy; 0, the default, keeps a simulated node's
CPUs quiet) and --hold-pause the seconds between held steps (default 0.1).
--stop-file PATH ends the hold early, once PATH exists on any rank's node
(the ranks agree on it at the next step, so the job ends cleanly, exit 0).
--report-held prints a second JSON line per rank when the hold ends
("phase": "held"): the steps held, the mean loss and the parameters' checksum,
which DDP keeps the same on every rank, so a job that trained through a long
hold proves its result whole.
"""
import argparse
import datetime
import json
import os
import socket
import sys
import time


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3, help="training steps (default 3)")
    parser.add_argument("--hold", type=float, default=0.0,
                        help="seconds every rank goes on training after the first steps (default 0)")
    parser.add_argument("--hold-work", type=int, default=0,
                        help="size N of an N x N matrix product added to every held step (default 0)")
    parser.add_argument("--hold-pause", type=float, default=0.1,
                        help="seconds between held steps (default 0.1)")
    parser.add_argument("--stop-file", default=None,
                        help="end the hold early once this file exists on any rank's node")
    parser.add_argument("--report-held", action="store_true",
                        help="print a second JSON line per rank when the hold ends (held steps, loss, checksum)")
    parser.add_argument("--config", default=None, help="training config picked by the launcher (echoed)")
    parser.add_argument("--result-dir", default=None,
                        help="also write each rank's JSON line to RESULT_DIR/rank-<rank>.json")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds the process group waits for the other ranks (default 120)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        if name not in os.environ:
            sys.stderr.write("ddp_smoke: %s is not set; start this script with a launcher "
                             "(launch-single.sh, launch-platform.sh, torchrun)\n" % name)
            return 2
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import topsrider_rank  # pylint: disable=import-error,import-outside-toplevel
    collective = topsrider_rank.installed_collective(os.environ.get("DIST_LAUNCH_BACKEND"))
    backend = collective["backend"]
    # For eccl this imports torch_gcu, which registers the backend; without it:
    # "Invalid backend: 'eccl'".
    placement = topsrider_rank.place(collective, os.environ["LOCAL_RANK"])
    import torch  # pylint: disable=import-error,import-outside-toplevel
    import torch.distributed as dist  # pylint: disable=import-error,import-outside-toplevel

    dist.init_process_group(backend=backend, timeout=datetime.timedelta(seconds=args.timeout))
    rank = dist.get_rank()
    world = dist.get_world_size()
    device = placement.device

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).to(device)
    ddp = placement.ddp(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(1000 + rank)
    target_w = (torch.arange(8, dtype=torch.float32).unsqueeze(1) / 8.0).to(device)

    def step():
        # Batches are drawn on the host (seeded, the same on every device) and moved to the card.
        x = torch.randn(32, 8, generator=gen).to(device)
        y = x @ target_w
        opt.zero_grad()
        out = torch.nn.functional.mse_loss(ddp(x), y)
        out.backward()
        opt.step()
        return out

    loss = None
    for _step in range(args.steps):
        loss = step()
    mean_loss = loss.detach().clone()
    dist.all_reduce(mean_loss)
    mean_loss /= world
    placement.synchronize(mean_loss)
    checksum = sum(float(p.detach().sum().cpu()) for p in model.parameters())
    line = json.dumps({
        "rank": rank, "local_rank": int(os.environ["LOCAL_RANK"]), "world_size": world,
        "backend": backend, "device": str(device), "api": placement.api,
        "loss": round(float(mean_loss.cpu()), 6), "param_checksum": round(checksum, 5),
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
    # --hold: keep the cards busy (every rank steps together, so DDP stays in step).
    deadline = time.time() + args.hold
    work = torch.randn(args.hold_work, args.hold_work).to(device) if args.hold_work > 0 else None
    held_steps = 0
    while args.hold > 0:
        loss = step()
        held_steps += 1
        if work is not None:
            for _product in range(10):
                work = torch.tanh(work @ work)
        placement.synchronize(work)
        if args.hold_pause > 0:
            time.sleep(args.hold_pause)
        going = time.time() < deadline and not (args.stop_file and os.path.exists(args.stop_file))
        flag = torch.tensor([1.0 if going else 0.0]).to(device)
        dist.all_reduce(flag, op=dist.ReduceOp.MIN)
        if float(flag.cpu()) == 0.0:
            break
    if args.hold > 0 and args.report_held:
        held_loss = loss.detach().clone()
        dist.all_reduce(held_loss)
        held_loss /= world
        placement.synchronize(held_loss)
        checksum = sum(float(p.detach().sum().cpu()) for p in model.parameters())
        line = json.dumps({
            "phase": "held", "rank": rank, "world_size": world, "held_steps": held_steps,
            "loss": round(float(held_loss.cpu()), 6), "param_checksum": round(checksum, 5),
            "pid": os.getpid(), "host": socket.gethostname(),
        }, sort_keys=True)
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    # Every rank past its last collective before any tears the group down: a
    # rank that destroyed it while a peer on another node was still in one
    # aborted at exit ("terminate called without an active exception", seen
    # on the simulator's gloo under load), failing a job that had succeeded.
    done = torch.zeros(1).to(device)
    dist.all_reduce(done)
    float(done.cpu())
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
