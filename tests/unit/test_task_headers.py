# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Declared hand-offs (issue 15): every task file under playbooks/tasks/ and
roles/*/tasks/ starts with a `# Needs: ... # Sets: ...` header. Needs names
every variable the file reads that comes from outside it (not its own role's
defaults, vars or argument_specs, not playbooks/vars/*.yml, not Ansible's
magic variables); Sets names every fact it sets or registers that another
task file or a playbook reads. The reads are found in the Jinja of the file (expressions,
when/that/loop conditions), reads of another host's variables through
hostvars[h]['x'], extract and attribute= included, so an undeclared hand-off
fails here; and so does a header that names what nothing uses: a Needs name
the file never reads, a Sets name no other file (nor this one, through
hostvars) reads."""
import functools
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
inventory_hostname ansible_host hostvars groups ansible_check_mode ansible_facts ansible_local ansible_play_hosts
ansible_play_hosts_all ansible_play_batch ansible_limit playbook_dir role_path item ansible_loop
ansible_playbook_python ansible_failed_task ansible_failed_result ansible_python_interpreter ansible_version omit loop
true false none True False None not and or in is if else elif endif for endfor set endset
""".split())
# Keys whose strings are bare expressions (a loop's list holds templates, as any value does).
CONDITION_KEYS = ("when", "that", "changed_when", "failed_when", "until")
STRINGS = re.compile(r"'[^']*'|\"[^\"]*\"")
JINJA = re.compile(r"\{\{(.*?)\}\}|\{%(.*?)%\}", re.S)
IDENT = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\b(?!\s*\()(?!\s*=[^=])")
DROPPED = re.compile(r"(\|\s*|\bis\s+(not\s+)?|\bgcu\.topsrider\.)[A-Za-z_]\w*|\bgcu\.topsrider\b")
LOCAL_JINJA = re.compile(r"\{%-?\s*(?:for\s+([\w\s,]+?)\s+in|set\s+(\w+)\s*=)")


# Reads of another host's variables, by name in a string: hostvars[h]['x'],
# hostvars[h].x, extract(hostvars, 'x') / map('extract', hostvars, 'x'), and
# after map('extract', hostvars) (a list of hosts' vars), attribute='x' and
# selectattr('x...') / rejectattr('x...').
HOSTVARS_READS = (
    re.compile(r"""hostvars\[[^\]]+\]\s*(?:\[\s*['"](\w+)['"]\s*\]|\.(\w+))"""),
    re.compile(r"""['"]?extract['"]?\s*,?\s*\(?\s*hostvars\s*,\s*['"](\w+)['"]"""),
)
HOSTS_VARS_LIST = re.compile(r"""['"]extract['"]\s*,\s*hostvars\s*\)""")
ATTRIBUTES = re.compile(r"""\battribute\s*=\s*['"](\w+)|\b(?:select|reject)attr\(\s*['"](\w+)""")


def expression_names(expression):
    """The variable names an expression reads (not filters, tests, calls, keyword arguments), with
    the names it reads from hostvars through strings."""
    names = set()
    for pattern in HOSTVARS_READS:
        for match in pattern.finditer(expression):
            names.update(g for g in match.groups() if g)
    for match in HOSTS_VARS_LIST.finditer(expression):
        for attribute in ATTRIBUTES.finditer(expression[match.end():]):
            names.update(g for g in attribute.groups() if g)
    # A filter or test becomes an operator: "a | default(b)" reads a and b, "a" is not called.
    text = DROPPED.sub(" + ", STRINGS.sub("''", expression))
    return ({m.group(1) for m in IDENT.finditer(text)} | names) - MAGIC


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


def header_sections(path, text=None):
    """(needs, sets): the text of the file's `# Needs:` and `# Sets:` sections (of `text` when given)."""
    if text is None:
        with open(os.path.join(TOP, path)) as f:
            text = f.read()
    lines = text.splitlines()
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
    return needs, rest.split("\n\n", 1)[0]


def header(path):
    """(needs, sets): every word of the two sections."""
    words = re.compile(r"[A-Za-z_]\w*")
    return tuple(set(words.findall(part)) for part in header_sections(path))


def analysed(path):
    with open(os.path.join(TOP, path)) as f:
        data = yaml.safe_load(f)
    defined, facts, reads = set(), set(), set()
    walk(data, defined, facts, reads)
    return reads - defined - facts - MAGIC - role_interface(path), facts


ANALYSED = {path: analysed(path) for path in TASK_FILES}


def playbook_reads():
    """What the playbooks read, with the variables that the deploy's filters taking hostvars read of each host."""
    from ansible_collections.gcu.topsrider.plugins.plugin_utils._deploy_split import HOSTVARS_READ
    reads = set()
    for path in glob.glob(os.path.join(TOP, "playbooks", "*.yml")):
        with open(path) as f:
            text = f.read()
        walk(yaml.safe_load(text), set(), set(), reads)
        if re.search(r"hostvars \| gcu\.topsrider\.topsrider_deploy_", text):
            reads |= set(HOSTVARS_READ)
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


def declared(path, text=None):
    """(needs, sets) as a header names variables: words with an underscore, outside parentheses (the
    prose: where a value comes from), not file names and not prefixes such as desired_*."""
    def names(part):
        previous = None
        while previous != part:
            previous, part = part, re.sub(r"\([^()]*\)", " ", part)
        # A full stop ends a sentence, not a name: only a dot followed by a word is a file's or an
        # attribute's (tasks/finish.yml, x.stdout), which names no variable here.
        return {w for w in re.findall(r"(?<![\w./*])[A-Za-z_]\w*(?![\w/*])(?!\.\w)", part)
                if "_" in w and not w.endswith("_")} - MAGIC
    return tuple(names(part) for part in header_sections(path, text))


@functools.lru_cache(maxsize=None)
def raw_reads(path):
    """Every name a YAML file reads, its own facts included."""
    with open(os.path.join(TOP, path)) as f:
        data = yaml.safe_load(f)
    reads = set()
    walk(data, set(), set(), reads)
    return reads


def template_reads(paths):
    reads = set()
    for path in paths:
        with open(path) as f:
            reads |= template_names(f.read())
    return reads


VARS_FILES = {}
for _source in glob.glob(os.path.join(TOP, "playbooks", "vars", "*.yml")):
    with open(_source) as _f:
        for _name, _value in (yaml.safe_load(_f) or {}).items():
            _reads = set()
            walk(_value, set(), set(), _reads)
            VARS_FILES[_name] = _reads


def templates_of(path):
    """The templates a task file can render: its role's, or the playbooks'."""
    parts = path.split(os.sep)
    base = os.path.join(TOP, "roles", parts[1]) if parts[0] == "roles" else os.path.join(TOP, "playbooks")
    return glob.glob(os.path.join(base, "templates", "*.j2")) + glob.glob(os.path.join(base, "files", "*.j2"))


def hostvars_reads(path):
    """The names a file reads from hostvars (another host's facts, the hand-offs between hosts)."""
    with open(os.path.join(TOP, path)) as f:
        text = f.read()
    names = set()
    for pattern in HOSTVARS_READS:
        for match in pattern.finditer(text):
            names.update(g for g in match.groups() if g)
    for match in HOSTS_VARS_LIST.finditer(text):
        end = text.find("}}", match.end())
        for attribute in ATTRIBUTES.finditer(text[match.end():end if end > 0 else len(text)]):
            names.update(g for g in attribute.groups() if g)
    return names


def read_elsewhere(path):
    """What other files read, and this file through hostvars."""
    reads = set(PLAYBOOK_READS) | hostvars_reads(path)
    for other in TASK_FILES:
        if other != path:
            reads |= raw_reads(other)
    for names in VARS_FILES.values():
        reads |= names
    reads |= template_reads(glob.glob(os.path.join(TOP, "roles", "*", "templates", "*.j2"))
                            + glob.glob(os.path.join(TOP, "playbooks", "templates", "*.j2")))
    return reads


@pytest.mark.parametrize("path", TASK_FILES)
def test_every_declared_need_is_read(path):
    """A name in '# Needs:' is read by the file, by a template it renders or by a playbooks/vars value it reads."""
    needs = declared(path)[0]
    reads = raw_reads(path) | template_reads(templates_of(path))
    for name in list(reads):
        reads |= VARS_FILES.get(name, set())
    unused = sorted(needs - reads)
    assert not unused, "%s declares %s in '# Needs:' but never reads it" % (path, ", ".join(unused))


@pytest.mark.parametrize("path", TASK_FILES)
def test_every_declared_set_is_read_somewhere(path):
    """A name in '# Sets:' is read by another task file, a playbook, a playbooks/vars value or a template,
    or by this file through hostvars (another host): a declared hand-off nothing takes is a stale header."""
    unread = sorted(declared(path)[1] - read_elsewhere(path))
    assert not unread, "%s declares %s in '# Sets:' but nothing reads it" % (path, ", ".join(unread))


def test_a_header_names_variables_not_prose():
    assert declared("playbooks/tasks/inputs.yml")[0] >= {"inputs_checks", "topsrider_bundle", "run_cache_keep",
                                                         "desired_profile", "eccl_env_profiles"}
    assert "desired_" not in declared("playbooks/tasks/inputs.yml")[0]


def test_a_name_that_ends_a_sentence_is_a_name():
    """'... sets stale_name.' declares stale_name (a full stop does not hide it from the checks);
    a file's name (node_paths.yml) and an attribute (read_it.stdout_lines) name no variable."""
    text = "---\n# Needs: some_input, node_paths.yml, read_it.stdout_lines and last_one.\n# Sets: stale_name.\n"
    assert declared("t.yml", text) == ({"some_input", "last_one"}, {"stale_name"})


@pytest.mark.parametrize("expression, names", [
    ("a | default(b) | gcu.topsrider.env_problems({'x': c}) is match('^d')", {"a", "b", "c"}),
    ("now(utc=true, fmt='%Y') ~ e.f", {"e"}),
    ("g is not defined and h is version('1', '>=')", {"g", "h"}),
    ("hostvars[host]['i'] ~ hostvars[inventory_hostname].j", {"host", "i", "j"}),
    ("groups['all'] | map('extract', hostvars, 'k') | list", {"k"}),
    ("play_hosts | map('extract', hostvars) | map(attribute='l') | selectattr('n.o', 'defined')",
     {"play_hosts", "l", "n"}),
    ("rounds | map(attribute='m') | flatten | map('extract', hostvars) | list", {"rounds"}),
])
def test_the_reader_finds_variables_not_filters_tests_or_keywords(expression, names):
    assert expression_names(expression) == names
