# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gcu.topsrider.fleet_report (plugins/callback/fleet_report.py), as
ansible-playbook loads it: by itself from the playbooks' adjacent
callback_plugins/ (a checkout), enabled by name (the installed collection),
or both at once: a host that stops answering mid-task is dropped by Ansible
(no rescue, no always, and a batch of it alone ends the playbook); the run's
fleet report still names it, written and printed once."""
import json
import os
import subprocess
import sys

import pytest

from conftest import COLLECTIONS, TOP

PLAY = """
- name: The run writes its fleet report (as a batch's start does)
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Report
      gcu.topsrider.topsrider_reports:
        files: "{{ report | gcu.topsrider.topsrider_report_files(playbook_dir ~ '/reports') }}"
      vars:
        report: >-
          {{ ['lost1'] | gcu.topsrider.topsrider_in_progress_lines
             | gcu.topsrider.topsrider_fleet_report('deploy', 'r1', ['lost1', 'n2'], [], 'not started') }}

- name: A batch of one host that stops answering
  hosts: lost1
  serial: 1
  gather_facts: false
  tasks:
    - name: Install the bundle
      ansible.builtin.ping:
      when: %s

- name: Never runs when the batch above failed whole
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Later
      ansible.builtin.debug:
        msg: later
"""


def _run(tmp_path, reach, adjacent=True, enabled=False):
    (tmp_path / "play.yml").write_text(PLAY % ("false" if reach else "true"))
    if adjacent:
        os.symlink(os.path.join(TOP, "playbooks", "callback_plugins"), str(tmp_path / "callback_plugins"))
    (tmp_path / "inv.yml").write_text(json.dumps({"all": {"hosts": {"lost1": {
        "ansible_host": "127.0.0.1", "ansible_port": 1, "ansible_connection": "ssh", "ansible_user": "nobody"}}}}))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(TOP, "sim", "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_PYTHON_INTERPRETER=sys.executable,
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), ANSIBLE_HOST_KEY_CHECKING="False")
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    if enabled:
        env["ANSIBLE_CALLBACKS_ENABLED"] = "gcu.topsrider.fleet_report"
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(tmp_path / "inv.yml"),
                           str(tmp_path / "play.yml")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                          cwd=str(tmp_path), universal_newlines=True, timeout=120, check=False)
    with open(str(tmp_path / "reports" / "deploy-latest.json")) as f:
        return proc.returncode, proc.stdout, json.load(f)


@pytest.mark.parametrize("adjacent,enabled", [(True, False), (False, True), (True, True)],
                         ids=["checkout-adjacent", "installed-enabled", "both"])
def test_a_host_lost_mid_task_is_named_unreachable_in_the_written_and_printed_report(tmp_path, adjacent, enabled):
    rc, out, report = _run(tmp_path, reach=False, adjacent=adjacent, enabled=enabled)
    assert rc == 4, out
    assert "TASK [Later]" not in out
    rows = dict((r["host"], r) for r in report["hosts"])
    assert rows["lost1"]["result"] == "unreachable" and rows["n2"]["result"] == "not started"
    assert rows["lost1"]["detail"].startswith("unreachable: the node stopped answering during 'Install the bundle' (")
    assert report["unreachable_hosts"] == ["lost1"] and report["status"] == "failed"
    with open(str(tmp_path / "reports" / "deploy-r1.d" / "lost1.json")) as f:
        assert json.load(f)["result"] == "unreachable"
    with open(str(tmp_path / "reports" / "deploy-r1.json")) as f:
        assert json.load(f) == report
    assert "Unreachable: lost1." in out and "0 ok, 0 failed, 1 unreachable, 0 changed, 1 not started." in out
    assert out.count("0 ok, 0 failed, 1 unreachable, 0 changed, 1 not started.") == 1
    assert "fleet_report is not enabled" not in out


def _flat(out):
    return " ".join(out.split())


def test_neither_adjacent_nor_enabled_leaves_the_report_as_the_run_wrote_it(tmp_path):
    """What an installed collection without the setting gets (docs/deploy.md says so): the host as in progress."""
    rc, out, report = _run(tmp_path, reach=False, adjacent=False, enabled=False)
    assert rc == 4, out
    assert [(r["host"], r["result"]) for r in report["hosts"]] == [("lost1", "in progress"), ("n2", "not started")]
    # No report printed at the end: the run says so when it writes its report, with the remedy.
    assert "0 ok, 0 failed, 1 unreachable" not in out
    assert ("[WARNING]: gcu.topsrider.fleet_report is not enabled: if a node stops answering in the middle of a task, Ansible"
            " ends the run without printing the fleet report at the end") in _flat(out)
    assert "ANSIBLE_CALLBACKS_ENABLED=gcu.topsrider.fleet_report" in _flat(out)


def test_a_run_that_lost_nobody_keeps_its_own_report(tmp_path):
    rc, out, report = _run(tmp_path, reach=True)
    assert rc == 0, out
    assert [(r["host"], r["result"]) for r in report["hosts"]] == [("lost1", "in progress"), ("n2", "not started")]
    assert not os.path.exists(str(tmp_path / "reports" / "deploy-r1.d"))
    assert "fleet_report is not enabled" not in out
