# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One run-id scheme for deploy, verify, rollback, drift and fabric: the
filter gcu.topsrider.topsrider_run_id (plugins/module_utils/_values.py), and
playbooks/tasks/run_id.yml, which every playbook imports to name its run,
run by ansible-playbook on localhost."""
import os
import re

import pytest

from ansible_collections.gcu.topsrider.plugins.plugin_utils._report_formats import ReportError, safe_run_id
from ansible_collections.gcu.topsrider.plugins.module_utils._values import run_id
from conftest import TOP, run_play

SHOW = "ID={{ hostvars['localhost']['topsrider_run_id'] }} STARTED={{ hostvars['localhost']['topsrider_run_started'] }}"


def test_no_id_is_the_utc_start_time():
    assert run_id("", now=1795642200) == "20261125T213000Z"
    assert run_id(None, now=1795642200) == "20261125T213000Z"
    assert re.match(r"^\d{8}T\d{6}Z\Z", run_id(""))


@pytest.mark.parametrize("value", ["nightly-42", "case1b", "2.5.140_r1", "20261125T213000Z"])
def test_an_operators_id_is_kept(value):
    assert run_id(value) == value and safe_run_id(value) == value


@pytest.mark.parametrize("value", ["../x", "a/b", "..", ".", "x\n", "-x", "a b", 7, True])
def test_an_id_that_cannot_name_a_file_is_refused(value):
    with pytest.raises(ValueError, match="the run id"):
        run_id(value)
    with pytest.raises(ReportError, match="the run id"):
        safe_run_id(value)


def run_start(tmp_path, extra_vars):
    return run_play(tmp_path, [
        {"name": "Start", "ansible.builtin.import_tasks": os.path.join(TOP, "playbooks", "tasks", "start.yml")},
        {"name": "Show", "ansible.builtin.debug": {"msg": SHOW}}], extra_vars)


def test_start_names_the_run(tmp_path):
    rc, out = run_start(tmp_path, {"run_id_value": ""})
    assert rc == 0 and re.search(r"ID=\d{8}T\d{6}Z STARTED=\d+\.\d+", out), out
    rc, out = run_start(tmp_path, {"run_id_value": "nightly-42"})
    assert rc == 0 and "ID=nightly-42 STARTED=" in out, out


def test_start_refuses_an_id_that_would_leave_the_reports_directory(tmp_path):
    rc, out = run_start(tmp_path, {"run_id_value": "../../etc/cron.d/x"})
    flat = " ".join(out.split())
    assert rc != 0 and "the run id" in flat and "ID=" not in out, out


def test_start_says_which_variable_and_why_in_one_sentence(tmp_path):
    # Checked first, by an assert with its own sentence, not by the filter's error inside set_fact.
    rc, out = run_start(tmp_path, {"run_id_value": "../../../../tmp/x-id", "run_id_variable": "topsrider_deploy_id"})
    flat = " ".join(out.split())
    assert rc != 0, out
    assert ('refused, nothing was changed: topsrider_deploy_id "../../../../tmp/x-id" is not a plain name: '
            'a letter or digit') in flat, out
    assert "Finalization" not in out and "ID=" not in out
