"""SIMULATOR: the driver's device files and module version file that simctl
keeps as a loaded driver would (here under SIM_DEV_ROOT and SIM_SYSMODULE_ROOT,
plain files), simctl refusing to unload the driver while a process holds a
card (as rmmod does), and the stand-in torch_gcu opening a card's file when it
uses the card and failing where the file is missing."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from conftest import TOP

SIMCTL = os.path.join(TOP, "sim", "node", "rootfs", "usr", "local", "bin", "simctl")


def simctl(tmp_path, *args):
    env = dict(os.environ, SIM_STATE=str(tmp_path / "state.json"), SIM_PCI_ROOT=str(tmp_path / "pci"),
               SIM_DEV_ROOT=str(tmp_path / "dev"), SIM_SYSMODULE_ROOT=str(tmp_path / "sys"))
    for d in ("pci", "dev", "sys"):
        (tmp_path / d).mkdir(exist_ok=True)
    return subprocess.run([sys.executable, SIMCTL] + list(args), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)


def dev(tmp_path):
    return sorted(os.listdir(str(tmp_path / "dev")))


def test_device_files_follow_the_cards_and_the_driver(tmp_path):
    assert simctl(tmp_path, "reset", "--cards", "4").returncode == 0
    assert dev(tmp_path) == ["gcu0", "gcu1", "gcu2", "gcu3", "gcuctl"]
    assert (tmp_path / "sys" / "enflame" / "version").read_text() == "2.4.20230829\n"
    simctl(tmp_path, "remove", "2")
    assert dev(tmp_path) == ["gcu0", "gcu1", "gcu3", "gcuctl"]
    simctl(tmp_path, "set", "driver_loaded=false")
    assert dev(tmp_path) == [] and not (tmp_path / "sys" / "enflame").exists()
    simctl(tmp_path, "set", "driver_loaded=true", "driver_version=2.5.1")
    assert dev(tmp_path) == ["gcu0", "gcu1", "gcu3", "gcuctl"]
    assert (tmp_path / "sys" / "enflame" / "version").read_text() == "2.5.1\n"
    simctl(tmp_path, "reset", "--cards", "2", "--model", "H100")
    assert dev(tmp_path) == ["nvidia0", "nvidia1", "nvidiactl"]
    assert (tmp_path / "sys" / "nvidia" / "version").read_text() == "580.159.04\n"
    assert not (tmp_path / "sys" / "enflame").exists()


def test_files_it_did_not_make_are_left_alone(tmp_path):
    simctl(tmp_path, "reset", "--cards", "2")
    (tmp_path / "dev" / "gcu7").mkdir()  # not a stand-in file
    (tmp_path / "dev" / "null").write_text("")
    simctl(tmp_path, "set", "driver_loaded=false")
    assert dev(tmp_path) == ["gcu7", "null"]


def test_the_driver_cannot_be_unloaded_while_a_card_is_held(tmp_path):
    simctl(tmp_path, "reset", "--cards", "2")
    path = str(tmp_path / "dev" / "gcu1")
    holder = subprocess.Popen([sys.executable, "-c", "import os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR); "
                               "print('open', flush=True); time.sleep(60)", path], stdout=subprocess.PIPE,
                              universal_newlines=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        out = simctl(tmp_path, "set", "driver_loaded=false")
        assert out.returncode == 1
        assert "cannot unload the driver: module enflame is in use by pid(s) %d (%d: gcu1)" % (
            holder.pid, holder.pid) in out.stderr
        assert json.loads((tmp_path / "state.json").read_text())["driver_loaded"] is True
    finally:
        holder.kill()
        holder.wait()
    assert simctl(tmp_path, "set", "driver_loaded=false").returncode == 0


def _sim_state():
    spec = importlib.util.spec_from_file_location(
        "torch_gcu_sim_state_dev", os.path.join(TOP, "sim", "wheel", "torch_gcu", "_sim_state.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_stand_in_holds_a_cards_file_until_it_exits(tmp_path, monkeypatch):
    mod = _sim_state()
    monkeypatch.setenv("TOPSRIDER_SIM_DEV", str(tmp_path))
    (tmp_path / "gcu3").write_text("")
    fd = mod.open_card(3)
    assert os.readlink("/proc/self/fd/%d" % fd) == str(tmp_path / "gcu3")
    assert mod.open_card(3) == fd and mod.open_cards() == [3]
    with pytest.raises(mod.DeviceFileError, match=r"cannot open .*gcu4: No such file or directory .*driver loaded"):
        mod.open_card(4)
    os.close(fd)
