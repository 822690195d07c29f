# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's version is written in one place, galaxy.yml: the
changelog records the releases (antsibull-changelog release reads it from
there), everything else derives it or does not name it."""
import os
import re
import subprocess

import yaml
from packaging.version import Version

from conftest import TOP, galaxy_version

RELEASE_HISTORY = ("changelogs/", "CHANGELOG.md", "tests/unit/fixtures/released-options.yml")


def tracked():
    proc = subprocess.run(["git", "ls-files", "-z"], cwd=TOP, stdout=subprocess.PIPE, check=False)
    assert proc.returncode == 0, "the tests run in a git checkout (make test, .ci/run)"
    for name in proc.stdout.decode().split("\0"):
        path = os.path.join(TOP, name)
        if name and not name.startswith(RELEASE_HISTORY) and os.path.isfile(path) and not os.path.islink(path):
            try:
                with open(path, encoding="utf-8") as f:
                    yield name, f.read()
            except UnicodeDecodeError:
                continue


def test_galaxy_yml_is_not_behind_the_changelog():
    with open(os.path.join(TOP, "changelogs", "changelog.yaml")) as f:
        releases = [Version(v) for v in yaml.safe_load(f)["releases"]]
    assert Version(galaxy_version()) >= max(releases), (galaxy_version(), max(releases))


def test_no_file_names_a_versioned_tarball():
    found = [name for name, text in tracked() if re.search(r"gcu-topsrider-\d+\.\d+\.\d+", text)]
    assert not found, "name the tarball gcu-topsrider-*.tar.gz or derive it from galaxy.yml: %s" % found


def test_no_code_or_definition_writes_the_version():
    """Prose may mention a past release ("until 0.x"); a file that would have
    to change with the next release may not (plugins' version_added and a
    tombstone's removal_version are history; ``pkg==X`` pins another package)."""
    word = re.compile(r"(?<![\w.=])%s(?!\w|\.\d)" % re.escape(galaxy_version()))
    found = []
    for name, text in tracked():
        if name == "galaxy.yml" or name.endswith(".md"):
            continue
        found += ["%s: %s" % (name, line.strip()) for line in text.splitlines()
                  if word.search(line) and not re.search(r"\b(version_added|removal_version):", line)]
    assert not found, found
