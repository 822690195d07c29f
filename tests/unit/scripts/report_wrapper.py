# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs a report wrapper (scripts/topsrider-drift, scripts/topsrider-fabric) as
a real process with a stand-in ansible-playbook that records its arguments and
writes the report the test chose, the way the real playbook names it."""
import json
import os
import stat
import subprocess
import sys

from conftest import TOP

FAKE = r'''#!%(python)s
import json, os, sys
args = sys.argv[1:]
extra = json.loads(args[args.index("-e") + 1])
mode = os.environ["FAKE_MODE"]
with open(os.environ["FAKE_ARGS"], "w") as f:
    json.dump(args, f)
if mode != "none":
    path = os.path.join(extra["topsrider_reports_dir"], "%(kind)s-%%s.json" %% extra["topsrider_%(kind)s_id"])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"status": mode, "summary": json.loads(os.environ["FAKE_SUMMARY"])}, f)
sys.exit(int(os.environ["FAKE_RC"]))
'''


def wrapper(kind):
    return os.path.join(TOP, "scripts", "topsrider-" + kind)


def run(argv, env):
    return subprocess.run([sys.executable] + argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False)


def run_with_fake(tmp_path, kind, mode, rc, summary=None):
    """The wrapper's finished process, and the arguments the stand-in got:
    it writes <kind>-<id>.json with status `mode` (none: no report) and exits rc."""
    fake = tmp_path / "ansible-playbook"
    fake.write_text(FAKE % {"python": sys.executable, "kind": kind})
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = dict(os.environ, FAKE_MODE=mode, FAKE_RC=str(rc), FAKE_ARGS=str(tmp_path / "args.json"),
               FAKE_SUMMARY=json.dumps(summary or {}), ANSIBLE_PLAYBOOK=str(fake))
    proc = run([wrapper(kind), "--reports-dir", str(tmp_path / "r"), "-i", "inv.yml", "-l", "t20"], env)
    with open(str(tmp_path / "args.json")) as f:
        return proc, json.load(f)


def run_without_ansible_playbook(tmp_path, kind):
    env = dict(os.environ, ANSIBLE_PLAYBOOK=str(tmp_path / "nope"))
    return run([wrapper(kind), "--reports-dir", str(tmp_path)], env)
