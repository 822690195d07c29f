#!/usr/bin/env python3
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The CPU the simulated nodes of a test pool use (scripts/molecule-all.sh).

A node's processes are not children of the job that started its container,
so the job's own CPU (bash's `times`) does not hold them; the container's
cgroup does. `sample FILE` reads every Docker container's CPU counter every
few seconds until FILE.stop exists, keeping the last reading of each
container (its name from Docker's own record) in FILE as JSON lines
`{"name": ..., "cpu_s": ...}`, rewritten atomically after each round.
`report FILE` prints the containers' CPU, grouped by name, largest first.

Where the counter lives: cgroup v1, cpuacct/docker/<id>/cpuacct.usage
(nanoseconds); cgroup v2, system.slice/docker-<id>.scope/cpu.stat
(usage_usec). Where neither can be read, the report says so: a number is
never made up. What a container used after the last round (at most a round's
time, STEP seconds) is not counted."""
import glob
import json
import os
import sys
import time

CGROUP = "/sys/fs/cgroup"
DOCKER = "/var/lib/docker/containers"
STEP = 3.0


def readings(cgroup=CGROUP):
    """{container id: CPU seconds} of the containers running now."""
    found = {}
    for path in glob.glob(os.path.join(cgroup, "cpuacct", "docker", "*", "cpuacct.usage")):
        try:
            with open(path) as f:
                found[os.path.basename(os.path.dirname(path))] = int(f.read()) / 1e9
        except (OSError, ValueError):
            continue
    for path in glob.glob(os.path.join(cgroup, "system.slice", "docker-*.scope", "cpu.stat")):
        name = os.path.basename(os.path.dirname(path))[len("docker-"):-len(".scope")]
        try:
            with open(path) as f:
                stat = dict(line.split() for line in f if line.strip())
            found[name] = int(stat["usage_usec"]) / 1e6
        except (OSError, ValueError, KeyError):
            continue
    return found


def container_name(cid, docker=DOCKER):
    try:
        with open(os.path.join(docker, cid, "config.v2.json")) as f:
            return json.load(f)["Name"].lstrip("/")
    except (OSError, ValueError, KeyError):
        return cid[:12]


def sample(out, cgroup=CGROUP, docker=DOCKER, step=STEP):
    seen = {}
    while True:
        stop = os.path.exists(out + ".stop")
        for cid, cpu in readings(cgroup).items():
            name = seen.get(cid, (None,))[0] or container_name(cid, docker)
            seen[cid] = (name, cpu)
        with open(out + ".new", "w") as f:
            for cid, (name, cpu) in sorted(seen.items()):
                f.write(json.dumps({"id": cid, "name": name, "cpu_s": round(cpu, 1)}) + "\n")
        os.replace(out + ".new", out)
        if stop:
            return
        time.sleep(step)


def report(out):
    try:
        with open(out) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    except OSError:
        rows = []
    if not rows:
        return ["=== the nodes' CPU: no container's CPU counter could be read here"]
    by_name = {}
    for row in rows:
        by_name[row["name"]] = by_name.get(row["name"], 0.0) + row["cpu_s"]
    lines = ["=== the nodes' CPU (each container's cgroup; a name used twice is summed): %.0f s in all"
             % sum(by_name.values())]
    for name, cpu in sorted(by_name.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append("    %-40s %7.1f s" % (name, cpu))
    return lines


def main(argv):
    if len(argv) != 3 or argv[1] not in ("sample", "report"):
        sys.stderr.write("usage: pool-cpu.py sample|report FILE\n")
        return 2
    if argv[1] == "sample":
        sample(argv[2])
    else:
        print("\n".join(report(argv[2])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
