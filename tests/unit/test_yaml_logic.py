# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decisions live in tested Python; the playbooks and the roles' tasks act on
them (issue 50). A Jinja for loop in a playbook or a task file builds data
that a filter should have been handed directly, or that the module or script
that made it should have said (bundle_serve.py prints its own URL). The share
of the task lines that hold Jinja is printed: a report, not a gate."""
import glob
import os
import re

from conftest import TOP

PLAYBOOKS = sorted(glob.glob(os.path.join(TOP, "playbooks", "**", "*.yml"), recursive=True))
ROLE_TASKS = sorted(glob.glob(os.path.join(TOP, "roles", "*", "tasks", "*.yml")))
FOR_LOOP = re.compile(r"\{%-?\s*for\b")


def code_lines(path):
    """(line number, text) of the lines that are not blank and not comments."""
    with open(path) as f:
        return [(n, line.strip()) for n, line in enumerate(f, 1) if line.strip() and not line.strip().startswith("#")]


def loops(paths):
    return ["%s:%d" % (os.path.relpath(p, TOP), n) for p in paths for n, text in code_lines(p) if FOR_LOOP.search(text)]


def test_no_playbook_or_task_file_builds_data_in_a_jinja_for_loop():
    assert not loops(PLAYBOOKS + ROLE_TASKS), loops(PLAYBOOKS + ROLE_TASKS)


def test_the_share_of_jinja_lines_is_printed(capsys):
    lines = [text for p in PLAYBOOKS + ROLE_TASKS for _n, text in code_lines(p)]
    jinja = [text for text in lines if "{{" in text or "{%" in text]
    assert lines and jinja
    with capsys.disabled():
        share = 100.0 * len(jinja) / len(lines)
        print("\nJinja in playbooks/**/*.yml and roles/*/tasks/*.yml: %d of %d code lines (%.1f %%)"
              % (len(jinja), len(lines), share))
