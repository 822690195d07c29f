"""SIMULATOR: `simctl link` (fabric fault injection) and what the stand-in backend reads back."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from conftest import TOP

SIMCTL = os.path.join(TOP, "sim", "node", "rootfs", "usr", "local", "bin", "simctl")


def _sim_state():
    spec = importlib.util.spec_from_file_location(
        "torch_gcu_sim_state_link", os.path.join(TOP, "sim", "wheel", "torch_gcu", "_sim_state.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def simctl(tmp_path, *args):
    env = dict(os.environ, SIM_STATE=str(tmp_path / "state.json"), SIM_PCI_ROOT=str(tmp_path / "pci"))
    (tmp_path / "pci").mkdir(exist_ok=True)
    return subprocess.run([sys.executable, SIMCTL] + list(args), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)


def state(tmp_path):
    return json.loads((tmp_path / "state.json").read_text())


@pytest.mark.parametrize("steps,link,reads", [
    ([["up"]], None, (False, 1.0)),
    ([["slow=3"]], {"slow": 3.0}, (False, 3.0)),
    ([["down"]], {"down": True}, (True, 1.0)),
    ([["slow=2.5"], ["down"]], {"down": True, "slow": 2.5}, (True, 2.5)),
    ([["slow=3"], ["up"]], None, (False, 1.0)),
    ([["down"], ["slow=1"]], {"down": True}, (True, 1.0)),
])
def test_link_states(tmp_path, steps, link, reads):
    assert simctl(tmp_path, "reset", "--cards", "1").returncode == 0
    for step in steps:
        proc = simctl(tmp_path, "link", *step)
        assert proc.returncode == 0, proc.stderr
    got = state(tmp_path)
    assert got.get("link") == link and len(got["cards"]) == 1
    assert _sim_state().link_state(got) == reads


def test_link_is_idempotent_and_refuses_nonsense(tmp_path):
    simctl(tmp_path, "reset")
    assert simctl(tmp_path, "link", "up").stdout == "simctl: unchanged\n"
    assert simctl(tmp_path, "link", "slow=4").stdout == "simctl: changed\n"
    assert simctl(tmp_path, "link", "slow=4").stdout == "simctl: unchanged\n"
    for bad in ("slow=0.5", "slow=fast", "sideways"):
        proc = simctl(tmp_path, "link", bad)
        assert proc.returncode == 1 and "simctl: " in proc.stderr and bad.split("=", maxsplit=1)[0] in proc.stderr
    assert state(tmp_path)["link"] == {"slow": 4.0}


def test_no_state_reads_as_up():
    assert _sim_state().link_state({}) == (False, 1.0)
    assert _sim_state().link_state({"link": {"slow": "x"}}) == (False, 1.0)
