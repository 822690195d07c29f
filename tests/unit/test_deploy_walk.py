# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A newcomer follows a deploy from playbooks/deploy.yml through at most 13
files (issue 15's 12, and tasks/quiesce.yml since issue 28: nobody uses a
node a deploy changes, shared with rollback.yml). The walk is what deploy.yml names, followed statically: its
vars files, the task files it imports or includes (and those they name), and
each role it includes, counted once: a role is read through its documented
interface (meta/argument_specs.yml, its README section) and its tasks/main.yml;
the other entry points a deploy names (bundle_stage's offer, serve_stop and
prune, eccl_env's and torch_gcu's preflight) are that role's own files,
listed here too so the number is never hidden. docs/architecture.md draws
the same walk."""
import os
import sys

import yaml

from conftest import TOP

PLAYBOOKS = os.path.join(TOP, "playbooks")


def _tasks_of(node):
    """Every task mapping under a play or task list, blocks, rescues and always included."""
    if isinstance(node, list):
        for item in node:
            yield from _tasks_of(item)
    elif isinstance(node, dict):
        yield node
        for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks", "handlers"):
            if key in node:
                yield from _tasks_of(node[key])


def walk(playbook):
    """(files, role_entry_points): files relative to the collection, in the order met."""
    files, entries = [], []

    def add(path):
        rel = os.path.relpath(path, TOP)
        if rel not in files:
            files.append(rel)
            return True
        return False

    def follow(path, base):
        if not add(path):
            return
        with open(path) as f:
            data = yaml.safe_load(f) or []
        for task in _tasks_of(data):
            for vars_file in task.get("vars_files", []):
                add(os.path.join(base, vars_file))
            for key in ("ansible.builtin.import_tasks", "ansible.builtin.include_tasks"):
                if key in task:
                    name = task[key] if isinstance(task[key], str) else task[key]["file"]
                    follow(os.path.normpath(os.path.join(os.path.dirname(path), name)), base)
            for key in ("ansible.builtin.include_role", "ansible.builtin.import_role"):
                if key in task:
                    role = task[key]["name"].rsplit(".", 1)[-1]
                    add(os.path.join(TOP, "roles", role, "tasks", "main.yml"))
                    if "tasks_from" in task[key]:
                        entry = "roles/%s/tasks/%s.yml" % (role, task[key]["tasks_from"])
                        if entry not in entries:
                            entries.append(entry)

    follow(os.path.join(PLAYBOOKS, playbook), PLAYBOOKS)
    return files, entries


def test_a_deploy_is_followed_through_at_most_13_files():
    files, entries = walk("deploy.yml")
    assert len(files) <= 13, "a deploy walks through %d files: %s" % (len(files), ", ".join(files))
    # The walk is the real one: every phase of the deploy is in it.
    for expected in ("playbooks/deploy.yml", "playbooks/vars/desired_state.yml", "playbooks/vars/node_paths.yml",
                     "playbooks/tasks/start.yml", "playbooks/tasks/inputs.yml", "playbooks/tasks/quiesce.yml",
                     "playbooks/tasks/rollout.yml",
                     "playbooks/tasks/restore.yml", "playbooks/tasks/finish.yml",
                     "roles/bundle_stage/tasks/main.yml", "roles/tops_sdk/tasks/main.yml",
                     "roles/eccl_env/tasks/main.yml", "roles/torch_gcu/tasks/main.yml"):
        assert expected in files, (expected, files)
    for path in files + entries:
        assert os.path.exists(os.path.join(TOP, path)), path
    # The role entry points a deploy names besides main (the role's own files).
    assert sorted(entries) == ["roles/bundle_stage/tasks/offer.yml", "roles/bundle_stage/tasks/prune.yml",
                               "roles/bundle_stage/tasks/serve_stop.yml", "roles/eccl_env/tasks/preflight.yml",
                               "roles/torch_gcu/tasks/preflight.yml"], entries


def test_the_walk_follows_imports_and_counts_a_file_once(tmp_path, monkeypatch):
    (tmp_path / "tasks").mkdir()
    (tmp_path / "vars").mkdir()
    (tmp_path / "vars" / "v.yml").write_text("a: 1\n")
    (tmp_path / "tasks" / "one.yml").write_text(
        "- ansible.builtin.import_tasks: two.yml\n- ansible.builtin.include_role:\n    name: gcu.topsrider.eccl_env\n"
        "    tasks_from: preflight\n")
    (tmp_path / "tasks" / "two.yml").write_text("- ansible.builtin.debug:\n")
    (tmp_path / "p.yml").write_text(
        "- hosts: all\n  vars_files: [vars/v.yml]\n  tasks:\n    - block:\n        - ansible.builtin.import_tasks: tasks/one.yml\n"
        "      rescue:\n        - ansible.builtin.import_tasks: tasks/two.yml\n")
    monkeypatch.setattr(sys.modules[__name__], "PLAYBOOKS", str(tmp_path))
    files, entries = walk("p.yml")
    names = [os.path.basename(f) for f in files]
    assert names == ["p.yml", "v.yml", "one.yml", "two.yml", "main.yml"], files
    assert entries == ["roles/eccl_env/tasks/preflight.yml"]
