# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/topsrider-drift: exit status from this run's report, run as a real
process with a stand-in ansible-playbook that writes a chosen report."""
import pytest

from report_wrapper import run_with_fake, run_without_ansible_playbook


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
    proc, args = run_with_fake(tmp_path, "drift", mode, rc)
    assert proc.returncode == want, proc.stdout + proc.stderr
    assert args[0].endswith("playbooks/drift.yml") and args[-4:] == ["-i", "inv.yml", "-l", "t20"]


def test_missing_ansible_playbook_is_a_failed_run(tmp_path):
    proc = run_without_ansible_playbook(tmp_path, "drift")
    assert proc.returncode == 4 and "cannot run" in proc.stderr
