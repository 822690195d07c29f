# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helpers the launch scenarios' testinfra tests share (molecule/dist_launch,
molecule/nvidia_node): commands on a node with docker exec, background jobs in
their own process group, the launch check playbook, the smoke job's command."""
import json
import os
import shlex
import socket
import subprocess
import time

LAUNCH = "/opt/topsrider/launch"


def dexec(node, script, timeout=60):
    proc = subprocess.run(["docker", "exec", node, "bash", "-c", script], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout, check=False)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def free_port():
    # The nodes share the host's network namespace: a port free here is free there.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Job(object):
    """A command started in the background on a node, in its own session
    (process group), bounded by `timeout`; its pgid, log and exit code land in
    a work directory on the node."""

    def __init__(self, node, name, command, limit=240):
        self.node, self.dir = node, "/tmp/launch-test/%s" % name
        rc, _out, err = dexec(node, "rm -rf %s && mkdir -p %s/results" % (self.dir, self.dir))
        assert rc == 0, err
        # The command runs in a bash of its own (so `VAR=x cmd` and `. file; cmd` work) under
        # `timeout --foreground`, which stays in this session's process group: stop() ends it all.
        inner = "echo $$ > %s/pgid; timeout --foreground %d bash -c %s > %s/log 2>&1; echo $? > %s/rc" % (
            self.dir, limit, shlex.quote(command), self.dir, self.dir)
        subprocess.run(["docker", "exec", "-d", node, "setsid", "bash", "-c", inner], check=True, timeout=30)

    def results(self):
        _rc, out, _err = dexec(self.node, "cat %s/results/*.json 2>/dev/null" % self.dir)
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def wait_results(self, count, limit):
        deadline = time.time() + limit
        while time.time() < deadline:
            if len(self.results()) >= count or self.rc() is not None:
                break
            time.sleep(3)
        return self.results()

    def rc(self):
        rc, out, _err = dexec(self.node, "cat %s/rc 2>/dev/null" % self.dir)
        return int(out) if rc == 0 and out.strip() else None

    def wait(self, limit):
        deadline = time.time() + limit
        while time.time() < deadline:
            if self.rc() is not None:
                return self.rc()
            time.sleep(3)
        return None

    def log(self):
        return dexec(self.node, "cat %s/log" % self.dir)[1]

    def stop(self):
        """Ends this job's own process group (if still there) and checks nothing is left."""
        dexec(self.node, "pg=$(cat %s/pgid) && kill -TERM -- -$pg 2>/dev/null; sleep 2; "
                         "kill -KILL -- -$pg 2>/dev/null; true" % self.dir)
        _rc, out, _err = dexec(self.node, "pgrep -f '[d]dp_smoke[.]py' || true")
        assert out.strip() == "", "processes left on %s: %s" % (self.node, out)


def launch_check(host, node):
    """playbooks/launch_check.yml against one node: (rc, output)."""
    runner = host.backend.ansible_runner
    playbook = os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], "playbooks", "launch_check.yml")
    proc = subprocess.run(["ansible-playbook", "-i", runner.inventory_file, playbook, "-e",
                           "launch_check_hosts=%s" % node], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=180, check=False)
    return proc.returncode, proc.stdout.decode()


def smoke(result_dir, extra=""):
    return "%s/ddp_smoke.py --steps 3 --result-dir %s/results %s" % (LAUNCH, result_dir, extra)
