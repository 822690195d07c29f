# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A newcomer follows a deploy from playbooks/deploy.yml through at most 18
files, one job each: the playbook, its two vars files (the release wanted,
the node's paths and settings), the run's id, the inputs' checks, the
re-probe of a host already at the release, the lock and the start, the
node's check of the revocation list, the quiesce (nobody uses the node),
the rollout and its last step, the prune (never what a rollback reads), the
three roles it calls, and the rescue's restore in two
files (what the snapshot puts back, decided before anything changes; then
putting it back and proving it), and the report (finish). The number is a
report of the walk, not a reason to merge two jobs into one file. The walk
is what deploy.yml names, followed statically: its vars files, the task
files it imports or includes (and those they name), and each role it
includes, counted once: a role is read through its documented interface
(meta/argument_specs.yml, its README section) and its tasks/main.yml; the
other entry points a deploy names (bundle_stage's offer, serve_stop and
prune, torch_gcu's preflight) are that role's own files, listed here too so
the number is never hidden. docs/architecture.md draws the same walk."""
import os
import subprocess
import sys

import yaml

from deploy_walk import PLAYBOOKS, TOP, _tasks_of, loaded, opened


def walk(playbook, playbooks=PLAYBOOKS):
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

    follow(os.path.join(playbooks, playbook), playbooks)
    return files, entries


def test_a_deploy_is_followed_through_at_most_18_files():
    files, entries = walk("deploy.yml")
    assert len(files) <= 18, "a deploy walks through %d files: %s" % (len(files), ", ".join(files))
    # The walk is the real one: every phase of the deploy is in it.
    for expected in ("playbooks/deploy.yml", "playbooks/vars/desired_state.yml", "playbooks/vars/node_paths.yml",
                     "playbooks/tasks/run_id.yml", "playbooks/tasks/at_release.yml", "playbooks/tasks/start.yml",
                     "playbooks/tasks/inputs.yml", "playbooks/tasks/quiesce.yml",
                     "playbooks/tasks/rollout.yml", "playbooks/tasks/prune.yml",
                     "playbooks/tasks/restore_plan.yml", "playbooks/tasks/restore.yml", "playbooks/tasks/finish.yml",
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
    files, entries = walk("p.yml", str(tmp_path))
    names = [os.path.basename(f) for f in files]
    assert names == ["p.yml", "v.yml", "one.yml", "two.yml", "main.yml"], files
    assert entries == ["roles/eccl_env/tasks/preflight.yml"]


# Every file a deploy loads, counted the honest way (deploy_walk.loaded; the
# installed test checks it against the files two real deploys open).
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
# Still 97 on the same code (2026-11-27) once real deploys were traced
# (tests/installed/run.py), with other files: the fleet report's two callback
# plugins, loaded by every run of the playbooks, and meta/runtime.yml had not
# been counted (+3); the argument specs of bundle_stage, tops_sdk and
# torch_gcu had, though no include of a deploy validates them
# (rolespec_validate: false) and nothing else reads them (-3).
# 98: module_utils/_pep440.py, where a node's version rules find packaging
# (packaging decides, not a hand-written comparison); its own file, since
# _wheel (pip's --dry-run) and _manifest use it for versions other than torch's.
# 100: filter/monitoring.py and plugin_utils/_monitoring.py (the file_sd
# targets of monitoring_targets.yml): ansible-core imports every filter file of
# the collection to find one filter, so a deploy loads them too.
# 102: tasks/node_revocations.yml and modules/topsrider_revocations_seen.py
# (issue 48: the node refuses a revocation list older than its newest, before
# a deploy or rollback changes anything).
# 103: plugin_utils/_deploy_plan.py (issue 50: the rollout's preflight refusal,
# snapshot decision and report line in tested Python, not Jinja).
# 104: tasks/restore_plan.yml (the rescue's restore decided, from one read of
# its records, before anything changes; tasks/restore.yml acts on it).
# 105: tasks/prune.yml (the rollout's last step in a file of its own, run by a
# unit on a cache of five versions).
# The test keeps the count from rising unnoticed.
DEPLOY_LOADS = 105


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
                     "plugins/callback/fleet_report.py", "playbooks/callback_plugins/topsrider_fleet_report.py",
                     "meta/runtime.yml",
                     "roles/bundle_stage/tasks/offer.yml", "plugins/action/topsrider_reports.py",
                     "roles/bundle_stage/files/bundle_serve.py", "roles/eccl_env/templates/topsrider.sh.j2"):
        assert any(expected in v for v in kinds.values()), (expected, listing)


def test_the_trace_notes_the_collection_files_a_process_opens(tmp_path):
    """tests/installed/trace/sitecustomize.py, which the installed test puts on a deploy's PYTHONPATH:
    every file under the root that the process (and what it imports) opens, and nothing outside it."""
    log = tmp_path / "opened"
    script = ("import json\nopen(%r).read()\nopen(%r).read()\n"
              "import ansible_collections.gcu.topsrider.plugins.module_utils._values\n"
              % (os.path.join(TOP, "meta", "runtime.yml"), os.path.join(TOP, "galaxy.yml")))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(TOP, "tests", "installed", "trace"),
                                                       os.path.join(TOP, ".cache", "collections")]),
               TOPSRIDER_TRACE_ROOT=os.path.join(TOP, "plugins"), TOPSRIDER_TRACE_LOG=str(log))
    subprocess.run([sys.executable, "-c", script], env=env, check=True, cwd=str(tmp_path))
    # An import opens the compiled file where there is one, the source where not: both read as the source.
    files = opened(str(log), os.path.join(TOP, "plugins"))
    assert "module_utils/_values.py" in files, files
    assert all(path.startswith("module_utils/") for path in files), files
    assert all(line.startswith("module_utils/") for line in log.read_text().split()), log.read_text()
