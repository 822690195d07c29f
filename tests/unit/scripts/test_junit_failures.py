# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/junit-failures.py: the failed tests of a real pytest JUnit file,
named with their assertion lines (what molecule-all.sh prints last when a
scenario fails)."""
import os
import subprocess
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SCRIPT = os.path.join(TOP, "scripts", "junit-failures.py")

SAMPLE = '''
def test_passes():
    assert 1 + 1 == 2


def test_waits_too_long():
    state = "drained"
    assert state == "idle", "slurm-node1 not resumed within 40s"


def test_crashes():
    raise RuntimeError("docker exec: no such container")
'''


def run(*args):
    return subprocess.run([sys.executable, SCRIPT] + list(args), capture_output=True, text=True, check=False)


def test_names_each_failed_test_and_its_assertion(tmp_path):
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    xml = tmp_path / "out.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml", str(xml),
                    str(tmp_path / "test_sample.py")], cwd=str(tmp_path), capture_output=True, check=False)
    proc = run(str(xml))
    assert proc.returncode == 0
    out = proc.stdout
    assert "FAILED test_sample::test_waits_too_long" in out
    assert "not resumed within 40s" in out
    assert "FAILED test_sample::test_crashes" in out and "no such container" in out
    assert "test_passes" not in out


def test_a_missing_or_broken_file_is_said_not_fatal(tmp_path):
    proc = run(str(tmp_path / "none.xml"))
    assert proc.returncode == 0 and "not written" in proc.stdout
    (tmp_path / "bad.xml").write_text("<testsuite")
    proc = run(str(tmp_path / "bad.xml"))
    assert proc.returncode == 0 and "bad.xml" in proc.stdout


def test_no_failure_says_the_scenario_failed_elsewhere(tmp_path):
    (tmp_path / "ok.xml").write_text('<testsuites><testsuite><testcase classname="a" name="b"/></testsuite></testsuites>')
    assert "failed outside its tests" in run(str(tmp_path / "ok.xml")).stdout
