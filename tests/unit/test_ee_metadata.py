# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's own execution-environment metadata, as an operator's EE
build sees it: `ansible-builder introspect` on a collections path holding
only the installed tarball finds meta/execution-environment.yml's system
packages (bindep.txt: dpkg for dpkg-deb, gpgv) and Python requirements
(requirements.txt); bindep picks the right package per platform; the
requirements cover what the controller side imports and name nothing it
does not."""
import ast
import glob
import importlib.metadata
import importlib.util
import inspect
import os
import re
import subprocess
import sys

import pytest
import yaml
from bindep.depends import Depends
from packaging.requirements import Requirement

from conftest import TOP, stock_env

BIN = os.path.dirname(sys.executable)
# The controller side: what runs in ansible-playbook's process or on the
# controller's shell (the scripts the tarball ships), not module code sent to
# nodes (module_utils files count when controller code imports them).
CONTROLLER_GLOBS = ["plugins/action/*.py", "plugins/filter/*.py", "plugins/callback/*.py",
                    "plugins/plugin_utils/*.py", "plugins/test/*.py", "plugins/lookup/*.py",
                    "scripts/topsrider-manifest", "scripts/topsrider-drift", "scripts/topsrider-fabric",
                    "scripts/topsrider_check.py"]
MODULE_UTILS = "ansible_collections.gcu.topsrider.plugins.module_utils."


def run(argv, tmp, cwd=None):
    proc = subprocess.run(argv, cwd=str(cwd or tmp), env=stock_env(tmp), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=300, check=False)
    assert proc.returncode == 0, "%s: rc %d\n%s" % (" ".join(argv), proc.returncode, proc.stdout)
    return proc.stdout


@pytest.fixture(scope="module")
def collections(tmp_path_factory, collection_tarball):
    """A collections path holding only the installed tarball."""
    tmp = tmp_path_factory.mktemp("introspect")
    run(["ansible-galaxy", "collection", "install", str(collection_tarball), "-p", str(tmp / "collections")], tmp)
    return tmp


def introspect(collections):
    """`ansible-builder introspect` as a build's builder stage runs it."""
    out = run([os.path.join(BIN, "ansible-builder"), "introspect", str(collections / "collections")], collections)
    return yaml.safe_load(out[out.index("---"):])


def requirement_lines(path):
    with open(path) as f:
        return [line.split("#")[0].strip() for line in f if line.split("#")[0].strip()]


def test_the_metadata_names_the_top_level_files():
    with open(os.path.join(TOP, "meta", "execution-environment.yml")) as f:
        meta = yaml.safe_load(f)
    assert meta["dependencies"] == {"python": "requirements.txt", "system": "bindep.txt"}


def test_introspect_reads_the_installed_collection_s_files(collections):
    """What introspection read, per collection, before its filtering (the
    function its command runs)."""
    from ansible_builder._target_scripts.introspect import process
    data = process(data_dir=str(collections / "collections"))
    assert data["system"] == {"gcu.topsrider": requirement_lines(os.path.join(TOP, "bindep.txt"))}
    assert data["python"] == {"gcu.topsrider": requirement_lines(os.path.join(TOP, "requirements.txt"))}


def test_introspect_gives_an_image_build_the_system_packages(collections):
    """The command's output, which an image build writes to its bindep and pip
    files: every bindep line, tagged with the collection. PyYAML is one of the
    packages ansible-builder counts as in every image (ansible-core needs it)
    and leaves out, so the pip list gets nothing from this collection."""
    data = introspect(collections)
    assert data["system"] == ["%s  # from collection gcu.topsrider" % line
                              for line in requirement_lines(os.path.join(TOP, "bindep.txt"))]
    assert data["python"] == [], data["python"]


@pytest.mark.parametrize("platform, wanted", [
    (["platform:dpkg", "platform:debian"], {"dpkg", "gpgv"}),
    (["platform:dpkg", "platform:ubuntu"], {"dpkg", "gpgv"}),
    (["platform:rpm", "platform:fedora"], {"dpkg", "gnupg2"}),
    (["platform:rpm", "platform:redhat"], {"dpkg", "gnupg2"}),
])
def test_bindep_gives_dpkg_deb_and_gpgv_on_each_platform(platform, wanted):
    with open(os.path.join(TOP, "bindep.txt")) as f:
        depends = Depends(f.read())
    assert {rule[0] for rule in depends.active_rules(["default"] + platform)} == wanted


def test_the_controller_calls_the_commands_bindep_brings():
    with open(os.path.join(TOP, "scripts", "topsrider-manifest")) as f:
        assert '["dpkg-deb", "--field"' in f.read()
    spec = importlib.util.spec_from_file_location(
        "_signature", os.path.join(TOP, "plugins", "module_utils", "_signature.py"))
    signature = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(signature)
    assert inspect.signature(signature.verify).parameters["gpgv"].default == "gpgv"


def imports(path):
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module
            for alias in node.names:
                yield node.module + "." + alias.name


def controller_modules():
    """Top-level modules the controller side imports, following the collection's
    module_utils that it imports."""
    todo = [f for pattern in CONTROLLER_GLOBS for f in sorted(glob.glob(os.path.join(TOP, pattern)))]
    seen, found = set(), {}
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in imports(path):
            if name.startswith(MODULE_UTILS):
                todo.append(os.path.join(TOP, "plugins", "module_utils", name[len(MODULE_UTILS):].split(".")[0] + ".py"))
            found.setdefault(name.split(".")[0], set()).add(os.path.relpath(path, TOP))
    # scripts/topsrider-manifest loads module_utils files by path (_load("_signature")).
    for script in glob.glob(os.path.join(TOP, "scripts", "topsrider-*")):
        with open(script) as f:
            for name in re.findall(r'_load\("(_\w+)"\)', f.read()):
                for mod in imports(os.path.join(TOP, "plugins", "module_utils", name + ".py")):
                    found.setdefault(mod.split(".")[0], set()).add("plugins/module_utils/%s.py" % name)
    return found


def distribution(module):
    dists = importlib.metadata.packages_distributions().get(module)
    assert dists, "%s: no installed distribution provides it" % module
    return dists[0].lower()


def core_requirements():
    return {Requirement(r).name.lower() for r in importlib.metadata.requires("ansible-core") or []
            if "extra ==" not in r}


def third_party(found):
    local = {"ansible", "ansible_collections", "topsrider_check", "__future__"}
    return dict((m, where) for m, where in found.items()
                if m not in local and m not in FALLBACKS and m not in sys.stdlib_module_names)


# Imported only where the first choice is missing, never needed on a controller:
# _pep440 takes packaging (an ansible-core requirement) first, pip's vendored copy
# only on a node whose Python has no packaging.
FALLBACKS = {"pip"}


def test_every_controller_import_beyond_the_stdlib_is_a_requirement():
    """A package the controller side imports is in requirements.txt, or comes
    with ansible-core itself (which every EE has)."""
    listed = {Requirement(line).name.lower() for line in requirement_lines(os.path.join(TOP, "requirements.txt"))}
    missing = dict((m, sorted(where)) for m, where in third_party(controller_modules()).items()
                   if distribution(m) not in listed | core_requirements())
    assert not missing, "add to requirements.txt: %s" % missing


def test_every_requirement_is_imported_by_the_controller_side():
    imported = {distribution(m) for m in third_party(controller_modules())}
    for line in requirement_lines(os.path.join(TOP, "requirements.txt")):
        assert Requirement(line).name.lower() in imported, "%s: nothing on the controller side imports it" % line


def test_the_scan_sees_the_controller_s_imports():
    """The scan is not empty-handed: the controller's YAML reader is found."""
    assert "yaml" in controller_modules()
