# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nightly drift check as cron runs it: contrib/cron/topsrider-drift's
command line, verbatim but for the paths, under `env -i` (cron's bare
environment) with only the environment file; a stand-in ansible-playbook
(tests/unit/scripts/report_wrapper.py) writes the report. Clean: no output
(no mail). Drift: one line, mailed. No ansible-playbook: the wrapper says so,
the line is mailed, and the textfile says topsrider_drift_run_ok 0. Old run
reports are pruned by TOPSRIDER_REPORTS_KEEP_DAYS. Also the environment file
reader."""
import json
import os
import stat
import subprocess
import sys
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import TOP, load_script
from report_wrapper import FAKE

check = load_script("scripts/topsrider_check.py", "topsrider_check")
INSTALLED = "/usr/share/ansible/collections/ansible_collections/gcu/topsrider"


def cron_command():
    """The command of the one job line of contrib/cron/topsrider-drift (after 5 time fields and the user)."""
    with open(os.path.join(TOP, "contrib", "cron", "topsrider-drift")) as f:
        jobs = [line for line in f.read().splitlines() if line and not line.startswith("#") and "=" not in line.split()[0]]
    assert len(jobs) == 1, jobs
    return jobs[0].split(None, 6)[6]


def run_cron(tmp_path, settings):
    env_file = tmp_path / "topsrider-drift.env"
    env_file.write_text(u"".join("%s=%s\n" % kv for kv in sorted(settings.items())))
    command = (cron_command().replace(INSTALLED, TOP).replace("/etc/default/topsrider-drift", str(env_file))
               .replace("/var/log/topsrider-drift.log", str(tmp_path / "drift.log")))
    proc = subprocess.run(["env", "-i", "/bin/sh", "-c", command], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=120, check=False)
    log = (tmp_path / "drift.log").read_text() if (tmp_path / "drift.log").exists() else ""
    return proc, log


def metrics(directory):
    with open(os.path.join(str(directory), "topsrider_drift_run.prom")) as f:
        return dict((s.name, s.value) for fam in text_string_to_metric_families(f.read()) for s in fam.samples)


@pytest.fixture
def fleet(tmp_path):
    """A virtualenv-like bin/ with the stand-in ansible-playbook, and the settings pointing at it."""
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    fake = bin_dir / "ansible-playbook"
    fake.write_text(FAKE % {"python": sys.executable, "kind": "drift"})
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "ops").mkdir()
    return {"TOPSRIDER_ANSIBLE_BIN": str(bin_dir), "TOPSRIDER_DRIFT_DIR": str(tmp_path / "ops"),
            "TOPSRIDER_DRIFT_ARGS": "-i inventory.yml -e topsrider_bundle_dir=/srv/topsrider/current",
            "TOPSRIDER_REPORTS_DIR": str(tmp_path / "reports"), "TOPSRIDER_TEXTFILE_DIR": str(tmp_path / "textfile"),
            "FAKE_RC": "0", "FAKE_MODE": "clean", "FAKE_ARGS": str(tmp_path / "args.json"),
            "FAKE_SUMMARY": json.dumps({"clean": 2, "drift": 0})}


def test_a_clean_fleet_mails_nothing(tmp_path, fleet):
    proc, log = run_cron(tmp_path, fleet)
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == "", (proc.stdout, proc.stderr, log)
    assert "topsrider-drift: clean:" in log
    # the arguments from the file, after the wrapper's own; run in TOPSRIDER_DRIFT_DIR
    with open(str(tmp_path / "args.json")) as f:
        args = json.load(f)
    assert args[0] == os.path.join(TOP, "playbooks", "drift.yml") and args[-4:] == [
        "-i", "inventory.yml", "-e", "topsrider_bundle_dir=/srv/topsrider/current"]
    assert metrics(tmp_path / "textfile") == {"topsrider_drift_run_ok": 1.0, "topsrider_drift_run_exit_status": 0.0,
                                              "topsrider_drift_run_timestamp_seconds": pytest.approx(time.time(), abs=60)}


def test_drift_found_mails_one_line(tmp_path, fleet):
    proc, log = run_cron(tmp_path, dict(fleet, FAKE_MODE="drift", FAKE_RC="2"))
    assert proc.stdout.startswith("topsrider-drift exited 3 ") and len(proc.stdout.splitlines()) == 1
    assert metrics(tmp_path / "textfile")["topsrider_drift_run_ok"] == 1.0


def test_no_ansible_playbook_fails_loudly_and_sets_the_failure_metric(tmp_path, fleet):
    proc, log = run_cron(tmp_path, dict(fleet, TOPSRIDER_ANSIBLE_BIN=str(tmp_path / "no-venv" / "bin")))
    assert proc.stdout.startswith("topsrider-drift exited 4 "), (proc.stdout, log)
    assert "cannot run %s" % (tmp_path / "no-venv" / "bin" / "ansible-playbook") in log
    assert "set TOPSRIDER_ANSIBLE_BIN" in log
    got = metrics(tmp_path / "textfile")
    assert got["topsrider_drift_run_ok"] == 0.0 and got["topsrider_drift_run_exit_status"] == 4.0


def test_a_bad_setting_runs_nothing_and_sets_the_failure_metric(tmp_path, fleet):
    proc, log = run_cron(tmp_path, dict(fleet, TOPSRIDER_DRIFT_DIR=str(tmp_path / "gone")))
    assert proc.stdout.startswith("topsrider-drift exited 4 ") and "nothing was run" in log
    assert not (tmp_path / "args.json").exists()
    assert metrics(tmp_path / "textfile")["topsrider_drift_run_ok"] == 0.0


def test_old_run_reports_are_pruned_the_latest_kept(tmp_path, fleet):
    reports = tmp_path / "reports"
    reports.mkdir()
    old = time.time() - 40 * 86400
    for name in ("drift-20261001T023000Z-1.json", "drift-20261001T023000Z-1.md", "drift-latest.json",
                 "drift-20261120T023000Z-1.json", "fabric-20261001T023000Z-1.json", "notes.txt"):
        (reports / name).write_text(u"{}")
        if "20261120" not in name:
            os.utime(str(reports / name), (old, old))
    proc, log = run_cron(tmp_path, fleet)
    left = sorted(os.listdir(str(reports)))
    assert "drift-20261001T023000Z-1.json" not in left and "drift-20261001T023000Z-1.md" not in left
    assert {"drift-latest.json", "drift-20261120T023000Z-1.json", "fabric-20261001T023000Z-1.json",
            "notes.txt"} <= set(left)
    assert "older than 30 days" in log
    # 0 keeps them all
    (reports / "drift-20261001T023000Z-1.json").write_text(u"{}")
    os.utime(str(reports / "drift-20261001T023000Z-1.json"), (old, old))
    run_cron(tmp_path, dict(fleet, TOPSRIDER_REPORTS_KEEP_DAYS="0"))
    assert (reports / "drift-20261001T023000Z-1.json").exists()


def test_the_environment_file_is_read_as_systemd_reads_it(tmp_path):
    f = tmp_path / "env"
    f.write_text(u"# a comment\n; another\n\nA=1\nexport B = two words \nC='quoted # not a comment'\n"
                 u'D="x"\nE=\nF=$HOME/x\n')
    assert check.read_env_file(str(f)) == {"A": "1", "B": "two words", "C": "quoted # not a comment", "D": "x",
                                           "E": "", "F": "$HOME/x"}
    f.write_text(u"A=1\nnot a setting\n")
    with pytest.raises(check.SettingsError, match=r":2: not KEY=VALUE"):
        check.read_env_file(str(f))
    with pytest.raises(check.SettingsError, match="cannot read"):
        check.read_env_file(str(tmp_path / "missing"))


def test_the_shipped_example_sets_every_setting_the_wrapper_reads():
    example = check.read_env_file(os.path.join(TOP, "contrib", "default", "topsrider-drift"))
    assert set(example) == {"TOPSRIDER_ANSIBLE_BIN", "TOPSRIDER_DRIFT_DIR", "TOPSRIDER_DRIFT_ARGS",
                            "TOPSRIDER_REPORTS_DIR", "TOPSRIDER_REPORTS_KEEP_DAYS", "TOPSRIDER_TEXTFILE_DIR"}
