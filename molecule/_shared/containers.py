# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Molecule's create and destroy for every scenario (molecule/_shared/create.yml
and destroy.yml, named in .config/molecule/config.yml): the platforms'
containers made with one `docker run` each and removed with one `docker rm`.

Molecule's own docker playbooks do the same with about ten tasks and an async
job per container (registry log-in, Dockerfile checks, image discovery), which
cost about 9 CPU-seconds to create and 6 to destroy on the 2-core machine
(each scenario destroys, creates, and destroys again); this is one task each.

    python3 containers.py create PLATFORMS_JSON LABELS_JSON
    python3 containers.py destroy PLATFORMS_JSON

PLATFORMS_JSON: molecule.yml's platforms (molecule_yml.platforms); LABELS_JSON:
the labels molecule gives its containers (owner: molecule). A platform key
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
IGNORED = {"name", "groups", "pre_build_image", "pull", "override_command", "image", "command"}


def _flags(key, value):
    if key == "network_mode":
        return ["--network", value]
    if key == "shm_size":
        return ["--shm-size", value]
    if key == "stop_signal":
        return ["--stop-signal", value]
    if key == "cgroupns_mode":
        return ["--cgroupns", value]
    if key == "privileged":
        return ["--privileged"] if value else []
    if key == "hostname":
        return ["--hostname", value]
    if key in ("tmpfs", "volumes", "capabilities", "security_opts"):
        flag = {"tmpfs": "--tmpfs", "volumes": "--volume", "capabilities": "--cap-add",
                "security_opts": "--security-opt"}[key]
        return [part for item in value for part in (flag, item)]
    if key == "etc_hosts":
        return [part for name in sorted(value) for part in ("--add-host", "%s:%s" % (name, value[name]))]
    if key == "env":
        return [part for name in sorted(value) for part in ("--env", "%s=%s" % (name, value[name]))]
    return None


def run_argv(platform, labels):
    """The `docker run` argv of one platform, as molecule's docker create.yml
    makes the container (hostname the name, json-file logs, its labels);
    ValueError names a key or a value this cannot make."""
    name = platform["name"]
    if not platform.get("pre_build_image"):
        raise ValueError("platform %s: only pre-built images (pre_build_image: true) are made here" % name)
    argv = ["docker", "run", "--detach", "--name", name, "--log-driver", "json-file"]
    if "hostname" not in platform:
        argv += ["--hostname", name]
    if platform.get("pull") is False:
        argv += ["--pull", "never"]
    for key in sorted(labels):
        argv += ["--label", "%s=%s" % (key, labels[key])]
    for key in sorted(platform):
        if key in IGNORED:
            continue
        flags = _flags(key, platform[key])
        if flags is None:
            raise ValueError("platform %s: molecule/_shared/containers.py does not know the key %r" % (name, key))
        argv += flags
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


def create(platforms, labels):
    argvs = [run_argv(p, labels) for p in platforms]  # every platform checked before any is made
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
    if argv[1:2] not in (["create"], ["destroy"]) or len(argv) != (4 if argv[1] == "create" else 3):
        sys.stderr.write(__doc__)
        return 2
    try:
        if argv[1] == "create":
            create(json.loads(argv[2]), json.loads(argv[3]))
        else:
            destroy(json.loads(argv[2]))
    except (ValueError, subprocess.CalledProcessError) as exc:
        sys.stderr.write("containers.py %s: %s\n" % (argv[1], exc))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
