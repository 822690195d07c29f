#!/usr/bin/env python3
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the card exporter costs on a 16-card node (issue 33): scrape latency, CPU and memory.

    .venv/bin/python scripts/bench/exporter_cost.py [--cards 16] [--scrapes 1000]
        [--busy-interval 0.25] [--interval 15] [--window 300]
        [--memory-window 120] [--memory-interval 1] [--json OUT]

On this machine, against a simulated node of --cards cards (simctl's state in
a temporary directory, its PCI view drawn there too) with the simulator's
efsmi as the tool, the daemon roles/card_exporter/files/topsrider-card-exporter
runs with a library of exactly the module_utils files the role installs
(_card_metrics.EXPORTER_MODULE_UTILS). Three phases, each with a fresh daemon:

  latency  --scrapes GETs of /metrics one after another, each on a new
           connection as Prometheus makes them, while the daemon reads every
           --busy-interval seconds (readings run during the scrapes): p50,
           p99 and the slowest, in ms.
  cpu      the daemon at --interval (15 s, the role's default) for --window
           seconds with one scrape every --scrape-every seconds (Prometheus'
           scrape): the CPU it and its children (efsmi) used, from
           /proc/<pid>/stat utime+stime+cutime+cstime, as a share of one core.
  memory   the daemon reading every --memory-interval seconds (--timeout 10,
           the role's default) through a wrapper of efsmi that a mode file
           turns hostile: idle (efsmi itself) for --memory-window seconds,
           its RSS then the idle figure; endless (a tool that prints without
           end) and 50mb (a tool that prints 50 MB and exits) for
           --memory-window seconds each, scraped every second; the peak RSS
           (VmHWM) over the idle RSS, the slowest scrape, and whether the
           daemon stayed the same process.

Prints all three, --json writes them. Exits 1 when p99 is above
--max-p99-ms (50), the CPU share above --max-cpu-pct (1.0) (issue 33's
goals) or the peak RSS over idle above --max-rss-over-idle-mb (64, issue 48's).
"""
import argparse
import datetime
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

from provenance import short_commit

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DAEMON = os.path.join(TOP, "roles", "card_exporter", "files", "topsrider-card-exporter")
ROOTFS = os.path.join(TOP, "sim", "node", "rootfs")
SIMCTL = os.path.join(ROOTFS, "usr", "local", "bin", "simctl")
EFSMI = os.path.join(ROOTFS, "usr", "sbin", "efsmi")
MODULE_UTILS = os.path.join(TOP, "plugins", "module_utils")


class BenchError(Exception):
    pass


def exporter_files():
    """_card_metrics.EXPORTER_MODULE_UTILS, read from the source (this script imports no collection code)."""
    with open(os.path.join(MODULE_UTILS, "_card_metrics.py")) as f:
        m = re.search(r"^EXPORTER_MODULE_UTILS = \(([^)]*)\)", f.read(), re.MULTILINE)
    return re.findall(r'"(\w+)"', m.group(1))


def make_lib(work):
    """The library tree the role installs: ansible_collections/gcu/topsrider/plugins/module_utils."""
    d = os.path.join(work, "lib", "ansible_collections", "gcu", "topsrider", "plugins", "module_utils")
    os.makedirs(d)
    p = d
    for _level in range(5):
        open(os.path.join(p, "__init__.py"), "w").close()
        p = os.path.dirname(p)
    for name in exporter_files():
        shutil.copy(os.path.join(MODULE_UTILS, name + ".py"), d)
    return os.path.join(work, "lib")


def sim_env(work):
    env = dict(os.environ)
    for key, sub in (("SIM_STATE", "state.json"), ("SIM_PCI_ROOT", "pci"), ("SIM_DEV_ROOT", "dev"),
                     ("SIM_SYSMODULE_ROOT", "mod")):
        env[key] = os.path.join(work, sub)
        if sub != "state.json":
            os.makedirs(env[key], exist_ok=True)
    return env


def simctl(env, *args):
    proc = subprocess.run([sys.executable, SIMCTL] + list(args), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)
    if proc.returncode != 0:
        raise BenchError("simctl %s: %s" % (" ".join(args), proc.stderr.strip()))


# The memory phase's tool: efsmi, or what the file `mode` next to it says.
HOSTILE = """import os, sys
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "mode")) as f:
    mode = f.read().strip()
if mode == "endless":
    line = b"DEV ID 0 " + b"x" * 100 + b"\\n"
    while True:
        sys.stdout.buffer.write(line * 100)
if mode == "50mb":
    sys.stdout.buffer.write((b"y" * 999 + b"\\n") * 50000)
    sys.exit(0)
os.execv(sys.executable, [sys.executable, %r] + sys.argv[1:])
"""


def hostile_tool(work):
    """(the tool's path, its mode file)."""
    d = os.path.join(work, "hostile")
    os.makedirs(d)
    with open(os.path.join(d, "hostile.py"), "w") as f:
        f.write(HOSTILE % EFSMI)
    tool = os.path.join(d, "efsmi")
    with open(tool, "w") as f:
        f.write("#!/bin/sh\nexec '%s' '%s' \"$@\"\n" % (sys.executable, os.path.join(d, "hostile.py")))
    os.chmod(tool, 0o755)
    return tool, os.path.join(d, "mode")


class Daemon(object):
    def __init__(self, env, lib, interval, timeout, tool=EFSMI):
        argv = [sys.executable, DAEMON, "--lib", lib, "--listen", "127.0.0.1:0", "--interval", str(interval),
                "--timeout", str(timeout), "--vendor", "enflame", "--tool", tool, "--pci-root", env["SIM_PCI_ROOT"]]
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        ready, _w, _x = select.select([self.proc.stderr], [], [], 30)
        line = self.proc.stderr.readline().decode() if ready else ""
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
        if not m:
            self.stop()
            raise BenchError("the exporter did not start: %r" % line)
        self.url = "http://127.0.0.1:%s/metrics" % m.group(1)

    def scrape(self):
        started = time.perf_counter()
        with urllib.request.urlopen(self.url, timeout=10) as r:
            body = r.read()
        return time.perf_counter() - started, body.decode()

    def wait_for_cards(self, cards, wait=60):
        deadline = time.monotonic() + wait
        while True:
            body = self.scrape()[1]
            if body.count("topsrider_card_temperature_celsius{") == cards:
                return body
            if time.monotonic() > deadline:
                raise BenchError("no reading of %d cards within %ss:\n%s" % (cards, wait, body[-2000:]))
            time.sleep(0.05)

    def cpu_s(self):
        """utime+stime+cutime+cstime of the daemon, seconds."""
        with open("/proc/%d/stat" % self.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return sum(int(v) for v in fields[11:15]) / float(os.sysconf("SC_CLK_TCK"))

    def status_kib(self, field):
        """A /proc/<pid>/status figure of the daemon (VmRSS, VmHWM), KiB."""
        with open("/proc/%d/status" % self.proc.pid) as f:
            return int(re.search(r"^%s:\s*(\d+)" % field, f.read(), re.MULTILINE).group(1))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def percentile(values, pct):
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, int(-(-len(ordered) * pct // 100)))
    return ordered[rank - 1]


def reads(body):
    m = re.search(r"^topsrider_exporter_reads_total (\d+)", body, re.MULTILINE)
    return int(m.group(1)) if m else 0


def latency(env, lib, cards, scrapes, interval):
    d = Daemon(env, lib, interval, max(interval * 5, 10))
    try:
        body = d.wait_for_cards(cards)
        before = reads(body)
        times = [d.scrape()[0] for _n in range(scrapes)]
        during = reads(d.scrape()[1]) - before
    finally:
        d.stop()
    ms = [t * 1000 for t in times]
    return {"scrapes": scrapes, "busy_interval_s": interval, "reads_during": during, "bytes": len(body),
            "p50_ms": round(percentile(ms, 50), 3), "p99_ms": round(percentile(ms, 99), 3),
            "max_ms": round(max(ms), 3)}


def cpu(env, lib, cards, interval, window, scrape_every):
    d = Daemon(env, lib, interval, 10)
    try:
        d.wait_for_cards(cards)
        # start at a reading's end: the window holds whole intervals
        first = reads(d.scrape()[1])
        while reads(d.scrape()[1]) == first:
            time.sleep(0.05)
        started, cpu0 = time.monotonic(), d.cpu_s()
        r0 = reads(d.scrape()[1])
        while time.monotonic() - started < window:
            time.sleep(min(scrape_every, max(0.0, window - (time.monotonic() - started))))
            if time.monotonic() - started < window:
                d.scrape()
        wall, used = time.monotonic() - started, d.cpu_s() - cpu0
        done = reads(d.scrape()[1]) - r0
    finally:
        d.stop()
    return {"interval_s": interval, "window_s": round(wall, 3), "scrape_every_s": scrape_every, "reads": done,
            "cpu_s": round(used, 3), "cpu_pct": round(100.0 * used / wall, 3),
            "cpu_per_read_ms": round(1000.0 * used / done, 1) if done else None}


def errors(body, reason):
    m = re.search(r'^topsrider_exporter_read_errors_total\{reason="%s"\} (\d+)' % reason, body, re.MULTILINE)
    return int(m.group(1)) if m else 0


def memory(env, lib, work, cards, window, interval):
    tool, mode = hostile_tool(work)
    with open(mode, "w") as f:
        f.write("normal")
    d = Daemon(env, lib, interval, 10, tool)
    out = {"window_s": window, "interval_s": interval, "timeout_s": 10}
    try:
        d.wait_for_cards(cards)
        started = time.monotonic()
        while time.monotonic() - started < window:
            d.scrape()
            time.sleep(min(1.0, max(0.0, window - (time.monotonic() - started))))
        out["idle_rss_mb"] = round(d.status_kib("VmRSS") / 1024.0, 1)
        out["idle_peak_mb"] = round(d.status_kib("VmHWM") / 1024.0, 1)
        for phase in ("endless", "50mb"):
            with open(mode, "w") as f:
                f.write(phase)
            before = errors(d.scrape()[1], "too_large")
            slowest, started = 0.0, time.monotonic()
            while time.monotonic() - started < window:
                if d.proc.poll() is not None:
                    raise BenchError("the exporter exited (%s) in the %s phase" % (d.proc.returncode, phase))
                took, body = d.scrape()
                slowest = max(slowest, took)
                time.sleep(min(1.0, max(0.0, window - (time.monotonic() - started))))
            out[phase] = {"too_large": errors(body, "too_large") - before, "timeouts": errors(body, "timeout"),
                          "max_scrape_ms": round(slowest * 1000, 1),
                          "peak_rss_mb": round(d.status_kib("VmHWM") / 1024.0, 1),
                          "rss_after_mb": round(d.status_kib("VmRSS") / 1024.0, 1)}
        out["peak_over_idle_mb"] = round(out["50mb"]["peak_rss_mb"] - out["idle_rss_mb"], 1)  # VmHWM never falls
        out["same_process"] = d.proc.poll() is None
    finally:
        d.stop()
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cards", type=int, default=16)
    p.add_argument("--scrapes", type=int, default=1000)
    p.add_argument("--busy-interval", type=float, default=0.25,
                   help="reading interval of the latency phase (0.25 s: readings run during the scrapes)")
    p.add_argument("--interval", type=float, default=15.0, help="reading interval of the CPU phase (15 s)")
    p.add_argument("--window", type=float, default=300.0, help="seconds the CPU is measured (300)")
    p.add_argument("--scrape-every", type=float, default=15.0, help="a scrape every this many seconds (15)")
    p.add_argument("--max-p99-ms", type=float, default=50.0)
    p.add_argument("--max-cpu-pct", type=float, default=1.0)
    p.add_argument("--memory-window", type=float, default=120.0,
                   help="seconds of each memory phase: idle, endless, 50mb (120)")
    p.add_argument("--memory-interval", type=float, default=1.0, help="reading interval of the memory phases (1 s)")
    p.add_argument("--max-rss-over-idle-mb", type=float, default=64.0)
    p.add_argument("--json", help="write the result here")
    args = p.parse_args(argv)
    work = tempfile.mkdtemp(prefix="exporter-cost.")
    try:
        env = sim_env(work)
        simctl(env, "reset", "--cards", str(args.cards))
        simctl(env, "busy", ",".join(str(i) for i in range(0, args.cards, 2)), "--util", "85")  # every other card
        lib = make_lib(work)
        lat = latency(env, lib, args.cards, args.scrapes, args.busy_interval)
        print("latency: %d scrapes of %d cards (%d bytes), %d readings meanwhile: p50 %.2f ms, p99 %.2f ms, "
              "max %.2f ms" % (lat["scrapes"], args.cards, lat["bytes"], lat["reads_during"], lat["p50_ms"],
                               lat["p99_ms"], lat["max_ms"]))
        use = cpu(env, lib, args.cards, args.interval, args.window, args.scrape_every)
        print("cpu: %.3f s in %.0f s at --interval %s (%d readings, %.1f ms each): %.3f %% of one core" % (
            use["cpu_s"], use["window_s"], args.interval, use["reads"], use["cpu_per_read_ms"] or 0, use["cpu_pct"]))
        mem = memory(env, lib, work, args.cards, args.memory_window, args.memory_interval)
        print("memory: idle RSS %.1f MB; endless output: %d too_large, slowest scrape %.1f ms; 50 MB outputs: %d "
              "too_large, slowest scrape %.1f ms; peak RSS %.1f MB, %.1f MB over idle; same process: %s" % (
                  mem["idle_rss_mb"], mem["endless"]["too_large"], mem["endless"]["max_scrape_ms"],
                  mem["50mb"]["too_large"], mem["50mb"]["max_scrape_ms"], mem["50mb"]["peak_rss_mb"],
                  mem["peak_over_idle_mb"], mem["same_process"]))
    except BenchError as e:
        sys.stderr.write("exporter_cost: %s\n" % e)
        return 2
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"), "commit": short_commit(),
              "cpus": os.cpu_count(), "cards": args.cards, "latency": lat, "cpu": use, "memory": mem,
              "goals": {"max_p99_ms": args.max_p99_ms, "max_cpu_pct": args.max_cpu_pct,
                        "max_rss_over_idle_mb": args.max_rss_over_idle_mb}}
    result["pass"] = (lat["p99_ms"] <= args.max_p99_ms and use["cpu_pct"] <= args.max_cpu_pct
                      and mem["peak_over_idle_mb"] <= args.max_rss_over_idle_mb and mem["same_process"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
            f.write("\n")
    verdict = "met" if result["pass"] else "MISSED"
    print("goals (p99 <= %s ms, cpu <= %s %%, peak RSS over idle <= %s MB): %s" % (
        args.max_p99_ms, args.max_cpu_pct, args.max_rss_over_idle_mb, verdict))
    return 0 if result["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
