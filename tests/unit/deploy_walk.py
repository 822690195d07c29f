# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every file a run of one of the collection's playbooks loads, counted the
honest way (issue 29), read from the files themselves: the playbook files and
every task file they reach (each role entry point its own file), each role's
data files (defaults, vars, meta, handlers, the templates and files its tasks
name, its argument spec where an include validates it or a helper reads it),
the controller helper scripts the playbooks run, the modules and action
plugins the tasks call, the filter plugins their templates use, the callback
plugins every run of the playbooks loads, the collection's meta/runtime.yml,
and every module_utils / plugin_utils file those import.

Every path of a run is counted (a failure's restore, a prune, Slurm), so the
count is the most a run can load. tests/unit/test_deploy_walk.py keeps
it from rising; tests/installed/run.py traces the files real deploys of the
installed collection open and fails when one is not in this count.
No pytest here: the installed test imports it."""
import os
import re

import yaml

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
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


# A Python helper's path to a role's argument spec: os.path.join(..., "roles", NAME, "meta", "argument_specs.yml").
ROLE_SPEC_READ = re.compile(r"""["']roles["'],\s*["'](\w+)["'],\s*["']meta["'],\s*["']argument_specs\.yml["']""")
# The kind a Python file of the collection counts as, by its drawer.
DRAWER_KIND = {"module_utils": "module_utils", "plugin_utils": "plugin_utils", "action": "modules and actions",
               "callback": "callbacks"}
DRAWERS = "|".join(DRAWER_KIND)


def _python_deps(rel):
    """The collection's Python files a plugin file imports (helpers, and the action
    or callback plugins it builds on), transitively."""
    seen, todo = [], [rel]
    while todo:
        path = todo.pop()
        with open(os.path.join(TOP, path)) as f:
            text = f.read()
        for drawer, name in re.findall(r"topsrider\.plugins\.(%s)\.(\w+) import" % DRAWERS, text) + [
                (d, n.strip()) for d, names in re.findall(r"topsrider\.plugins\.(%s) import ([\w, ]+)" % DRAWERS, text)
                for n in names.split(",")]:
            dep = "plugins/%s/%s.py" % (drawer, name)
            if dep not in seen:
                seen.append(dep)
                todo.append(dep)
    return seen


def loaded(playbook):
    """Every file (relative to the collection) that a run of `playbook` loads, by kind."""
    kinds = {"playbooks and task files": [], "role data": [], "controller scripts": [], "modules and actions": [],
             "filters": [], "callbacks": [], "collection metadata": [], "module_utils": [], "plugin_utils": []}
    filters = _filter_files()
    roles_seen = []

    def add(kind, rel):
        if rel not in kinds[kind] and os.path.exists(os.path.join(TOP, rel)):
            kinds[kind].append(rel)
            return True
        return False

    def role(name, entry, validate):
        # A role's argument spec is read to validate an include (rolespec_validate, true by default).
        if validate:
            add("role data", "roles/%s/meta/argument_specs.yml" % name)
        if name not in roles_seen:
            roles_seen.append(name)
            for data in ("defaults/main.yml", "vars/main.yml", "meta/main.yml", "handlers/main.yml"):
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
                    role(task[key]["name"].rsplit(".", 1)[-1], task[key].get("tasks_from", "main"),
                         task[key].get("rolespec_validate", True) is not False)
            if role_name:
                for key in ("ansible.builtin.template", "ansible.builtin.copy"):
                    src = (task.get(key) or {}).get("src") if isinstance(task.get(key), dict) else None
                    if src and "{{" not in src:
                        sub = "templates" if key.endswith("template") else "files"
                        add("role data", "roles/%s/%s/%s" % (role_name, sub, src))

    follow(os.path.join(PLAYBOOKS, playbook), None)
    # Ansible loads the callback plugins beside a playbook for every run of it
    # (playbooks/callback_plugins: the fleet report's, enabled by itself).
    adjacent = os.path.join(os.path.dirname(os.path.join(PLAYBOOKS, playbook)), "callback_plugins")
    for name in sorted(os.listdir(adjacent)) if os.path.isdir(adjacent) else []:
        if name.endswith(".py"):
            add("callbacks", os.path.relpath(os.path.join(adjacent, name), TOP))
    # ansible-core reads a collection's meta/runtime.yml for every plugin it finds there.
    add("collection metadata", "meta/runtime.yml")
    for plugin in (kinds["modules and actions"] + kinds["filters"] + kinds["callbacks"] + kinds["module_utils"]
                   + kinds["plugin_utils"]):
        for dep in _python_deps(plugin):
            add(DRAWER_KIND[dep.split("/")[1]], dep)
    # A role's argument spec that a Python helper reads (plugin_utils/_eccl_settings.py reads eccl_env's).
    for helper in kinds["module_utils"] + kinds["plugin_utils"]:
        with open(os.path.join(TOP, helper)) as f:
            for name in ROLE_SPEC_READ.findall(f.read()):
                add("role data", "roles/%s/meta/argument_specs.yml" % name)
    return kinds


PYC = re.compile(r"__pycache__/(\w+)\.cpython-\d+\.pyc$")


def opened(trace_log, root):
    """The files under `root` that a run traced by tests/installed/trace/sitecustomize.py opened, by
    their paths under it (a compiled module as its source); none when nothing was traced."""
    files = set()
    if not os.path.exists(trace_log):
        return files
    with open(trace_log) as f:
        for line in f:
            path = PYC.sub(r"\1.py", line.strip())
            if os.path.isfile(os.path.join(root, path)):
                files.add(path)
    return files
