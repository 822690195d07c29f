"""The second node OS: Debian bullseye, Python 3.9, Debian's torch 1.7 (torch_gcu 1.x), after deploy.yml."""
import base64
import glob
import json
import os
import subprocess

TOP = os.environ["MOLECULE_PROJECT_DIRECTORY"]
EPHEMERAL = os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]
(BUNDLE,) = glob.glob(os.path.join(EPHEMERAL, "runs", "*", "manifest.json"))
with open(BUNDLE) as f:
    MANIFEST = json.load(f)
DEBS = [e for e in MANIFEST["files"] if e["type"] == "deb"]
(WHEEL,) = [e for e in MANIFEST["files"] if e["type"] == "wheel" and e["python"] == "3.9"]
TRAIN_PY = "/opt/venvs/train/bin/python"
DEBIAN_TORCH = "/usr/lib/python3/dist-packages/torch"


def test_the_node_is_bullseye_with_python_3_9(host):
    assert host.file("/etc/debian_version").content_string.startswith("11.")
    assert host.check_output("/usr/bin/python3 -c 'import sys; print(sys.version_info[:2])'") == "(3, 9)"
    assert host.check_output("dpkg-query -W -f '${Version}' python3-torch").startswith("1.7.1")


def test_packages_installed_and_held(host):
    for deb in DEBS:
        out = host.check_output("dpkg-query -W -f '${Version} ${Status}' %s", deb["package"])
        assert out == deb["version"] + " hold ok installed", deb["package"]
    assert "/usr/local/tops/lib/libeccl.so" in host.check_output("ldconfig -p")


def test_the_python_3_9_wheel_went_into_the_venv_and_debians_torch_is_untouched(host):
    # Built for the torch Debian's python3-torch 1.7.1 says it is.
    assert WHEEL["version"] == "1.7.0a0+2.5.136" and WHEEL["requires_torch"] == "1.7.0a0"
    show = host.check_output(TRAIN_PY + " -m pip show torch_gcu").splitlines()
    assert "Version: " + WHEEL["version"] in show
    assert "Location: /opt/venvs/train/lib/python3.9/site-packages" in show
    probe = ("import torch, torch_gcu; print(torch.__version__, torch.__file__, "
             "torch_gcu.API_GENERATION, torch_gcu.device_count())")
    version, where, api, count = host.check_output("%s -c '%s'" % (TRAIN_PY, probe)).split()
    assert (version, api, count) == ("1.7.0a0", "1.x", "2")
    assert where.startswith(DEBIAN_TORCH + "/")
    # Debian's python3-torch files are the package's own (dpkg --verify lists changed files).
    assert host.run("dpkg --verify python3-torch").stdout == ""
    assert host.run("/usr/bin/python3 -c 'import torch_gcu'").rc != 0


def test_local_facts_name_the_training_python(host):
    fact = json.loads(host.file("/etc/ansible/facts.d/topsrider.fact").content_string)
    assert fact["version"] == MANIFEST["version"] == "2.5.136"
    assert fact["python"] == TRAIN_PY


def test_verify_runs_the_collective_on_every_card(host):
    """verify.yml at the collective level: a rank per card (two), torch_gcu 1.x placement, eccl on torch 1.7."""
    runner = host.backend.ansible_runner
    proc = subprocess.run(
        ["ansible-playbook", "-i", runner.inventory_file, os.path.join(TOP, "playbooks", "verify.yml"),
         "-e", "topsrider_probe_level=collective"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600, check=False)
    out = proc.stdout.decode()
    assert proc.returncode == 0, out[-4000:]
    with open(os.path.join(EPHEMERAL, "reports", "verify-latest.json")) as f:
        report = json.load(f)
    (node,) = report["hosts"]
    assert node["result"] == "ok", node
    assert node["detail"] == "2 cards healthy, ECCL ok at level collective"
    assert node["eccl"] and all(r["correct"] and r["ranks"] == 2 for r in node["eccl"])


# What a T20 refuses, the 1.x stand-in on torch 1.7 refuses too (one rank, eccl).
REFUSALS = r"""
import json, torch, torch_gcu, torch.distributed as dist
dist.init_process_group("eccl", init_method="file:///tmp/bullseye-refusals", rank=0, world_size=1)
placed = torch.full((4,), 2.0, device=torch_gcu.gcu_device(0))
dist.all_reduce(placed)
model = torch.nn.Linear(2, 2)
out = {"placed": placed.tolist()}
for name, call in (("host", lambda: dist.all_reduce(torch.ones(4))),
                   ("host_ddp", lambda: torch_gcu.nn.parallel.DistributedDataParallel(model)),
                   ("ordinal", lambda: torch.ones(2, device=torch_gcu.gcu_device(2)))):
    try:
        call()
        out[name] = "accepted"
    except RuntimeError as exc:
        out[name] = str(exc)
model.to(torch_gcu.gcu_device(0))
torch_gcu.nn.parallel.DistributedDataParallel(model)
out["placed_ddp"] = "accepted"
print(json.dumps(out))
"""


def test_the_1x_stand_in_refuses_what_a_t20_refuses(host):
    code = base64.b64encode(REFUSALS.encode()).decode()
    host.run("rm -f /tmp/bullseye-refusals")
    out = json.loads(host.check_output(
        "%s -c \"import base64; exec(base64.b64decode('%s'))\" 2>/dev/null | tail -n 1" % (TRAIN_PY, code)))
    assert out["placed"] == [2.0] * 4
    assert "allreduce on a tensor in host memory" in out["host"]
    assert "DistributedDataParallel over 2 parameter(s) in host memory" in out["host_ddp"]
    assert "invalid device ordinal 2: 2 GCU(s) visible" in out["ordinal"]
    assert out["placed_ddp"] == "accepted"


def test_launchers_refuse_a_torch_without_torchrun(host):
    """dist_launch renders on the node, and its launcher stops with exit 72 before starting anything:
    torch 1.7 has no torch.distributed.run (torchrun is torch 1.10 or newer)."""
    runner = host.backend.ansible_runner
    proc = subprocess.run(
        ["ansible-playbook", "-i", runner.inventory_file, os.path.join(os.path.dirname(__file__), "..", "launch.yml")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout.decode()[-4000:]
    host.run("echo 'print(1)' > /tmp/train.py")
    result = host.run("/opt/topsrider/launch/launch-single.sh /tmp/train.py")
    assert result.rc == 72, result.stderr
    assert ("/opt/venvs/train/bin/python cannot import torch.distributed.run, the launcher (torchrun, "
            "torch 1.10 or newer): ModuleNotFoundError: No module named 'torch.distributed.run'") in result.stderr
    assert result.stdout == ""
