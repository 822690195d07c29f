# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/testing.md's behaviour table against the tree: every test function of
the molecule scenarios has a row whose `now` names it, every `path::name` a
`now` gives exists (a test function as a `def`, anything else as text of the
file), and no id repeats. Pure file reading: no git history, no container."""
import ast
import glob
import os
import re

import pytest

from conftest import TOP

DOC = os.path.join("docs", "testing.md")
SECTION = "## The behaviour table"
COLUMNS = ["id", "what it asserts", "at 8ec9509", "now", "needs a real node"]
REF = re.compile(r"`([^`:]+)::([^`]+)`")


def cells(line):
    """The cells of one Markdown table line (no cell holds a pipe)."""
    return [c.strip() for c in line.strip().strip("|").split("|")]


def table_rows(text):
    """The rows of every table with the behaviour table's columns in its section, as dicts."""
    start = text.find("\n" + SECTION + "\n")
    if start < 0:
        raise ValueError("%s has no section %r" % (DOC, SECTION))
    body = text[start + len(SECTION) + 2:]
    end = re.search(r"^## ", body, re.M)
    lines = (body[:end.start()] if end else body).splitlines()
    rows = []
    header = None
    for number, line in enumerate(lines):
        if not line.startswith("|"):
            header = None
            continue
        row = cells(line)
        if header is None:
            header = row
            continue
        if header != COLUMNS or set("".join(row)) <= set("-: "):
            continue
        if len(row) != len(COLUMNS):
            raise ValueError("%s: a row with %d cells, not %d: %s" % (DOC, len(row), len(COLUMNS), line))
        rows.append(dict(zip(COLUMNS, row), line=number))
    return rows


class Files(object):
    """The files of one check, each read and parsed once."""

    def __init__(self):
        self.texts = {}
        self.tests = {}

    def text(self, path):
        if path not in self.texts:
            with open(path) as f:
                self.texts[path] = f.read()
        return self.texts[path]

    def defined_tests(self, path):
        if path not in self.tests:
            self.tests[path] = defined_tests(self.text(path), path)
        return self.tests[path]


def defined_tests(source, path):
    """Names of the test functions (top level, or methods of Test classes) in Python `source`."""
    tree = ast.parse(source, path)
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            names.update(n.name for n in node.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_"))
    return names


def molecule_tests(top, files=None):
    """(path, function) of every test function in molecule/*/tests/*.py, paths relative to top."""
    files = files or Files()
    found = []
    for path in sorted(glob.glob(os.path.join(top, "molecule", "*", "tests", "*.py"))):
        rel = os.path.relpath(path, top)
        found.extend((rel, name) for name in sorted(files.defined_tests(path)))
    return found


def ref_problem(top, path, name, files):
    """Why `path::name` names nothing at `top` (None when it names something)."""
    if os.path.isabs(path) or ".." in path.split("/"):
        return "%s::%s: not a path inside the checkout" % (path, name)
    full = os.path.join(top, path)
    if not os.path.isfile(full):
        return "%s::%s: no such file" % (path, name)
    if path.endswith(".py") and re.fullmatch(r"test_\w+", name):
        if name not in files.defined_tests(full):
            return "%s::%s: no such test function" % (path, name)
        return None
    if name not in files.text(full):
        return "%s::%s: the file does not say %r" % (path, name, name)
    return None


def problems(text, top):
    """Everything wrong with the behaviour table `text` against the tree at `top`."""
    rows = table_rows(text)
    files = Files()
    found = []
    if not rows:
        found.append("the behaviour table has no rows")
    seen = {}
    named = set()
    for row in rows:
        ident = row["id"]
        if not ident:
            found.append("a row without an id: %s" % row)
        elif ident in seen:
            found.append("id %s repeats" % ident)
        seen[ident] = row
        refs = REF.findall(row["now"])
        if not refs and not row["now"].startswith("dropped:"):
            found.append("%s: `now` names no `path::name` and does not say dropped:" % ident)
        for path, name in refs:
            problem = ref_problem(top, path, name, files)
            if problem:
                found.append("%s: %s" % (ident, problem))
            named.add((path, name))
        if not re.match(r"(yes|no): \S", row["needs a real node"]):
            found.append("%s: `needs a real node` is not 'yes: why' or 'no: why'" % ident)
        if not row["what it asserts"] or not row["at 8ec9509"]:
            found.append("%s: an empty cell" % ident)
    for path, name in molecule_tests(top, files):
        if (path, name) not in named:
            found.append("%s::%s has no row whose `now` names it" % (path, name))
    return found


def test_the_behaviour_table_covers_every_molecule_test_and_names_only_what_exists():
    with open(os.path.join(TOP, DOC)) as f:
        text = f.read()
    found = problems(text, TOP)
    assert not found, "%s's behaviour table (moving or removing a test updates its row):\n  %s" % (
        DOC, "\n  ".join(found))
    # The checker saw the scenarios' tests (a broken glob would make the coverage check vacuous).
    assert len(molecule_tests(TOP)) >= 100


# ---------------------------------------------------------------- the checker itself, on a small tree
SAMPLE_TEST = '''
import pytest


def helper():
    pass


@pytest.mark.parametrize("x", [1, 2])
def test_one(x):
    assert x


def test_two():
    assert True


class TestGroup(object):
    def test_three(self):
        assert True
'''


@pytest.fixture
def tree(tmp_path):
    tests = tmp_path / "molecule" / "sample" / "tests"
    tests.mkdir(parents=True)
    (tests / "test_sample.py").write_text(SAMPLE_TEST)
    (tmp_path / "molecule" / "sample" / "converge.yml").write_text("- name: The node is fine\n")
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    (tmp_path / "tests" / "unit" / "test_unit.py").write_text("def test_moved():\n    assert True\n")
    return tmp_path


def table(*rows):
    lines = ["# Testing", "", SECTION, "", "### sample", "",
             "| " + " | ".join(COLUMNS) + " |", "|---|---|---|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines + ["", "## After", "", "| id | other |", "|---|---|", "| x | y |", ""])


T = "molecule/sample/tests/test_sample.py"
GOOD = [
    ("sample/test_one", "one", T, "`%s::test_one`" % T, "yes: real dpkg"),
    ("sample/test_two", "two", T, "`%s::test_two`" % T, "no: decided in Python"),
    ("sample/test_three", "three", T, "`%s::test_three`" % T, "no: decided in Python"),
    ("sample/converge.yml::The node is fine", "fine", "molecule/sample/converge.yml",
     "`molecule/sample/converge.yml::The node is fine`", "yes: node state"),
]


def test_a_complete_table_passes(tree):
    assert problems(table(*GOOD), str(tree)) == []


def test_a_molecule_test_without_a_row_is_named(tree):
    assert problems(table(*GOOD[1:]), str(tree)) == ["%s::test_one has no row whose `now` names it" % T]


def test_a_moved_test_is_found_by_its_new_place(tree):
    moved = ("sample/test_one", "one", T, "`tests/unit/test_unit.py::test_moved`", "no: decided in Python")
    assert problems(table(moved, *GOOD[1:]), str(tree)) == ["%s::test_one has no row whose `now` names it" % T]
    # ... and passes once the scenario's test is gone.
    (tree / T).write_text(SAMPLE_TEST.replace("def test_one", "def helper_one"))
    assert problems(table(moved, *GOOD[1:]), str(tree)) == []


@pytest.mark.parametrize("now, problem", [
    ("`tests/unit/test_unit.py::test_gone`", "tests/unit/test_unit.py::test_gone: no such test function"),
    ("`%s::helper`" % T, None),  # not a test name: the text is in the file
    ("`tests/unit/test_nope.py::test_moved`", "tests/unit/test_nope.py::test_moved: no such file"),
    ("`molecule/sample/converge.yml::The node is broken`",
     "molecule/sample/converge.yml::The node is broken: the file does not say 'The node is broken'"),
    ("`../outside.py::test_x`", "../outside.py::test_x: not a path inside the checkout"),
])
def test_a_now_that_names_nothing_is_named(tree, now, problem):
    extra = ("sample/extra", "extra", "new", now, "no: decided in Python")
    assert problems(table(*(GOOD + [extra])), str(tree)) == ([] if problem is None else ["sample/extra: " + problem])


def test_a_repeated_id_is_named(tree):
    again = ("sample/test_two", "two again", T, "`%s::test_two`" % T, "no: decided in Python")
    assert problems(table(*(GOOD + [again])), str(tree)) == ["id sample/test_two repeats"]


def test_a_row_must_say_where_and_why(tree):
    bad = [("sample/a", "a", "new", "somewhere", "no: x"),
           ("sample/b", "b", "new", "dropped: the decision moved to units", "maybe")]
    assert problems(table(*(GOOD + bad)), str(tree)) == [
        "sample/a: `now` names no `path::name` and does not say dropped:",
        "sample/b: `needs a real node` is not 'yes: why' or 'no: why'"]


def test_a_missing_section_or_a_short_row_is_an_error(tree):
    with pytest.raises(ValueError, match="no section"):
        problems("# Testing\n", str(tree))
    with pytest.raises(ValueError, match="a row with 4 cells"):
        problems(table(*GOOD).replace("| two |", "|"), str(tree))
