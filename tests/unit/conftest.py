"""Make gcu.topsrider importable from the checkout (as ansible_collections.gcu.topsrider)."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import gpg_keys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
COLLECTIONS = os.path.join(TOP, ".cache", "collections")
LINK = os.path.join(COLLECTIONS, "ansible_collections", "gcu", "topsrider")

if not os.path.exists(LINK):
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    os.symlink(os.path.relpath(TOP, os.path.dirname(LINK)), LINK)
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)

FIXTURES = os.path.join(TOP, "tests", "unit", "fixtures")


# TOPSRIDER_UNITS=ansible-core (make units-2.21): only the test files that
# drive ansible-core, where a second ansible-core can behave differently: a
# playbook run (run_play, run_cases, stock_env, an ansible-* command), a module's
# argument handling, an action, filter, callback or lookup plugin, code that
# imports ansible. The rest (the simulator, the exporter, the node-side
# scripts, pure module_utils, docs and rules) runs once, on make units.
# A file that reaches ansible-core only through another test file's helper
# says so with `pytestmark = pytest.mark.ansible_core`.
DRIVES_ANSIBLE_CORE = re.compile(
    r"^\s*(?:from|import)\s+ansible(?:\.|\s|$)|\brun_(?:play|cases)\(|\bstock_env\("
    r"|ansible-(?:playbook|galaxy|doc|inventory|test|config|lint)\b"
    r"|plugins\.(?:modules|action|filter|callback|lookup|inventory|test|plugin_utils)\b"
    r"|^\s*(?:from\s+utils\s+import|import\s+utils\b)|\bmark\.ansible_core\b", re.M)


def drives_ansible_core(path):
    with open(path) as f:
        return bool(DRIVES_ANSIBLE_CORE.search(f.read()))


def pytest_configure(config):
    config.addinivalue_line("markers", "ansible_core: the file drives ansible-core through another file's helper")


def pytest_collection_modifyitems(config, items):
    if os.environ.get("TOPSRIDER_UNITS") != "ansible-core":
        return
    seen = {}
    keep, drop = [], []
    for item in items:
        path = str(item.fspath)
        if path not in seen:
            seen[path] = drives_ansible_core(path)
        (keep if seen[path] else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def run_play(tmp_path, tasks, extra_vars=None, config=None, args=(), inventory=None, hosts="localhost"):
    """One play of `tasks` on localhost, by ansible-playbook with the checkout's
    collection and extra_vars as a JSON vars file; returns (rc, output).
    config: the ansible.cfg to use (default: the simulator's, sim/ansible.cfg;
    an empty .cfg file for Ansible's stock settings). args: more ansible-playbook
    arguments (--check). inventory: instead of localhost alone, an inventory
    of local hosts (local_inventory), and hosts: the play's hosts in it."""
    play = [{"hosts": hosts, "gather_facts": False, "tasks": tasks}]
    (tmp_path / "play.yml").write_text(json.dumps(play))
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory or "localhost,",
            "-c", "local", str(tmp_path / "play.yml")] + list(args)
    if extra_vars is not None:
        (tmp_path / "vars.json").write_text(json.dumps(extra_vars))
        argv += ["-e", "@" + str(tmp_path / "vars.json")]
    env = dict(os.environ, ANSIBLE_CONFIG=config or os.path.join(TOP, "sim", "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
               ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=str(tmp_path),
                          universal_newlines=True, timeout=120, check=False)
    return proc.returncode, proc.stdout


def local_inventory(tmp_path, hosts, group="all"):
    """run_play's inventory for a play on several hosts: `hosts` ({name: {var:
    value}}) on the local connection with this Python, in `group`; its path."""
    members = {name: dict(variables, ansible_connection="local", ansible_python_interpreter=sys.executable)
               for name, variables in hosts.items()}
    inventory = {"all": {"hosts": members}} if group == "all" else {"all": {"children": {group: {"hosts": members}}}}
    (tmp_path / "inventory.json").write_text(json.dumps(inventory))
    return str(tmp_path / "inventory.json")


def run_cases(tmp_path, role, cases):
    """The whole role once per case, in ONE play (one ansible-playbook start, not one a case): each
    case's variables are its include's vars, each run in a block whose rescue records the task that
    failed and its message. {case: {"failed": bool, "task": the failed task's name, "msg": its
    message}}, and the play's output."""
    tasks = [{"name": "No case ran yet", "ansible.builtin.set_fact": {"cases_seen": {}}}]
    for name, variables in cases:
        key = json.dumps(name)
        tasks.append({"name": "Case %s" % name, "block": [
            {"name": "Run the role (%s)" % name, "ansible.builtin.include_role": {"name": role}, "vars": variables},
            {"name": "It ran through (%s)" % name,
             "ansible.builtin.set_fact": {"cases_seen": "{{ cases_seen | combine({%s: {'failed': false}}) }}" % key}},
        ], "rescue": [
            {"name": "It was refused (%s)" % name, "ansible.builtin.set_fact": {"cases_seen": (
                "{{ cases_seen | combine({%s: {'failed': true, 'task': ansible_failed_task.name,"
                " 'msg': ansible_failed_result.msg | default('')}}) }}" % key)}},
        ]})
    tasks.append({"name": "Write what each case did", "ansible.builtin.copy": {
        "content": "{{ cases_seen | to_json }}", "dest": str(tmp_path / "cases.json"), "mode": "0644"}})
    rc, out = run_play(tmp_path, tasks)
    assert rc == 0, out
    seen = json.loads((tmp_path / "cases.json").read_text())
    assert sorted(seen) == sorted(name for name, _v in cases), out
    return seen, out


def load_script(relpath, name):
    """Import a controller script that is not a package module (scripts/bench/*.py)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, os.path.join(TOP, relpath))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_release(directory):
    """A release directory with one real .deb, as topsrider-manifest expects them."""
    pkg = directory.parent / "pkg"
    (pkg / "DEBIAN").mkdir(parents=True)
    (pkg / "DEBIAN" / "control").write_text(
        "Package: tops-sdk\nVersion: 9.9.9-1\nArchitecture: amd64\nMaintainer: test <test@example.invalid>\n"
        "Description: stand-in package for the tarball test\n")
    directory.mkdir()
    subprocess.run(["dpkg-deb", "--root-owner-group", "--build", str(pkg), str(directory / "tops-sdk_9.9.9-1_amd64.deb")],
                   check=True, stdout=subprocess.DEVNULL)


def galaxy_version():
    """The collection's version: galaxy.yml is the one place it is written."""
    import yaml
    with open(os.path.join(TOP, "galaxy.yml")) as f:
        return str(yaml.safe_load(f)["version"])


def stock_env(tmp):
    """This environment without ANSIBLE_* settings: an empty ansible.cfg and
    Ansible's state under tmp, the venv's tools first on PATH."""
    config = tmp / "empty.cfg"
    config.write_text("")
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith("ANSIBLE_"))
    env.update(PATH=os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""), ANSIBLE_CONFIG=str(config),
               ANSIBLE_COLLECTIONS_PATH=str(tmp / "collections"), ANSIBLE_HOME=str(tmp / "home"),
               ANSIBLE_LOCAL_TEMP=str(tmp / "ansible-tmp"), ANSIBLE_NOCOLOR="1")
    return env


@pytest.fixture(scope="session")
def collection_tarball(tmp_path_factory):
    """The tarball `ansible-galaxy collection build` makes of the checkout,
    built once per session (test_collection_tarball, test_execution_environment),
    from a copy of what git has (tracked files and new ones it does not ignore),
    as a clean clone builds it: the build walks every file under the directory,
    and make test's other jobs write under .cache and the venvs meanwhile."""
    tmp = tmp_path_factory.mktemp("build")
    checkout = tmp / "checkout"
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=TOP,
                           stdout=subprocess.PIPE, check=True).stdout.decode().split("\0")
    for name in names:
        if name and os.path.isfile(os.path.join(TOP, name)) and not os.path.islink(os.path.join(TOP, name)):
            os.makedirs(os.path.dirname(str(checkout / name)), exist_ok=True)
            shutil.copy2(os.path.join(TOP, name), str(checkout / name))
    proc = subprocess.run(["ansible-galaxy", "collection", "build", "--output-path", str(tmp / "dist"), str(checkout)],
                          cwd=str(tmp), env=stock_env(tmp), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout
    (tarball,) = list((tmp / "dist").iterdir())
    return tarball


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """Real OpenPGP keys for a test module (tests/unit/gpg_keys.py: the operators', others,
    an expired one), made in a temporary GNUPGHOME and closed after the module."""
    made = gpg_keys.make_keys(str(tmp_path_factory.mktemp("gpg")))
    yield made
    for key in made.values():
        key.close()
