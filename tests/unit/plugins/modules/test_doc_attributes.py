# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every module's attributes, as ansible-doc renders them with the shared
fragment (plugins/doc_fragments/attributes.py) merged in: complete, and the
module's own text wins where it has one."""
import json
import os
import subprocess
import sys

import pytest

from deploy_walk import _python_deps  # the collection's Python files a plugin imports, transitively

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
MODULES = sorted(f[:-3] for f in os.listdir(os.path.join(TOP, "plugins", "modules"))
                 if f.endswith(".py") and not f.startswith("_"))
READ_ONLY = ("eccl_probe", "gcu_devices", "topsrider_state")
# Modules that are an action plugin (plugins/action/<name>.py) also say so, and whether async applies.
ACTIONS = sorted(f[:-3] for f in os.listdir(os.path.join(TOP, "plugins", "action"))
                 if f.endswith(".py") and not f.startswith("_"))


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("doc")
    (tmp / "collections" / "ansible_collections" / "gcu").mkdir(parents=True)
    os.symlink(TOP, str(tmp / "collections" / "ansible_collections" / "gcu" / "topsrider"))
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith("ANSIBLE_"))
    env.update(ANSIBLE_COLLECTIONS_PATH=str(tmp / "collections"), ANSIBLE_HOME=str(tmp / "home"),
               ANSIBLE_LOCAL_TEMP=str(tmp / "local"))
    doc = os.path.join(os.path.dirname(sys.executable), "ansible-doc")
    out = subprocess.run([doc, "--json"] + ["gcu.topsrider." + m for m in MODULES], env=env, cwd=str(tmp),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=True)
    return dict((k.split(".")[-1], v["doc"]) for k, v in json.loads(out.stdout).items())


def test_every_module_renders_complete_attributes(docs):
    assert sorted(docs) == MODULES
    for name, doc in docs.items():
        attrs = doc["attributes"]
        extra = ["action", "async"] if name in ACTIONS else []
        assert sorted(attrs) == sorted(["check_mode", "diff_mode", "platform"] + extra), name
        for key, attr in attrs.items():
            assert attr.get("support") in ("full", "partial", "none"), (name, key)
            assert attr.get("description"), (name, key)
        assert attrs["platform"]["platforms"] in ("posix", "debian"), name


def test_read_only_modules_share_the_fragment_text(docs):
    texts = set((docs[m]["attributes"]["check_mode"]["description"], docs[m]["attributes"]["diff_mode"]["support"])
                for m in READ_ONLY)
    assert texts == {("The module only reads; check mode runs it unchanged.", "none")}


def test_module_text_wins_over_the_fragment(docs):
    deb = docs["deb_bundle"]["attributes"]
    assert deb["platform"] == {"support": "full", "platforms": "debian", "description": "Debian and derivatives (dpkg)."}
    assert deb["diff_mode"]["support"] == "full"
    assert docs["topsrider_state"]["attributes"]["platform"]["description"] == "Debian-family nodes (dpkg)."
    assert docs["topsrider_lock"]["attributes"]["platform"]["description"] == "Linux nodes managed by gcu.topsrider."


# topsrider_state is left out: it imports _slurm for its reader, and _slurm's writer (the
# topsrider_slurm module's) reads check mode.
@pytest.mark.parametrize("name", ["eccl_probe", "gcu_devices"])
def test_a_read_only_module_runs_unchanged_in_check_mode(name):
    """What the fragment says of them: the module declares check mode, and neither it nor any
    module_utils it imports reads it, so a run under --check takes the same path as any run
    (molecule/eccl_probe's converge runs the probe in check mode once, at the library level)."""
    path = "plugins/modules/%s.py" % name
    with open(os.path.join(TOP, path)) as f:
        text = f.read()
    assert text.count("check_mode") == 1 and "supports_check_mode=True" in text, name
    helpers = _python_deps(path)
    assert helpers, name
    readers = []
    for helper in helpers:
        with open(os.path.join(TOP, helper)) as f:
            if "check_mode" in f.read():
                readers.append(helper)
    assert readers == [], readers
