# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/topsrider-fabric: exit status from this run's report, run as a real
process with a stand-in ansible-playbook that writes a chosen report."""
import json
import os
import stat
import subprocess
import sys

import pytest

from conftest import TOP

WRAPPER = os.path.join(TOP, "scripts", "topsrider-fabric")
FAKE = r'''#!%s
import json, os, sys
args = sys.argv[1:]
extra = json.loads(args[args.index("-e") + 1])
mode = os.environ["FAKE_MODE"]
with open(os.environ["FAKE_ARGS"], "w") as f:
    json.dump(args, f)
if mode != "none":
    path = os.path.join(extra["topsrider_reports_dir"], "fabric-%%s.json" %% extra["topsrider_fabric_id"])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"status": mode, "summary": {"nodes": 8, "named": ["n5"] if mode != "clean" else []}}, f)
sys.exit(int(os.environ["FAKE_RC"]))
''' % sys.executable


@pytest.mark.parametrize("mode,rc,want", [
    ("clean", 0, 0),
    ("degraded", 2, 3),    # the playbook's own "fabric not clean" assert
    ("degraded", 0, 3),    # topsrider_fabric_fail=false
    ("broken", 2, 4),
    ("broken", 0, 4),
    ("none", 0, 4),        # no report from this run
    ("none", 4, 4),
    ("clean", 1, 4),       # clean report, but the playbook errored elsewhere
    ("degraded", 5, 4),
])
def test_exit_status(tmp_path, mode, rc, want):
    fake = tmp_path / "ansible-playbook"
    fake.write_text(FAKE)
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = dict(os.environ, FAKE_MODE=mode, FAKE_RC=str(rc), FAKE_ARGS=str(tmp_path / "args.json"),
               ANSIBLE_PLAYBOOK=str(fake))
    proc = subprocess.run([sys.executable, WRAPPER, "--reports-dir", str(tmp_path / "r"), "-i", "inv.yml",
                           "-l", "t20"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False)
    assert proc.returncode == want, proc.stdout + proc.stderr
    args = json.load(open(str(tmp_path / "args.json")))
    assert args[0].endswith("playbooks/fabric_check.yml") and args[-4:] == ["-i", "inv.yml", "-l", "t20"]
    if mode != "none":
        assert "exit %d" % want in proc.stdout


def test_missing_ansible_playbook_is_a_broken_run(tmp_path):
    env = dict(os.environ, ANSIBLE_PLAYBOOK=str(tmp_path / "nope"))
    proc = subprocess.run([sys.executable, WRAPPER, "--reports-dir", str(tmp_path)], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    assert proc.returncode == 4 and "cannot run" in proc.stderr
