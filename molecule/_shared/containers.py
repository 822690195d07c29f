# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Molecule's create and destroy for every scenario (molecule/_shared/create.yml
and destroy.yml, named in .config/molecule/config.yml): the platforms'
containers made with one `docker run` each and removed with one `docker rm`.

Molecule's own docker playbooks do the same with about ten tasks and an async
job per container (registry log-in, Dockerfile checks, image discovery), which
cost about 9 CPU-seconds to create and 6 to destroy on the 2-core machine
(each scenario destroys, creates, and destroys again); this is one task each.

    python3 containers.py create|destroy PLATFORMS_JSON

PLATFORMS_JSON: molecule.yml's platforms (molecule_yml.platforms). A platform key
this script does not know is refused before anything is made: a new key in a
molecule.yml must be added here, not dropped silently. Prints one line per
container ("created NAME", "started NAME", "running NAME", "removed NAME",
"absent NAME"); the playbooks report a change from them."""
import json
import subprocess
import sys

# What molecule's docker create does when a platform sets override_command
# (or leaves it out): a command that keeps the container up.
KEEP_UP = ["bash", "-c", "while true; do sleep 10000; done"]
# The label molecule's docker create gives its containers.
LABELS = {"owner": "molecule"}
# Platform keys that are not docker run flags (or are handled in run_argv).
NOT_FLAGS = {"name", "groups", "pre_build_image", "pull", "override_command", "image", "command"}
# key -> its flag: a value (SCALARS), each item of a list (LISTS), each NAME: VALUE of a mapping (MAPPINGS).
SCALARS = {"network_mode": "--network", "shm_size": "--shm-size", "stop_signal": "--stop-signal",
           "cgroupns_mode": "--cgroupns", "hostname": "--hostname"}
LISTS = {"tmpfs": "--tmpfs", "volumes": "--volume", "capabilities": "--cap-add", "security_opts": "--security-opt"}
MAPPINGS = {"etc_hosts": ("--add-host", ":"), "env": ("--env", "=")}


def _flags(name, key, value):
    if key in SCALARS:
        return [SCALARS[key], value]
    if key in LISTS:
        return [part for item in value for part in (LISTS[key], item)]
    if key in MAPPINGS:
        flag, sep = MAPPINGS[key]
        return [part for k in sorted(value) for part in (flag, "%s%s%s" % (k, sep, value[k]))]
    if key == "privileged":
        return ["--privileged"] if value else []
    raise ValueError("platform %s: molecule/_shared/containers.py does not know the key %r" % (name, key))


def run_argv(platform):
    """The `docker run` argv of one platform, as molecule's docker create.yml
    makes the container (hostname the name, json-file logs, its label);
    ValueError names a key or a value this cannot make."""
    name = platform["name"]
    if not platform.get("pre_build_image"):
        raise ValueError("platform %s: only pre-built images (pre_build_image: true) are made here" % name)
    argv = ["docker", "run", "--detach", "--name", name, "--log-driver", "json-file"]
    if "hostname" not in platform:
        argv += ["--hostname", name]
    if platform.get("pull") is False:
        argv += ["--pull", "never"]
    for key in sorted(LABELS):
        argv += ["--label", "%s=%s" % (key, LABELS[key])]
    for key in sorted(set(platform) - NOT_FLAGS):
        argv += _flags(name, key, platform[key])
    argv.append(platform["image"])
    if platform.get("override_command", True):
        command = platform.get("command")
        argv += ["bash", "-c", command] if command else KEEP_UP
    return argv


def _state(name):
    """'running', 'stopped' or None (no such container)."""
    proc = subprocess.run(["docker", "container", "inspect", "--format", "{{.State.Running}}", name],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True, check=False)
    if proc.returncode != 0:
        return None
    return "running" if proc.stdout.strip() == "true" else "stopped"


def create(platforms):
    argvs = [run_argv(p) for p in platforms]  # every platform checked before any is made
    for platform, argv in zip(platforms, argvs):
        name, state = platform["name"], _state(platform["name"])
        if state == "running":
            print("running %s" % name)
            continue
        if state == "stopped":
            subprocess.run(["docker", "start", name], check=True, stdout=subprocess.DEVNULL)
            print("started %s" % name)
            continue
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        print("created %s" % name)


def destroy(platforms):
    for platform in platforms:
        name = platform["name"]
        if _state(name) is None:
            print("absent %s" % name)
            continue
        subprocess.run(["docker", "rm", "--force", "--volumes", name], check=True, stdout=subprocess.DEVNULL)
        print("removed %s" % name)


def main(argv):
    steps = {"create": create, "destroy": destroy}
    if len(argv) != 3 or argv[1] not in steps:
        sys.stderr.write(__doc__)
        return 2
    try:
        steps[argv[1]](json.loads(argv[2]))
    except (ValueError, subprocess.CalledProcessError) as exc:
        sys.stderr.write("containers.py %s: %s\n" % (argv[1], exc))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
