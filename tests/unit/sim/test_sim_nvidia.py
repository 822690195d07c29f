"""SIMULATOR: a simulated NVIDIA node (`simctl reset --model H100`) and its stand-in nvidia-smi,
read back by the collection's own nvidia-smi parser."""
import json
import os
import subprocess
import sys

from conftest import TOP

from ansible_collections.gcu.topsrider.plugins.module_utils import _nvsmi

ROOTFS = os.path.join(TOP, "sim", "node", "rootfs")
SIMCTL = os.path.join(ROOTFS, "usr", "local", "bin", "simctl")
NVIDIA_SMI = os.path.join(ROOTFS, "usr", "local", "lib", "topsrider-sim", "nvidia-smi")


def run(tmp_path, tool, *args):
    env = dict(os.environ, SIM_STATE=str(tmp_path / "state.json"), SIM_PCI_ROOT=str(tmp_path / "pci"))
    (tmp_path / "pci").mkdir(exist_ok=True)
    return subprocess.run([sys.executable, tool] + list(args), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)


def query(tmp_path, fields=_nvsmi.QUERY_GPU_FIELDS):
    return run(tmp_path, NVIDIA_SMI, "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits")


def test_h100_node_reads_like_the_real_tool(tmp_path):
    assert run(tmp_path, SIMCTL, "reset", "--model", "H100").returncode == 0
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["vendor"] == "nvidia" and state["driver_version"] == "580.159.04"
    proc = query(tmp_path)
    assert proc.returncode == 0, proc.stderr
    parsed = _nvsmi.parse_query_gpu(proc.stdout)
    cards = parsed["cards"]
    assert parsed["driver_version"] == "580.159.04"
    assert [c["index"] for c in cards] == list(range(8))
    assert {c["model"] for c in cards} == {"NVIDIA H100 80GB HBM3"}
    assert cards[0]["bus_id"] == "0000:3d:00.0" and cards[0]["memory_total_mib"] == 81559
    assert {c["health"] for c in cards} == {True} and {c["utilization_pct"] for c in cards} == {0.0}
    # The PCI view: NVIDIA's vendor id and a 3D controller's class.
    dev = tmp_path / "pci" / "0000:3d:00.0"
    assert (dev / "vendor").read_text().strip() == "0x10de" and (dev / "class").read_text().strip() == "0x030200"


def test_busy_unhealthy_and_unknown_fields(tmp_path):
    run(tmp_path, SIMCTL, "reset", "--model", "H100", "--cards", "2")
    run(tmp_path, SIMCTL, "busy", "0", "--util", "97")
    run(tmp_path, SIMCTL, "card", "1", "health=false")
    cards = _nvsmi.parse_query_gpu(query(tmp_path).stdout)["cards"]
    assert [c["utilization_pct"] for c in cards] == [97.0, 0.0]
    assert [c["health"] for c in cards] == [True, False]
    # Like the real tool, an unknown field fails the whole query.
    proc = query(tmp_path, ("index", "no.such.field"))
    assert proc.returncode != 0 and "is not a valid field" in proc.stdout


def test_a_t20_node_has_no_nvidia_driver(tmp_path):
    run(tmp_path, SIMCTL, "reset")
    proc = query(tmp_path)
    assert proc.returncode == 9 and "couldn't communicate with the NVIDIA driver" in proc.stderr
    assert (tmp_path / "pci" / "0000:3d:00.0" / "vendor").read_text().strip() == "0x1e36"
