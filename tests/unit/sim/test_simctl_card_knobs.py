"""SIMULATOR: the card knobs of issue 33 (simctl card ... temperature, ECC
counts, PCIe link; simctl set tool_hang=...), as the simulated efsmi, the
nvidia-smi stand-in and the PCI view show them, read back by the collection's
own parsers."""
import os
import subprocess
import sys

import pytest

from conftest import TOP

from ansible_collections.gcu.topsrider.plugins.module_utils import _efsmi, _nvsmi

ROOTFS = os.path.join(TOP, "sim", "node", "rootfs")
SIMCTL = os.path.join(ROOTFS, "usr", "local", "bin", "simctl")
EFSMI = os.path.join(ROOTFS, "usr", "sbin", "efsmi")
NVIDIA_SMI = os.path.join(ROOTFS, "usr", "local", "lib", "topsrider-sim", "nvidia-smi")


def run(tmp_path, tool, *args, **kw):
    env = dict(os.environ, SIM_STATE=str(tmp_path / "state.json"), SIM_PCI_ROOT=str(tmp_path / "pci"),
               SIM_DEV_ROOT=str(tmp_path / "dev"), SIM_SYSMODULE_ROOT=str(tmp_path / "mod"))
    for d in ("pci", "dev", "mod"):
        (tmp_path / d).mkdir(exist_ok=True)
    return subprocess.run([sys.executable, tool] + list(args), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False, **kw)


def link(tmp_path, bus):
    d = tmp_path / "pci" / bus
    names = ("current_link_width", "max_link_width", "current_link_speed", "max_link_speed")
    return dict((n, (d / n).read_text()) for n in names)


def test_link_is_drawn_as_the_kernel_prints_it(tmp_path):
    assert run(tmp_path, SIMCTL, "reset", "--cards", "2").returncode == 0
    assert link(tmp_path, "0000:3d:00.0") == {"current_link_width": "16\n", "max_link_width": "16\n",
                                              "current_link_speed": "16.0 GT/s PCIe\n",
                                              "max_link_speed": "16.0 GT/s PCIe\n"}
    proc = run(tmp_path, SIMCTL, "card", "1", "link_width=8", "link_speed_gts=2.5")
    assert proc.stdout == "simctl: changed\n"
    assert link(tmp_path, "0000:3e:00.0") == {"current_link_width": "8\n", "max_link_width": "16\n",
                                              "current_link_speed": "2.5 GT/s PCIe\n",
                                              "max_link_speed": "16.0 GT/s PCIe\n"}
    assert link(tmp_path, "0000:3d:00.0")["current_link_width"] == "16\n"
    # an H100 node: PCIe 5.0
    run(tmp_path, SIMCTL, "reset", "--cards", "1", "--model", "H100")
    assert link(tmp_path, "0000:3d:00.0")["max_link_speed"] == "32.0 GT/s PCIe\n"


@pytest.mark.parametrize("assign, message", [
    ("link_width=7", "link_width must be one of"),
    ("link_width_max=\"x16\"", "link_width_max must be one of"),
    ("link_speed_gts=10", "link_speed_gts must be one of"),
    ("ecc_uncorrected=-1", "ecc_uncorrected must be a whole number"),
    ("ecc_corrected=1.5", "ecc_corrected must be a whole number"),
    ("ecc_uncorrected=true", "ecc_uncorrected must be a whole number"),
    ("utilization_pct=101", "utilization_pct must be a number 0-100"),
    ("temperature_c=hot", "temperature_c must be a number"),
])
def test_bad_card_values_are_refused_and_change_nothing(tmp_path, assign, message):
    run(tmp_path, SIMCTL, "reset", "--cards", "1")
    before = (tmp_path / "state.json").read_text()
    proc = run(tmp_path, SIMCTL, "card", "0", assign)
    assert proc.returncode == 1 and message in proc.stderr
    assert (tmp_path / "state.json").read_text() == before


def test_efsmi_prints_total_dbe_and_temperature(tmp_path):
    run(tmp_path, SIMCTL, "reset", "--cards", "2")
    run(tmp_path, SIMCTL, "card", "1", "ecc_uncorrected=5", "temperature_c=88", "utilization_pct=40")
    out = run(tmp_path, EFSMI, "-q").stdout
    assert "Total DBE               : 5" in out
    cards = _efsmi.parse_query(out)["cards"]
    assert [c["ecc_errors_uncorrected"] for c in cards] == [0, 5]
    assert (cards[1]["temperature_c"], cards[1]["utilization_pct"]) == (88, 40.0)


def test_nvidia_stand_in_ecc_and_link_fields(tmp_path):
    run(tmp_path, SIMCTL, "reset", "--cards", "2", "--model", "H100")
    run(tmp_path, SIMCTL, "card", "0", "ecc_corrected=9", "link_width=8")
    run(tmp_path, SIMCTL, "card", "1", "health=false")
    fields = _nvsmi.QUERY_GPU_FIELDS + ("ecc.errors.corrected.volatile.total",)
    cards = _nvsmi.parse_query_gpu(run(tmp_path, NVIDIA_SMI, "--query-gpu=" + ",".join(fields),
                                       "--format=csv,noheader,nounits").stdout, fields)["cards"]
    assert [(c["ecc_errors_corrected"], c["ecc_errors_uncorrected"], c["health"]) for c in cards] == \
        [(9, 0, True), (0, 2, False)]  # an unhealthy card keeps its 2 uncorrected errors
    run(tmp_path, SIMCTL, "card", "1", "ecc_uncorrected=7")
    out = run(tmp_path, NVIDIA_SMI, "--query-gpu=index,ecc.errors.uncorrected.volatile.total,"
              "pcie.link.width.current,pcie.link.width.max", "--format=csv,noheader,nounits").stdout
    assert out == "0, 0, 8, 16\n1, 7, 16, 16\n"
    # gcu_devices' own query is unchanged: no corrected count asked, no such key
    cards = _nvsmi.parse_query_gpu(run(tmp_path, NVIDIA_SMI, "--query-gpu=" + ",".join(_nvsmi.QUERY_GPU_FIELDS),
                                       "--format=csv,noheader,nounits").stdout)["cards"]
    assert "ecc_errors_corrected" not in cards[0]


@pytest.mark.parametrize("model, tool, args", [
    ("T20", EFSMI, ["-q"]),
    ("T20", EFSMI, []),
    ("H100", NVIDIA_SMI, ["--query-gpu=index", "--format=csv,noheader,nounits"]),
])
def test_tool_hang_until_killed_and_back(tmp_path, model, tool, args):
    run(tmp_path, SIMCTL, "reset", "--cards", "1", "--model", model)
    proc = run(tmp_path, SIMCTL, "set", "tool_hang=true")
    assert proc.returncode == 0 and proc.stdout == "simctl: changed\n"
    with pytest.raises(subprocess.TimeoutExpired):
        run(tmp_path, tool, *args, timeout=1)
    assert run(tmp_path, SIMCTL, "set", "tool_hang=1").returncode == 1  # a boolean, as driver_loaded
    run(tmp_path, SIMCTL, "set", "tool_hang=false")
    assert run(tmp_path, tool, *args, timeout=30).returncode == 0
