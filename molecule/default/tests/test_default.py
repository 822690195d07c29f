"""Real state on the simulated node after converge."""
import json
import os

import pytest

TOP = os.environ["MOLECULE_PROJECT_DIRECTORY"]
BUNDLE = os.path.join(TOP, ".cache", "bundles", "2.5.136")
with open(os.path.join(BUNDLE, "manifest.json")) as f:
    MANIFEST = json.load(f)
STAGED = "/var/cache/topsrider/" + MANIFEST["version"]


def test_node_is_the_simulator(host):
    state = json.loads(host.file("/etc/topsrider-sim/state.json").content_string)
    assert "SIMULATED" in state["simulator"]
    assert host.run("efsmi").rc == 0


@pytest.mark.parametrize("path", ["/var/cache/topsrider", STAGED])
def test_cache_directories_are_root_only(host, path):
    d = host.file(path)
    assert d.is_directory
    assert (d.user, d.group, d.mode) == ("root", "root", 0o700)


@pytest.mark.parametrize("entry", MANIFEST["files"], ids=lambda e: e["file"])
def test_every_file_is_staged_intact(host, entry):
    f = host.file(STAGED + "/" + entry["file"])
    assert f.exists
    assert (f.user, f.mode) == ("root", 0o600)
    assert f.sha256sum == entry["sha256"]


def test_nothing_else_is_staged(host):
    names = set(host.file(STAGED).listdir())
    assert names == {e["file"] for e in MANIFEST["files"]} | {"manifest.json"}
