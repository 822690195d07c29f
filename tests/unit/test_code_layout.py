# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The layout says where code runs: plugins/module_utils holds what the
modules send to the nodes (every file there is reached from a module's
imports, or from a node daemon's that a role installs with its module_utils), plugins/plugin_utils what only the controller runs (filters,
action plugins, scripts; no module reaches it). And module files are
documentation and a short main, the logic in module_utils."""
import ast
import os
import re

import pytest

from conftest import TOP

PLUGINS = os.path.join(TOP, "plugins")
IMPORT = re.compile(r"ansible_collections\.gcu\.topsrider\.plugins\.(module_utils|plugin_utils)")


def imports(path):
    """(drawer, name) of every collection helper the file imports."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and IMPORT.match(node.module):
            parts = node.module.split(".")
            if len(parts) == 6:
                found.add((parts[4], parts[5]))
            else:  # from ...plugins.module_utils import _x
                found.update((parts[4], a.name) for a in node.names)
    return found


def reached(paths):
    seen, todo = set(), [dep for p in paths for dep in imports(p)]
    while todo:
        dep = todo.pop()
        if dep not in seen:
            seen.add(dep)
            todo.extend(imports(os.path.join(PLUGINS, dep[0], dep[1] + ".py")))
    return seen


def files(drawer):
    d = os.path.join(PLUGINS, drawer)
    return sorted(f[:-3] for f in os.listdir(d) if f.endswith(".py") and f != "__init__.py")


MODULES = [os.path.join(PLUGINS, "modules", name + ".py") for name in files("modules")]
# Node programs a role installs together with the module_utils they import
# (the card exporter: _card_metrics.EXPORTER_MODULE_UTILS).
DAEMONS = [os.path.join(TOP, "roles", "card_exporter", "files", "topsrider-card-exporter")]


# Node-side helpers written ahead of the module that will send them, each with
# the step that wires it in; the test below fails once one is reached, so the
# entry cannot outlive its reason.
NOT_YET_SENT = {}


def test_every_module_util_is_sent_by_a_module():
    node = reached(MODULES + DAEMONS)
    assert [n for n in files("module_utils") if ("module_utils", n) not in node and n not in NOT_YET_SENT] == [], \
        "controller-only code belongs in plugins/plugin_utils"
    assert [n for n in NOT_YET_SENT if ("module_utils", n) in node or n not in files("module_utils")] == [], \
        "NOT_YET_SENT lists a helper a module sends now (or one that is gone): remove its entry"


def test_no_module_reaches_plugin_utils():
    assert [n for d, n in reached(MODULES + DAEMONS) if d == "plugin_utils"] == []


def test_the_exporter_lists_what_it_reaches():
    """The role installs EXPORTER_MODULE_UTILS: exactly what the daemon's imports reach."""
    from ansible_collections.gcu.topsrider.plugins.module_utils._card_metrics import EXPORTER_MODULE_UTILS
    assert sorted(n for _d, n in reached(DAEMONS)) == sorted(EXPORTER_MODULE_UTILS)


def non_doc_lines(path):
    """Lines of a module file outside its DOCUMENTATION, EXAMPLES and RETURN
    strings, blank lines and comments not counted."""
    with open(path) as f:
        text = f.read()
    tree = ast.parse(text, path)
    doc_lines = set()
    for node in tree.body:
        names = [getattr(t, "id", None) for t in node.targets] if isinstance(node, ast.Assign) else []
        if set(names) & {"DOCUMENTATION", "EXAMPLES", "RETURN"}:
            doc_lines.update(range(node.lineno, node.end_lineno + 1))
    return [line for number, line in enumerate(text.splitlines(), 1)
            if number not in doc_lines and line.strip() and not line.strip().startswith("#")]


# Every module file is documentation and at most THIN lines (issue 29,
# step 4: deb_bundle, eccl_probe and topsrider_state held their logic until
# 2026-11-26).
THIN = 60


@pytest.mark.parametrize("name", files("modules"))
def test_module_files_are_docs_and_a_thin_main(name):
    count = len(non_doc_lines(os.path.join(PLUGINS, "modules", name + ".py")))
    assert count <= THIN, "%s: %d lines outside the documentation" % (name, count)
