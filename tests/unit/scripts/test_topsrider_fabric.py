# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/topsrider-fabric: exit status from this run's report, run as a real
process with a stand-in ansible-playbook that writes a chosen report."""
import pytest

from report_wrapper import run_with_fake, run_without_ansible_playbook


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
    proc, args = run_with_fake(tmp_path, "fabric", mode, rc, {"nodes": 8, "named": ["n5"] if mode != "clean" else []})
    assert proc.returncode == want, proc.stdout + proc.stderr
    assert args[0].endswith("playbooks/fabric_check.yml") and args[-4:] == ["-i", "inv.yml", "-l", "t20"]
    if mode != "none":
        assert "exit %d" % want in proc.stdout


def test_missing_ansible_playbook_is_a_broken_run(tmp_path):
    proc = run_without_ansible_playbook(tmp_path, "fabric")
    assert proc.returncode == 4 and "cannot run" in proc.stderr
