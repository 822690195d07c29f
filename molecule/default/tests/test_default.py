"""Real state on the simulated node after deploy.yml (2.5.136, from the vendor's .run)."""
import glob
import hashlib
import json
import os

import pytest

TOP = os.environ["MOLECULE_PROJECT_DIRECTORY"]
RUN = os.path.join(TOP, ".cache", "bundles", "TopsRider_t2x_2.5.136_deb_amd64.run")
with open(RUN, "rb") as f:
    RUN_SHA256 = hashlib.sha256(f.read()).hexdigest()
# The controller's extraction cache (topsrider_bundle_cache): one directory, named by the .run's sha256.
(BUNDLE,) = glob.glob(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "runs", "*", "manifest.json"))
BUNDLE = os.path.dirname(BUNDLE)
with open(os.path.join(BUNDLE, "manifest.json"), "rb") as f:
    RAW = f.read()
MANIFEST = json.loads(RAW)
MANIFEST_SHA256 = hashlib.sha256(RAW).hexdigest()
STAGED = "/var/cache/topsrider/" + MANIFEST["version"]
DEBS = [e for e in MANIFEST["files"] if e["type"] == "deb"]
WHEEL = [e for e in MANIFEST["files"] if e["type"] == "wheel" and e["python"] == "3.11"][0]
TRAIN_PY = "/opt/venvs/train/bin/python"


def test_the_release_came_from_the_run_extracted_once():
    assert os.path.basename(BUNDLE) == RUN_SHA256
    assert MANIFEST["version"] == "2.5.136"
    assert MANIFEST["origin"]["file"] == os.path.basename(RUN)
    assert MANIFEST["origin"]["sha256"] == RUN_SHA256
    # The same debs and wheels as the sample release directory the .run was built from.
    with open(os.path.join(TOP, ".cache", "bundles", "2.5.136", "manifest.json")) as f:
        directory = json.load(f)
    assert sorted((e["file"], e["sha256"]) for e in MANIFEST["files"]) == \
        sorted((e["file"], e["sha256"]) for e in directory["files"])


def test_node_is_the_simulator(host):
    state = json.loads(host.file("/etc/topsrider-sim/state.json").content_string)
    assert "SIMULATED" in state["simulator"]


@pytest.mark.parametrize("path", ["/var/cache/topsrider", STAGED, "/var/lib/topsrider"])
def test_state_directories_are_root_only(host, path):
    d = host.file(path)
    assert d.is_directory
    assert (d.user, d.group, d.mode) == ("root", "root", 0o700)


@pytest.mark.parametrize("entry", MANIFEST["files"], ids=lambda e: e["file"])
def test_every_file_is_staged_intact(host, entry):
    f = host.file(STAGED + "/" + entry["file"])
    assert (f.user, f.mode) == ("root", 0o600)
    assert f.sha256sum == entry["sha256"]


@pytest.mark.parametrize("deb", DEBS, ids=lambda e: e["package"])
def test_packages_installed_and_held(host, deb):
    out = host.check_output("dpkg-query -W -f '${Version} ${Status}' %s", deb["package"])
    assert out == deb["version"] + " hold ok installed"


def test_loader_finds_libeccl(host):
    conf = host.file("/etc/ld.so.conf.d/topsrider.conf")
    assert (conf.user, conf.group, conf.mode) == ("root", "root", 0o644)
    assert "/usr/local/tops/lib" in conf.content_string.splitlines()
    assert "/usr/local/tops/lib/libeccl.so" in host.check_output("ldconfig -p")


def test_environment_file(host):
    env = host.file("/etc/profile.d/topsrider.sh")
    assert (env.user, env.group, env.mode) == ("root", "root", 0o644)
    text = env.content_string
    assert "ENFLAME_VISIBLE_DEVICES=" in text
    assert "LD_LIBRARY_PATH" not in text
    # A login shell gets the variables, and the file is valid sh.
    assert host.run("sh -n /etc/profile.d/topsrider.sh").rc == 0
    assert host.check_output("sh -c '. /etc/profile.d/topsrider.sh; echo $ENFLAME_VISIBLE_DEVICES'") == "all"


def test_no_bashrc_edited(host):
    assert "topsrider" not in host.file("/root/.bashrc").content_string.lower()


def test_wheel_in_the_training_venv_and_torch_untouched(host):
    show = host.check_output(TRAIN_PY + " -m pip show torch_gcu").splitlines()
    assert "Version: " + WHEEL["version"] in show
    freeze = host.check_output(TRAIN_PY + " -m pip freeze").splitlines()
    assert any(line.startswith("torch==2.13.0") for line in freeze)
    assert host.run(TRAIN_PY + " -c 'import torch_gcu'").rc == 0
    # Not in the system Python.
    assert host.run("/usr/bin/python3 -c 'import torch_gcu'").rc != 0


def test_local_facts(host):
    fact = json.loads(host.file("/etc/ansible/facts.d/topsrider.fact").content_string)
    assert fact["version"] == MANIFEST["version"]
    assert fact["manifest_sha256"] == MANIFEST_SHA256
    assert fact["previous_version"] is None
    assert fact["python"] == TRAIN_PY
    snap = host.file("/var/lib/topsrider/deploys/%s.json" % fact["snapshot"])
    assert (snap.user, snap.mode) == ("root", 0o600)
    data = json.loads(snap.content_string)
    # Before the first deploy there was nothing: rollback returns to that.
    assert data["from_version"] is None
    assert all(v is None for v in data["files"].values())
    assert data["torch_gcu"]["before"] is None
