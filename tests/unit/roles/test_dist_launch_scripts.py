# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The dist_launch launch scripts, rendered with the real role templates (by
ansible's template module on localhost) and run with bash in dry-run mode:
refusals and their exit codes, process count, config choice by total cards,
caller variables over the environment file."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from ansible_collections.gcu.topsrider.plugins.filter.vendor import FilterModule
from ansible_collections.gcu.topsrider.plugins.module_utils import _compare
from ansible_collections.gcu.topsrider.plugins.module_utils._vendors import vendor_spec

ROLE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles", "dist_launch"))
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")

BASE_VARS = {
    "dist_launch_vendor": "enflame",
    "dist_launch_nproc": 8,
    "dist_launch_dir": "/opt/topsrider/launch",
    "dist_launch_backend": "eccl",
    "dist_launch_environment": {"ECCL_DEBUG": "WARN", "GLOO_SOCKET_IFNAME": "lo"},
    "dist_launch_master_addr": "127.0.0.1",
    "dist_launch_master_port": 29500,
    "dist_launch_master_timeout": 300,
    "dist_launch_configs": [{"min_cards": 16, "config": "cfg/large.yaml"},
                            {"min_cards": 1, "config": "cfg/small.yaml"},
                            {"min_cards": 64, "config": "cfg/huge.yaml"}],
    "dist_launch_config_arg": "--config",
    # the role's vars/main.yml: the vendor's row of the table
    "dist_launch_spec": vendor_spec("enflame"),
}


def vendor_filters():
    return FilterModule().filters()


def job_files_of(vendor, env_file):
    """The role's dist_launch_job_files (vars/main.yml) as its filter makes them."""
    return vendor_filters()["topsrider_job_files"](vendor, env_file)


def node_job_files(tmp, env_file):
    """The Enflame job files, the node's other files (loader configuration,
    local facts) moved under tmp, with their messages; all present."""
    out = []
    for entry in job_files_of("enflame", env_file):
        if not entry["env_file"]:
            moved = tmp / os.path.basename(entry["path"])
            moved.write_text("x\n")
            entry = dict(entry, path=str(moved))
            entry["message"] = _compare.missing_message(entry)
        out.append(entry)
    return out


def render(tmp_path, jobs):
    """The role's templates rendered by one play of ansible's template module: jobs is
    [(directory, template name, variables over BASE_VARS)]; each script lands in its directory
    under its name (mode 0755) and bash -n accepts it. Returns the scripts' paths, in order."""
    tasks, dests = [], []
    for directory, name, overrides in jobs:
        dest = directory / name
        tasks.append({"name": "Render %s" % dest, "ansible.builtin.template": {
            "src": os.path.join(ROLE, "templates", name + ".j2"), "dest": str(dest), "mode": "0755"},
            "vars": dict(BASE_VARS, **overrides)})
        dests.append(dest)
    playbook = tmp_path / "render.json"
    playbook.write_text(json.dumps([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]))
    argv = [ANSIBLE_PLAYBOOK, "-c", "local", "-i", "localhost,", str(playbook),
            "-e", "ansible_python_interpreter=%s" % sys.executable]
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.minimal", ANSIBLE_DEPRECATION_WARNINGS="0")
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    for dest in dests:
        subprocess.run(["bash", "-n", str(dest)], check=True)
    return dests


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    """Rendered scripts, a fake python, an env file and a training script."""
    tmp = tmp_path_factory.mktemp("dist_launch")
    python = tmp / "python"
    python.write_text("#!/bin/sh\nexit 0\n")
    python.chmod(0o755)
    env_file = tmp / "topsrider.sh"
    env_file.write_text("export ECCL_DEBUG=INFO\nexport ECCL_MAX_NCHANNELS=2\nexport ENFLAME_VISIBLE_DEVICES=all\n")
    train = tmp / "train.py"
    train.write_text("print('train')\n")
    job_files = node_job_files(tmp, str(env_file))
    overrides = {"dist_launch_python": str(python), "dist_launch_env_file": str(env_file),
                 "dist_launch_job_files": job_files}
    nvidia = tmp / "nvidia"
    nvidia.mkdir()
    single, platform, on_nvidia = render(tmp, [
        (tmp, "launch-single.sh", overrides),
        (tmp, "launch-platform.sh", overrides),
        (nvidia, "launch-platform.sh", dict(
            overrides, dist_launch_vendor="nvidia", dist_launch_spec=vendor_spec("nvidia"), dist_launch_backend="nccl",
            dist_launch_nproc=4,
            dist_launch_env_file="", dist_launch_configs=[], dist_launch_job_files=job_files_of("nvidia", ""),
            dist_launch_environment={"NCCL_DEBUG": "WARN", "VCCL_ALGO": "ring"}))])
    scripts = {"launch-single.sh": single, "launch-platform.sh": platform, "nvidia": on_nvidia}
    return {"tmp": tmp, "scripts": scripts, "train": str(train), "env_file": env_file, "job_files": job_files}


def run(node, script, env, args=None, dry=True):
    full = {"PATH": os.environ["PATH"]}
    if dry:
        full["DIST_LAUNCH_DRY_RUN"] = "1"
    full.update(env)
    argv = ["bash", str(node["scripts"][script])] + (args if args is not None else [node["train"], "--lr", "0.1"])
    proc = subprocess.run(argv, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30, check=False)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


PLATFORM_OK = {"WORLD_SIZE": "2", "RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29511"}


@pytest.mark.parametrize("env, code, message", [
    ({k: v for k, v in PLATFORM_OK.items() if k != "RANK"}, 64, "missing variable(s): RANK"),
    ({"MASTER_PORT": "1"}, 64, "missing variable(s): WORLD_SIZE RANK MASTER_ADDR"),
    (dict(PLATFORM_OK, WORLD_SIZE="two"), 65, "WORLD_SIZE='two' is not a positive integer"),
    (dict(PLATFORM_OK, WORLD_SIZE="0"), 65, "WORLD_SIZE='0' is not a positive integer"),
    (dict(PLATFORM_OK, WORLD_SIZE="-1"), 65, "WORLD_SIZE='-1'"),
    (dict(PLATFORM_OK, RANK="01"), 65, "RANK='01' is not a non-negative integer"),
    (dict(PLATFORM_OK, RANK=""), 65, "RANK='' is not a non-negative integer"),
    (dict(PLATFORM_OK, RANK="2"), 65, "RANK=2 is not below WORLD_SIZE=2"),
    (dict(PLATFORM_OK, MASTER_PORT="70000"), 65, "MASTER_PORT='70000' is not a port number"),
    (dict(PLATFORM_OK, MASTER_ADDR="a b;rm"), 65, "is not a host name or IP address"),
    (dict(PLATFORM_OK, MASTER_ADDR="no-such-host.invalid"), 68, "does not resolve"),
    (dict(PLATFORM_OK, ENFLAME_VISIBLE_DEVICES="none"), 71, "no card is visible"),
    (dict(PLATFORM_OK, ENFLAME_VISIBLE_DEVICES="0,x"), 65, "is not all, none or a comma list"),
    (dict(PLATFORM_OK, DIST_LAUNCH_MASTER_TIMEOUT="soon"), 65, "DIST_LAUNCH_MASTER_TIMEOUT='soon'"),
])
def test_platform_refuses(node, env, code, message):
    rc, out, err = run(node, "launch-platform.sh", env)
    assert rc == code, (out, err)
    assert message in err and "ERROR" in err
    assert out == ""  # nothing was launched


def test_platform_refuses_missing_script(node):
    rc, out, err = run(node, "launch-platform.sh", PLATFORM_OK, args=[])
    assert rc == 66 and "usage:" in err and out == ""
    rc, out, err = run(node, "launch-platform.sh", PLATFORM_OK, args=["/nonexistent/train.py"])
    assert rc == 66 and "/nonexistent/train.py not found" in err


def test_platform_refuses_missing_env_file(node, tmp_path):
    moved = tmp_path / "moved"
    shutil.move(str(node["env_file"]), str(moved))
    try:
        rc, out, err = run(node, "launch-platform.sh", PLATFORM_OK)
    finally:
        shutil.move(str(moved), str(node["env_file"]))
    env_entry = [e for e in node["job_files"] if e["env_file"]][0]
    assert rc == 72 and out == ""
    assert err == "launch-platform.sh: ERROR: %s\n" % env_entry["message"]
    assert "environment is not deployed (run playbooks/deploy.yml; the eccl_env role writes it)" in err


@pytest.mark.parametrize("script", ["launch-single.sh", "launch-platform.sh"])
@pytest.mark.parametrize("index", [1, 2])
def test_every_job_file_is_checked_with_its_own_message(node, tmp_path, script, index):
    """The loader configuration and the local facts too, each with the message
    verify.yml reports for it (the same entry of the one list)."""
    entry = node["job_files"][index]
    moved = tmp_path / "moved"
    shutil.move(entry["path"], str(moved))
    try:
        rc, out, err = run(node, script, PLATFORM_OK if script == "launch-platform.sh" else {})
    finally:
        shutil.move(str(moved), entry["path"])
    assert rc == 72 and out == "" and err == "%s: ERROR: %s\n" % (script, entry["message"])


def test_the_role_renders_the_one_list():
    with open(os.path.join(ROLE, "vars", "main.yml")) as f:
        text = f.read()
    assert "dist_launch_job_files: \"{{ dist_launch_vendor | gcu.topsrider.topsrider_job_files(dist_launch_env_file) }}\"" in text
    with open(os.path.join(ROLE, "templates", "_prelude.sh.j2")) as f:
        prelude = f.read()
    assert "{{ entry.test }} || die 72 {{ entry.message | quote }}" in prelude
    assert [e["path"] for e in job_files_of("enflame", None)] == [
        "/etc/profile.d/topsrider.sh", "/etc/ld.so.conf.d/topsrider.conf", "/etc/ansible/facts.d/topsrider.fact"]
    assert [e["path"] for e in job_files_of("enflame", "")] == [
        "/etc/ld.so.conf.d/topsrider.conf", "/etc/ansible/facts.d/topsrider.fact"]
    assert job_files_of("nvidia", None) == []


@pytest.mark.parametrize("world, rank, total, config", [
    ("1", "0", 8, "cfg/small.yaml"),
    ("2", "0", 16, "cfg/large.yaml"),
    ("4", "3", 32, "cfg/large.yaml"),
    ("8", "5", 64, "cfg/huge.yaml"),
])
def test_platform_command(node, world, rank, total, config):
    rc, out, err = run(node, "launch-platform.sh", dict(PLATFORM_OK, WORLD_SIZE=world, RANK=rank))
    assert rc == 0, err
    argv = out.split()
    assert argv[1:4] == ["-m", "torch.distributed.run", "--nnodes=%s" % world]
    assert "--node_rank=%s" % rank in argv and "--nproc_per_node=8" in argv
    assert "--master_addr=127.0.0.1" in argv and "--master_port=29511" in argv
    assert argv[-4:] == ["--lr", "0.1", "--config", config]
    assert "%s in total" % total in err


def test_platform_waits_for_master_then_gives_up(node):
    # Nothing listens on this port: node 1 waits (bounded) and gives up with 69.
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rc, out, err = run(node, "launch-platform.sh",
                       dict(PLATFORM_OK, RANK="1", MASTER_PORT=str(port), DIST_LAUNCH_MASTER_TIMEOUT="2"), dry=False)
    assert rc == 69 and "did not answer within 2s" in err and out == ""


def test_platform_starts_once_master_answers(node):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(4)
        port = s.getsockname()[1]
        rc, out, err = run(node, "launch-platform.sh",
                           dict(PLATFORM_OK, RANK="1", MASTER_PORT=str(port), DIST_LAUNCH_MASTER_TIMEOUT="10"),
                           dry=False)
    # the fake python exits 0: the launcher was started after the wait
    assert rc == 0 and "waits for the master" in err and "node 1 of 2" in err


@pytest.mark.parametrize("env, nproc, config", [
    ({}, 8, "cfg/small.yaml"),
    ({"ENFLAME_VISIBLE_DEVICES": "0,1,2"}, 3, "cfg/small.yaml"),
])
def test_single_command(node, env, nproc, config):
    rc, out, err = run(node, "launch-single.sh", env)
    assert rc == 0, err
    argv = out.split()
    assert "--nproc_per_node=%d" % nproc in argv and "--nnodes=1" in argv
    assert "--master_addr=127.0.0.1" in argv and "--master_port=29500" in argv
    assert argv[-2:] == ["--config", config]


def test_single_refuses_more_visible_cards_than_the_node_has(node):
    rc, out, err = run(node, "launch-single.sh", {"ENFLAME_VISIBLE_DEVICES": ",".join(str(i) for i in range(9))})
    assert rc == 65 and "names 9 cards, the node has 8" in err


@pytest.mark.parametrize("script", ["launch-single.sh", "launch-platform.sh"])
def test_a_torch_without_torchrun_is_refused_before_launch(node, tmp_path, script):
    """torch.distributed.run is torch 1.10 or newer (Debian bullseye's torch 1.7 has none)."""
    old_torch = tmp_path / "python"
    old_torch.write_text("#!/bin/sh\n"
                         "case \"$*\" in *'import torch.distributed.run'*)\n"
                         "  echo 'Traceback (most recent call last):' >&2\n"
                         "  echo \"ModuleNotFoundError: No module named 'torch.distributed.run'\" >&2; exit 1 ;;\n"
                         "esac\necho launched \"$@\"\n")
    old_torch.chmod(0o755)
    text = node["scripts"][script].read_text().replace(
        "DIST_LAUNCH_PYTHON=%s" % (node["tmp"] / "python"), "DIST_LAUNCH_PYTHON=%s" % old_torch)
    patched = tmp_path / script
    patched.write_text(text)
    full = dict({"PATH": os.environ["PATH"]}, **(PLATFORM_OK if script == "launch-platform.sh" else {}))
    proc = subprocess.run(["bash", str(patched), node["train"]], env=full, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=30, check=False)
    err = proc.stderr.decode()
    assert proc.returncode == 72, err
    assert ("%s cannot import torch.distributed.run, the launcher (torchrun, torch 1.10 or newer): "
            "ModuleNotFoundError: No module named 'torch.distributed.run'" % old_torch) in err
    assert proc.stdout.decode() == ""  # nothing was launched


def test_environment_precedence(node, tmp_path):
    """env file < role variables < the caller's own variables."""
    probe = tmp_path / "probe.py"
    probe.write_text("")
    # a python that prints the environment it got
    env_python = tmp_path / "envpython"
    env_python.write_text("#!/bin/sh\nenv\n")
    env_python.chmod(0o755)
    script = node["scripts"]["launch-single.sh"].read_text().replace(
        "DIST_LAUNCH_PYTHON=%s" % (node["tmp"] / "python"), "DIST_LAUNCH_PYTHON=%s" % env_python)
    patched = tmp_path / "launch-single.sh"
    patched.write_text(script)
    full = {"PATH": os.environ["PATH"], "ECCL_DEBUG": "TRACE"}
    proc = subprocess.run(["bash", str(patched), str(probe)], env=full, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=30, check=True)
    got = dict(line.split("=", 1) for line in proc.stdout.decode().splitlines() if "=" in line)
    assert got["ECCL_DEBUG"] == "TRACE"            # caller wins over role (WARN) and file (INFO)
    assert got["ECCL_MAX_NCHANNELS"] == "2"        # from the env file
    assert got["GLOO_SOCKET_IFNAME"] == "lo"       # from the role
    assert got["DIST_LAUNCH_BACKEND"] == "eccl"
    assert got["DIST_LAUNCH_TOTAL_CARDS"] == "8"
    assert got["DIST_LAUNCH_CONFIG"] == "cfg/small.yaml"


def test_nvidia_platform(node):
    rc, out, err = run(node, "nvidia", dict(PLATFORM_OK, CUDA_VISIBLE_DEVICES="0,1"))
    assert rc == 0, err
    argv = out.split()
    assert "--nproc_per_node=2" in argv and "--config" not in argv
    assert "backend nccl" in err
    rendered = node["scripts"]["nvidia"].read_text()
    assert "DIST_LAUNCH_BACKEND=nccl" in rendered and "VCCL_ALGO=ring" in rendered
    assert "DIST_LAUNCH_ENV_FILE=''" in rendered
