# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/pool-cpu.py: the simulated nodes' CPU from their containers'
cgroups (v1 cpuacct and v2 cpu.stat), named from Docker's own record of each
container, summed by name, and said to be unreadable rather than made up."""
import importlib.util
import json
import os
import subprocess
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SCRIPT = os.path.join(TOP, "scripts", "pool-cpu.py")
_spec = importlib.util.spec_from_file_location("pool_cpu", SCRIPT)
pool_cpu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pool_cpu)

V1_ID, V2_ID, GONE_ID = "a" * 64, "b" * 64, "c" * 64


def tree(tmp_path, v1_ns=12500000000, v2_usec=3200000):
    """A cgroup tree with one container on v1 and one on v2, and Docker's records of both."""
    cg, docker = tmp_path / "cgroup", tmp_path / "docker"
    (cg / "cpuacct" / "docker" / V1_ID).mkdir(parents=True)
    (cg / "cpuacct" / "docker" / V1_ID / "cpuacct.usage").write_text("%d\n" % v1_ns)
    (cg / "system.slice" / ("docker-%s.scope" % V2_ID)).mkdir(parents=True)
    (cg / "system.slice" / ("docker-%s.scope" % V2_ID) / "cpu.stat").write_text(
        "usage_usec %d\nuser_usec 3000000\nsystem_usec 200000\n" % v2_usec)
    for cid, name in ((V1_ID, "/topsrider-rt-node1"), (V2_ID, "/fabric-node1")):
        (docker / cid).mkdir(parents=True)
        (docker / cid / "config.v2.json").write_text(json.dumps({"Name": name}))
    return str(cg), str(docker)


def test_both_cgroup_versions_are_read_in_seconds(tmp_path):
    cg, docker = tree(tmp_path)
    assert pool_cpu.readings(cg) == {V1_ID: 12.5, V2_ID: 3.2}
    assert pool_cpu.container_name(V1_ID, docker) == "topsrider-rt-node1"
    # A container whose record is gone is named by its short id.
    assert pool_cpu.container_name(GONE_ID, docker) == GONE_ID[:12]


def test_a_running_sampler_keeps_a_destroyed_containers_last_reading(tmp_path):
    cg, docker = tree(tmp_path)
    out = str(tmp_path / "nodes.jsonl")
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.path.insert(0, %r); import runpy; "
                             "m = runpy.run_path(%r); m['sample'](%r, %r, %r, step=0.05)" % (TOP, SCRIPT, out, cg, docker)])
    try:
        for dummy in range(200):
            if os.path.exists(out) and "topsrider-rt-node1" in open(out).read():
                break
            subprocess.run(["sleep", "0.05"], check=True)
        os.remove(os.path.join(cg, "cpuacct", "docker", V1_ID, "cpuacct.usage"))
        os.rmdir(os.path.join(cg, "cpuacct", "docker", V1_ID))
        subprocess.run(["sleep", "0.2"], check=True)
        open(out + ".stop", "w").close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    rows = {row["name"]: row["cpu_s"] for row in map(json.loads, open(out))}
    assert rows == {"topsrider-rt-node1": 12.5, "fabric-node1": 3.2}, rows


def test_the_report_sums_by_name_largest_first(tmp_path):
    out = tmp_path / "nodes.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in [
        {"id": "1", "name": "fabric-node1", "cpu_s": 3.2}, {"id": "2", "name": "slurm-node1", "cpu_s": 40.0},
        {"id": "3", "name": "fabric-node1", "cpu_s": 1.8}]))
    proc = subprocess.run([sys.executable, SCRIPT, "report", str(out)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "=== the nodes' CPU (each container's cgroup; a name used twice is summed): 45 s in all"
    assert lines[1].split() == ["slurm-node1", "40.0", "s"] and lines[2].split() == ["fabric-node1", "5.0", "s"]


def test_nothing_readable_is_said_not_made_up(tmp_path):
    proc = subprocess.run([sys.executable, SCRIPT, "report", str(tmp_path / "absent.jsonl")],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and proc.stdout == "=== the nodes' CPU: no container's CPU counter could be read here\n"
    assert subprocess.run([sys.executable, SCRIPT, "what"], capture_output=True, check=False).returncode == 2
