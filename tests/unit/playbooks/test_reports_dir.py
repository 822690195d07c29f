# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reports directory (playbooks/vars/node_paths.yml controller_reports_dir,
dist_launch_output_dir) defaults to ./reports in ansible-playbook's real working
directory, whatever $PWD says (unset, or stale as cron and sudo leave it), and
topsrider_reports_dir wins when set."""
import json
import os
import subprocess
import sys

import pytest

from conftest import TOP

BIN = os.path.dirname(sys.executable)


def reports_dirs(cwd, env_pwd, extra=()):
    playbook = os.path.join(str(cwd), "show.yml")
    with open(playbook, "w") as f:
        f.write("- hosts: localhost\n  gather_facts: false\n  vars_files:\n    - %s\n    - %s\n"
                "  tasks:\n    - ansible.builtin.debug:\n"
                "        msg: \"{{ [controller_reports_dir, dist_launch_output_dir] | to_json }}\"\n"
                % (os.path.join(TOP, "playbooks", "vars", "node_paths.yml"),
                   os.path.join(TOP, "roles", "dist_launch", "defaults", "main.yml")))
    env = dict((k, v) for k, v in os.environ.items() if k != "PWD")
    env.update(ANSIBLE_CONFIG=os.path.join(TOP, "sim", "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
               ANSIBLE_LOCAL_TEMP=str(cwd / "tmp"), PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    if env_pwd is not None:
        env["PWD"] = env_pwd
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", "-c", "local", playbook,
                           "-e", "ansible_python_interpreter=%s" % sys.executable] + list(extra),
                          cwd=str(cwd), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout
    result = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    return json.loads(result["msg"]) if isinstance(result["msg"], str) else result["msg"]


@pytest.mark.parametrize("env_pwd", [None, "/", "/somewhere/stale"])
def test_default_is_reports_in_the_real_working_directory(tmp_path, env_pwd):
    cwd = tmp_path.resolve()
    assert reports_dirs(cwd, env_pwd) == [str(cwd / "reports"), str(cwd / "reports" / "launch")]


def test_topsrider_reports_dir_wins(tmp_path):
    cwd = tmp_path.resolve()
    dirs = reports_dirs(cwd, None, ["-e", "topsrider_reports_dir=/srv/reports"])
    assert dirs == ["/srv/reports", "/srv/reports/launch"]
