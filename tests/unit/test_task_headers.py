# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Declared hand-offs (issue 15): every task file under playbooks/tasks/ and
roles/*/tasks/ starts with a `# Needs: ... # Sets: ...` header. Needs names
every variable the file reads that comes from outside it (not its own role's
defaults, vars or argument_specs, not playbooks/vars/*.yml, not Ansible's
magic variables); Sets names every fact it sets or registers that another
task file or a playbook reads. The reads are found in the Jinja of the file (expressions,
when/that/loop conditions), so an undeclared hand-off fails here."""
import glob
import os
import re

import pytest
import yaml

from conftest import TOP

TASK_FILES = sorted(os.path.relpath(p, TOP) for p in
                    glob.glob(os.path.join(TOP, "playbooks", "tasks", "*.yml"))
                    + glob.glob(os.path.join(TOP, "roles", "*", "tasks", "*.yml")))

# Ansible's magic variables and Jinja's own words: never a hand-off.
MAGIC = frozenset("""
inventory_hostname hostvars groups ansible_check_mode ansible_facts ansible_local ansible_play_hosts
ansible_play_hosts_all ansible_play_batch ansible_limit playbook_dir role_path item ansible_loop
ansible_playbook_python ansible_failed_task ansible_failed_result ansible_python_interpreter omit loop
true false none True False None not and or in is if else elif endif for endfor set endset
""".split())
# Keys whose strings are bare expressions (a loop's list holds templates, as any value does).
CONDITION_KEYS = ("when", "that", "changed_when", "failed_when", "until")
STRINGS = re.compile(r"'[^']*'|\"[^\"]*\"")
JINJA = re.compile(r"\{\{(.*?)\}\}|\{%(.*?)%\}", re.S)
IDENT = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\b(?!\s*\()(?!\s*=[^=])")
DROPPED = re.compile(r"(\|\s*|\bis\s+(not\s+)?|\bgcu\.topsrider\.)[A-Za-z_]\w*|\bgcu\.topsrider\b")
LOCAL_JINJA = re.compile(r"\{%-?\s*(?:for\s+([\w\s,]+?)\s+in|set\s+(\w+)\s*=)")


def expression_names(expression):
    """The variable names an expression reads (not filters, tests, calls, keyword arguments)."""
    # A filter or test becomes an operator: "a | default(b)" reads a and b, "a" is not called.
    text = DROPPED.sub(" + ", STRINGS.sub("''", expression))
    return {m.group(1) for m in IDENT.finditer(text)} - MAGIC


def template_names(text):
    names = set()
    for match in JINJA.finditer(text):
        names |= expression_names(" ".join(part for part in match.groups() if part))
    return names


def walk(node, defined, facts, reads):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in CONDITION_KEYS and not isinstance(value, dict):
                for cond in value if isinstance(value, list) else [value]:
                    if isinstance(cond, str):
                        reads |= template_names(cond) if "{{" in cond else expression_names(cond)
                continue
            if key == "register":
                facts.add(value)
                continue
            if key in ("ansible.builtin.set_fact", "set_fact") and isinstance(value, dict):
                facts.update(k for k in value if k != "cacheable")
            if key == "vars" and isinstance(value, dict):
                defined.update(value)
            if key == "loop_control" and isinstance(value, dict) and "loop_var" in value:
                defined.add(value["loop_var"])
            walk(value, defined, facts, reads)
    elif isinstance(node, list):
        for value in node:
            walk(value, defined, facts, reads)
    elif isinstance(node, str):
        reads |= template_names(node)
        for match in LOCAL_JINJA.finditer(node):
            defined.update(n.strip() for n in (match.group(1) or match.group(2)).split(","))


def role_interface(path):
    """Its own role's defaults, vars and argument_specs options; for playbooks/tasks, playbooks/vars."""
    names = set()
    parts = path.split(os.sep)
    if parts[0] == "roles":
        role = os.path.join(TOP, "roles", parts[1])
        for name in ("defaults", "vars"):
            source = os.path.join(role, name, "main.yml")
            if os.path.exists(source):
                with open(source) as f:
                    names.update(yaml.safe_load(f) or {})
        with open(os.path.join(role, "meta", "argument_specs.yml")) as f:
            for entry in yaml.safe_load(f)["argument_specs"].values():
                names.update(entry.get("options") or {})
    else:
        for source in glob.glob(os.path.join(TOP, "playbooks", "vars", "*.yml")):
            with open(source) as f:
                names.update(yaml.safe_load(f))
    return names


def header(path):
    """(needs, sets): the words of the file's `# Needs:` and `# Sets:` sections."""
    with open(os.path.join(TOP, path)) as f:
        lines = f.read().splitlines()
    if lines and lines[0] == "---":
        lines = lines[1:]
    comment = []
    for line in lines:
        if not line.startswith("#"):
            break
        comment.append(line[1:].strip())
    assert comment and comment[0].startswith("Needs:"), "%s: starts with no '# Needs:' line" % path
    text = "\n".join(comment)
    assert "\nSets:" in text, "%s: its header has no '# Sets:' line" % path
    needs, rest = text[len("Needs:"):].split("\nSets:", 1)
    sets = rest.split("\n\n", 1)[0]
    words = re.compile(r"[A-Za-z_]\w*")
    return set(words.findall(needs)), set(words.findall(sets))


def analysed(path):
    with open(os.path.join(TOP, path)) as f:
        data = yaml.safe_load(f)
    defined, facts, reads = set(), set(), set()
    walk(data, defined, facts, reads)
    return reads - defined - facts - MAGIC - role_interface(path), facts


ANALYSED = {path: analysed(path) for path in TASK_FILES}


def playbook_reads():
    reads = set()
    for path in glob.glob(os.path.join(TOP, "playbooks", "*.yml")):
        with open(path) as f:
            walk(yaml.safe_load(f), set(), set(), reads)
    return reads


PLAYBOOK_READS = playbook_reads()


def test_there_are_task_files():
    assert "playbooks/tasks/rollout.yml" in TASK_FILES and "roles/eccl_env/tasks/main.yml" in TASK_FILES


@pytest.mark.parametrize("path", TASK_FILES)
def test_every_outside_read_is_declared(path):
    needs, _sets = header(path)
    undeclared = sorted(ANALYSED[path][0] - needs)
    assert not undeclared, "%s reads %s without naming it in its '# Needs:' header" % (path, ", ".join(undeclared))


@pytest.mark.parametrize("path", TASK_FILES)
def test_every_fact_another_file_reads_is_declared_set(path):
    _needs, sets = header(path)
    facts = ANALYSED[path][1]
    read_elsewhere = set(PLAYBOOK_READS)
    for other, (reads, _facts) in ANALYSED.items():
        if other != path:
            read_elsewhere |= reads
    missing = sorted((facts & read_elsewhere) - sets)
    assert not missing, "%s sets %s, read by other files, without naming it in '# Sets:'" % (
        path, ", ".join(missing))


@pytest.mark.parametrize("expression, names", [
    ("a | default(b) | gcu.topsrider.env_problems({'x': c}) is match('^d')", {"a", "b", "c"}),
    ("now(utc=true, fmt='%Y') ~ e.f", {"e"}),
    ("g is not defined and h is version('1', '>=')", {"g", "h"}),
])
def test_the_reader_finds_variables_not_filters_tests_or_keywords(expression, names):
    assert expression_names(expression) == names
