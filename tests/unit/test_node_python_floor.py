"""The node Python floor: the floor of the module code of the ansible-core that
runs the play (README, support matrix): 3.8 on 2.19, 3.9 on 2.20 and later
(make units-2.21). Module code is checked statically with vermin for 3.8 (the
collection's own floor, 2.19's), the read-only modules run on a real CPython
at the running core's floor, and an older node (3.6, 3.7, and 3.8 on 2.21) is
refused by playbooks/tasks/inputs.yml (its python check) with `raw`, before
any module is sent."""
import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import TOP, build_release

from ansible.release import __version__ as ANSIBLE_CORE

NODE_SIDE = [os.path.join(TOP, "plugins", "modules"), os.path.join(TOP, "plugins", "module_utils")]
# The collection's module code: 3.8, what ansible-core 2.19 runs on.
CODE_FLOOR = "3.8"
# The running ansible-core's: 2.20 and later need 3.9 on the node.
FLOOR = "3.9" if tuple(int(n) for n in ANSIBLE_CORE.split(".")[:2]) >= (2, 20) else "3.8"
OLDER = [v for v in ("3.6", "3.7", "3.8") if v < FLOOR]
BIN = os.path.dirname(sys.executable)


def find_python(version):
    """A real CPython `version` on this machine (PATH, then pyenv's versions, as the machine has them)."""
    found = shutil.which("python" + version)
    candidates = ([found] if found else []) + sorted(
        glob.glob(os.path.expanduser("~/.pyenv/versions/%s.*/bin/python%s" % (version, version))))
    for path in candidates:
        proc = subprocess.run([path, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True, check=False)
        if proc.returncode == 0 and proc.stdout.strip() == version:
            return path
    raise AssertionError("this test needs a CPython %s interpreter (python%s on PATH or ~/.pyenv/versions/%s.*)"
                         % (version, version, version))


def ansible_env(tmp_path):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(TOP, "sim", "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    return env


def test_module_code_needs_at_most_the_floor():
    files = [os.path.join(d, f) for d in NODE_SIDE if os.path.isdir(d)
             for f in sorted(os.listdir(d)) if f.endswith(".py")]
    assert files, "no module code found"
    proc = subprocess.run(
        [os.path.join(BIN, "vermin"), "--target=%s-" % CODE_FLOOR, "--violations", "--no-tips",
         "--eval-annotations", "--backport", "typing"] + files,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert proc.returncode == 0, "code that Python %s cannot run:\n%s" % (CODE_FLOOR, proc.stdout)


READ_ONLY = (
    ("gcu.topsrider.topsrider_state", {}, None),
    ("gcu.topsrider.eccl_probe", {"level": "library", "fail_on_problem": False}, None),
    # Every deploy and rollback runs it on the node (no record here: nothing seen, no list given).
    ("gcu.topsrider.topsrider_revocations_seen", {"path": "{tmp}/revocations-seen.json"}, None),
    # last: its own failure ends the play
    ("gcu.topsrider.gcu_devices", {}, "neither efsmi nor nvidia-smi found"))


def test_the_read_only_modules_run_on_a_real_python_at_the_floor(tmp_path):
    python = find_python(FLOOR)
    # This machine has no cards and no TopsRider: gcu_devices says so with its own message (it ran);
    # the others succeed. Either way no traceback, no deserialization failure, no SyntaxError.
    # One play, a task a module, each module's own result read from the json callback.
    tasks = [{"name": module, module: dict((k, v.replace("{tmp}", str(tmp_path)) if isinstance(v, str) else v)
                                           for k, v in args.items())}
             for module, args, _own in READ_ONLY]
    playbook = tmp_path / "read-only.yml"
    playbook.write_text(json.dumps([{"hosts": "all", "gather_facts": False, "tasks": tasks}]))
    proc = subprocess.run(
        [os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", "-c", "local", str(playbook),
         "-e", "ansible_python_interpreter=%s" % python],
        env=ansible_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
        timeout=300, check=False)
    ran = json.loads(proc.stdout)["plays"][0]["tasks"]
    assert [t["task"]["name"] for t in ran] == [m for m, _a, _o in READ_ONLY], proc.stdout
    for (module, _args, own_failure), task in zip(READ_ONLY, ran):
        result = task["hosts"]["localhost"]
        assert "module_stderr" not in result, (module, result)
        if own_failure:
            assert result.get("failed") and result["msg"].startswith(own_failure), (module, result)
        else:
            assert not result.get("failed"), (module, result)


@pytest.fixture(scope="module")
def python_checks(tmp_path_factory):
    """The inputs' python check and a module after it, in one play on one local host per node Python:
    each older one, a missing one and the floor's. {host: (python, its check's result, whether the
    module after the check ran)}, and the play's whole output."""
    tmp = tmp_path_factory.mktemp("python-floor")
    pythons = dict(("py" + v.replace(".", ""), find_python(v)) for v in OLDER)
    pythons.update(missing="/nonexistent/python3", floor=find_python(FLOOR))
    inventory = tmp / "inventory.json"
    inventory.write_text(json.dumps({"all": {"hosts": dict(
        (host, {"ansible_connection": "local", "ansible_python_interpreter": python})
        for host, python in pythons.items())}}))
    playbook = tmp / "check.yml"
    playbook.write_text(
        "- hosts: all\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.import_tasks: %s\n      vars:\n        inputs_checks: [python]\n"
        "    - ansible.builtin.file:\n        path: %s/module-ran-{{ inventory_hostname }}\n        state: touch\n"
        "        mode: '0644'\n" % (os.path.join(TOP, "playbooks", "tasks", "inputs.yml"), tmp))
    proc = subprocess.run(
        [os.path.join(BIN, "ansible-playbook"), "-i", str(inventory), str(playbook)],
        env=ansible_env(tmp), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
        timeout=300, check=False)
    tasks = json.loads(proc.stdout)["plays"][0]["tasks"]
    check = [t for t in tasks if t["task"]["name"].startswith("Inputs | ")]
    assert len(check) == 1, proc.stdout
    return proc, dict((host, (python, check[0]["hosts"][host], (tmp / ("module-ran-" + host)).exists()))
                      for host, python in pythons.items())


def test_an_older_node_python_is_refused_before_any_module_is_sent(python_checks):
    proc, hosts = python_checks
    assert proc.returncode != 0, proc.stdout
    for version in OLDER:
        python, result, module_ran = hosts["py" + version.replace(".", "")]
        assert result.get("failed"), result
        assert not module_ran, "a module ran after the refusal"
        assert "the node's Python %s is %s." % (python, version) in result["msg"], result
        assert "needs Python %s or newer" % FLOOR in result["msg"], result


def test_a_missing_node_python_is_refused_and_the_floor_passes(python_checks):
    _proc, hosts = python_checks
    _python, result, module_ran = hosts["missing"]
    assert result.get("failed") and not module_ran, result
    assert "could not be run (none of /nonexistent/python3 runs)" in result["msg"], result
    _python, result, module_ran = hosts["floor"]
    assert not result.get("failed") and module_ran, result


def test_the_code_that_runs_in_the_training_python_compiles_on_python_3_6():
    """The training Python is not the node Python: the 2.5.136 release's torch_gcu wheels are
    built for 3.6 and 3.8, so what runs there (the eccl_probe child scripts, the topsrider_state
    Python probe, the collective rank file) must still compile on a real CPython 3.6."""
    sys.path.insert(0, os.path.join(TOP, "plugins", "module_utils"))
    try:
        import _eccl_children
        import _state
    finally:
        sys.path.pop(0)
    sources = {"_eccl_children.LIBRARY_SCRIPT": _eccl_children.LIBRARY_SCRIPT,
               "_eccl_children.FRAMEWORK_SCRIPT": _eccl_children.FRAMEWORK_SCRIPT,
               "_state.PYTHON_PROBE": _state.PYTHON_PROBE}
    with open(os.path.join(TOP, "plugins", "module_utils", "_collective_rank.py")) as f:
        sources["_collective_rank.py"] = f.read()
    python = find_python("3.6")
    for name, source in sorted(sources.items()):
        proc = subprocess.run([python, "-c", "import sys; compile(sys.stdin.read(), %r, 'exec')" % name],
                              input=source, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, check=False)
        assert proc.returncode == 0, "%s does not compile on Python 3.6:\n%s" % (name, proc.stdout)


def test_deploy_refuses_a_python_3_6_node_before_anything_is_sent(tmp_path):
    """The real deploy.yml against a node whose Python is a real 3.6 (this machine, over the local
    connection, under another inventory name so that the controller's own tasks keep the
    controller's Python): refused in preflight with the message, reported, nothing sent."""
    python = find_python("3.6")
    release = tmp_path / "release"
    build_release(release)
    inventory = tmp_path / "inventory"
    inventory.write_text("node36 ansible_connection=local ansible_python_interpreter=%s\n" % python)
    proc = subprocess.run(
        [os.path.join(BIN, "ansible-playbook"), "-i", str(inventory), os.path.join(TOP, "playbooks", "deploy.yml"),
         "-e", "topsrider_hosts=node36", "-e", "topsrider_bundle_dir=%s" % release,
         "-e", "topsrider_reports_dir=%s" % (tmp_path / "reports")],
        env=dict(ansible_env(tmp_path), ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default"), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, universal_newlines=True, timeout=300, check=False)
    assert proc.returncode == 2, proc.stdout
    assert ("refused, nothing was changed: the node's Python %s is 3.6" % python) in proc.stdout, proc.stdout
    assert "SyntaxError" not in proc.stdout
    with open(str(tmp_path / "reports" / "deploy-latest.json")) as f:
        report = json.load(f)
    (line,) = [h for h in report["hosts"] if h["host"] == "node36"]
    assert line["result"] == "failed" and "needs Python %s or newer" % FLOOR in line["detail"], report
