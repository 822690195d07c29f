# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/ee_local_definition.py, the definition `make ee` builds: contrib's
execution environment with only its distribution-bound settings swapped for
the local stand-in base (base image, package manager, Python), anything it
does not know refused, and its output a definition ansible-builder accepts.
The build itself (scripts/ee-build.sh) needs Docker and PyPI: `make ee`."""
import importlib.util
import os
import subprocess
import sys

import pytest
import yaml

from conftest import TOP, stock_env

BIN = os.path.dirname(sys.executable)


def run(argv, tmp):
    proc = subprocess.run(argv, cwd=str(tmp), env=stock_env(tmp), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=300, check=False)
    assert proc.returncode == 0, "%s: rc %d\n%s" % (" ".join(argv), proc.returncode, proc.stdout)
    return proc.stdout


def local_definition_module():
    spec = importlib.util.spec_from_file_location("ee_local_definition",
                                                  os.path.join(TOP, "scripts", "ee_local_definition.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def contrib_definition():
    with open(os.path.join(TOP, "contrib", "execution-environment.yml")) as f:
        return yaml.safe_load(f)


def test_the_local_definition_swaps_only_the_base_s_distribution():
    mod = local_definition_module()
    contrib = contrib_definition()
    local = mod.local_definition(contrib, "topsrider-ee/base:abc")
    assert local["images"] == {"base_image": {"name": "topsrider-ee/base:abc"}}
    assert local["options"]["package_manager_path"] == "/usr/bin/apt-get"
    assert local["dependencies"]["python_interpreter"] == {"package_system": "python3",
                                                           "python_path": "/opt/ee/bin/python3"}
    for definition in (local, contrib):
        for key in ("images", "options"):
            del definition[key]
        del definition["dependencies"]["python_interpreter"]
    assert local == contrib


@pytest.mark.parametrize("change, complaint", [
    (lambda d: d.setdefault("additional_build_steps", {}).update(prepend_base=["RUN true"]), "top level"),
    (lambda d: d.setdefault("build_arg_defaults", {}).update(PKGMGR_PRESERVE_CACHE="always"), "top level"),
    (lambda d: d["dependencies"].update(system="bindep.txt"), "dependencies: system"),
    (lambda d: d["options"].update(container_init={}), "options: container_init"),
    (lambda d: d.update(version=1), "version 3"),
])
def test_the_local_definition_refuses_what_it_does_not_know(change, complaint):
    mod = local_definition_module()
    definition = contrib_definition()
    change(definition)
    with pytest.raises(mod.DefinitionError, match=complaint):
        mod.local_definition(definition, "topsrider-ee/base:abc")


def test_the_local_definition_script_writes_a_definition_ansible_builder_accepts(tmp_path, collection_tarball):
    out = subprocess.run([sys.executable, os.path.join(TOP, "scripts", "ee_local_definition.py"),
                          os.path.join(TOP, "contrib", "execution-environment.yml"), "topsrider-ee/base:abc"],
                         stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    (tmp_path / "execution-environment.yml").write_text(out)
    (tmp_path / "gcu-topsrider.tar.gz").write_bytes(collection_tarball.read_bytes())
    run([os.path.join(BIN, "ansible-builder"), "create", "-f", str(tmp_path / "execution-environment.yml"),
         "-c", str(tmp_path / "context"), "--output-filename", "Containerfile"], tmp_path)
    cf = (tmp_path / "context" / "Containerfile").read_text()
    assert 'ARG EE_BASE_IMAGE="topsrider-ee/base:abc"' in cf
    assert 'ARG PKGMGR="/usr/bin/apt-get"' in cf
    assert 'ARG PYCMD="/opt/ee/bin/python3"' in cf
