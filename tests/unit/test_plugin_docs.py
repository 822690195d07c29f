# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every plugin's ansible-doc page: its own (not another filter's of the same
file), its examples valid YAML, and its version_added and its options' the
release that first shipped them: changelogs/changelog.yaml's modules and
plugins per release for the plugins, tests/unit/fixtures/released-options.yml
for the options. A plugin or option no release shipped is the next release's."""
import os

import pytest
import yaml
from packaging.version import Version

from conftest import TOP, galaxy_version
from plugin_docs import collection_docs, load_record


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    return collection_docs(str(tmp_path_factory.mktemp("plugin-docs")))


def changelog_releases():
    with open(os.path.join(TOP, "changelogs", "changelog.yaml")) as f:
        return yaml.safe_load(f)["releases"]


def first_shipped():
    """{(type, name): the first release changelog.yaml lists the plugin in}."""
    first = {}
    for version in sorted(changelog_releases(), key=Version):
        release = changelog_releases()[version]
        entries = [("module", m["name"]) for m in release.get("modules", [])]
        for kind, plugins in (release.get("plugins") or {}).items():
            entries += [(kind, p["name"]) for p in plugins]
        for entry in entries:
            first.setdefault(entry, version)
    return first


def next_release():
    """The release the checkout becomes: galaxy.yml's version without -dev."""
    return Version(galaxy_version()).base_version


def pages(docs):
    return [(kind, name, page) for kind in sorted(docs) for name, page in sorted(docs[kind].items())]


def test_every_plugin_type_has_pages(docs):
    assert len(docs["module"]) >= 10 and len(docs["filter"]) >= 30 and docs["callback"], \
        dict((kind, sorted(names)) for kind, names in docs.items())


def test_every_page_is_the_plugins_own(docs):
    wrong = ["%s %s shows %s's page" % (kind, name, page["doc"].get("name") or page["doc"].get("module"))
             for kind, name, page in pages(docs)
             if (page["doc"].get("module") if kind == "module" else page["doc"].get("name")) != name]
    assert not wrong, wrong


def test_every_example_is_yaml_tasks(docs):
    bad = []
    for kind, name, page in pages(docs):
        try:
            tasks = yaml.safe_load(page.get("examples") or "")
        except yaml.YAMLError as e:
            bad.append("%s %s: %s" % (kind, name, str(e).replace("\n", " ")))
            continue
        if kind != "callback" and not (isinstance(tasks, list) and tasks and all(isinstance(t, dict) for t in tasks)):
            bad.append("%s %s: the examples are not a list of tasks: %r" % (kind, name, tasks))
    assert not bad, bad


def test_every_plugin_says_the_release_that_first_shipped_it(docs):
    first = first_shipped()
    wrong = []
    for kind, name, page in pages(docs):
        expected = first.get((kind, name), next_release())
        said = page["doc"].get("version_added")
        if said != expected:
            wrong.append("%s %s: version_added %r, first shipped in %s" % (kind, name, said, expected))
    assert not wrong, wrong


def test_every_release_lists_the_plugins_the_record_shows_it_shipped():
    """The record of options and the changelog agree on which plugins each
    release shipped (so neither misses a plugin)."""
    first = first_shipped()
    record = load_record()
    seen = set()
    missing = []
    for version in sorted(record, key=Version):
        for kind, plugins in record[version].items():
            for name in plugins:
                if (kind, name) not in seen and first.get((kind, name)) != version:
                    missing.append("%s %s: shipped first in %s, changelog.yaml says %s"
                                   % (kind, name, version, first.get((kind, name))))
                seen.add((kind, name))
    assert not missing, missing


def test_every_option_says_the_release_that_first_shipped_it(docs):
    """An option the plugin shipped with has no version_added; one added
    later names the release that first shipped it."""
    record = load_record()
    first_plugin = first_shipped()
    wrong = []
    for kind, name, page in pages(docs):
        plugin_release = first_plugin.get((kind, name), next_release())
        for option, spec in sorted((page["doc"].get("options") or {}).items()):
            shipped = [v for v in sorted(record, key=Version) if option in record[v].get(kind, {}).get(name, ())]
            release = shipped[0] if shipped else next_release()
            expected = None if release == plugin_release else release
            said = spec.get("version_added")
            if said != expected:
                wrong.append("%s %s option %s: version_added %r, expected %r (first shipped in %s)"
                             % (kind, name, option, said, expected, release))
    assert not wrong, wrong


@pytest.mark.parametrize("version_added, expected, fails", [
    ("0.2.0", "0.2.0", False), ("0.1.0", "0.2.0", True), (None, "0.2.0", True)])
def test_the_plugin_comparison_fails_on_a_wrong_version(monkeypatch, version_added, expected, fails):
    """The comparison above on a made-up page: a wrong or missing version_added fails it."""
    import test_plugin_docs as me
    monkeypatch.setattr(me, "first_shipped", lambda: {("filter", "made_up"): expected})
    page = {"doc": {"name": "made_up", "version_added": version_added}}
    if fails:
        with pytest.raises(AssertionError, match="made_up"):
            me.test_every_plugin_says_the_release_that_first_shipped_it({"filter": {"made_up": page}})
    else:
        me.test_every_plugin_says_the_release_that_first_shipped_it({"filter": {"made_up": page}})
