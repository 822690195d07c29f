# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""make bench / make perf-check (issue 9): what the playbooks cost on simulated fleets.

  .venv/bin/python scripts/bench/bench.py [--sizes 1 4 16] [--rounds 3] [--ops ...]
        [--strategy linear|mitogen] [--keep-fleet] [--check-goals]
  .venv/bin/python scripts/bench/bench.py --from-json docs/performance.json --check-goals
  .venv/bin/python scripts/bench/bench.py --perf-check

Per round and fleet size: a FRESH simulated fleet of its own (names, ports and
state apart from the demo fleet), then in this order, each one ansible-playbook
run over SSH: floor (scripts/bench/floor.yml: one ping, no facts), fresh deploy
(2.5.136), no-change re-run (2.5.136 again), the same with the deploy's fast
path off (every host through the whole rollout: checksum staging must still
send nothing), upgrade (2.5.140), verify
(framework level), drift check (2.5.140), rollback. Per run: wall time,
controller CPU time (user+sys of the finished children), tasks per host,
changed results and bundle bytes sent (the bench_stats callback), the bytes
sent to the nodes (an iptables accounting rule on lo, counting only), the CPU
time the nodes used (their containers' cgroups) and from both CPU times the
least wall time the machine's cores allow ((controller + nodes) / cores).
Every run starts with its own empty SSH control-socket directory and its
master connections are closed afterwards: no run reuses another's connections.

Results: docs/performance.json (docs/performance-mitogen.json with --strategy
mitogen) and the table between <!-- bench:begin --> and <!-- bench:end --> in
docs/performance.md. A failing playbook run stops the bench with exit 2; its
log stays in .cache/bench/logs/<stamp>/.

--bundle-mib N (make bench-large, issue 16): 2.5.136 is the large .run of
sim/bundles/build-large.sh N (built once, cached), deployed as it is
(topsrider_bundle; its extraction already in the cache build-large.sh
fills). The operation copy_baseline (--ops; never a default) is what a
published runbook does: ansible.builtin.copy of the .run to every node
(scripts/bench/copy_baseline.yml), measured like the others, its copies
removed afterwards by an unmeasured run. The operation stage (--ops; never a
default) is its like-for-like counterpart: the staging alone, as deploy.yml
runs it (scripts/bench/stage.yml), its staged bundles removed afterwards. Results: docs/performance-large.json
and the section between <!-- bench-large:begin --> and <!-- bench-large:end -->:
controller egress over the bundle's size and wall time for the fresh deploy
and the baseline side by side, issue 16's goals and a projection to 64 and
1,000 nodes (bench_report.render_large).

--perf-check (make perf-check, part of make test): one-node fleet of its own,
fresh deploy, the same deploy again, and again with the fast path off; fails
(exit 1) when a re-run reports any task changed or sends bundle bytes, or when
the fresh deploy sent none (the measurement must be able to see a transfer).
No time limits.

This file holds the runner and the probes; what the numbers become (medians,
goals, the table, the perf check's verdict) is scripts/bench/bench_report.py.
"""
import argparse
import datetime
import fcntl
import importlib.util
import json
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from bench_report import (
    DEFAULT_OPS, MARKERS, MD_HEADER, OP_TITLES, OPS, check_goals, check_large_goals, cpu_bound_s, egress_ratio,
    format_goals, human_bytes, num, perf_verdict, render_large, render_table, replace_section, result_lines,
    stats_metrics, summarize,
)

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
HERE = os.path.join(TOP, "scripts", "bench")
BUNDLES = os.path.join(TOP, ".cache", "bundles")
RUN_136 = "TopsRider_t2x_2.5.136_deb_amd64.run"

# What an operation needs to have run before it on the same fleet; asked-for
# operations bring these along (run, not recorded).
NEEDS = {
    "rerun": ("fresh",),
    "rerun_full": ("fresh",),
    "upgrade": ("fresh",),
    "verify": ("fresh",),
    "drift": ("fresh", "upgrade"),
    "rollback": ("fresh", "upgrade"),
}

BENCH_FLEET = {"prefix": "topsrider-bench", "base_port": 22400, "state": ".cache/bench/fleet"}
PERF_FLEET = {"prefix": "topsrider-perf", "base_port": 22500, "state": ".cache/perf/fleet"}
CHAIN = "TOPSRIDER_BENCH"
PORTS_PER_FLEET = 64


# ---- probes: bytes to the nodes, CPU the nodes used (tests/unit/test_bench_report.py) ----
def parse_iptables(text):
    """Packets and bytes counted by the rules of one `iptables -L CHAIN -vnx`
    listing, summed: {"packets": n, "bytes": n}; None when it is not one."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2 or not lines[0].startswith("Chain ") or not lines[1].split()[:2] == ["pkts", "bytes"]:
        return None
    packets = nbytes = 0
    for line in lines[2:]:
        fields = line.split()
        if len(fields) < 2 or not fields[0].isdigit() or not fields[1].isdigit():
            return None
        packets += int(fields[0])
        nbytes += int(fields[1])
    return {"packets": packets, "bytes": nbytes}


def parse_cgroup_cpu(name, text):
    """CPU seconds from a cgroup file: cgroup v1 cpuacct.usage (nanoseconds)
    or cgroup v2 cpu.stat (usage_usec); None when it is not one of them."""
    try:
        if name == "cpuacct.usage":
            return int(text.strip()) / 1e9
        if name == "cpu.stat":
            for line in text.splitlines():
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value) / 1e6
    except ValueError:
        return None
    return None


def container_cgroup_files(cid, root="/sys/fs/cgroup"):
    """Where a Docker container's CPU time can be read, most likely first:
    cgroupfs and systemd drivers, cgroup v1 and v2."""
    return [os.path.join(root, "cpuacct", "docker", cid, "cpuacct.usage"),
            os.path.join(root, "cpuacct", "system.slice", "docker-%s.scope" % cid, "cpuacct.usage"),
            os.path.join(root, "cpu,cpuacct", "docker", cid, "cpuacct.usage"),
            os.path.join(root, "system.slice", "docker-%s.scope" % cid, "cpu.stat"),
            os.path.join(root, "docker", cid, "cpu.stat")]


def container_cpu_s(cid, root="/sys/fs/cgroup"):
    """CPU seconds a container has used so far (every process in it: sshd,
    the modules, dpkg, pip), or None when no cgroup file can be read."""
    for path in container_cgroup_files(cid, root):
        try:
            with open(path, encoding="ascii") as f:
                value = parse_cgroup_cpu(os.path.basename(path), f.read())
        except OSError:
            continue
        if value is not None:
            return value
    return None


# ---- the machine -------------------------------------------------------------
def machine_info():
    info = {"hostname": platform.node(), "nproc": os.cpu_count(), "kernel": platform.release(),
            "python": platform.python_version(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            models = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        info["cpu_model"] = models[0] if models else None
    except OSError:
        info["cpu_model"] = None
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            kib = next(int(line.split()[1]) for line in f if line.startswith("MemTotal:"))
        info["memory_gib"] = round(kib / 1024 / 1024, 1)
    except (OSError, StopIteration, ValueError):
        info["memory_gib"] = None
    try:
        from ansible.release import __version__ as core_version  # pylint: disable=import-outside-toplevel
        info["ansible_core"] = core_version
    except ImportError:
        info["ansible_core"] = None
    git = ["git", "-C", TOP]
    try:
        info["git_commit"] = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True,
                                            check=True).stdout.strip()
        info["git_dirty"] = bool(subprocess.run(git + ["status", "--porcelain", "--untracked-files=no"],
                                                capture_output=True, text=True, check=True).stdout.strip())
    except (OSError, subprocess.CalledProcessError):
        info["git_commit"], info["git_dirty"] = None, None
    return info


# ---- the fleet, the byte counter, SSH connections ----------------------------------
class Fleet:
    def __init__(self, prefix, base_port, state_dir, log):
        self.env = dict(os.environ, SIM_NAME_PREFIX=prefix, SIM_SSH_BASE_PORT=str(base_port),
                        SIM_STATE_DIR=os.path.join(TOP, state_dir))
        # The label sim/fleet puts on every node of a fleet (one per prefix).
        self.label = "gcu.topsrider.sim.fleet=" + prefix
        self.inventory = os.path.join(TOP, state_dir, "inventory.yml")
        self.base_port = base_port
        self.log = log

    def _fleet(self, *args):
        with open(self.log, "a", encoding="utf-8") as log:
            log.write("$ sim/fleet %s\n" % " ".join(args))
            log.flush()
            rc = subprocess.run([os.path.join(TOP, "sim", "fleet")] + list(args), env=self.env, cwd=TOP,
                                stdout=log, stderr=subprocess.STDOUT, check=False).returncode
        if rc:
            raise BenchError("sim/fleet %s failed (exit %d); see %s" % (" ".join(args), rc, self.log))

    def up(self, n):
        self._fleet("down")
        start = time.monotonic()
        self._fleet("up", str(n))
        return time.monotonic() - start

    def down(self):
        self._fleet("down")

    def container_ids(self):
        proc = subprocess.run(["docker", "ps", "-q", "--no-trunc", "--filter", "label=" + self.label],
                              capture_output=True, text=True, check=False)
        return proc.stdout.split() if proc.returncode == 0 else []


class NetCounter:
    """Bytes the controller sends to the fleet's SSH ports (lo, tcp dport
    base+1..base+64), from an iptables rule with no target: it counts and never
    drops. Off (None readings) when iptables does not work here."""

    def __init__(self, base_port, chain=CHAIN):
        self.chain = chain
        self.match = ["-o", "lo", "-p", "tcp", "--dport", "%d:%d" % (base_port + 1, base_port + PORTS_PER_FLEET)]
        self.ok = False
        self.note = None

    def _ipt(self, *args):
        return subprocess.run(["iptables", "-w", "5"] + list(args), capture_output=True, text=True, check=False)

    def setup(self):
        self.teardown()
        steps = (["-N", self.chain], ["-A", self.chain] + self.match,
                 ["-I", "OUTPUT"] + self.match + ["-j", self.chain])
        try:
            for step in steps:
                proc = self._ipt(*step)
                if proc.returncode:
                    raise OSError("iptables %s: %s" % (" ".join(step), (proc.stderr or proc.stdout).strip()))
            if self.read() is None:
                raise OSError("iptables -L %s -vnx: output not understood" % self.chain)
        except OSError as e:
            self.teardown()
            self.ok = False
            self.note = "not measured (iptables accounting did not work here: %s)" % e
            return False
        self.ok = True
        self.note = None
        return True

    def zero(self):
        if self.ok:
            self._ipt("-Z", self.chain)

    def read(self):
        proc = self._ipt("-L", self.chain, "-v", "-n", "-x")
        return parse_iptables(proc.stdout) if proc.returncode == 0 else None

    def teardown(self):
        try:
            for dummy in range(10):
                if self._ipt("-D", "OUTPUT", *(self.match + ["-j", self.chain])).returncode:
                    break
            self._ipt("-F", self.chain)
            self._ipt("-X", self.chain)
        except OSError:
            pass


class NodeCpu:
    """CPU seconds the fleet's node containers use, summed (their cgroups).
    The nodes run on this machine, beside the controller: on 2 cores their
    work and the controller's add up."""

    def __init__(self, fleet):
        self.fleet = fleet

    def read(self):
        ids = self.fleet.container_ids()
        values = [container_cpu_s(cid) for cid in ids]
        if not ids or any(v is None for v in values):
            return None
        return sum(values)


def close_masters(control_dir):
    """Close the SSH master connections whose sockets are in control_dir, then
    end any ssh process still naming the directory, and remove it."""
    if not os.path.isdir(control_dir):
        return
    for name in os.listdir(control_dir):
        sock = os.path.join(control_dir, name)
        subprocess.run(["ssh", "-o", "ControlPath=" + sock, "-O", "exit", "bench-close"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10, check=False)
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if control_dir in cmd and cmd.startswith("ssh"):
            try:
                os.kill(int(pid), signal.SIGTERM)
            except OSError:
                pass
    shutil.rmtree(control_dir, ignore_errors=True)


class BenchError(Exception):
    pass


# ---- one playbook run ---------------------------------------------------------
def playbook_args(op, large=None):
    """The ansible-playbook arguments of an operation. large (make bench-large):
    {"dir": build-large.sh's output, "run": its .run}: 2.5.136 is then the large
    .run, deployed as it is (topsrider_bundle, its extraction cached in
    <dir>/runs by build-large.sh); 2.5.140 stays the small sample."""
    common = ["-e", "topsrider_python=/opt/venvs/train/bin/python", "-e", "topsrider_expected_count=8"]
    if large:
        in136 = ["-e", "topsrider_bundle=" + large["run"],
                 "-e", "topsrider_bundle_cache=" + os.path.join(large["dir"], "runs")]
        run136 = large["run"]
        dir136 = os.path.join(large["dir"], "2.5.136")
    else:
        in136 = ["-e", "topsrider_bundle_dir=" + os.path.join(BUNDLES, "2.5.136")]
        run136 = os.path.join(BUNDLES, RUN_136)
        dir136 = os.path.join(BUNDLES, "2.5.136")
    b140 = os.path.join(BUNDLES, "2.5.140")
    baseline = os.path.join(HERE, "copy_baseline.yml")
    return {
        "floor": [os.path.join(HERE, "floor.yml")],
        "copy_baseline": [baseline, "-e", "bench_baseline_run=" + run136],
        "copy_baseline_cleanup": [baseline, "-e", "bench_baseline_state=absent"],
        "stage": [os.path.join(HERE, "stage.yml"), "-e", "bench_stage_dir=" + dir136],
        "stage_cleanup": [os.path.join(HERE, "stage.yml"), "-e", "bench_stage_state=absent"],
        "fresh": [os.path.join(TOP, "playbooks", "deploy.yml")] + in136,
        "rerun": [os.path.join(TOP, "playbooks", "deploy.yml")] + in136,
        "rerun_full": [os.path.join(TOP, "playbooks", "deploy.yml")] + in136
        + ["-e", "topsrider_deploy_fast_path=false"],
        "upgrade": [os.path.join(TOP, "playbooks", "deploy.yml"), "-e", "topsrider_bundle_dir=" + b140],
        "verify": [os.path.join(TOP, "playbooks", "verify.yml"), "-e", "topsrider_probe_level=framework"],
        "drift": [os.path.join(TOP, "playbooks", "drift.yml"), "-e", "topsrider_bundle_dir=" + b140],
        "rollback": [os.path.join(TOP, "playbooks", "rollback.yml")],
    }[op] + common


def callback_dir():
    """A directory holding only the bench_stats callback (a link to
    scripts/bench/bench_stats.py): pointed at scripts/bench itself, ansible
    would also import this file as a callback and warn that it is not one."""
    directory = os.path.join(TOP, ".cache", "bench", "callback_plugins")
    link = os.path.join(directory, "bench_stats.py")
    os.makedirs(directory, exist_ok=True)
    if os.path.realpath(link) != os.path.join(HERE, "bench_stats.py"):
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(os.path.join(HERE, "bench_stats.py"), link)
    return directory


def base_env(strategy, mitogen_dir, bundle_root=BUNDLES):
    venv_bin = os.path.dirname(sys.executable)
    env = dict(os.environ)
    env.update({
        "PATH": venv_bin + os.pathsep + env.get("PATH", ""),
        "ANSIBLE_CONFIG": os.path.join(TOP, "sim", "ansible.cfg"),
        "ANSIBLE_COLLECTIONS_PATH": os.path.join(TOP, ".cache", "collections"),
        "ANSIBLE_LOCAL_TEMP": os.path.join(TOP, ".cache", "ansible-tmp"),
        "ANSIBLE_HOME": os.path.join(TOP, ".cache", "ansible-home"),
        "ANSIBLE_CALLBACK_PLUGINS": callback_dir(),
        "ANSIBLE_NOCOLOR": "1",
        "BENCH_BUNDLE_ROOT": bundle_root,
    })
    enabled = [c for c in env.get("ANSIBLE_CALLBACKS_ENABLED", "").split(",") if c.strip()]
    env["ANSIBLE_CALLBACKS_ENABLED"] = ",".join(enabled + ["bench_stats"])
    if strategy == "mitogen":
        strategy_dir = os.path.join(mitogen_dir, "ansible_mitogen", "plugins", "strategy")
        if not os.path.isdir(strategy_dir):
            raise BenchError("no Mitogen at %s: 'make bench-mitogen' installs it there "
                             "(requirements/bench-mitogen.txt)" % mitogen_dir)
        env["PYTHONPATH"] = mitogen_dir + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env["ANSIBLE_STRATEGY_PLUGINS"] = strategy_dir
        env["ANSIBLE_STRATEGY"] = "mitogen_linear"
    for d in (env["ANSIBLE_LOCAL_TEMP"], env["ANSIBLE_HOME"]):
        os.makedirs(d, exist_ok=True)
    return env


def run_playbook(op, inventory, env, logs, tag, reports, net=None, nodes=None, large=None):
    """One ansible-playbook run, measured; raises BenchError when it fails."""
    ansible_playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    if not os.path.exists(ansible_playbook):
        ansible_playbook = "ansible-playbook"
    log = os.path.join(logs, tag + ".log")
    stats_file = os.path.join(logs, tag + ".stats.json")
    cmd = [ansible_playbook, "-i", inventory] + playbook_args(op, large) + ["-e", "topsrider_reports_dir=" + reports]
    control_dir = tempfile.mkdtemp(prefix="tr-bench-cp-")
    env = dict(env, BENCH_STATS_FILE=stats_file, ANSIBLE_SSH_CONTROL_PATH_DIR=control_dir)
    if net is not None:
        net.zero()
    node_cpu_before = nodes.read() if nodes is not None else None
    try:
        with open(log, "w", encoding="utf-8") as out:
            out.write("$ %s\n" % " ".join(cmd))
            out.flush()
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.monotonic()
            proc = subprocess.Popen(cmd, cwd=TOP, env=env, stdout=out, stderr=subprocess.STDOUT)
            try:
                rc = proc.wait()
            except BaseException:
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                raise
            wall = time.monotonic() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
        counted = net.read() if net is not None and net.ok else None
        node_cpu_after = nodes.read() if node_cpu_before is not None else None
    finally:
        close_masters(control_dir)
    record = {"op": op, "rc": rc, "wall_s": round(wall, 3),
              "cpu_user_s": round(after.ru_utime - before.ru_utime, 3),
              "cpu_sys_s": round(after.ru_stime - before.ru_stime, 3),
              "net_bytes": counted["bytes"] if counted else None,
              "net_packets": counted["packets"] if counted else None,
              "log": os.path.relpath(log, TOP)}
    record["cpu_s"] = round(record["cpu_user_s"] + record["cpu_sys_s"], 3)
    record["node_cpu_s"] = (round(node_cpu_after - node_cpu_before, 3)
                            if node_cpu_before is not None and node_cpu_after is not None else None)
    record["cpu_bound_s"] = cpu_bound_s(record["cpu_s"], record["node_cpu_s"], os.cpu_count())
    try:
        with open(stats_file, encoding="utf-8") as f:
            stats = json.load(f)
    except (OSError, ValueError):
        stats = None
    record.update(stats_metrics(stats))
    if rc != 0:
        raise BenchError("%s failed (ansible-playbook exit %d); log kept: %s\n%s"
                         % (tag, rc, log, tail(log, 25)))
    if stats is None:
        raise BenchError("%s: no stats from the bench_stats callback (%s); log: %s" % (tag, stats_file, log))
    return record


def tail(path, n):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


def plan(ops):
    """(op, recorded) in run order: the asked-for operations and what they need."""
    wanted = set(ops)
    needed = set(wanted)
    for op in wanted:
        needed.update(NEEDS.get(op, ()))
    return [(op, op in wanted) for op in OPS if op in needed]


# ---- output -------------------------------------------------------------------
def load_atomic():
    """The collection's one atomic writer (plugins/module_utils/_atomic.py), by its path."""
    spec = importlib.util.spec_from_file_location(
        "topsrider_atomic", os.path.join(TOP, "plugins", "module_utils", "_atomic.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_outputs(doc, json_path, md_path, strategy):
    """The JSON file and the Markdown section: strategy "linear" or "mitogen"
    (the usual table), or "large" (make bench-large's own section)."""
    write_atomic = load_atomic().write_atomic
    os.makedirs(os.path.dirname(json_path), exist_ok=True)
    write_atomic(json_path, json.dumps(doc, indent=1, sort_keys=True) + "\n", 0o644)
    try:
        with open(md_path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        text = MD_HEADER
    begin, end = MARKERS[strategy]
    body = render_large(doc) if strategy == "large" else render_table(doc)
    write_atomic(md_path, replace_section(text, begin, end, body), 0o644)


# ---- main paths ---------------------------------------------------------------
def lock(name):
    path = os.path.join(TOP, ".cache", name + ".lock")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    handle = open(path, "w", encoding="utf-8")  # pylint: disable=consider-using-with
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        raise BenchError("another %s is running (%s)" % (name, path)) from e
    return handle


def build_large(mib):
    """sim/bundles/build-large.sh MIB (built once, cached): the bundle of make bench-large."""
    proc = subprocess.run([os.path.join(TOP, "sim", "bundles", "build-large.sh"), str(mib)], cwd=TOP,
                          stdout=subprocess.PIPE, text=True, check=False)
    if proc.returncode:
        raise BenchError("sim/bundles/build-large.sh %d failed (exit %d)" % (mib, proc.returncode))
    directory = proc.stdout.strip().splitlines()[-1]
    run = os.path.join(directory, RUN_136)
    return {"dir": directory, "run": run, "payload_mib": mib, "run_bytes": os.path.getsize(run)}


def bench(args):
    stamp = datetime.datetime.now().strftime("%Y%m%dT%H%M%S")
    suffix = "-mitogen" if args.strategy == "mitogen" else ("-large" if args.bundle_mib else "")
    logs = os.path.join(TOP, ".cache", "bench", "logs", stamp + suffix)
    os.makedirs(logs, exist_ok=True)
    reports = os.path.join(TOP, ".cache", "bench", "reports")
    fleet = Fleet(BENCH_FLEET["prefix"], BENCH_FLEET["base_port"], BENCH_FLEET["state"],
                  os.path.join(logs, "fleet.log"))
    large = build_large(args.bundle_mib) if args.bundle_mib else None
    env = base_env(args.strategy, args.mitogen_dir, large["dir"] if large else BUNDLES)
    steps = plan(args.ops)
    net = NetCounter(BENCH_FLEET["base_port"])
    nodes = NodeCpu(fleet)
    if not net.setup():
        print("bench: bytes to nodes %s" % net.note, file=sys.stderr)
    doc = {"format": 1, "kind": "bench", "machine": machine_info(),
           "params": {"sizes": args.sizes, "rounds": args.rounds, "ops": [o for o, rec in steps if rec],
                      "strategy": args.strategy,
                      "ansible_strategy": "mitogen_linear" if args.strategy == "mitogen" else "linear",
                      "fleet": BENCH_FLEET, "bundle_mib": args.bundle_mib},
           "iptables_note": net.note, "logs": os.path.relpath(logs, TOP), "runs": [], "fleet_up_s": []}
    if large:
        doc["bundle"] = {"run": os.path.relpath(large["run"], TOP), "run_bytes": large["run_bytes"],
                         "payload_mib": large["payload_mib"]}
    print("bench: sizes %s, %d round(s), operations %s; logs in %s%s"
          % (" ".join(map(str, args.sizes)), args.rounds, " ".join(o for o, dummy in steps), doc["logs"],
             "; bundle %s (%s)" % (doc["bundle"]["run"], human_bytes(large["run_bytes"])) if large else ""))
    try:
        for rnd in range(1, args.rounds + 1):
            for size in args.sizes:
                up = fleet.up(size)
                doc["fleet_up_s"].append({"size": size, "round": rnd, "s": round(up, 1)})
                for op, recorded in steps:
                    tag = "n%02d-r%d-%s" % (size, rnd, op)
                    record = run_playbook(op, fleet.inventory, env, logs, tag, reports, net, nodes, large)
                    record.update(size=size, round=rnd, recorded=recorded)
                    doc["runs"].append(record)
                    if large:
                        record["x_bundle"] = egress_ratio(record["net_bytes"], large["run_bytes"])
                    print("  %2d nodes round %d %-10s %6.1f s  cpu %5.1f s  node cpu %5s s  tasks/host %-4s "
                          "changed %-4s bundle %s  net %s%s" % (
                              size, rnd, op, record["wall_s"], record["cpu_s"], num(record["node_cpu_s"]),
                              num(record["tasks_max"]), num(record["changed"]),
                              human_bytes(record["bundle_bytes_sent"]), human_bytes(record["net_bytes"]),
                              "" if recorded else "  (not recorded)")
                          + ("  egress/bundle %s" % num(record["x_bundle"], 2) if large else ""), flush=True)
                    if op in ("copy_baseline", "stage"):
                        # Unmeasured: the nodes' disk back (and, after stage, nothing staged) before the next operation.
                        cleanup = run_playbook(op + "_cleanup", fleet.inventory, env, logs,
                                               tag + "-cleanup", reports, large=large)
                        cleanup.update(size=size, round=rnd, recorded=False)
                        doc["runs"].append(cleanup)
    finally:
        net.teardown()
        if not args.keep_fleet:
            fleet.down()
        else:
            print("bench: fleet left up; inventory %s" % fleet.inventory)
    doc["machine"]["finished"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    doc["results"] = summarize(doc["runs"])
    doc["goals"] = check_large_goals(doc) if large else check_goals(doc["results"])
    write_outputs(doc, args.json, args.md, "large" if large else args.strategy)
    print("bench: results in %s and %s" % (os.path.relpath(args.json, TOP), os.path.relpath(args.md, TOP)))
    for line in result_lines(doc):
        print(line)
    return doc


def perf_check(args):
    logs = os.path.join(TOP, ".cache", "perf", "logs")
    shutil.rmtree(logs, ignore_errors=True)
    os.makedirs(logs)
    fleet = Fleet(PERF_FLEET["prefix"], PERF_FLEET["base_port"], PERF_FLEET["state"],
                  os.path.join(logs, "fleet.log"))
    env = base_env(args.strategy, args.mitogen_dir)
    reports = os.path.join(TOP, ".cache", "perf", "reports")
    print("perf-check: one-node fleet (%s), fresh deploy, then the same deploy twice (fast path on, off); logs in %s"
          % (PERF_FLEET["prefix"], os.path.relpath(logs, TOP)), flush=True)
    try:
        fleet.up(1)
        fresh = run_playbook("fresh", fleet.inventory, env, logs, "fresh", reports)
        # The fast path sends nothing by construction; with it off, every
        # task of the rollout runs again and must still change and send nothing.
        reruns = [(OP_TITLES[op], run_playbook(op, fleet.inventory, env, logs, op, reports))
                  for op in ("rerun", "rerun_full")]
    finally:
        if not args.keep_fleet:
            fleet.down()
    for name, r in [(OP_TITLES["fresh"], fresh)] + reruns:
        print("  %-32s %3s tasks/host, %3s changed, bundle bytes sent %s (wall %.1f s, for information)"
              % (name, num(r["tasks_max"]), num(r["changed"]), num(r["bundle_bytes_sent"]), r["wall_s"]))
    problems = perf_verdict(fresh, reruns, BUNDLES)
    if problems:
        print("perf-check: FAILED: the no-change re-run is not a no-change" if any(
            p.startswith("no-change") for p in problems) else "perf-check: FAILED", file=sys.stderr)
        for p in problems:
            print("  - " + p, file=sys.stderr)
        print("  logs: %s" % os.path.relpath(logs, TOP), file=sys.stderr)
        return 1
    print("perf-check: passed (no changes and no bundle bytes on either re-run; %s sent by the fresh deploy)"
          % human_bytes(fresh["bundle_bytes_sent"]))
    return 0


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 16], metavar="N", help="fleet sizes (1..64)")
    p.add_argument("--rounds", type=int, default=3, help="rounds per size, each on a fresh fleet (default 3)")
    p.add_argument("--ops", nargs="+", choices=OPS, default=list(DEFAULT_OPS),
                   help="operations to record (what they need runs too, unrecorded); copy_baseline (the "
                   "runbook's copy of the .run to every node) only when asked for")
    p.add_argument("--bundle-mib", type=int, metavar="N",
                   help="deploy 2.5.136 as the large .run of sim/bundles/build-large.sh N (built once, cached); "
                   "results in docs/performance-large.json and their own section of docs/performance.md")
    p.add_argument("--strategy", choices=("linear", "mitogen"), default="linear")
    p.add_argument("--mitogen-dir", default=os.path.join(TOP, ".cache", "mitogen"),
                   help="where mitogen is installed (pip install --target); default .cache/mitogen")
    p.add_argument("--keep-fleet", action="store_true", help="leave the last fleet up")
    p.add_argument("--check-goals", action="store_true",
                   help="print the issue's goals for the largest size; exit 3 when one is missed")
    p.add_argument("--json", help="results file (default docs/performance.json, docs/performance-mitogen.json "
                   "with --strategy mitogen, the --from-json file itself with --from-json)")
    p.add_argument("--md", default=os.path.join(TOP, "docs", "performance.md"), help="Markdown file with the table")
    p.add_argument("--from-json", metavar="FILE", help="run nothing: re-summarize FILE's runs (table, goals)")
    p.add_argument("--perf-check", action="store_true", help="the no-change check of make test")
    args = p.parse_args(argv)
    if any(n < 1 or n > PORTS_PER_FLEET for n in args.sizes):
        p.error("--sizes: 1 to %d nodes" % PORTS_PER_FLEET)
    if args.rounds < 1:
        p.error("--rounds: at least 1")
    if args.bundle_mib is not None and args.bundle_mib < 1:
        p.error("--bundle-mib: at least 1")
    if args.bundle_mib and (args.strategy == "mitogen" or args.perf_check):
        p.error("--bundle-mib: with the linear strategy and not with --perf-check")
    if args.json is None and args.from_json:
        args.json = args.from_json
    elif args.json is None:
        args.json = os.path.join(TOP, "docs", "performance-mitogen.json" if args.strategy == "mitogen"
                                 else "performance-large.json" if args.bundle_mib else "performance.json")
    args.json, args.md = os.path.abspath(args.json), os.path.abspath(args.md)
    return args


def _terminate(signum, frame):
    del frame
    raise KeyboardInterrupt("signal %d" % signum)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    signal.signal(signal.SIGTERM, _terminate)
    try:
        if args.perf_check:
            with lock("perf"):
                return perf_check(args)
        if args.from_json:
            with open(args.from_json, encoding="utf-8") as f:
                doc = json.load(f)
            doc["results"] = summarize(doc.get("runs") or [])
            is_large = bool((doc.get("params") or {}).get("bundle_mib"))
            doc["goals"] = check_large_goals(doc) if is_large else check_goals(doc["results"])
            write_outputs(doc, args.json, args.md,
                          "large" if is_large else (doc.get("params") or {}).get("strategy", args.strategy))
            for line in result_lines(doc):
                print(line)
        else:
            with lock("bench"):
                doc = bench(args)
    except BenchError as e:
        print("bench: FAILED: %s" % e, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bench: interrupted; iptables rule and fleet cleaned up", file=sys.stderr)
        return 130
    if args.check_goals:
        print("goals of issue %s (largest fleet measured):"
              % (16 if (doc.get("params") or {}).get("bundle_mib") else 9))
        print(format_goals(doc["goals"]))
        if any(g["ok"] is False for g in doc["goals"]):
            return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
