#!/usr/bin/env python3
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Real-GPU check of gcu.topsrider's NVIDIA path; run it through scripts/gpu-check.sh.

Every step is the collection's real code against this machine (ansible
connection local): nothing here is simulated, and on a machine without an
NVIDIA GPU and a CUDA torch the script says so and writes no result.
"""
import argparse
import datetime
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIB = 1024 * 1024
DEFAULT_SIZES = [MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB]
CASE_RE = re.compile(r"launch check failed \((\w+)\): ([^\"\n]*)")
OK_RE = re.compile(r"\"msg\": \"[^:\"]+: (\d+ training processes for \d+ cards, every card busy[^\"]*)\"")


def log(msg):
    sys.stderr.write("gpu-check: %s\n" % msg)
    sys.stderr.flush()


def free_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def gpu_present(python):
    """(True, torch facts) or (False, why)."""
    smi = shutil.which("nvidia-smi") or next(
        (p for p in ("/usr/bin/nvidia-smi", "/usr/local/nvidia/bin/nvidia-smi") if os.access(p, os.X_OK)), None)
    if not smi:
        return False, "nvidia-smi not found"
    code = ("import json, torch; print(json.dumps({'torch': torch.__version__, 'cuda': torch.version.cuda, "
            "'available': torch.cuda.is_available(), 'count': torch.cuda.device_count()}))")
    try:
        out = subprocess.run([python, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, "%s cannot run torch: %s" % (python, exc)
    if out.returncode != 0:
        return False, "%s cannot import torch: %s" % (python, out.stderr.strip().splitlines()[-1:])
    facts = json.loads(out.stdout.strip().splitlines()[-1])
    if not facts["available"]:
        return False, "torch %s in %s sees no CUDA device (CUDA %s)" % (facts["torch"], python, facts["cuda"])
    return True, facts


class Run(object):
    """The environment the ansible commands share (collection path, inventory)."""

    def __init__(self, work):
        self.work = work
        coll = os.path.join(work, "collections", "ansible_collections", "gcu")
        os.makedirs(coll)
        os.symlink(TOP, os.path.join(coll, "topsrider"))
        self.inventory = os.path.join(work, "inventory.yml")
        with open(self.inventory, "w") as f:
            f.write("all:\n  children:\n    gpu:\n      hosts:\n        localhost:\n"
                    "          ansible_connection: local\n          ansible_python_interpreter: %s\n"
                    % sys.executable)
        config = os.path.join(work, "ansible.cfg")
        with open(config, "w") as f:
            f.write("[defaults]\nretry_files_enabled = False\n")
        self.env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(work, "collections"),
                        ANSIBLE_LOCAL_TEMP=os.path.join(work, "tmp"), ANSIBLE_HOME=os.path.join(work, "home"),
                        ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1", ANSIBLE_CONFIG=config)
        bindir = os.path.dirname(sys.executable)
        self.playbook = shutil.which("ansible-playbook") or os.path.join(bindir, "ansible-playbook")

    def ansible(self, playbook, extra, log_name):
        argv = [sys.executable, self.playbook, "-i", self.inventory, playbook, "-e", json.dumps(extra)]
        if not os.path.exists(self.playbook):
            argv = [sys.executable, "-m", "ansible", "playbook", "-i", self.inventory, playbook,
                    "-e", json.dumps(extra)]
        started = time.time()
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                              env=self.env, cwd=TOP, check=False)
        with open(os.path.join(self.work, log_name), "w") as f:
            f.write(proc.stdout)
        return proc.returncode, proc.stdout, round(time.time() - started, 1)


METADATA_CODE = ("import json, importlib.metadata as m\n"
                 "def v(n):\n"
                 "    try:\n"
                 "        return m.version(n)\n"
                 "    except m.PackageNotFoundError:\n"
                 "        return None\n"
                 "print(json.dumps({'torch': v('torch'), 'torch_gcu': v('torch_gcu'), 'pip': v('pip')}))")


def python_probe_step(python, probed):
    """topsrider_state's training-Python probe (what a deploy's read reports) against importlib.metadata
    run in the same interpreter: the same torch, torch_gcu and pip versions."""
    try:
        out = subprocess.run([python, "-c", METADATA_CODE], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True, timeout=300, check=False)
        expected, why = (json.loads(out.stdout.strip().splitlines()[-1]), "") if out.returncode == 0 \
            else ({}, out.stderr.strip()[-200:])
    except (OSError, subprocess.TimeoutExpired) as exc:
        expected, why = {}, str(exc)
    got = {key: probed.get(key) for key in ("torch", "torch_gcu", "pip")}
    return {"name": "topsrider_state training-Python probe = importlib.metadata",
            "pass": bool(expected) and got == expected and not probed.get("error"),
            "detail": "probe %s; importlib.metadata %s%s" % (
                json.dumps(got, sort_keys=True), json.dumps(expected, sort_keys=True) if expected
                else "failed: %s" % why,
                "; error %s" % probed["error"] if probed.get("error") else "")}


def rank_lines(result_dir):
    out = []
    for name in sorted(os.listdir(result_dir)):
        if name.startswith("rank-") and name.endswith(".json"):
            with open(os.path.join(result_dir, name)) as f:
                out.append(json.loads(f.read()))
    return sorted(out, key=lambda r: r["rank"])


def smoke(argv, env, result_dir, expected_ranks, timeout=600):
    """Run a launcher with the smoke job; the verdict dict."""
    os.makedirs(result_dir)
    started = time.time()
    proc = subprocess.run(argv + ["--result-dir", result_dir], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, env=env, timeout=timeout, check=False)
    ranks = rank_lines(result_dir)
    losses = sorted(set(r["loss"] for r in ranks))
    ok = proc.returncode == 0 and len(ranks) == expected_ranks and len(losses) == 1
    return {"ok": ok, "rc": proc.returncode, "ranks": len(ranks), "expected_ranks": expected_ranks,
            "losses": losses, "devices": [r.get("device") for r in ranks], "seconds": round(time.time() - started, 1),
            "output_tail": proc.stdout[-2000:]}


def launch_check_case(rc, output):
    """('ok', message) / (case, message) from launch_check.yml's output."""
    m = CASE_RE.search(output)
    if m:
        return m.group(1), m.group(2)
    m = OK_RE.search(output)
    if rc == 0 and m:
        return "ok", m.group(1)
    return ("ok" if rc == 0 else "unknown"), output[-500:]


def while_holding(run, argv, env, result_dir, ranks, label):
    """Start a held smoke job, wait until its ranks trained, run launch_check.yml, stop the job."""
    os.makedirs(result_dir)
    job = subprocess.Popen(argv + ["--result-dir", result_dir], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, env=env, start_new_session=True)
    try:
        deadline = time.time() + 300
        while len(rank_lines(result_dir)) < ranks and time.time() < deadline and job.poll() is None:
            time.sleep(1)
        time.sleep(5)  # let nvidia-smi's utilization sample cover the held steps
        rc, out, seconds = run.ansible(os.path.join(TOP, "playbooks", "launch_check.yml"),
                                       {"launch_check_hosts": "gpu", "launch_check_python": sys.executable},
                                       "launch_check-%s.log" % label)
    finally:
        try:
            os.killpg(job.pid, signal.SIGTERM)
        except OSError:
            pass
        job.wait(timeout=60)
    case, message = launch_check_case(rc, out)
    return {"rc": rc, "case": case, "message": message, "seconds": seconds}


def markdown(result):
    gpu = result["gpus"][0] if result["gpus"] else {}
    lines = [
        "# gcu.topsrider on a real NVIDIA GPU (scripts/gpu-check.sh)", "",
        "- date: %s" % result["date"],
        "- commit: %s" % result["commit"],
        "- GPU: %d x %s, driver %s" % (len(result["gpus"]), gpu.get("model"), result["driver"]),
        "- torch: %s (CUDA %s) in %s" % (result["torch"]["torch"], result["torch"]["cuda"], result["python"]),
        "- NCCL the ranks loaded: %s" % ", ".join("%s (%s)" % (l.get("path"), l.get("version"))
                                               for l in result["probe"].get("libraries") or []),
        "", "| step | verdict | detail |", "|---|---|---|",
    ]
    for step in result["steps"]:
        lines.append("| %s | %s | %s |" % (step["name"], "pass" if step["pass"] else "FAIL",
                                           step["detail"].replace("|", "/").replace("\n", " ")))
    lines += ["", "All-reduce over NCCL, device-placed (%s):" % result["probe"].get("bandwidth"), "",
              "| size | latency (us) | algbw (GB/s) | busbw (GB/s) | correct |", "|---|---|---|---|---|"]
    for r in result["probe"].get("results") or []:
        lines.append("| %d MiB | %s | %s | %s | %s |" % (r["size_bytes"] // MIB, r["latency_us"], r["algbw_gbps"],
                                                         r["busbw_gbps"], r["correct"]))
    if result["probe"].get("world_size") == 1:
        lines += ["", "With one GPU NCCL's in-place all-reduce has nothing to reduce or move: the latency is the "
                  "call's own cost (about the same at every size), so algbw here is no bandwidth and busbw is 0 "
                  "by the formula (2(n-1)/n = 0). What this run proves is the device-placed path: NCCL loaded, "
                  "a CUDA tensor in every call, the result correct.", ""]
    else:
        lines += [""]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=shutil.which("python3") or sys.executable,
                        help="the interpreter with a CUDA torch (default: python3)")
    parser.add_argument("--out", default=os.path.join(TOP, "docs", "hardware"), help="where the result goes")
    parser.add_argument("--hold", type=int, default=60, help="seconds the held smoke job runs (default 60)")
    parser.add_argument("--sizes", type=int, nargs="+", default=DEFAULT_SIZES, help="all-reduce sizes in bytes")
    args = parser.parse_args(argv)

    present, facts = gpu_present(args.python)
    if not present:
        print("gpu-check: no NVIDIA GPU with a CUDA torch here (%s); nothing was checked and no result written"
              % facts)
        return 0
    work = tempfile.mkdtemp(prefix="gpu-check-")
    run = Run(work)
    launch_dir = os.path.join(work, "launch")
    results = os.path.join(work, "results")
    os.makedirs(results)
    log("GPUs: %d, torch %s (CUDA %s); work dir %s" % (facts["count"], facts["torch"], facts["cuda"], work))
    steps = []

    log("1/5 gcu_devices (nvidia), dist_launch role, eccl_probe collective nccl, topsrider_state's Python probe")
    rc, out, seconds = run.ansible(os.path.join(TOP, "scripts", "gpu-check.yml"),
                                   {"gpu_check_python": args.python, "gpu_check_results": results,
                                    "gpu_check_launch_dir": launch_dir, "gpu_check_sizes": args.sizes},
                                   "gpu-check.log")
    data = {}
    if os.path.exists(os.path.join(results, "ansible.json")):
        with open(os.path.join(results, "ansible.json")) as f:
            data = json.load(f)
    devices = data.get("devices", {})
    probe = data.get("probe", {})
    cards = devices.get("gcu_device_count")
    steps.append({"name": "gcu_devices vendor nvidia", "pass": rc == 0 and cards == facts["count"],
                  "detail": "%s GPU(s), driver %s, vendor %s" % (cards, devices.get("gcu_driver_version"),
                                                                  devices.get("gcu_vendor"))})
    rendered = os.path.exists(os.path.join(launch_dir, "launch-single.sh"))
    steps.append({"name": "dist_launch role (nvidia, count from facts)", "pass": rc == 0 and rendered,
                  "detail": "ansible-playbook rc=%d in %ss; %s" % (rc, seconds, "scripts rendered" if rendered
                                                                   else out[-300:])})
    collective = probe.get("collective") or {}
    steps.append({"name": "eccl_probe collective nccl", "pass": bool(probe.get("healthy")),
                  "detail": "%s; world %s, devices %s, libraries %s" % (
                      probe.get("msg"), collective.get("world_size"), collective.get("devices"),
                      collective.get("libraries"))})
    steps.append(python_probe_step(args.python, data.get("python") or {}))
    if not rendered:
        log("the launch scripts were not rendered; see %s/gpu-check.log" % work)
    smoke_job = [os.path.join(launch_dir, "ddp_smoke.py")]
    env = dict(os.environ)

    log("2/5 launch-single.sh with the smoke job")
    single = smoke([os.path.join(launch_dir, "launch-single.sh")] + smoke_job,
                   dict(env, MASTER_PORT=str(free_port())), os.path.join(work, "single"), facts["count"])
    steps.append({"name": "launch-single.sh ddp_smoke.py", "pass": single["ok"],
                  "detail": "rc=%d, %d/%d ranks, loss %s, devices %s" % (
                      single["rc"], single["ranks"], single["expected_ranks"], single["losses"], single["devices"])})

    log("3/5 launch-platform.sh (WORLD_SIZE=1 RANK=0) with the smoke job")
    platform = smoke([os.path.join(launch_dir, "launch-platform.sh")] + smoke_job,
                     dict(env, WORLD_SIZE="1", RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port())),
                     os.path.join(work, "platform"), facts["count"])
    steps.append({"name": "launch-platform.sh ddp_smoke.py", "pass": platform["ok"],
                  "detail": "rc=%d, %d/%d ranks, loss %s" % (platform["rc"], platform["ranks"],
                                                            platform["expected_ranks"], platform["losses"])})

    log("4/5 launch_check.yml while the smoke job holds every GPU, then with no job")
    held = ["--hold", str(args.hold), "--hold-work", "8192", "--hold-pause", "0", "--steps", "3"]
    busy = while_holding(run, [os.path.join(launch_dir, "launch-single.sh")] + smoke_job + held,
                         dict(env, MASTER_PORT=str(free_port())), os.path.join(work, "held"), facts["count"], "busy")
    steps.append({"name": "launch_check.yml, job on every GPU", "pass": busy["rc"] == 0 and busy["case"] == "ok",
                  "detail": "%s: %s" % (busy["case"], busy["message"])})
    rc, out, seconds = run.ansible(os.path.join(TOP, "playbooks", "launch_check.yml"),
                                   {"launch_check_hosts": "gpu", "launch_check_python": sys.executable},
                                   "launch_check-idle.log")
    case, message = launch_check_case(rc, out)
    steps.append({"name": "launch_check.yml, no job (must fail: no_job)", "pass": rc != 0 and case == "no_job",
                  "detail": "%s: %s" % (case, message)})

    log("5/5 launch_check.yml with one process for all GPUs")
    if facts["count"] > 1:
        one = [args.python, "-m", "torch.distributed.run", "--nproc_per_node=1", "--master_port=%d" % free_port()]
        lazy = while_holding(run, one + smoke_job + held, dict(env, DIST_LAUNCH_BACKEND="nccl"),
                             os.path.join(work, "one"), 1, "one")
        steps.append({"name": "launch_check.yml, 1 process for %d GPUs (must fail: one_busy_rest_asleep)"
                      % facts["count"], "pass": lazy["rc"] != 0 and lazy["case"] == "one_busy_rest_asleep",
                      "detail": "%s: %s" % (lazy["case"], lazy["message"])})
    else:
        steps.append({"name": "launch_check.yml, one busy and the rest asleep", "pass": True,
                      "detail": "not applicable: this machine has 1 GPU (the case needs more than one)"})

    # A copied tree (a lent device machine) may carry no .git or an older one: GPU_CHECK_COMMIT comes first.
    commit = os.environ.get("GPU_CHECK_COMMIT") or subprocess.run(
        ["git", "-C", TOP, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        universal_newlines=True, check=False).stdout.strip()
    now = datetime.datetime.now(datetime.timezone.utc)
    result = {"date": now.strftime("%Y-%m-%dT%H:%M:%SZ"), "commit": commit or None,
              "host": socket.gethostname(), "python": args.python, "torch": facts,
              "gpus": devices.get("gcu_devices") or [], "driver": devices.get("gcu_driver_version"),
              "steps": steps, "probe": collective, "smoke": {"single": single, "platform": platform},
              "passed": all(s["pass"] for s in steps)}
    if not os.path.isdir(args.out):
        os.makedirs(args.out)
    stem = os.path.join(args.out, "gpu-check-%s" % result["date"][:10])
    with open(stem + ".json", "w") as f:
        f.write(json.dumps(result, indent=2, sort_keys=True) + "\n")
    with open(stem + ".md", "w") as f:
        f.write(markdown(result))
    print(markdown(result))
    log("%s: %s.json and .md (logs in %s)" % ("passed" if result["passed"] else "FAILED", stem, work))
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
