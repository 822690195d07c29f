# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""make installed-test: the collection as an operator installs and runs it.

The README's own install lines (its blocks marked `installed`, in order, run
verbatim by one bash in a copy of the checkout, with the PATH of a shell that
has no Ansible yet): a virtualenv at /opt/ansible made by python3 with
ansible-core and distlib from PyPI, then the tarball `ansible-galaxy collection
build` makes, installed with that venv's `ansible-galaxy collection install`
into the operator's default collections path (~/.ansible/collections of this
test's HOME). /opt/ansible is the README's path: the test makes it only where
there is none (or one a run of this test left) and removes it at the end.
The playbooks then run with make setup's pinned venv, from an empty
working directory that holds only the operator's inventory: no ansible.cfg of
the project, ANSIBLE_CONFIG and every other ANSIBLE_* variable unset, so
Ansible's stock callback and result format print what the operator reads.
The nodes are two simulated T20 nodes over SSH (sim/fleet with its own
prefix and ports), reached as root with their host keys checked against a
known_hosts file (ssh-keyscan of their ports, as an operator adds real
nodes; the inventory names the file because ssh reads ~/.ssh from the passwd
home, not $HOME).

The plan, each step by the playbook's FQCN from the installed copy:
  fleet_info            the fleet table, plain lines
  a failed deploy       2.5.140 with t20-node-2 on a bundle whose postinst fails:
                        exit 2, the report plain, the failed host's line fits a terminal
  a deploy              2.5.140 everywhere: exit 0, t20-node-2 repaired
  the nightly drift     contrib/cron/topsrider-drift's line from the installed copy,
                        run as cron runs it (env -i with cron's HOME, LOGNAME,
                        SHELL and PATH, and nothing else) with only the environment
                        file: clean exit 0 and no output (no mail); after an edit
                        on a node exit 3 and one line (mailed); with no
                        ansible-playbook where the file says, one line naming
                        it and topsrider_drift_run_ok 0 in the textfile.
Printed reports must be plain lines: no JSON escapes, no quoted strings.
Both deploys run with an audit hook on PYTHONPATH (trace/sitecustomize.py)
that notes every file of the installed collection they open: each must be in
the count of files a deploy loads (tests/unit/deploy_walk.py, the number
docs/architecture.md gives), so that count is never short of a real run's.

Usage: tests/installed/run.py [--keep]   (--keep leaves the fleet up)
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
VENV_BIN = os.path.join(TOP, ".venv", "bin")
BASE = os.path.join(TOP, ".cache", "installed")
WORK = os.path.join(BASE, "work")  # the operator's working directory: the inventory, nothing else
HOME = os.path.join(BASE, "home")  # the operator's HOME: ~/.ansible/collections, known_hosts
LOGS = os.path.join(BASE, "logs")
KNOWN_HOSTS = os.path.join(HOME, ".ssh", "known_hosts")
FLEET_ENV = {"SIM_NAME_PREFIX": "topsrider-installed", "SIM_SSH_BASE_PORT": "22700",
             "SIM_STATE_DIR": os.path.join(BASE, "fleet")}
NODES = {"t20-node-1": "topsrider-installed-1", "t20-node-2": "topsrider-installed-2"}
BUNDLES = os.path.join(TOP, ".cache", "bundles")
PYTHON = "/opt/venvs/train/bin/python"  # the training environment of the simulated nodes
INSTALLED = os.path.join(HOME, ".ansible", "collections", "ansible_collections", "gcu", "topsrider")
CRON_COLLECTION = "/usr/share/ansible/collections/ansible_collections/gcu/topsrider"  # the cron file's path
FACTS = "/etc/ansible/facts.d/topsrider.fact"
# Marks an /opt/ansible this test made (a run killed before its clean-up leaves one).
OPT_ANSIBLE_OURS = os.path.join(BASE, "opt-ansible-is-ours")
# What a printed report must not show: JSON's escapes and quoting of a string.
NOT_PLAIN = re.compile(r'\\n|\\"|"msg"|^\s*"|^\s*- "')


class Failed(Exception):
    pass


def deploy_walk():
    """tests/unit/deploy_walk.py: the count of a deploy's files, and what a traced run opened."""
    sys.path.insert(0, os.path.join(TOP, "tests", "unit"))
    import deploy_walk as walk  # pylint: disable=import-outside-toplevel
    return walk


def readme():
    sys.path.insert(0, os.path.join(TOP, "tests", "readme"))
    import readme_blocks  # pylint: disable=import-outside-toplevel
    with open(os.path.join(TOP, "README.md")) as f:
        blocks = readme_blocks.parse(f.read())
    problems = readme_blocks.problems(blocks)
    if problems:
        raise SystemExit("installed-test: README markers:\n  " + "\n  ".join(problems))
    return readme_blocks, blocks


readme_blocks, README = readme()


def readme_venv():
    """The virtualenv the README's install lines make (`python3 -m venv <dir>` in the block id=venv)."""
    (block,) = [b for b in README if b.id == "venv" and b.kind == "installed"]
    m = re.match(r"^python3 -m venv (/\S+)$", block.commands()[0])
    check(m, "the README's venv block starts with `python3 -m venv <absolute dir>`", block.text)
    return m.group(1)


def remove_readme_venv():
    venv = readme_venv()
    if os.path.exists(OPT_ANSIBLE_OURS):
        shutil.rmtree(venv, ignore_errors=True)
        os.unlink(OPT_ANSIBLE_OURS)


def readme_install(cwd):
    """The README's blocks marked `installed`, in their order, their text unchanged, as one bash script
    in `cwd` (the venv block's `export PATH` holds for the lines after it), as an operator whose shell
    has no Ansible yet: make setup's venv is not on PATH."""
    blocks = readme_blocks.runnable(README, kinds=("installed",))
    venv = readme_venv()
    remove_readme_venv()
    check(not os.path.lexists(venv), "%s exists and this test did not make it: the README's install lines "
          "write there; move it away to run the test" % venv)
    with open(OPT_ANSIBLE_OURS, "w") as f:
        f.write("made by tests/installed/run.py\n")
    script = "".join(b.script() for b in README if b.id in blocks)
    env = operator_env()
    env["PATH"] = os.pathsep.join(d for d in env["PATH"].split(os.pathsep)
                                  if os.path.realpath(d) != os.path.realpath(VENV_BIN))
    env.pop("VIRTUAL_ENV", None)
    return run(["bash", "-euo", "pipefail", "-c", script], "readme-" + "+".join(blocks), env=env, cwd=cwd)


def log(msg):
    print("installed-test: %s" % msg, flush=True)


def check(cond, what, detail=""):
    if not cond:
        raise Failed("%s%s" % (what, (":\n" + str(detail)) if detail else ""))


def operator_env():
    """The operator's shell: their virtualenv's bin on PATH, their HOME, and no ANSIBLE_* (nor make's
    MOLECULE_*) setting at all."""
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "MOLECULE_")))
    env.update(PATH=VENV_BIN + os.pathsep + env.get("PATH", "/usr/bin:/bin"), HOME=HOME, PWD=WORK)
    return env


def run(argv, name, env=None, cwd=WORK, timeout=900):
    """Run a command, keep its output in logs/<name>.log; (rc, output)."""
    start = time.time()
    proc = subprocess.run(argv, cwd=cwd, env=env or operator_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=timeout, check=False)
    with open(os.path.join(LOGS, name + ".log"), "w") as f:
        f.write("$ %s\n%s\nrc=%d after %.1fs\n" % (" ".join(argv), proc.stdout, proc.returncode, time.time() - start))
    log("%-26s rc=%d  %5.1fs" % (name, proc.returncode, time.time() - start))
    return proc.returncode, proc.stdout


def tail(out, n=60):
    return "\n".join(out.splitlines()[-n:])


def dexec(node, script):
    proc = subprocess.run(["docker", "exec", NODES[node], "bash", "-c", script], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=300, check=False)
    return proc.returncode, proc.stdout


def version(node):
    rc, out = dexec(node, "cat %s" % FACTS)
    return json.loads(out).get("version") if rc == 0 else None


def fleet(*args):
    proc = subprocess.run([os.path.join(TOP, "sim", "fleet")] + list(args), env=dict(os.environ, **FLEET_ENV),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          timeout=300, check=False)
    check(proc.returncode == 0, "sim/fleet %s failed" % " ".join(args), proc.stdout)


def printed_block(out, task_pattern):
    """The lines a task printed between its TASK heading and its result line (the stock callback
    prints a shown report there), from the last such task in the output."""
    blocks, current = [], None
    for line in out.splitlines():
        if line.startswith("TASK ["):
            if current is not None:
                blocks.append(current)
            current = [] if re.search(task_pattern, line) else None
        elif current is not None and re.match(r"^(ok|changed|fatal|skipping): \[|^PLAY ", line):
            blocks.append(current)
            current = None
        elif current is not None:
            current.append(line)
    if current is not None:
        blocks.append(current)
    blocks = [b for b in blocks if any(line.strip() for line in b)]
    check(blocks, "no task matching %r printed anything" % task_pattern, tail(out))
    return [line for line in blocks[-1] if line.strip()]


def plain(lines, what):
    bad = [line for line in lines if NOT_PLAIN.search(line)]
    check(not bad, "%s is not plain lines under the stock callback" % what, "\n".join(bad[:5]))


# ---------------------------------------------------------------- the world
def prepare():
    for path in (WORK, HOME, LOGS):
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path)
    os.makedirs(os.path.dirname(KNOWN_HOSTS), mode=0o700)

    # The tarball, built and installed by the README's own lines (block id=tarball), in a copy of the
    # checkout (what git has: tracked files and new ones it does not ignore), as the operator.
    checkout = os.path.join(BASE, "checkout")
    shutil.rmtree(checkout, ignore_errors=True)
    os.makedirs(checkout)
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=TOP,
                           stdout=subprocess.PIPE, check=True).stdout.decode().split("\0")
    for name in files:
        if name and os.path.isfile(os.path.join(TOP, name)):
            os.makedirs(os.path.dirname(os.path.join(checkout, name)), exist_ok=True)
            shutil.copy2(os.path.join(TOP, name), os.path.join(checkout, name))
    installs = readme_blocks.runnable(README, kinds=("installed",))
    check(set(installs) == {"venv", "tarball"}, "the README's install blocks", sorted(installs))
    rc, out = readme_install(checkout)
    check(rc == 0, "the README's install lines (blocks %s)" % ", ".join(installs), tail(out))
    check(glob.glob(os.path.join(checkout, "gcu-topsrider-*.tar.gz")) and
          os.path.isfile(os.path.join(INSTALLED, "MANIFEST.json")),
          "after the README's install lines: a tarball, and the collection in ~/.ansible/collections")
    venv_bin = os.path.join(readme_venv(), "bin")
    rc, out = run([os.path.join(venv_bin, "ansible-galaxy"), "collection", "list", "gcu.topsrider"],
                  "readme-venv-list", env=dict(operator_env(), PATH=venv_bin + os.pathsep + "/usr/bin:/bin"))
    check(rc == 0 and "gcu.topsrider" in out and INSTALLED.rsplit("/ansible_collections", 1)[0] in out,
          "the README's venv lists the collection it installed", tail(out))
    rc, out = run([os.path.join(venv_bin, "python"), "-c", "import ansible, sys; print(ansible.__version__, "
                   "sys.version.split()[0])"], "readme-venv-version")
    log("the README's venv: ansible-core %s" % out.strip())

    fleet("down")
    fleet("up", str(len(NODES)))
    key = os.path.join(FLEET_ENV["SIM_STATE_DIR"], "ssh", "id_ed25519")
    ports = dict((node, int(FLEET_ENV["SIM_SSH_BASE_PORT"]) + i) for i, node in enumerate(sorted(NODES), 1))
    lines = []
    for node, port in sorted(ports.items()):
        for dummy in range(30):
            proc = subprocess.run(["ssh-keyscan", "-p", str(port), "-T", "5", "127.0.0.1"], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, universal_newlines=True, timeout=60, check=False)
            if proc.stdout.strip():
                break
            time.sleep(1)
        check(proc.stdout.strip(), "no host key from %s at 127.0.0.1:%d" % (node, port))
        lines.append(proc.stdout)
    with open(KNOWN_HOSTS, "w") as f:
        f.write("".join(lines))

    # The operator's inventory: real hosts' settings (root over SSH, host keys checked), and the
    # simulator's one need (host networking: the nodes serve the bundle to each other on 127.0.0.1).
    inventory = ["all:", "  children:", "    t20:", "      hosts:"]
    for node, port in sorted(ports.items()):
        inventory += ["        %s:" % node, "          ansible_host: 127.0.0.1", "          ansible_port: %d" % port]
    inventory += ["      vars:", "        ansible_user: root", "        ansible_ssh_private_key_file: %s" % key,
                  "        ansible_ssh_common_args: -o UserKnownHostsFile=%s" % KNOWN_HOSTS,
                  "        bundle_stage_serve_address: 127.0.0.1", ""]
    with open(os.path.join(WORK, "inventory.yml"), "w") as f:
        f.write("\n".join(inventory))
    check(not os.path.exists("/etc/ansible/ansible.cfg"),
          "/etc/ansible/ansible.cfg exists on this machine: the test wants Ansible's stock settings")


# ---------------------------------------------------------------- the plan
def deploy(name, bundle_expr, expect_rc):
    trace_log = os.path.join(LOGS, name + ".opened")
    env = dict(operator_env(), PYTHONPATH=os.path.join(HERE, "trace"), TOPSRIDER_TRACE_ROOT=INSTALLED,
               TOPSRIDER_TRACE_LOG=trace_log)
    rc, out = run(["ansible-playbook", "-i", "inventory.yml", "gcu.topsrider.deploy",
                   "-e", "topsrider_bundle_dir=%s" % bundle_expr, "-e", "topsrider_python=%s" % PYTHON], name, env=env)
    check(rc == expect_rc, "%s: ansible-playbook exited %d, want %d" % (name, rc, expect_rc), tail(out))
    walk = deploy_walk()
    files = walk.opened(trace_log, INSTALLED)
    uncounted = sorted(files - set(path for kind in walk.loaded("deploy.yml").values() for path in kind))
    check(files and not uncounted, "%s opened files of the collection that the count of a deploy's files "
          "(tests/unit/deploy_walk.py) leaves out" % name, "\n".join(uncounted) or "(none traced)")
    log("%-26s opened %d files of the collection, each one counted" % (name, len(files)))
    report = printed_block(out, r"Report \| .*print it")
    plain(report, "the %s report" % name)
    return report, out


def plan():
    rc, out = run(["ansible-playbook", "-i", "inventory.yml", "gcu.topsrider.fleet_info"], "fleet_info")
    check(rc == 0, "fleet_info exited %d" % rc, tail(out))
    table = printed_block(out, r"Print the fleet table")
    plain(table, "the fleet table")
    for node in NODES:
        check(any(line.lstrip().startswith(node + " ") or line.lstrip().startswith(node + ":") for line in table),
              "the fleet table has no line for %s" % node, "\n".join(table))

    # A failed deploy: t20-node-2 gets a bundle whose tops-eccl postinst fails.
    broken = ("{{ '%s/2.5.140-broken-postinst' if inventory_hostname == 't20-node-2' else '%s/2.5.140' }}"
              % (BUNDLES, BUNDLES))
    report, out = deploy("deploy-failed", broken, 2)
    check(report[0].startswith("TopsRider deploy "), "the failed deploy's report heading", "\n".join(report))
    check("1 ok, 1 failed, 0 unreachable" in "\n".join(report), "the failed deploy's summary", "\n".join(report))
    (row,) = [line for line in report if line.startswith("t20-node-2 ")]
    check(row.split()[1] == "failed" and len(row) <= 160, "t20-node-2's line (failed, at most 160 columns)", row)
    check(version("t20-node-1") == "2.5.140" and version("t20-node-2") is None,
          "after the failed deploy: t20-node-1 upgraded, t20-node-2 restored to nothing",
          (version("t20-node-1"), version("t20-node-2")))
    reports = os.path.join(WORK, "reports")
    check(glob.glob(os.path.join(reports, "deploy-*.json")), "no deploy report in ./reports", os.listdir(WORK))

    report, out = deploy("deploy", "%s/2.5.140" % BUNDLES, 0)
    check("2 ok, 0 failed, 0 unreachable" in "\n".join(report), "the deploy's summary", "\n".join(report))
    check(version("t20-node-1") == "2.5.140" and version("t20-node-2") == "2.5.140", "after the deploy",
          (version("t20-node-1"), version("t20-node-2")))

    drift_checks()


def cron_line():
    """The job line of the installed collection's contrib/cron/topsrider-drift (after the time fields and
    the user), with the paths of this test's install, environment file and log."""
    with open(os.path.join(INSTALLED, "contrib", "cron", "topsrider-drift")) as f:
        jobs = [line for line in f.read().splitlines()
                if line and not line.startswith("#") and "=" not in line.split()[0]]
    check(len(jobs) == 1, "the cron file has one job line", jobs)
    command = jobs[0].split(None, 6)[6]
    check(CRON_COLLECTION in command and "/etc/default/topsrider-drift" in command, "the cron line's paths", command)
    return (command.replace(CRON_COLLECTION, INSTALLED)
            .replace("/etc/default/topsrider-drift", os.path.join(BASE, "topsrider-drift.env"))
            .replace("/var/log/topsrider-drift.log", os.path.join(LOGS, "drift-cron.log")))


def cron(name, settings):
    """The cron line as cron runs it: cron's own environment (HOME, LOGNAME, SHELL, PATH) and nothing
    else; the environment file written from `settings`, the documented file's keys."""
    with open(os.path.join(BASE, "topsrider-drift.env"), "w") as f:
        f.write("".join("%s=%s\n" % kv for kv in sorted(settings.items())))
    argv = ["env", "-i", "HOME=%s" % HOME, "LOGNAME=root", "SHELL=/bin/sh", "PATH=/usr/bin:/bin",
            "/bin/sh", "-c", cron_line()]
    start = time.time()
    proc = subprocess.run(argv, cwd="/", stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=900, check=False)
    log("%-26s rc=%d  %5.1fs" % (name, proc.returncode, time.time() - start))
    with open(os.path.join(LOGS, name + ".log"), "w") as f:
        f.write("$ %s\n%s\nrc=%d\n" % (" ".join(argv), proc.stdout, proc.returncode))
    return proc.returncode, proc.stdout


def run_metrics(textfile_dir):
    with open(os.path.join(textfile_dir, "topsrider_drift_run.prom")) as f:
        return dict(line.split()[:2] for line in f.read().splitlines() if line and not line.startswith("#"))


def drift_checks():
    textfile = os.path.join(BASE, "textfile")
    shutil.rmtree(textfile, ignore_errors=True)
    os.makedirs(textfile)
    reports = os.path.join(BASE, "drift-reports")
    settings = {
        "TOPSRIDER_ANSIBLE_BIN": VENV_BIN,
        "TOPSRIDER_DRIFT_DIR": WORK,
        "TOPSRIDER_DRIFT_ARGS": "-i inventory.yml -e topsrider_bundle_dir=%s/2.5.140 -e topsrider_python=%s "
                                "-e topsrider_drift_textfile=%s/topsrider_drift.prom" % (BUNDLES, PYTHON, textfile),
        "TOPSRIDER_REPORTS_DIR": reports,
        "TOPSRIDER_REPORTS_KEEP_DAYS": "30",
        "TOPSRIDER_TEXTFILE_DIR": textfile,
    }
    drift_log = os.path.join(LOGS, "drift-cron.log")

    rc, out = cron("drift-clean", settings)
    check(rc == 0 and out == "", "the cron line on a clean fleet: exit 0 and no output (no mail)",
          "rc %d, output %r\n%s" % (rc, out, tail(open(drift_log).read())))
    with open(os.path.join(reports, "drift-latest.json")) as f:
        check(json.load(f)["status"] == "clean", "drift-latest.json after the clean run")
    check(run_metrics(textfile).get("topsrider_drift_run_ok") == "1", "topsrider_drift_run_ok after the clean run")
    shown = printed_block(open(drift_log).read(), r"print the summary")
    plain(shown, "the drift report the wrapper's log shows")

    rc, out = dexec("t20-node-1", "sed -i 's/ECCL_DEBUG=WARN/ECCL_DEBUG=INFO/' /etc/profile.d/topsrider.sh")
    check(rc == 0, "editing the ECCL environment on t20-node-1", out)
    rc, out = cron("drift-found", settings)
    check(rc == 0 and len(out.splitlines()) == 1 and "exited 3" in out,
          "the cron line on drift: one line for cron to mail, naming exit 3", "rc %d, output %r" % (rc, out))
    with open(os.path.join(reports, "drift-latest.json")) as f:
        latest = json.load(f)
    nodes = dict((n["node"], n["status"]) for n in latest["nodes"])
    check(latest["status"] == "drift" and nodes == {"t20-node-1": "drift", "t20-node-2": "clean"},
          "drift-latest.json after the edit",
          json.dumps(latest.get("nodes"), indent=1)[:3000])

    missing = dict(settings, TOPSRIDER_ANSIBLE_BIN=os.path.join(BASE, "no-such-venv", "bin"))
    rc, out = cron("drift-cannot-run", missing)
    check(rc == 0 and len(out.splitlines()) == 1 and "exited 4" in out,
          "the cron line with no ansible-playbook: one line for cron to mail, naming exit 4",
          "rc %d, output %r" % (rc, out))
    check("cannot run" in open(drift_log).read().splitlines()[-1] or "cannot run" in open(drift_log).read(),
          "the wrapper's log says it cannot run ansible-playbook", tail(open(drift_log).read(), 5))
    check(run_metrics(textfile).get("topsrider_drift_run_ok") == "0",
          "topsrider_drift_run_ok 0 when the check could not run", run_metrics(textfile))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="leave the fleet up")
    args = parser.parse_args()
    os.makedirs(BASE, exist_ok=True)
    start = time.time()
    try:
        prepare()
        plan()
    except (Failed, subprocess.TimeoutExpired, OSError, ValueError, KeyError) as e:
        print("installed-test: FAILED: %s\n(logs in %s)" % (e, LOGS), file=sys.stderr)
        return 1
    finally:
        if not args.keep:
            fleet("down")
            remove_readme_venv()
    log("the installed collection ran every step in %.0fs" % (time.time() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
