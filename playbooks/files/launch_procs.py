# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Launch check for a running distributed job, on one node (gcu.topsrider).

Counts the training processes that really run on a node and compares them
with the node's cards and with what each card reports as its utilization.
Both come from gcu.topsrider.gcu_devices (its `processes`, read from /proc by
the collection's one busy reader, plugins/module_utils/_holders.py, given
here as JSON with --processes; the utilization with --util), so
playbooks/launch_check.yml runs this on the controller. Prints one JSON
object: the verdict (ok, case, message) and the processes found. Exit status
0 whatever the verdict; 2 on bad arguments.

A training process is one whose environment holds LOCAL_RANK (torchrun and
the dist_launch scripts set it for every rank), or whose command line matches
--match (for jobs started without a launcher). Launchers themselves (torchrun,
python -m torch.distributed.run, the launch-*.sh scripts) and the children of
a rank (data loader workers inherit LOCAL_RANK) are not counted.

Cases: ok, no_job, one_busy_rest_asleep (the launcher started one process
instead of one per card, so one card works and the others sleep),
process_count_mismatch, cards_asleep.

On NVIDIA nodes the caller may also pass --gpu-pids (which pids nvidia-smi
lists on which GPU); the verdict then says on which GPUs the ranks really
are (eight ranks all on GPU 0 when they never called set_device). That only
adds to the message: nvidia-smi shows host pids, and nothing without the
rights to see them, so it never fails a check on its own.

Runs on Python 3.6+.
"""
import argparse
import json
import os
import re
import sys

RANK_ENV = ("LOCAL_RANK", "RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "TORCHELASTIC_RUN_ID")
LAUNCHER_ARGS = ("torch.distributed.run", "torch.distributed.launch")
LAUNCHER_NAMES = ("torchrun", "launch-single.sh", "launch-platform.sh", "mpirun", "srun")


def read_processes(path):
    """The node's processes from a JSON list ('-': standard input), each with pid, ppid and cmdline."""
    if path == "-":
        data = json.load(sys.stdin)
    else:
        with open(path) as f:
            data = json.load(f)
    if not isinstance(data, list) or not all(isinstance(p, dict) and "pid" in p and "cmdline" in p for p in data):
        raise ValueError("--processes: expected a JSON list of processes with pid and cmdline")
    for p in data:
        p.setdefault("env", {})
        p.setdefault("ppid", None)
    return data


def is_launcher(proc):
    args = proc["cmdline"]
    if any(a in LAUNCHER_ARGS for a in args):
        return True
    # argv[0], or the script an interpreter runs (python .../torchrun, bash launch-single.sh)
    for arg in args[:2]:
        if os.path.basename(arg) in LAUNCHER_NAMES:
            return True
    return False


def training_processes(procs, match=None):
    """The rank processes among procs (dicts as gcu_devices' processes)."""
    pattern = re.compile(match) if match else None

    def candidate(p):
        if is_launcher(p):
            return False
        if "LOCAL_RANK" in p["env"]:
            return True
        return bool(pattern and pattern.search(" ".join(p["cmdline"])))

    cands = dict((p["pid"], p) for p in procs if candidate(p))
    ranks = []
    for pid in sorted(cands):
        proc = cands[pid]
        if proc["ppid"] in cands:
            continue  # a worker of a rank, not a rank
        entry = {"pid": pid, "cmdline": " ".join(proc["cmdline"])[:300]}
        for name in ("LOCAL_RANK", "RANK", "WORLD_SIZE"):
            value = proc["env"].get(name)
            entry[name.lower()] = int(value) if value is not None and value.isdigit() else value
        ranks.append(entry)
    return ranks


def parse_util(text):
    """'0=85.0,1=0,2=N/A' -> {0: 85.0, 1: 0.0, 2: None}."""
    out = {}
    text = (text or "").strip()
    if not text:
        return out
    for item in text.split(","):
        index, sep, value = item.partition("=")
        if not sep or not index.strip().isdigit():
            raise ValueError("--util: expected INDEX=PERCENT, got %r" % item)
        value = value.strip()
        try:
            out[int(index)] = float(value)
        except ValueError:
            out[int(index)] = None  # N/A
    return out


def parse_gpu_pids(text):
    """'0=110+111,1=,2=112' -> {0: [110, 111], 1: [], 2: [112]}."""
    out = {}
    text = (text or "").strip()
    if not text:
        return out
    for item in text.split(","):
        index, sep, pids = item.partition("=")
        if not sep or not index.strip().isdigit():
            raise ValueError("--gpu-pids: expected INDEX=PID+PID..., got %r" % item)
        values = [p.strip() for p in pids.split("+") if p.strip()]
        if not all(p.isdigit() for p in values):
            raise ValueError("--gpu-pids: pids must be numbers, got %r" % item)
        out[int(index)] = sorted(int(p) for p in values)
    return out


def gpu_note(ranks, gpu_pids):
    """What nvidia-smi says about where the ranks are, as (data, sentence)."""
    rank_pids = set(r["pid"] for r in ranks)
    on = dict((r["pid"], sorted(i for i, pids in gpu_pids.items() if r["pid"] in pids)) for r in ranks)
    data = {"gpu_processes": dict((str(i), pids) for i, pids in sorted(gpu_pids.items())),
            "ranks_on_gpus": dict((str(pid), gpus) for pid, gpus in sorted(on.items()))}
    if not rank_pids:
        return data, ""
    listed = set(p for pids in gpu_pids.values() for p in pids)
    if not listed:
        return data, ("nvidia-smi lists no process on any GPU (ranks that run on the CPU, or no rights to "
                      "see them)")
    if not listed & rank_pids:
        return data, ("nvidia-smi lists none of the ranks on a GPU (it lists pids %s: another job, or "
                      "another PID namespace)" % span(listed))
    with_ranks = sorted(i for i, pids in gpu_pids.items() if set(pids) & rank_pids)
    nowhere = sorted(pid for pid, gpus in on.items() if not gpus)
    if len(with_ranks) == 1 and len(rank_pids) > 1 and not nowhere:
        return data, ("nvidia-smi: ranks %s all on GPU %d (every rank must pick its own GPU, e.g. "
                      "torch.cuda.set_device(LOCAL_RANK))" % (span(rank_pids), with_ranks[0]))
    parts = ["GPU %d: %s" % (i, span(set(gpu_pids[i]) & rank_pids)) for i in with_ranks]
    without = sorted(i for i in gpu_pids if i not in with_ranks)
    text = "nvidia-smi: ranks on %s" % "; ".join(parts)
    if without:
        text += "; GPU(s) %s without a rank" % span(without)
    if nowhere:
        text += "; rank(s) %s on no GPU" % span(nowhere)
    return data, text


def span(indexes):
    """[1, 2, 3, 5] -> '1-3, 5'."""
    parts = []
    for i in sorted(indexes):
        if parts and parts[-1][1] == i - 1:
            parts[-1][1] = i
        else:
            parts.append([i, i])
    return ", ".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in parts)


def verdict(ranks, util, min_util, cards=None, match=None, gpu_pids=None):
    """Compare the ranks found with the cards. Pure; returns a dict.
    gpu_pids (NVIDIA: GPU index -> pids nvidia-smi lists there) only adds to
    the output and to a failure's message."""
    if cards is None:
        cards = len(util)
    busy = sorted(i for i, u in util.items() if u is not None and u >= min_util)
    idle = sorted(i for i in util if i not in busy)
    nproc = len(ranks)
    hint = ("start one process per card: launch-single.sh and launch-platform.sh pass "
            "--nproc_per_node=%d" % cards)
    base = {"processes": nproc, "cards": cards, "busy_cards": busy, "idle_cards": idle,
            "min_utilization": min_util, "ranks": ranks}

    note = ""
    if gpu_pids is not None:
        data, note = gpu_note(ranks, gpu_pids)
        base.update(data)

    def result(ok, case, message):
        if not ok and note:
            message += "; " + note
        base.update({"ok": ok, "case": case, "message": message})
        return base

    if nproc == 0:
        return result(False, "no_job", "no training process runs on this node (none with LOCAL_RANK in its "
                      "environment%s); %d card(s) idle: %s" % (
                          "" if not match else " or a command line matching %r" % match, len(idle), span(idle) or "-"))
    if cards > 1 and (nproc == 1 or len(busy) == 1):
        return result(False, "one_busy_rest_asleep",
                      "one busy, the rest asleep: %d training process(es) for %d cards, busy card(s): %s, "
                      "asleep: %s. The launcher started one process instead of one per card (torchrun without "
                      "--nproc_per_node starts one); %s" % (nproc, cards, span(busy) or "none",
                                                            span(idle) or "none", hint))
    if nproc != cards:
        return result(False, "process_count_mismatch",
                      "%d training processes for %d cards (local ranks: %s); %s" % (
                          nproc, cards, ", ".join(str(r.get("local_rank")) for r in ranks), hint))
    if idle:
        return result(False, "cards_asleep",
                      "%d training processes for %d cards, but card(s) %s report less than %s%% utilization: "
                      "ranks that wait or are bound to the wrong card" % (nproc, cards, span(idle), min_util))
    return result(True, "ok", "%d training processes for %d cards, every card busy (>= %s%%)" % (
        nproc, cards, min_util))


def main(argv=None):
    parser = argparse.ArgumentParser(description="Launch check on one node: training processes vs cards")
    parser.add_argument("--util", required=True,
                        help="every card's utilization: INDEX=PERCENT,... (N/A counts as asleep)")
    parser.add_argument("--min-util", type=float, default=10.0, help="busy threshold in percent (default 10)")
    parser.add_argument("--cards", type=int, default=None,
                        help="expected process count (default: the number of cards in --util)")
    parser.add_argument("--match", default=None,
                        help="regular expression: also count processes whose command line matches")
    parser.add_argument("--gpu-pids", default=None,
                        help="NVIDIA: INDEX=PID+PID,... as nvidia-smi --query-compute-apps lists them")
    parser.add_argument("--processes", required=True,
                        help="JSON file ('-': standard input) of the node's processes, as gcu_devices "
                             "(processes: true) returns them")
    args = parser.parse_args(argv)
    try:
        procs = read_processes(args.processes)
        util = parse_util(args.util)
        gpu_pids = None if args.gpu_pids is None else parse_gpu_pids(args.gpu_pids)
        if args.match:
            re.compile(args.match)
    except (ValueError, re.error, IOError, OSError) as exc:
        parser.error(str(exc))
    if args.cards is not None and args.cards < 1:
        parser.error("--cards must be at least 1")
    ranks = training_processes(procs, args.match)
    out = verdict(ranks, util, args.min_util, args.cards, args.match, gpu_pids)
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
