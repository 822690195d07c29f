# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""contrib/execution-environment.yml as its header says to build it: the
collection tarball copied beside it under a version-less name, then
`ansible-builder create` (no container runtime needed) on a copy of contrib/.
The generated context has the base image pinned by tag and digest, the
collection tarball of galaxy.yml's version, the system packages left to the
collection's own metadata (introspected from the installed collection in the
builder stage, installed in the final one), and the ansible-core and Jinja2
of requirements/controller.txt on a Python that ansible-core accepts.
(`make ee` builds it for real: scripts/ee-build.sh.)"""
import glob
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml
from packaging.specifiers import SpecifierSet

from conftest import TOP, galaxy_version, stock_env

CONTRIB = os.path.join(TOP, "contrib")
DEFINITION = os.path.join(CONTRIB, "execution-environment.yml")


def pins():
    """name -> version of the exact pins in requirements/controller.txt."""
    found = {}
    with open(os.path.join(TOP, "requirements", "controller.txt")) as f:
        for line in f:
            m = re.match(r"^([A-Za-z0-9_.-]+)(\[[^]]*\])?==(\S+)", line)
            if m:
                found[m.group(1).lower()] = m.group(3)
    return found


def load_definition():
    with open(DEFINITION) as f:
        return yaml.safe_load(f)


@pytest.fixture(scope="module")
def context(tmp_path_factory, collection_tarball):
    tmp = tmp_path_factory.mktemp("ee")
    contrib = tmp / "contrib"
    shutil.copytree(CONTRIB, str(contrib))
    (src,) = [f["src"] for f in load_definition()["additional_build_files"] if f["dest"] == "collections"]
    # The header's copy: the built tarball under the name the definition uses.
    shutil.copy(str(collection_tarball), str(contrib / src))
    out = tmp / "context"
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-builder"), "create",
                           "-f", str(contrib / "execution-environment.yml"), "-c", str(out),
                           "--output-filename", "Containerfile"],
                          cwd=str(tmp), env=stock_env(tmp), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout
    return {"dir": out, "src": src, "tmp": tmp,
            "containerfile": (out / "Containerfile").read_text()}


def arg(containerfile, name):
    m = re.search(r'^ARG %s="([^"]*)"$' % name, containerfile, re.M)
    assert m, "no ARG %s in the Containerfile" % name
    return m.group(1)


def test_the_definition_names_no_version_of_the_collection():
    with open(DEFINITION) as f:
        text = f.read()
    assert galaxy_version() not in text
    assert not re.search(r"gcu-topsrider-\d", text), "a versioned tarball name: galaxy.yml is the one place"


def test_the_header_copies_the_tarball_to_the_name_the_definition_uses():
    (src,) = [f["src"] for f in load_definition()["additional_build_files"] if f["dest"] == "collections"]
    with open(DEFINITION) as f:
        header = "".join(line for line in f if line.startswith("#"))
    assert "gcu-topsrider-*.tar.gz contrib/%s" % src in header, header


def test_the_base_image_is_pinned_by_tag_and_digest(context):
    name = load_definition()["images"]["base_image"]["name"]
    assert arg(context["containerfile"], "EE_BASE_IMAGE") == name
    assert re.search(r":\d+(\.\d+)*@sha256:[0-9a-f]{64}$", name), "%s: not a release tag with its digest" % name


def test_the_system_packages_come_from_the_collection_s_metadata(context):
    """No system file of its own: the builder stage introspects the installed
    collection (its meta/execution-environment.yml names bindep.txt) and the
    final stage installs what bindep found missing."""
    assert "system" not in load_definition()["dependencies"]
    assert not os.path.exists(os.path.join(CONTRIB, "bindep.txt"))
    cf = context["containerfile"]
    builder = cf[cf.index("FROM base AS builder"):cf.index("FROM base AS final")]
    assert re.search(r"^RUN \$PYCMD /output/scripts/introspect.py introspect .*"
                     r"--write-bindep=/tmp/src/bindep.txt", builder, re.M), builder
    assert "COPY --from=galaxy /usr/share/ansible /usr/share/ansible" in builder
    assert "install-from-bindep" in cf[cf.index("FROM base AS final"):]
    assert "epel" not in cf.lower(), "Fedora's own repositories have dpkg and gnupg2"


def test_the_collection_tarball_goes_in(context):
    tarball = context["dir"] / "_build" / "collections" / context["src"]
    with tarfile.open(str(tarball)) as tf:
        manifest = json.load(tf.extractfile("MANIFEST.json"))["collection_info"]
    assert (manifest["namespace"], manifest["name"], manifest["version"]) == ("gcu", "topsrider", galaxy_version())
    with open(str(context["dir"] / "_build" / "requirements.yml")) as f:
        requirements = yaml.safe_load(f)
    assert requirements["collections"] == [{"name": "/build/collections/" + context["src"], "type": "file"}]
    assert "COPY _build /build" in context["containerfile"]
    # ansible-galaxy installs it under its version-less name (what the image build does).
    env = stock_env(context["tmp"])
    proc = subprocess.run(["ansible-galaxy", "collection", "install", str(tarball), "-p",
                           str(context["tmp"] / "collections")], env=env, cwd=str(context["tmp"]),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout
    assert "gcu.topsrider:%s was installed successfully" % galaxy_version() in proc.stdout, proc.stdout


def test_ansible_core_and_jinja2_are_those_of_controller_txt(context):
    want = pins()
    refs = arg(context["containerfile"], "ANSIBLE_INSTALL_REFS").split()
    assert "ansible-core==%s" % want["ansible-core"] in refs, refs
    requirements = (context["dir"] / "_build" / "requirements.txt").read_text().split()
    assert "jinja2==%s" % want["jinja2"] in requirements, requirements


def pinned_core_metadata():
    """The package metadata of the ansible-core controller.txt pins (what the EE installs): this venv's, or
    make setup's .venv's when these units run on the other ansible-core (make units-2.21)."""
    pin = pins()["ansible-core"]
    if importlib.metadata.version("ansible-core") == pin:
        return importlib.metadata.metadata("ansible-core")
    paths = glob.glob(os.path.join(TOP, ".venv", "lib", "python*", "site-packages"))
    (dist,) = [d for d in importlib.metadata.distributions(name="ansible-core", path=paths) if d.version == pin]
    return dist.metadata


def test_the_python_is_one_ansible_core_accepts(context):
    pycmd = arg(context["containerfile"], "PYCMD")
    m = re.search(r"python(\d+\.\d+)$", pycmd)
    assert m, "%s: name the Python by its version" % pycmd
    requires = SpecifierSet(pinned_core_metadata()["Requires-Python"])
    assert m.group(1) + ".0" in requires, "ansible-core %s wants Python %s" % (pins()["ansible-core"], requires)
