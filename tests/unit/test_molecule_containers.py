# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""molecule/_shared/containers.py, every scenario's create and destroy: the
`docker run` it makes of each platform as molecule's docker create.yml would,
every platform of every scenario makeable, an unknown key refused before any
container is made, and what it prints for the playbooks' change reports
(against a stand-in docker on PATH that records its calls)."""
import glob
import json
import os
import stat
import subprocess
import sys

import pytest
import yaml

from conftest import TOP, load_script

SCRIPT = os.path.join(TOP, "molecule", "_shared", "containers.py")
containers = load_script("molecule/_shared/containers.py", "molecule_containers")


def platforms():
    """(scenario, platform) for every platform: the scenario's, or the shared config's."""
    with open(os.path.join(TOP, ".config", "molecule", "config.yml")) as f:
        shared = yaml.safe_load(f)["platforms"]
    found = []
    for path in sorted(glob.glob(os.path.join(TOP, "molecule", "*", "molecule.yml"))):
        with open(path) as f:
            scenario = yaml.safe_load(f)
        name = os.path.basename(os.path.dirname(path))
        found += [(name, p) for p in scenario.get("platforms", shared)]
    return found


@pytest.mark.parametrize("step", ["create", "destroy"])
def test_a_scenarios_own_create_or_destroy_is_named_in_its_molecule_yml(step):
    """The shared config names the shared create and destroy for every scenario, so molecule no
    longer finds a scenario's own destroy.yml by its name: one that is not named in its
    molecule.yml would never run (metrics' destroy stops the Prometheus its prepare started)."""
    with open(os.path.join(TOP, ".config", "molecule", "config.yml")) as f:
        assert yaml.safe_load(f)["provisioner"]["playbooks"][step] == "../_shared/%s.yml" % step
    for path in sorted(glob.glob(os.path.join(TOP, "molecule", "*", step + ".yml"))):
        scenario = os.path.dirname(path)
        if os.path.basename(scenario) == "_shared":
            continue
        with open(os.path.join(scenario, "molecule.yml")) as f:
            named = ((yaml.safe_load(f).get("provisioner") or {}).get("playbooks") or {}).get(step)
        assert named == step + ".yml", "%s is never run: its molecule.yml does not name it" % os.path.relpath(path, TOP)


def test_a_node_platform_is_run_as_molecule_would_make_it():
    platform = {"name": "topsrider-default-node1", "image": "topsrider-sim/node:latest", "pre_build_image": True,
                "pull": False, "network_mode": "host", "override_command": False,
                "tmpfs": ["/sys/bus/pci/devices:rw,mode=755", "/sys/module:rw,mode=755"], "shm_size": "256m",
                "groups": ["t20"], "etc_hosts": {"slurm-node2": "127.0.0.1", "slurm-node1": "127.0.0.1"},
                "env": {"SIM_CARDS": "1"}}
    assert containers.run_argv(platform) == [
        "docker", "run", "--detach", "--name", "topsrider-default-node1", "--log-driver", "json-file",
        "--hostname", "topsrider-default-node1", "--pull", "never", "--label", "owner=molecule",
        "--env", "SIM_CARDS=1",
        "--add-host", "slurm-node1:127.0.0.1", "--add-host", "slurm-node2:127.0.0.1",
        "--network", "host", "--shm-size", "256m",
        "--tmpfs", "/sys/bus/pci/devices:rw,mode=755", "--tmpfs", "/sys/module:rw,mode=755",
        "topsrider-sim/node:latest"]


def test_a_systemd_platform_gets_its_capabilities_cgroups_and_stop_signal():
    platform = {"name": "m1", "image": "topsrider-sim/node-systemd:latest", "pre_build_image": True,
                "override_command": False, "capabilities": ["SYS_ADMIN"],
                "security_opts": ["seccomp=unconfined", "apparmor=unconfined"], "cgroupns_mode": "host",
                "volumes": ["/sys/fs/cgroup:/sys/fs/cgroup:rw"], "stop_signal": "SIGRTMIN+3"}
    argv = containers.run_argv(platform)
    assert argv[argv.index("--cap-add") + 1] == "SYS_ADMIN"
    assert argv.count("--security-opt") == 2 and "apparmor=unconfined" in argv
    assert argv[argv.index("--cgroupns") + 1] == "host"
    assert argv[argv.index("--volume") + 1] == "/sys/fs/cgroup:/sys/fs/cgroup:rw"
    assert argv[argv.index("--stop-signal") + 1] == "SIGRTMIN+3"
    assert "--pull" not in argv and argv[-1] == "topsrider-sim/node-systemd:latest"


def test_without_override_command_false_the_container_is_kept_up_as_molecule_does():
    argv = containers.run_argv({"name": "n", "image": "img", "pre_build_image": True})
    assert argv[-4:] == ["img", "bash", "-c", "while true; do sleep 10000; done"]
    argv = containers.run_argv({"name": "n", "image": "img", "pre_build_image": True, "command": "sleep 5"})
    assert argv[-4:] == ["img", "bash", "-c", "sleep 5"]


@pytest.mark.parametrize("scenario, platform", platforms(), ids=lambda v: v if isinstance(v, str) else v["name"])
def test_every_platform_of_every_scenario_is_makeable(scenario, platform):
    argv = containers.run_argv(platform)
    assert argv[:5] == ["docker", "run", "--detach", "--name", platform["name"]], scenario
    assert platform["image"] in argv


@pytest.mark.parametrize("platform, words", [
    ({"name": "n", "image": "i", "pre_build_image": True, "devices": ["/dev/fuse"]}, "does not know the key 'devices'"),
    ({"name": "n", "image": "i"}, "only pre-built images"),
])
def test_what_it_cannot_make_is_named(platform, words):
    with pytest.raises(ValueError, match=words):
        containers.run_argv(platform)


@pytest.fixture
def docker(tmp_path, monkeypatch):
    """A stand-in docker on PATH: `inspect` answers from STATES (name -> true/false, absent: no such
    container), every call is logged."""
    log, states = tmp_path / "calls", tmp_path / "states.json"
    fake = tmp_path / "bin" / "docker"
    fake.parent.mkdir()
    fake.write_text(u"""#!/bin/sh
echo "$*" >> %s
if [ "$1 $2" = "container inspect" ]; then
  exec %s -c 'import json, sys; s = json.load(open(sys.argv[1])); n = sys.argv[2]
if n not in s: sys.exit(1)
print("true" if s[n] else "false")' %s "$5"
fi
""" % (log, sys.executable, states))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", "%s:%s" % (fake.parent, os.environ["PATH"]))

    def run(states_now, *args):
        states.write_text(json.dumps(states_now))
        if log.exists():
            log.unlink()
        proc = subprocess.run([sys.executable, SCRIPT] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, check=False)
        calls = log.read_text().splitlines() if log.exists() else []
        return proc, [c for c in calls if not c.startswith("container inspect")]
    return run


NODES = [{"name": "a", "image": "img", "pre_build_image": True, "override_command": False},
         {"name": "b", "image": "img", "pre_build_image": True, "override_command": False},
         {"name": "c", "image": "img", "pre_build_image": True, "override_command": False}]


def test_create_makes_what_is_absent_starts_what_is_stopped_and_leaves_what_runs(docker):
    proc, calls = docker({"b": False, "c": True}, "create", json.dumps(NODES))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["created a", "started b", "running c"]
    assert calls == [" ".join(containers.run_argv(NODES[0])[1:]), "start b"]


def test_a_platform_it_cannot_make_stops_create_before_any_container_is_made(docker):
    bad = NODES[:2] + [dict(NODES[2], devices=["/dev/fuse"])]
    proc, calls = docker({}, "create", json.dumps(bad))
    assert proc.returncode == 1 and calls == [] and proc.stdout == ""
    assert "platform c: molecule/_shared/containers.py does not know the key 'devices'" in proc.stderr


def test_destroy_removes_what_is_there_and_names_what_was_not(docker):
    proc, calls = docker({"a": True, "c": False}, "destroy", json.dumps(NODES))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["removed a", "absent b", "removed c"]
    assert calls == ["rm --force --volumes a", "rm --force --volumes c"]


def test_a_docker_that_fails_fails_the_step_and_says_so(docker, tmp_path):
    proc, _calls = docker({}, "destroy", json.dumps(NODES), "extra")
    assert proc.returncode == 2 and "containers.py create|destroy PLATFORMS_JSON" in proc.stderr
    (tmp_path / "bin" / "docker").write_text(u"#!/bin/sh\n[ \"$1\" = container ] && exit 1\nexit 125\n")
    proc, _calls = docker({}, "create", json.dumps(NODES[:1]))
    assert proc.returncode == 1 and "containers.py create: Command '['docker', 'run'" in proc.stderr
