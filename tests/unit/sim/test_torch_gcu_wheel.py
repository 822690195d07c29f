"""sim/wheel: the stand-in torch_gcu wheel builder (SIMULATOR) and its device view."""
import base64
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import zipfile

import pytest

from conftest import TOP

BUILDER = os.path.join(TOP, "sim", "wheel", "build_wheel.py")


def build(out, python="3.11", torch="2.13.0", stack="2.5.136"):
    proc = subprocess.run([sys.executable, BUILDER, "--out", str(out), "--stack-version", stack,
                           "--python", python, "--torch", torch],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    return proc


@pytest.mark.parametrize("python,torch,name", [
    ("3.11", "2.13.0", "torch_gcu-2.13.0+2.5.136-py311-none-any.whl"),
    ("3.10", "2.13.0", "torch_gcu-2.13.0+2.5.136-py310-none-any.whl"),
    ("3.6", "1.10.0", "torch_gcu-1.10.0+2.5.136-py36-none-any.whl"),
    # Debian bullseye's torch reports itself as 1.7.0a0 (the second node OS).
    ("3.9", "1.7.0a0", "torch_gcu-1.7.0a0+2.5.136-py39-none-any.whl"),
])
def test_wheel_is_valid_and_deterministic(tmp_path, python, torch, name):
    first = build(tmp_path / "a", python=python, torch=torch)
    second = build(tmp_path / "b", python=python, torch=torch)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == str(tmp_path / "a" / name)
    a, b = (tmp_path / "a" / name).read_bytes(), (tmp_path / "b" / name).read_bytes()
    assert a == b
    version = "%s+2.5.136" % torch
    with zipfile.ZipFile(str(tmp_path / "a" / name)) as zf:
        files = {n: zf.read(n) for n in zf.namelist()}
    info = "torch_gcu-%s.dist-info" % version
    meta = files[info + "/METADATA"].decode()
    assert "Name: torch_gcu\n" in meta and "Version: %s\n" % version in meta
    assert "Requires-Dist: torch==%s\n" % torch in meta
    assert "Requires-Python: ==%s.*\n" % python in meta
    assert "SIMULATOR" in meta.split("Summary:", 1)[1].splitlines()[0]
    assert "Tag: py3%s-none-any\n" % python.split(".")[1] in files[info + "/WHEEL"].decode()
    build_info = files["torch_gcu/_build_info.py"].decode()
    assert "TORCH_VERSION = %r" % torch in build_info
    record = files[info + "/RECORD"].decode().splitlines()
    assert record[-1] == info + "/RECORD,,"
    listed = set()
    for line in record[:-1]:
        path, digest, size = line.rsplit(",", 2)
        data = files[path]
        want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        assert digest == "sha256=" + want and int(size) == len(data)
        listed.add(path)
    assert listed | {info + "/RECORD"} == set(files)


@pytest.mark.parametrize("args", [
    {"python": "311"}, {"python": "2.7"}, {"torch": "latest"}, {"torch": "1.7.0a"}, {"stack": "2.5.x"},
    {"stack": "2.5.136a0"},
])
def test_bad_input_is_refused(tmp_path, args):
    proc = build(tmp_path, **args)
    assert proc.returncode == 2 and "must look like" in proc.stderr
    assert not list(tmp_path.iterdir())


def _sim_state():
    spec = importlib.util.spec_from_file_location(
        "torch_gcu_sim_state", os.path.join(TOP, "sim", "wheel", "torch_gcu", "_sim_state.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


STATE = {"driver_loaded": True, "cards": [
    {"index": 0, "present": True}, {"index": 1, "present": True},
    {"index": 2, "present": False}, {"index": 3, "present": True, "hang": True}]}


@pytest.mark.parametrize("state,env,indices", [
    (STATE, {}, [0, 1, 3]),
    (STATE, {"ENFLAME_VISIBLE_DEVICES": "all"}, [0, 1, 3]),
    (STATE, {"ENFLAME_VISIBLE_DEVICES": "none"}, []),
    (STATE, {"ENFLAME_VISIBLE_DEVICES": "3,0,2"}, [3, 0]),
    (STATE, {"TOPS_VISIBLE_DEVICES": "1"}, [1]),
    (STATE, {"ENFLAME_VISIBLE_DEVICES": "0", "TOPS_VISIBLE_DEVICES": "1"}, [0]),
    (dict(STATE, driver_loaded=False), {}, []),
    (None, {}, []),
])
def test_visible_cards(state, env, indices):
    mod = _sim_state()
    assert [c["index"] for c in mod.visible_cards(state, env)] == indices


def test_state_file_is_read_from_env(tmp_path, monkeypatch):
    mod = _sim_state()
    path = tmp_path / "state.json"
    path.write_text(json.dumps(STATE))
    monkeypatch.setenv("TOPSRIDER_SIM_STATE", str(path))
    assert len(mod.visible_cards(environ={})) == 3
    path.write_text("{not json")
    assert mod.load_state() is None
