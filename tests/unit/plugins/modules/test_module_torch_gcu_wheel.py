# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gcu.topsrider.torch_gcu_wheel against a real interpreter and pip of a test
environment (two small Python scripts run as real processes): the probe reads
what the fake pip installed, `import torch_gcu` fails where the environment
says so. The refusals change nothing; a no-change re-run runs no pip; check
mode installs and records nothing."""
import hashlib
import json
import os
import sys

import pytest

from ansible.module_utils import basic
from ansible_collections.gcu.topsrider.plugins.module_utils import _pep440
from ansible_collections.gcu.topsrider.plugins.modules import torch_gcu_wheel

from utils import AnsibleExitJson, AnsibleFailJson, exit_json, fail_json, set_module_args

# The training interpreter: answers the collection's probe from env.json and
# imports torch_gcu when env.json says it is installed and importable.
FAKE_PYTHON = r'''#!%(python)s
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
env = json.load(open(os.path.join(here, "env.json")))
code = sys.argv[2] if len(sys.argv) > 2 and sys.argv[1] == "-c" else ""
if code == "import torch_gcu":
    if env.get("torch_gcu") is None:
        sys.exit("ModuleNotFoundError: No module named 'torch_gcu'")
    if env.get("import_error"):
        sys.exit(env["import_error"])
    sys.exit(0)
if "importlib" in code:
    print(json.dumps({"python": env["python"], "executable": __file__, "torch": env.get("torch"),
                      "torch_gcu": env.get("torch_gcu"), "pip": env.get("pip")}))
    sys.exit(0)
sys.exit("unexpected: %%r" %% sys.argv)
'''

# That environment's pip: logs its argv; `install WHEEL` sets torch_gcu to the
# wheel's version (unless --dry-run), as pip prints it.
FAKE_PIP = r'''#!%(python)s
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "pip.log"), "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\n")
assert os.environ.get("PIP_NO_INDEX") == "1" and os.environ.get("LC_ALL") == "C"
args = sys.argv[1:]
path = os.path.join(here, "env.json")
if args[0] == "uninstall":
    env = json.load(open(path))
    gone, env["torch_gcu"] = env["torch_gcu"], None
    json.dump(env, open(path, "w"))
    print("Successfully uninstalled torch_gcu-%%s" %% gone)
    sys.exit(0)
wheel = args[-1]
if wheel.startswith("torch_gcu=="):
    links = args[args.index("--find-links") + 1] if "--find-links" in args else ""
    found = [f for f in (os.listdir(links) if os.path.isdir(links) else []) if f.endswith(".whl") and f.split("-")[1] == wheel[11:]]
    if not found:
        sys.exit("ERROR: Could not find a version that satisfies the requirement %%s" %% wheel)
    wheel = os.path.join(links, found[0])
elif wheel.startswith("file://"):
    wheel = wheel[len("file://"):]
if not os.path.isfile(wheel):
    sys.exit("ERROR: Could not install packages: No such file or directory: %%r" %% wheel)
version = os.path.basename(wheel).split("-")[1]
if "--dry-run" in sys.argv:
    print("Would install torch_gcu-" + version)
    sys.exit(0)
env = json.load(open(path))
env["torch_gcu"] = version
json.dump(env, open(path, "w"))
# the package's files, created as pip creates them: their mode is the umask's
package = os.path.join(here, "site-packages", "torch_gcu")
os.makedirs(package, exist_ok=True)
with open(os.path.join(package, "__init__.py"), "w") as f:
    f.write("__version__ = %%r\n" %% version)
print("Successfully installed torch_gcu-" + version)
'''

WHEEL_BYTES = b"wheel"
WHEEL_311 = {"file": "torch_gcu-2.13.0+2.5.136-py311-none-any.whl", "type": "wheel", "package": "torch_gcu",
             "version": "2.13.0+2.5.136", "python": "3.11", "requires_torch": "2.13.0",
             "sha256": hashlib.sha256(WHEEL_BYTES).hexdigest()}
WHEEL_310 = dict(WHEEL_311, file="torch_gcu-2.13.0+2.5.136-py310-none-any.whl", python="3.10")


@pytest.fixture
def node(tmp_path, monkeypatch):
    """A training venv, a staged bundle and a state file path, all under tmp_path."""
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    for name, text in (("python", FAKE_PYTHON), ("pip3", FAKE_PIP)):
        (venv / name).write_text(text % {"python": sys.executable})
        os.chmod(str(venv / name), 0o755)
    bundle = tmp_path / "cache" / "2.5.136"
    bundle.mkdir(parents=True)
    (bundle / WHEEL_311["file"]).write_bytes(WHEEL_BYTES)

    class Node(object):
        python = str(venv / "python")
        bundle_path = str(bundle)
        state_file = str(tmp_path / "state" / "torch_gcu.json")

        @staticmethod
        def env(**values):
            data = dict({"python": "3.11", "torch": "2.13.0+cpu", "torch_gcu": None, "pip": "23.0.1"}, **values)
            (venv / "env.json").write_text(json.dumps(data))

        @staticmethod
        def installed():
            return json.loads((venv / "env.json").read_text())["torch_gcu"]

        @staticmethod
        def pip_calls():
            log = venv / "pip.log"
            return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

        @staticmethod
        def manifest(*wheels):
            (bundle / "manifest.json").write_text(json.dumps({"format": 1, "version": "2.5.136", "files": list(wheels)}))

        def run(self, check_mode=False, **args):
            base = {"python": self.python, "state_file": self.state_file}
            if args.get("state") not in ("restored", "absent"):
                base["bundle_path"] = self.bundle_path
            args = dict(base, **args)
            if check_mode:
                args["_ansible_check_mode"] = True
            with set_module_args(args):
                try:
                    torch_gcu_wheel.main()
                except (AnsibleExitJson, AnsibleFailJson) as e:
                    return e.args[0]
            raise AssertionError("the module neither exited nor failed")

    n = Node()
    n.env()
    n.manifest(WHEEL_311, WHEEL_310)
    return n


def test_installs_records_and_proves_then_a_rerun_changes_nothing(node):
    result = node.run()
    assert not result.get("failed"), result["msg"]
    assert result["changed"] is True and result["needs_change"] is True and result["previous"] is None
    assert result["wheel"]["file"] == WHEEL_311["file"] and node.installed() == "2.13.0+2.5.136"
    assert node.pip_calls() == [["install", "--no-index", "--no-deps",
                                 os.path.join(node.bundle_path, WHEEL_311["file"])]]
    with open(node.state_file) as f:
        record = json.load(f)
    assert record == {"python": node.python, "previous": {"version": None, "wheel": None},
                      "current": {"version": "2.13.0+2.5.136",
                                  "wheel": os.path.join(node.bundle_path, WHEEL_311["file"])}}
    assert oct(os.stat(node.state_file).st_mode & 0o777) == oct(0o600)
    assert oct(os.stat(os.path.dirname(node.state_file)).st_mode & 0o777) == oct(0o700)

    again = node.run()
    assert not again.get("failed") and again["changed"] is False and again["needs_change"] is False
    assert len(node.pip_calls()) == 1, "a no-change re-run ran pip"


def test_pip_runs_under_umask_022_whatever_the_callers(node, tmp_path):
    """A login umask of 0000 leaves no world-writable file in the training venv."""
    old = os.umask(0)
    try:
        result = node.run()
    finally:
        os.umask(old)
    assert not result.get("failed"), result["msg"]
    site = tmp_path / "venv" / "bin" / "site-packages"
    written = [site / "torch_gcu", site / "torch_gcu" / "__init__.py"]
    assert all(p.exists() for p in written)
    assert {str(p): oct(os.stat(str(p)).st_mode & 0o777) for p in written} == {
        str(site / "torch_gcu"): oct(0o755), str(site / "torch_gcu" / "__init__.py"): oct(0o644)}


def test_an_upgrade_records_the_wheel_the_previous_version_came_from(node):
    node.run()
    newer = dict(WHEEL_311, file="torch_gcu-2.13.0+2.5.140-py311-none-any.whl", version="2.13.0+2.5.140")
    with open(os.path.join(node.bundle_path, newer["file"]), "wb") as f:
        f.write(WHEEL_BYTES)
    node.manifest(newer)
    result = node.run()
    assert result["changed"] and result["previous"] == "2.13.0+2.5.136" and node.installed() == "2.13.0+2.5.140"
    with open(node.state_file) as f:
        record = json.load(f)
    assert record["previous"] == {"version": "2.13.0+2.5.136",
                                  "wheel": os.path.join(node.bundle_path, WHEEL_311["file"])}


@pytest.mark.parametrize("case,setup,args,words", [
    ("no wheel for the Python", lambda n: n.manifest(WHEEL_310), {},
     ["no torch_gcu wheel for Python 3.11", "wheels for Python 3.10", "nothing was changed"]),
    ("another torch", lambda n: n.manifest(dict(WHEEL_311, requires_torch="2.3.0")), {},
     ["needs torch==2.3.0", "torch 2.13.0+cpu", "this role never installs or removes torch"]),
    ("no torch", lambda n: n.env(torch=None), {}, ["needs torch==2.13.0", "has no torch"]),
    ("a pre-release is not its release", lambda n: (n.env(torch="1.7.0a0"),
                                                    n.manifest(dict(WHEEL_311, requires_torch="1.7.0"))), {},
     ["needs torch==1.7.0", "torch 1.7.0a0"]),
    ("another local label", lambda n: (n.env(torch="2.13.0+cu121"),
                                       n.manifest(dict(WHEEL_311, requires_torch="2.13.0+cpu"))), {},
     ["needs torch==2.13.0+cpu", "torch 2.13.0+cu121"]),
    ("a post-release is not its release", lambda n: n.env(torch="2.13.0.post1"), {},
     ["needs torch==2.13.0", "torch 2.13.0.post1"]),
    ("missing interpreter", lambda n: None, {"python": "/opt/venvs/missing/bin/python"},
     ["/opt/venvs/missing/bin/python does not exist", "Set torch_gcu_python"]),
    ("missing pip", lambda n: None, {"pip": "/nonexistent/pip3"}, ["/nonexistent/pip3 does not exist"]),
    ("relative path", lambda n: None, {"state_file": "torch_gcu.json"}, ["must be absolute node paths"]),
    ("not staged", lambda n: os.unlink(os.path.join(n.bundle_path, "manifest.json")), {},
     ["manifest.json does not exist on this node", "torch_gcu_manifest"]),
    ("a wheel name that is a path", lambda n: n.manifest(dict(WHEEL_311, file="../x.whl")), {},
     ["no torch_gcu wheel for Python 3.11"]),
])
@pytest.mark.parametrize("state", ["checked", "present"])
def test_refusals_name_the_problem_and_change_nothing(node, case, setup, args, words, state):
    setup(node)
    result = node.run(state=state, **args)
    assert result.get("failed"), case
    for word in words:
        assert word in result["msg"], (case, result["msg"])
    assert node.installed() is None and node.pip_calls() == [] and not os.path.exists(node.state_file)


@pytest.mark.parametrize("state", ["checked", "present"])
def test_a_node_python_without_packaging_is_refused_naming_why(node, monkeypatch, state):
    def none():
        raise _pep440.NoPackagingError("the version rules need PEP 440's packaging library, and the node's Python "
                                       "/usr/bin/python3 (3.11.2) has none")
    monkeypatch.setattr(_pep440, "packaging_source", none)
    result = node.run(state=state)
    assert result.get("failed") and result["msg"].startswith(
        "torch_gcu: the version rules need PEP 440's packaging library, and the node's Python /usr/bin/python3"), result
    assert node.installed() is None and node.pip_calls() == [] and not os.path.exists(node.state_file)


def test_a_pre_release_torch_matches_the_wheel_built_for_it(node):
    node.env(torch="1.7.0a0", python="3.9")
    node.manifest(dict(WHEEL_311, python="3.9", requires_torch="1.7.0a0"))
    assert not node.run(state="checked").get("failed")


def test_the_manifest_given_wins_over_none_staged(node):
    os.unlink(os.path.join(node.bundle_path, "manifest.json"))
    result = node.run(state="checked", manifest={"version": "2.5.136", "files": [WHEEL_311]})
    assert not result.get("failed") and result["wheel"]["python"] == "3.11" and result["needs_change"] is True


def test_check_mode_runs_pip_dry_run_and_changes_nothing(node):
    result = node.run(check_mode=True)
    assert result["changed"] is True and "pip would install" in result["msg"]
    assert node.pip_calls()[0][:4] == ["install", "--no-index", "--no-deps", "--dry-run"]
    assert node.installed() is None and not os.path.exists(os.path.dirname(node.state_file))


@pytest.mark.parametrize("pip,staged,words", [
    ("20.3.4", True, "pip 20.3.4 has no --dry-run"),
    ("23.0.1", False, "is not staged on this node yet"),
])
def test_check_mode_says_what_pip_cannot_predict(node, pip, staged, words):
    node.env(pip=pip)
    if not staged:
        os.unlink(os.path.join(node.bundle_path, WHEEL_311["file"]))
    result = node.run(check_mode=True)
    assert result["changed"] is True and words in result["msg"] and "pip cannot predict" in result["msg"]
    assert node.pip_calls() == [] and node.installed() is None


def test_an_unreadable_state_file_is_refused_before_pip_runs(node):
    os.makedirs(os.path.dirname(node.state_file))
    with open(node.state_file, "w") as f:
        f.write("{not json")
    result = node.run()
    assert result.get("failed") and "not readable JSON" in result["msg"] and "Move it aside" in result["msg"]
    assert node.pip_calls() == [] and node.installed() is None
    with open(node.state_file) as f:
        assert f.read() == "{not json"


def test_an_import_that_fails_after_the_install_is_named_with_the_hint(node):
    node.env(import_error="ImportError: libeccl.so: cannot open shared object file")
    result = node.run()
    assert result.get("failed")
    assert "'import torch_gcu' in %s failed (rc=1): ImportError: libeccl.so" % node.python in result["msg"]
    assert "run the tops_sdk and eccl_env roles first" in result["msg"]
    # installed, and the record says what to go back to
    with open(node.state_file) as f:
        assert json.load(f)["previous"]["version"] is None


@pytest.mark.parametrize("check_mode", [False, True])
def test_a_staged_wheel_that_is_not_the_manifests_is_refused_before_anything(node, check_mode):
    with open(os.path.join(node.bundle_path, WHEEL_311["file"]), "wb") as f:
        f.write(b"corrupt")
    result = node.run(check_mode=check_mode)
    assert result.get("failed") and "does not match the manifest" in result["msg"]
    assert "nothing was changed" in result["msg"] and hashlib.sha256(b"corrupt").hexdigest() in result["msg"]
    assert node.pip_calls() == [] and node.installed() is None and not os.path.exists(node.state_file)


def test_a_wheel_that_is_not_staged_is_refused_before_anything(node):
    os.unlink(os.path.join(node.bundle_path, WHEEL_311["file"]))
    result = node.run()
    assert result.get("failed") and "cannot read the staged wheel" in result["msg"]
    assert node.pip_calls() == [] and not os.path.exists(node.state_file)


def test_a_failed_pip_fails_with_its_output_and_keeps_the_record(node):
    # this pip fails as a full disk makes it fail
    fake_pip = os.path.join(os.path.dirname(node.python), "pip3")
    with open(fake_pip) as f:
        text = f.read()
    with open(fake_pip, "w") as f:
        f.write(text.replace("if \"--dry-run\" in sys.argv:", "sys.exit('ERROR: No space left on device')\nif 0:"))
    result = node.run()
    assert result.get("failed") and "failed (rc=1)" in result["msg"] and "No space left" in result["msg"]
    assert node.installed() is None and os.path.exists(node.state_file)


# ---- state=restored and state=absent: what restore.yml puts back --------------
OLD, NEW = "2.13.0+2.5.136", "2.13.0+2.5.140"


def record_of(node):
    with open(node.state_file) as f:
        return json.load(f)


def test_restored_from_the_cache_puts_the_version_back_records_it_and_a_rerun_changes_nothing(node):
    node.env(torch_gcu=NEW)
    result = node.run(state="restored", version=OLD, find_links=node.bundle_path)
    assert not result.get("failed"), result["msg"]
    assert result["changed"] is True and result["previous"] == NEW and result["version"] == OLD
    assert node.installed() == OLD
    assert node.pip_calls() == [["install", "--no-index", "--no-deps", "--find-links", node.bundle_path,
                                 "torch_gcu==" + OLD]]
    assert record_of(node) == {"python": node.python, "previous": {"version": NEW, "wheel": None},
                               "current": {"version": OLD, "wheel": None}}
    again = node.run(state="restored", version=OLD, find_links=node.bundle_path)
    assert again["changed"] is False and len(node.pip_calls()) == 1


def test_restored_from_the_file_it_came_from(node):
    node.env(torch_gcu=NEW)
    url = "file://" + os.path.join(node.bundle_path, WHEEL_311["file"])
    result = node.run(state="restored", version=OLD, wheel=url, find_links=node.bundle_path)
    assert result["changed"] is True and node.installed() == OLD
    assert node.pip_calls()[-1][-1] == url and record_of(node)["current"] == {"version": OLD, "wheel": url}


@pytest.mark.parametrize("state, version", [("restored", ""), ("restored", None), ("absent", None)])
def test_none_as_before_uninstalls_and_a_rerun_changes_nothing(node, state, version):
    node.env(torch_gcu=NEW)
    result = node.run(state=state, version=version)
    assert not result.get("failed"), result["msg"]
    assert result["changed"] is True and node.installed() is None and result["version"] is None
    assert node.pip_calls() == [["uninstall", "--yes", "torch_gcu"]]
    assert record_of(node)["current"] == {"version": None, "wheel": None}
    again = node.run(state=state, version=version)
    assert again["changed"] is False and len(node.pip_calls()) == 1


def test_check_mode_predicts_the_restore_and_changes_nothing(node):
    node.env(torch_gcu=NEW)
    result = node.run(check_mode=True, state="restored", version=OLD, find_links=node.bundle_path)
    assert result["changed"] is True and "would put back" in result["msg"]
    assert node.installed() == NEW and not os.path.exists(node.state_file)
    assert node.pip_calls() == [["install", "--no-index", "--no-deps", "--find-links", node.bundle_path,
                                 "--dry-run", "torch_gcu==" + OLD]]
    gone = node.run(check_mode=True, state="absent")
    assert gone["changed"] is True and node.installed() == NEW and len(node.pip_calls()) == 1
    # An old pip: no dry run, and it says so.
    node.env(torch_gcu=NEW, pip="21.3")
    old_pip = node.run(check_mode=True, state="restored", version=OLD, find_links=node.bundle_path)
    assert old_pip["changed"] is True and "cannot predict" in old_pip["msg"] and len(node.pip_calls()) == 1


def test_restored_without_a_source_is_refused_before_anything(node):
    node.env(torch_gcu=NEW)
    result = node.run(state="restored", version=OLD)
    assert result.get("failed") and "find_links" in result["msg"] and "nothing was changed" in result["msg"]
    assert node.installed() == NEW and node.pip_calls() == [] and not os.path.exists(node.state_file)


def test_a_restore_pip_cannot_do_fails_with_its_output_and_keeps_the_record(node, tmp_path):
    node.env(torch_gcu=NEW)
    empty = tmp_path / "empty"
    empty.mkdir()
    result = node.run(state="restored", version=OLD, find_links=str(empty))
    assert result.get("failed") and "Could not find a version" in result["msg"]
    assert node.installed() == NEW and record_of(node)["previous"]["version"] == NEW


@pytest.mark.parametrize("args, words", [
    ({"python": "venv/bin/python"}, "must be an absolute node path"),
    ({"find_links": "cache/2.5.136"}, "must be an absolute node path"),
    ({"python": "/nonexistent/bin/python"}, "does not exist or is not executable"),
])
def test_restore_refusals_change_nothing(node, args, words):
    node.env(torch_gcu=NEW)
    result = node.run(**dict({"state": "restored", "version": OLD, "find_links": node.bundle_path}, **args))
    assert result.get("failed") and words in result["msg"], result["msg"]
    assert node.installed() == NEW and node.pip_calls() == [] and not os.path.exists(node.state_file)
