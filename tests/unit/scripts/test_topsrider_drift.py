# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/topsrider-drift: exit status from this run's report, run as a real
process with a stand-in ansible-playbook that writes a chosen report."""
import json
import os
import stat
import subprocess
import sys

import pytest

from conftest import TOP

WRAPPER = os.path.join(TOP, "scripts", "topsrider-drift")
FAKE = r'''#!%s
import json, os, sys
args = sys.argv[1:]
extra = json.loads(args[args.index("-e") + 1])
mode = os.environ["FAKE_MODE"]
with open(os.environ["FAKE_ARGS"], "w") as f:
    json.dump(args, f)
if mode != "none":
    path = os.path.join(extra["topsrider_reports_dir"], "drift-%%s.json" %% extra["topsrider_drift_id"])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"status": mode, "summary": {}}, f)
sys.exit(int(os.environ["FAKE_RC"]))
''' % sys.executable


@pytest.mark.parametrize("mode,rc,want", [
    ("clean", 0, 0),
    ("drift", 2, 3),
    ("drift", 0, 3),
    ("failed", 4, 4),
    ("failed", 2, 4),
    ("none", 4, 4),      # nothing written: the run failed
    ("none", 0, 4),
    ("clean", 1, 4),     # clean report but the playbook errored elsewhere
    ("drift", 5, 4),
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
    assert args[0].endswith("playbooks/drift.yml") and args[-4:] == ["-i", "inv.yml", "-l", "t20"]


def test_missing_ansible_playbook_is_a_failed_run(tmp_path):
    env = dict(os.environ, ANSIBLE_PLAYBOOK=str(tmp_path / "nope"))
    proc = subprocess.run([sys.executable, WRAPPER, "--reports-dir", str(tmp_path)], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    assert proc.returncode == 4 and "cannot run" in proc.stderr
