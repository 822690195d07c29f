# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""make readme-test: the README's examples, run verbatim against simulated nodes.

Why a script and not a molecule scenario: the playbook examples are shell
lines (`ansible-playbook -i inventory.yml gcu.topsrider.deploy -l t20 ...`)
that an operator runs from a directory of their own, over SSH, with the
README's ansible.cfg (host keys checked) and the inventory each command names
(-i inventory.yml). A molecule scenario would run its own inventory over the
docker connection with its own group_vars, the very place where a variable
the README does not set can creep in. Here the README's text runs with bash,
from that directory (.cache/readme/work: at first only the fleet's inventory
as inventory.yml; the README's blocks write its ansible.cfg and link its
scripts), with the collection where the README's checkout install puts it
(~/.ansible/collections of the reader's HOME), and nothing is added to it:
no -e, no -i. The reader's HOME holds the nodes' host
keys in ~/.ssh/known_hosts, as an operator's does before the first run
(ssh-keyscan of the fleet's SSH ports here); since ssh reads ~/.ssh from the
passwd home and not $HOME, ANSIBLE_SSH_COMMON_ARGS names that file (host keys
are still checked), and this machine's own /root/.ssh is left alone.

The world the examples assume, and only that, is prepared here: a simulated
fleet of two nodes of 2 cards (CARDS: every rank of the job and of the
collective imports torch, and nothing in the README depends on the count) in
group t20 named t20-node-1 and t20-node-3 (the rollback example names
t20-node-3) over SSH (sim/fleet with its own
prefix, ports and state), the release at /srv/topsrider/2.5.140 on the
controller (a copy of the sample bundle) and node_exporter's textfile
directory (topsrider_textfile_dir's default, as Debian's
prometheus-node-exporter makes it), the training environment
/opt/conda/envs/train on the nodes (a link to the image's venv
/opt/venvs/train), the release the fleet ran before (2.5.136, deployed with id
20261122T035011Z, the snapshot the second rollback line names) and a training
job (started with the dist_launch role's launcher) while the launch check
runs. The world is prepared with the checkout's own ansible.cfg and
playbooks, never with the README's. Every README block has a marker saying how it
runs or why it cannot (tests/readme/readme_blocks.py); the markers are
checked by the unit tests and again here.

Usage: tests/readme/run.py [--keep]   (--keep leaves the fleet up)
"""
import argparse
import filecmp
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import readme_blocks  # noqa: E402  pylint: disable=wrong-import-position

BASE = os.path.join(TOP, ".cache", "readme")
WORK = os.path.join(BASE, "work")
HOME = os.path.join(BASE, "home")  # the reader's HOME: ~/.ssh/known_hosts with the nodes' keys
LOGS = os.path.join(BASE, "logs")
CARDS = 2
FLEET_ENV = {"SIM_NAME_PREFIX": "topsrider-readme", "SIM_SSH_BASE_PORT": "22600",
             "SIM_STATE_DIR": os.path.join(BASE, "fleet"), "SIM_CARDS": str(CARDS)}
# inventory name -> container (the fleet's nodes 1 and 2)
NODES = {"t20-node-1": "topsrider-readme-1", "t20-node-3": "topsrider-readme-2"}
RELEASE = "/srv/topsrider/2.5.140"
INSTALLER = "/srv/topsrider/TopsRider_t2x_2.5.140_deb_amd64.run"  # the vendor's .run, as the README names it
CONDA_ENV = "/opt/conda/envs/train"
EARLIER_DEPLOY_ID = "20261122T035011Z"
FACTS = "/etc/ansible/facts.d/topsrider.fact"
JOB_DIR = "/tmp/readme-test-job"
# node_exporter's textfile directory: topsrider_textfile_dir's default, where the drift example's textfile goes.
TEXTFILE_DIR = "/var/lib/prometheus/node-exporter"


class Failed(Exception):
    pass


def log(msg):
    print("readme-test: %s" % msg, flush=True)


def clean_env():
    """The reader's shell after `source .venv/bin/activate`: no ANSIBLE_* or
    MOLECULE_* settings from make, so ansible.cfg in the work directory rules."""
    env = dict((k, v) for k, v in os.environ.items()
               if not k.startswith(("ANSIBLE_", "MOLECULE_")))
    env["PATH"] = os.path.join(TOP, ".venv", "bin") + os.pathsep + env.get("PATH", "")
    env["VIRTUAL_ENV"] = os.path.join(TOP, ".venv")
    env["ANSIBLE_NOCOLOR"] = "1"
    env["HOME"] = HOME
    # ssh reads ~/.ssh from the passwd entry's home, not $HOME: point it at the reader's
    # known_hosts (host keys are still checked: StrictHostKeyChecking stays ssh's default).
    env["ANSIBLE_SSH_COMMON_ARGS"] = "-o UserKnownHostsFile=%s" % os.path.join(HOME, ".ssh", "known_hosts")
    return env


def run(argv, name, cwd=WORK, env=None, timeout=600, input_text=None):
    """Run a command, keep its output in logs/<name>.log; (rc, output, seconds)."""
    start = time.time()
    env = dict(env or clean_env(), PWD=cwd)  # what a shell in cwd has (the playbooks' ./reports)
    proc = subprocess.run(argv, cwd=cwd, env=env, input=input_text, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=timeout, check=False)
    took = time.time() - start
    with open(os.path.join(LOGS, name + ".log"), "w") as f:
        f.write("$ %s\n%s\nrc=%d after %.1fs\n" % (" ".join(argv), proc.stdout, proc.returncode, took))
    return proc.returncode, proc.stdout, took


def must(rc, out, what):
    if rc != 0:
        raise Failed("%s failed (rc %d):\n%s" % (what, rc, "\n".join(out.splitlines()[-60:])))


def check(cond, what, detail=""):
    if not cond:
        raise Failed("%s%s" % (what, (": " + str(detail)) if detail else ""))


def dexec(node, script, timeout=300):
    proc = subprocess.run(["docker", "exec", NODES[node], "bash", "-c", script], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=timeout, check=False)
    return proc.returncode, proc.stdout


def node_facts(node):
    rc, out = dexec(node, "cat %s" % FACTS)
    return json.loads(out) if rc == 0 else None


def package_version(node, package):
    rc, out = dexec(node, "dpkg-query -W -f='${Version}' %s 2>/dev/null" % package)
    return out.strip() if rc == 0 else None


# ---------------------------------------------------------------- the world
def fleet(*args):
    env = dict(os.environ, **FLEET_ENV)
    proc = subprocess.run([os.path.join(TOP, "sim", "fleet")] + list(args), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=300, check=False)
    if proc.returncode != 0:
        raise Failed("sim/fleet %s: %s" % (" ".join(args), proc.stdout))


def trust_host_keys(inventory):
    """The nodes' host keys in the reader's ~/.ssh/known_hosts (ssh-keyscan of every ansible_port of
    the inventory, all on 127.0.0.1), so the root ansible.cfg's host-key checking passes as it would
    for an operator who has added the nodes; no key, no run."""
    ports = re.findall(r"ansible_port: (\d+)", inventory)
    check(ports, "the fleet's inventory names no ansible_port", inventory)
    ssh_dir = os.path.join(HOME, ".ssh")
    shutil.rmtree(HOME, ignore_errors=True)
    os.makedirs(ssh_dir, mode=0o700)
    lines = []
    for port in ports:
        for attempt in range(30):
            proc = subprocess.run(["ssh-keyscan", "-p", port, "-T", "5", "127.0.0.1"], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, universal_newlines=True, timeout=60, check=False)
            if proc.stdout.strip():
                break
            time.sleep(1)
        check(proc.stdout.strip(), "no host key from the node at 127.0.0.1:%s" % port)
        lines.append(proc.stdout)
    with open(os.path.join(ssh_dir, "known_hosts"), "w") as f:
        f.write("".join(lines))


def prepare_world():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    # A fresh fleet of two nodes; t20-node-2 of sim/fleet's inventory becomes t20-node-3.
    fleet("down")
    fleet("up", "2")
    with open(os.path.join(FLEET_ENV["SIM_STATE_DIR"], "inventory.yml")) as f:
        inventory = f.read()
    check("        t20-node-2:\n" in inventory, "sim/fleet's inventory changed shape", inventory)
    inventory = inventory.replace("        t20-node-2:\n", "        t20-node-3:\n")
    with open(os.path.join(WORK, "inventory.yml"), "w") as f:
        f.write(inventory)
    trust_host_keys(inventory)

    # The release on the controller: a copy of the sample bundle, never over someone else's files.
    source = os.path.join(TOP, ".cache", "bundles", "2.5.140")
    made = os.path.join(BASE, "release-made-here")  # this test made RELEASE (a copy it may replace)
    if os.path.lexists(RELEASE):
        # The same names and the same bytes (the bundles are built reproducibly, so a copy made by
        # another checkout of this project, whose files have other times, is the same release).
        names = sorted(os.listdir(source))
        same = (os.path.isdir(RELEASE) and not os.path.islink(RELEASE) and sorted(os.listdir(RELEASE)) == names
                and filecmp.cmpfiles(source, RELEASE, names, shallow=False)[1:] == ([], []))
        check(same or os.path.exists(made),
              "%s exists and is not a copy of %s; move it away to run the README test" % (RELEASE, source))
        shutil.rmtree(RELEASE)
    os.makedirs(os.path.dirname(RELEASE), exist_ok=True)
    shutil.copytree(source, RELEASE)
    with open(made, "w") as f:
        f.write(RELEASE + "\n")

    # The vendor's installer beside it (the sample .run of the same release); never over someone else's file.
    source_run = os.path.join(TOP, ".cache", "bundles", os.path.basename(INSTALLER))
    if os.path.lexists(INSTALLER):
        check(os.path.isfile(INSTALLER) and not os.path.islink(INSTALLER)
              and filecmp.cmp(source_run, INSTALLER, shallow=False),
              "%s exists and is not a copy of %s; move it away to run the README test" % (INSTALLER, source_run))
    else:
        shutil.copyfile(source_run, INSTALLER)

    # The drift example writes its textfile into node_exporter's textfile directory: the directory exists.
    os.makedirs(TEXTFILE_DIR, exist_ok=True)

    for node in NODES:
        # The training environment the examples name, as the image's venv.
        rc, out = dexec(node, "mkdir -p %s && ln -sfn /opt/venvs/train %s && %s/bin/python -c 'import torch'" % (
            os.path.dirname(CONDA_ENV), CONDA_ENV, CONDA_ENV))
        must(rc, out, "the training environment %s on %s" % (CONDA_ENV, node))

    # What the fleet ran before: 2.5.136, deployed as 20261122T035011Z (the snapshot rollback's second line names).
    rc, out, took = run(["ansible-playbook", "-i", "inventory.yml", os.path.join(TOP, "playbooks", "deploy.yml"),
                         "-l", "t20",
                         "-e", "topsrider_bundle_dir=%s" % os.path.join(TOP, ".cache", "bundles", "2.5.136"),
                         "-e", "topsrider_python=%s/bin/python" % CONDA_ENV,
                         "-e", "topsrider_deploy_id=%s" % EARLIER_DEPLOY_ID,
                         "-e", "topsrider_reports_dir=%s" % os.path.join(BASE, "world-reports")],
                        "world-deploy-2.5.136", env=world_env())
    must(rc, out, "deploying 2.5.136 as %s (the world's earlier release)" % EARLIER_DEPLOY_ID)

    # The launcher the training job of the launch check runs (the dist_launch role, docs/launch.md).
    play = os.path.join(BASE, "world-launchers.yml")
    with open(play, "w") as f:
        f.write("- hosts: t20\n  roles:\n    - role: gcu.topsrider.dist_launch\n"
                "      dist_launch_python: %s/bin/python\n      dist_launch_output_dir: %s\n"
                % (CONDA_ENV, os.path.join(BASE, "world-reports", "launch")))
    must(*run(["ansible-playbook", "-i", "inventory.yml", play], "world-launchers", env=world_env())[:2],
         what="the dist_launch role (the training job's launcher)")
    log("world ready: 2 nodes at 2.5.136 (%.0fs for that deploy), launchers installed" % took)


def world_env():
    """The world is prepared with the checkout's ansible.cfg (its collections path, host keys checked),
    never with the README's, which the README's own block writes later."""
    return dict(clean_env(), ANSIBLE_CONFIG=os.path.join(TOP, "ansible.cfg"))


# ---------------------------------------------------------------- running blocks
class Runner(object):
    def __init__(self, blocks):
        self.blocks = blocks
        self.ran = []
        self.timings = []

    def block(self, block_id):
        check(block_id in self.blocks, "README has no block marked id=%s" % block_id)
        return self.blocks[block_id]

    def _done(self, name, rc, out, took):
        self.timings.append((name, took))
        must(rc, out, "README block %s" % name)
        log("%-28s ok  %5.1fs" % (name, took))
        return out

    def controller(self, block_id, line=None, cwd=WORK):
        """A sh block (or one of its logical lines), unchanged, with bash from the work directory
        (or from `cwd`: the checkout, for the block the README runs in a checkout)."""
        b = self.block(block_id)
        check(b.kind == "controller", "block %s is marked %s" % (block_id, b.kind))
        script = b.script() if line is None else b.commands()[line - 1] + "\n"
        if line is None or line == 1:
            self.ran.append(block_id)
        name = block_id if line is None else "%s:%d" % (block_id, line)
        return self._done(name, *run(["bash", "-euo", "pipefail", "-c", script], name, cwd=cwd))

    def file(self, block_id):
        """A file block: written, unchanged, to the work directory under the name its first line gives."""
        b = self.block(block_id)
        check(b.kind == "file", "block %s is marked %s" % (block_id, b.kind))
        name = readme_blocks.file_name(b)
        check(name, "file block %s names no file" % block_id, b.text.splitlines()[:1])
        with open(os.path.join(WORK, name), "w") as f:
            f.write(b.text)
        self.ran.append(block_id)
        log("%-28s ok  (wrote %s)" % (block_id, name))

    def node(self, block_id, node):
        b = self.block(block_id)
        check(b.kind == "node", "block %s is marked %s" % (block_id, b.kind))
        self.ran.append(block_id)
        return self._done("%s@%s" % (block_id, node), *run(
            ["docker", "exec", "-i", NODES[node], "bash", "-euo", "pipefail", "-s"], block_id, input_text=b.script()))

    def play(self, block_id):
        """A playbook block: written to the file its first comment names, run with ansible-playbook."""
        b = self.block(block_id)
        check(b.kind == "play", "block %s is marked %s" % (block_id, b.kind))
        first = b.text.splitlines()[0]
        check(first.startswith("# ") and first.endswith(".yml"), "play block %s names no file" % block_id, first)
        name = first[2:].strip()
        with open(os.path.join(WORK, name), "w") as f:
            f.write(b.text)
        self.ran.append(block_id)
        return self._done(block_id, *run(["ansible-playbook", "-i", "inventory.yml", name], block_id))

    def tasks(self, block_id, hosts, play_vars=None):
        """A block of tasks, text unchanged (indented), as the tasks of a play against `hosts`."""
        b = self.block(block_id)
        check(b.kind == "tasks", "block %s is marked %s" % (block_id, b.kind))
        header = ["---", "# README block %s (README.md line %d), as the tasks of a play" % (block_id, b.line),
                  "- name: README example %s" % block_id, "  hosts: %s" % hosts, "  gather_facts: false"]
        if play_vars:
            header.append("  vars: %s" % json.dumps(play_vars))
        header.append("  tasks:")
        body = "\n".join(("    " + line) if line.strip() else "" for line in b.text.splitlines())
        path = os.path.join(WORK, "readme-%s.yml" % block_id)
        with open(path, "w") as f:
            f.write("\n".join(header) + "\n" + body + "\n")
        self.ran.append(block_id)
        return self._done(block_id, *run(["ansible-playbook", "-i", "inventory.yml", os.path.basename(path)], block_id))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_jobs():
    """A training job on every node (the launcher and ddp_smoke.py the role installed, held for a while),
    and the simulator told its cards are busy, as hardware would report."""
    for node in NODES:
        # The nodes share the host's network: each job gets its own free rendezvous port.
        inner = ("rm -rf {d} && mkdir -p {d}/results && echo $$ > {d}/pgid && MASTER_PORT={port} "
                 "timeout 300 /opt/topsrider/launch/launch-single.sh /opt/topsrider/launch/ddp_smoke.py "
                 "--steps 1 --hold 240 --result-dir {d}/results > {d}/log 2>&1").format(d=JOB_DIR, port=free_port())
        subprocess.run(["docker", "exec", "-d", NODES[node], "setsid", "bash", "-c", inner], check=True, timeout=30)
    deadline = time.time() + 240
    for node in NODES:
        while True:
            rc, out = dexec(node, "ls %s/results 2>/dev/null | wc -l" % JOB_DIR)
            if rc == 0 and int(out.strip() or 0) >= CARDS:
                break
            if time.time() > deadline:
                raise Failed("the training job on %s did not start %d ranks: %s"
                             % (node, CARDS, dexec(node, "cat %s/log" % JOB_DIR)[1]))
            time.sleep(3)
        must(*dexec(node, "simctl busy all --util 85"), what="simctl busy on %s" % node)


def stop_jobs():
    """End each job as Slurm's scancel would: every process of its session (setsid made the shell
    the session's leader; timeout(1) puts the launcher in a process group of its own, so a kill of
    the shell's group alone leaves the ranks holding their cards), then wait until no card is held,
    since the rollback that follows leaves a busy node alone."""
    for node in NODES:
        dexec(node, "sid=$(cat %s/pgid 2>/dev/null) && pkill -TERM -s $sid; sleep 2; "
                    "pkill -KILL -s $sid; simctl busy none; true" % JOB_DIR)
    deadline = time.time() + 60
    for node in NODES:
        while True:
            rc, out = dexec(node, "ls -l /proc/[0-9]*/fd 2>/dev/null | grep -c ' -> /dev/gcu[0-9]'")
            if out.strip() == "0":
                break
            if time.time() > deadline:
                raise Failed("the training job on %s still holds cards after it was stopped: %s" % (node, out))
            time.sleep(1)


# ---------------------------------------------------------------- the plan
def plan(r):
    # Install from the checkout (the collection in the reader's ~/.ansible/collections), the README's
    # ansible.cfg, the link to the tools and a first look at the fleet.
    r.controller("checkout", cwd=TOP)
    r.file("ansible_cfg")
    out = r.controller("workdir")
    for node in NODES:
        check(re.search(r"(?m)^%s +ok +Debian " % node, out), "fleet_info printed no line for %s" % node, out[-2000:])

    r.controller("manifest")

    # deploy: the check line first changes nothing, then the deploy upgrades both nodes.
    r.controller("deploy", 1)
    for node in NODES:
        check(node_facts(node)["version"] == "2.5.136", "deploy --check changed %s" % node, node_facts(node))
        check(package_version(node, "tops-eccl") == "2.5.136-1", "deploy --check changed packages on %s" % node)
    r.controller("deploy", 2)
    for node in NODES:
        facts = node_facts(node)
        check(facts["version"] == "2.5.140" and facts["python"] == CONDA_ENV + "/bin/python",
              "after the README deploy, %s's local facts" % node, facts)
        check(package_version(node, "tops-eccl") == "2.5.140-1", "tops-eccl on %s" % node)

    textfile = os.path.join(TEXTFILE_DIR, "topsrider_drift.prom")
    if os.path.lexists(textfile):
        os.remove(textfile)
    r.controller("drift")
    with open("/var/lib/topsrider-drift/reports/drift-latest.json") as f:
        drift = json.load(f)
    check(drift["exit_code"] == 0 and drift["status"] == "clean", "drift after the deploy",
          {k: drift.get(k) for k in ("status", "exit_code", "summary")})
    # with no topsrider_drift_textfile, the textfile is in the default directory
    check(os.path.isfile(textfile), "the drift example wrote no %s" % textfile)
    with open(textfile) as f:
        metrics = f.read()
    for node in NODES:
        check(re.search(r'^topsrider_drift_healthy\{node="%s"\} 1$' % re.escape(node), metrics, re.M),
              "%s does not say %s is healthy" % (textfile, node), metrics[-2000:])

    r.controller("verify", 1)
    r.controller("verify", 2)

    # While a job runs (the launcher the world installed): the launch check.
    try:
        start_jobs()
        r.controller("launch_check")
    finally:
        stop_jobs()

    # rollback: the first line takes both nodes back to 2.5.136, the second node 3 to before 2.5.136.
    r.controller("rollback", 1)
    for node in NODES:
        check(node_facts(node)["version"] == "2.5.136", "after rollback.yml -l t20, %s" % node, node_facts(node))
        check(package_version(node, "tops-eccl") == "2.5.136-1", "tops-eccl on %s after the rollback" % node)
    r.controller("rollback", 2)
    check(node_facts("t20-node-3") is None and package_version("t20-node-3", "tops-eccl") in (None, ""),
          "t20-node-3 after the rollback to %s still has a release" % EARLIER_DEPLOY_ID, node_facts("t20-node-3"))
    check(node_facts("t20-node-1")["version"] == "2.5.136", "the -l t20-node-3 rollback touched t20-node-1")

    # The vendor's .run as it ships: both nodes to 2.5.140, the manifest's origin names the installer;
    # the same line again extracts nothing and changes nothing.
    out = r.controller("deploy_run")
    for node in NODES:
        facts = node_facts(node)
        check(facts["version"] == "2.5.140", "after the README deploy from the .run, %s's local facts" % node, facts)
        check(package_version(node, "tops-eccl") == "2.5.140-1", "tops-eccl on %s after the .run deploy" % node)
    cache = os.path.join(HOME, ".cache", "topsrider", "runs")
    extracted = [d for d in os.listdir(cache) if os.path.isfile(os.path.join(cache, d, "manifest.json"))]
    check(len(extracted) == 1, "one extracted release in the reader's cache", extracted)
    with open(os.path.join(cache, extracted[0], "manifest.json")) as f:
        origin = json.load(f)["origin"]
    check(origin["file"] == os.path.basename(INSTALLER), "the manifest's origin", origin)
    out = r.controller("deploy_run")
    recap = [line for line in out.splitlines() if " : ok=" in line]
    check(recap and all(" changed=0 " in line for line in recap), "the second deploy from the .run changed something",
          "\n".join(recap))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="leave the fleet up")
    args = parser.parse_args()
    with open(os.path.join(TOP, "README.md")) as f:
        blocks = readme_blocks.parse(f.read())
    problems = readme_blocks.problems(blocks)
    if problems:
        print("readme-test: README markers:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    runnable = readme_blocks.runnable(blocks)
    os.makedirs(LOGS, exist_ok=True)
    start = time.time()
    r = Runner(runnable)
    try:
        prepare_world()
        plan(r)
        not_run = sorted(set(runnable) - set(r.ran))
        check(not not_run, "README blocks marked to run that the plan never ran", not_run)
    except (Failed, subprocess.TimeoutExpired, OSError, ValueError, KeyError, TypeError) as e:
        print("readme-test: FAILED: %s\n(logs in %s)" % (e, LOGS), file=sys.stderr)
        return 1
    finally:
        if not args.keep:
            fleet("down")
    log("every marked README block ran (%d blocks, %d runs) in %.0fs" % (
        len(runnable), len(r.timings), time.time() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
