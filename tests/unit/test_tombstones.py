# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A released plugin is never dropped silently: it is still there, or
meta/runtime.yml tombstones it with the release that removed it and what to
use instead, a removed_features entry says so, and a play or ansible-doc
that names it gets that text from ansible-core."""
import glob
import importlib
import os
import re
import subprocess
import sys

import pytest
import yaml
from packaging.version import Version

from conftest import TOP, galaxy_version, run_play


def runtime():
    with open(os.path.join(TOP, "meta", "runtime.yml")) as f:
        return yaml.safe_load(f)


def tombstones():
    """[(type, name, tombstone)] from meta/runtime.yml's plugin_routing."""
    return [(kind, name, route["tombstone"])
            for kind, routes in sorted((runtime().get("plugin_routing") or {}).items())
            for name, route in sorted(routes.items()) if "tombstone" in route]


def changelog():
    with open(os.path.join(TOP, "changelogs", "changelog.yaml")) as f:
        return yaml.safe_load(f)["releases"]


def released_plugins():
    """{(type, name): first release} of every plugin changelog.yaml lists."""
    found = {}
    for version, release in changelog().items():
        entries = [("module", m["name"]) for m in release.get("modules", [])]
        entries += [(kind, p["name"]) for kind, plugins in (release.get("plugins") or {}).items() for p in plugins]
        for entry in entries:
            found.setdefault(entry, version)
    return found


def current_plugins():
    """Every plugin the checkout has: modules and callbacks by file, filters by
    the names their files' FilterModule gives."""
    found = set()
    for kind in ("modules", "callback"):
        found |= set(("module" if kind == "modules" else kind, os.path.basename(f)[:-3])
                     for f in glob.glob(os.path.join(TOP, "plugins", kind, "*.py"))
                     if not os.path.basename(f).startswith("_"))
    for f in glob.glob(os.path.join(TOP, "plugins", "filter", "*.py")):
        module = importlib.import_module("ansible_collections.gcu.topsrider.plugins.filter." + os.path.basename(f)[:-3])
        found |= set(("filter", name) for name in module.FilterModule().filters())
    return found


def removed_features_text():
    """Every removed_features entry, released (changelog.yaml) or not (fragments)."""
    texts = [line for release in changelog().values()
             for line in release.get("changes", {}).get("removed_features", [])]
    for path in glob.glob(os.path.join(TOP, "changelogs", "fragments", "*.yml")):
        with open(path) as f:
            texts += (yaml.safe_load(f) or {}).get("removed_features", [])
    return "\n".join(texts)


def one_line(text):
    return re.sub(r"\s+", " ", text).strip()


def test_the_collection_has_tombstones():
    assert len(tombstones()) >= 3, tombstones()


def test_every_released_plugin_is_there_or_tombstoned():
    gone = sorted(set(released_plugins()) - current_plugins() - set(t[:2] for t in tombstones()))
    assert not gone, "released, then removed without a tombstone in meta/runtime.yml: %s" % gone


@pytest.mark.parametrize("kind, name, tombstone", tombstones(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_tombstone_is_a_removed_released_plugin_with_a_note(kind, name, tombstone):
    released = released_plugins()
    assert (kind, name) in released, "%s %s: no release shipped it" % (kind, name)
    assert (kind, name) not in current_plugins(), "%s %s: tombstoned but still there" % (kind, name)
    removal = str(tombstone["removal_version"])
    assert Version(removal) > Version(released[(kind, name)]), (kind, name, removal, released[(kind, name)])
    assert removal in changelog() or removal == Version(galaxy_version()).base_version, \
        "%s %s: removed in %s, neither a release nor the next one" % (kind, name, removal)
    assert tombstone.get("warning_text", "").strip(), "%s %s: say what to use instead" % (kind, name)
    assert "``%s``" % name in removed_features_text(), "%s %s: no removed_features entry names it" % (kind, name)


@pytest.mark.parametrize("kind, name, tombstone", [t for t in tombstones() if t[0] == "filter"],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_a_play_using_a_removed_filter_gets_the_tombstone(tmp_path, kind, name, tombstone):
    rc, out = run_play(tmp_path, [{"ansible.builtin.debug": {"msg": "{{ {} | gcu.topsrider.%s }}" % name}}])
    out = one_line(out)
    assert rc == 2, out
    assert "The 'gcu.topsrider.%s' filter plugin has been removed. %s" % (name, one_line(tombstone["warning_text"])) \
        in out, out
    assert "removed from collection 'gcu.topsrider' version %s" % tombstone["removal_version"] in out, out


def test_ansible_doc_on_a_removed_plugin_gets_the_tombstone(tmp_path):
    collections = tmp_path / "collections"
    (collections / "ansible_collections" / "gcu").mkdir(parents=True)
    os.symlink(TOP, str(collections / "ansible_collections" / "gcu" / "topsrider"))
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith("ANSIBLE_"))
    env.update(ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_HOME=str(tmp_path / "home"),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), ANSIBLE_NOCOLOR="1")
    doc = os.path.join(os.path.dirname(sys.executable), "ansible-doc")
    for kind, name, tombstone in tombstones():
        # one name a call: ansible-doc stops at the first it cannot document
        proc = subprocess.run([doc, "-t", kind, "gcu.topsrider." + name], env=env, cwd=str(tmp_path),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                              check=False, timeout=120)
        out = one_line(proc.stdout)
        assert proc.returncode != 0, out
        assert "'gcu.topsrider.%s' %s plugin has been removed. %s" % (name, kind, one_line(tombstone["warning_text"])) \
            in out, out
