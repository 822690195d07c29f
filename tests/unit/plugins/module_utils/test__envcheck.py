# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's one rule for environment names and values (_envcheck)."""
from collections import OrderedDict

import pytest

import os
import subprocess

from ansible_collections.gcu.topsrider.plugins.module_utils._envcheck import (
    ENV_NAME_RE, ENV_VALUE_RE, GUARDED_NAMES, GUARDED_PREFIXES, SEARCH_PATHS, env_name_ok, env_problems,
    env_value_ok, export_line, extended_value, guarded_reason,
)

# (mapping, the problems expected, in order)
CASES = [
    ({}, []),
    ({"ECCL_DEBUG": "INFO", "ECCL_MAX_NCHANNELS": 2, "RATIO": 0.5, "ENFLAME_VISIBLE_DEVICES": "0,1,2",
      "_X": "", "P": "/usr/local/tops/lib:/opt/x", "Q": "a=b+c@d%e-f"}, []),
    ({"ECCL_ALGO": "ring\n"},
     ['the value of "ECCL_ALGO", "ring\\n", has characters that are not allowed']),
    ({"ECCL_ALGO": "ring\ntouch /tmp/pwned"},
     ['the value of "ECCL_ALGO", "ring\\ntouch /tmp/pwned", has characters that are not allowed']),
    ({"ECCL_ASYNC_DISABLE": True}, ['the value of "ECCL_ASYNC_DISABLE" is a boolean, not a string or number']),
    ({"A": False}, ['the value of "A" is a boolean, not a string or number']),
    ({"A": None}, ['the value of "A" is a null, not a string or number']),
    ({"A": {"b": 1}}, ['the value of "A" is a dict, not a string or number']),
    ({"A": [1, 2]}, ['the value of "A" is a list, not a string or number']),
    ({"ECCL-DEBUG": "INFO"}, ['variable name "ECCL-DEBUG" is not a valid name']),
    ({"eccl_debug": "INFO"}, ['variable name "eccl_debug" is not a valid name']),
    ({"1ECCL": "INFO"}, ['variable name "1ECCL" is not a valid name']),
    ({"": "x"}, ['variable name "" is not a valid name']),
    ({"A\n": "x"}, ['variable name "A\\n" is not a valid name']),
    ({3: "x"}, ['variable name "3" is not a valid name']),
    # a bad name and a bad value of the same variable: both are named
    ({"BAD NAME": True}, ['variable name "BAD NAME" is not a valid name',
                          'the value of "BAD NAME" is a boolean, not a string or number']),
    ({"A": "x", "B": "$(id)", "C": "ok", "D": "`id`"},
     ['the value of "B", "$(id)", has characters that are not allowed',
      'the value of "D", "`id`", has characters that are not allowed']),
    ("ECCL_DEBUG=INFO", ["the environment is a str, not a dict of names and values"]),
    (None, ["the environment is a null, not a dict of names and values"]),
    ([["A", "b"]], ["the environment is a list, not a dict of names and values"]),
]


@pytest.mark.parametrize("mapping, expected", CASES)
def test_env_problems(mapping, expected):
    assert env_problems(mapping) == expected


# Every character the rule refuses in a value, on its own and at the end.
@pytest.mark.parametrize("char", list(" \t\n\r\x00'\"$`;|&<>()\\*?!#~[]{}^") + ["\u00e9"])
@pytest.mark.parametrize("where", ["x{}", "{}x", "{}"])
def test_refused_value_characters(char, where):
    value = where.format(char)
    assert not env_value_ok(value)
    assert env_problems({"A": value}) != []


@pytest.mark.parametrize("value, ok", [
    ("", True), ("INFO", True), (0, True), (-1, True), (2.5, True), ("a,b:c/d=e+f@g%h-i_j.k", True),
    (True, False), (False, False), (None, False), ([], False), ({}, False), (b"INFO", False),
])
def test_value_types(value, ok):
    assert env_value_ok(value) is ok


def test_trailing_newline_is_refused_by_the_patterns_themselves():
    # \Z, not $: "$" would match before a trailing newline.
    assert ENV_NAME_RE.match("ECCL_DEBUG") and not ENV_NAME_RE.match("ECCL_DEBUG\n")
    assert ENV_VALUE_RE.match("INFO") and not ENV_VALUE_RE.match("INFO\n")
    assert not env_name_ok("ECCL_DEBUG\n")
    assert ENV_NAME_RE.pattern.endswith("\\Z") and ENV_VALUE_RE.pattern.endswith("\\Z")


@pytest.mark.parametrize("sources, expected", [
    # one label for every name
    ("dist_launch_env", ['the value of "B" (from dist_launch_env) is a boolean, not a string or number']),
    # label -> mapping, in combine order: the last that sets the name is named
    (OrderedDict([("profile", {"B": "x"}), ("vars", {"B": True})]),
     ['the value of "B" (from vars) is a boolean, not a string or number']),
    (OrderedDict([("vars", {"B": True}), ("profile", {"B": "x"})]),
     ['the value of "B" (from profile) is a boolean, not a string or number']),
    # a name no source sets: no label
    ({"profile": {"A": "x"}}, ['the value of "B" is a boolean, not a string or number']),
    (None, ['the value of "B" is a boolean, not a string or number']),
])
def test_sources_name_where_a_variable_came_from(sources, expected):
    assert env_problems(OrderedDict([("A", "ok"), ("B", True)]), sources) == expected


def test_order_follows_the_mapping():
    problems = env_problems(OrderedDict([("Z", "$"), ("A", "$"), ("M", "$")]))
    assert [p.split('"')[1] for p in problems] == ["Z", "A", "M"]


# ---------------------------------------------------------------- guarded names
@pytest.mark.parametrize("name", [
    # the issue's two, the loader's family, the shell's, glibc's, the interpreters'
    "PATH", "LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH", "LD_BIND_NOW", "LD_DEBUG_OUTPUT", "BASH_ENV", "ENV",
    "PROMPT_COMMAND", "IFS", "SHELLOPTS", "BASHOPTS", "PS4", "GLOBIGNORE", "CDPATH", "HOME",
    "GLIBC_TUNABLES", "GCONV_PATH", "MALLOC_CHECK_", "MALLOC_ARENA_MAX", "TMPDIR",
    "PYTHONSTARTUP", "PYTHONPATH", "PYTHONHOME", "PERL5OPT", "NODE_OPTIONS", "JAVA_TOOL_OPTIONS",
])
def test_guarded_names_are_refused_unless_allowed(name):
    value = "/opt/x" if name in SEARCH_PATHS else "1"
    problems = env_problems({"ECCL_DEBUG": "INFO", name: value}, "topsrider_env_vars")
    assert problems == ['"%s" (from topsrider_env_vars) is %s: refused unless the allow list names it'
                        % (name, guarded_reason(name))]
    assert env_problems({name: value}, None, [], "topsrider_env_allow_names") == [
        '"%s" is %s: refused unless topsrider_env_allow_names names it' % (name, guarded_reason(name))]
    # allowed by name: passes; allowing another name does not allow this one
    assert env_problems({name: value}, None, [name]) == []
    assert env_problems({name: value}, None, ["ECCL_DEBUG"]) != []


@pytest.mark.parametrize("name", sorted(GUARDED_NAMES))
def test_every_entry_of_the_table_is_guarded(name):
    assert guarded_reason(name) == GUARDED_NAMES[name]
    assert env_problems({name: "/opt/x"}) != []
    assert env_problems({name: "/opt/x"}, allow=[name]) == []


@pytest.mark.parametrize("name", [
    # names that merely look alike: only whole names and the LD_ / MALLOC_ families are guarded
    "ECCL_DEBUG", "ENFLAME_VISIBLE_DEVICES", "TOPS_VISIBLE_DEVICES", "GCU_MEMORY_FRACTION", "MYPATH",
    "PATHS", "ECCL_LD_PRELOAD", "LD", "ENV_X", "XLD_PRELOAD", "NCCL_SOCKET_IFNAME", "OMP_NUM_THREADS",
])
def test_plain_names_are_not_guarded(name):
    assert guarded_reason(name) is None
    assert env_problems({name: "1"}) == []


def test_prefixes_are_families():
    assert sorted(GUARDED_PREFIXES) == ["LD_", "MALLOC_"]
    assert guarded_reason("LD_ANYTHING_NEW") == GUARDED_PREFIXES["LD_"]
    # an exact entry says more than its family
    assert guarded_reason("LD_LIBRARY_PATH") == SEARCH_PATHS["LD_LIBRARY_PATH"]


@pytest.mark.parametrize("allow, expected", [
    ("LD_PRELOAD", ["topsrider_env_allow_names is a str, not a list of variable names"]),
    ({"LD_PRELOAD": True}, ["topsrider_env_allow_names is a dict, not a list of variable names"]),
    (["LD_PRELOAD", "ld preload", 3], ['topsrider_env_allow_names names "ld preload", "3", not valid variable names']),
])
def test_a_bad_allow_list_allows_nothing(allow, expected):
    problems = env_problems({"LD_PRELOAD": "/tmp/x.so"}, None, allow, "topsrider_env_allow_names")
    assert problems[:1] == expected
    assert problems[1:] == ['"LD_PRELOAD" is %s: refused unless topsrider_env_allow_names names it'
                            % GUARDED_PREFIXES["LD_"]]


@pytest.mark.parametrize("value, bad_entry, why", [
    ("/opt/x:", "", "is not absolute"),
    ("/opt/x::/opt/y", "", "is not absolute"),
    (":/opt/x", "", "is not absolute"),
    ("bin", "bin", "is not absolute"),
    (".", ".", "is not absolute"),
    ("/opt/../etc", "/opt/../etc", "has a '..' part"),
])
def test_an_allowed_search_path_never_searches_the_current_directory(value, bad_entry, why):
    assert env_problems({"PATH": value}, allow=["PATH"]) == [
        'the value of "PATH", "%s", is a search path whose entry "%s" %s; each entry must be an absolute '
        'directory' % (value, bad_entry, why)]


def test_an_allowed_search_path_of_absolute_directories_passes():
    assert env_problems({"PATH": "/usr/local/tops/bin:/opt/x", "LD_LIBRARY_PATH": "/usr/local/tops/lib"},
                        allow=["PATH", "LD_LIBRARY_PATH"]) == []


# ---------------------------------------------------------------- written lines
@pytest.mark.parametrize("name, value, line", [
    ("ECCL_DEBUG", "WARN", "export ECCL_DEBUG=WARN"),
    ("ECCL_MAX_NCHANNELS", 2, "export ECCL_MAX_NCHANNELS=2"),
    ("GCU_MEMORY_FRACTION", 0.5, "export GCU_MEMORY_FRACTION=0.5"),
    ("X", "", "export X=''"),
    ("PATH", "/usr/local/tops/bin", 'export PATH="${PATH:+$PATH:}"/usr/local/tops/bin'),
    ("LD_LIBRARY_PATH", "/a:/b", 'export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}"/a:/b'),
])
def test_export_line(name, value, line):
    assert export_line(name, value) == line


@pytest.mark.parametrize("before, after", [
    ("/usr/bin:/bin", "/usr/bin:/bin:/usr/local/tops/bin"),
    (None, "/usr/local/tops/bin"),
    ("", "/usr/local/tops/bin"),
])
def test_a_search_path_is_extended_by_a_real_shell(tmp_path, before, after):
    profile = tmp_path / "topsrider.sh"
    profile.write_text(export_line("LD_LIBRARY_PATH", "/usr/local/tops/lib") + "\n"
                       + export_line("PYTHONPATH", "/usr/local/tops/bin") + "\n")
    env = {"PATH": "/usr/bin:/bin"}
    if before is not None:
        env["PYTHONPATH"] = before
    out = subprocess.run(["sh", "-c", '. "$1" && printf "%s|%s" "$PYTHONPATH" "$LD_LIBRARY_PATH"', "sh", str(profile)],
                         env=env, stdout=subprocess.PIPE, check=True, universal_newlines=True).stdout
    assert out == after + "|/usr/local/tops/lib"
    assert extended_value("PYTHONPATH", before, "/usr/local/tops/bin") == after
    assert os.path.isfile(str(profile))


def test_extended_value_replaces_only_plain_names():
    assert extended_value("ECCL_DEBUG", "INFO", "WARN") == "WARN"
    assert extended_value("PATH", "/usr/bin", "/opt/x") == "/usr/bin:/opt/x"
    assert extended_value("ECCL_MAX_NCHANNELS", None, 2) == "2"
