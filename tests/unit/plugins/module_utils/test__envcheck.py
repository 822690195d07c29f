# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's one rule for environment names and values (_envcheck)."""
from collections import OrderedDict

import pytest

from ansible_collections.gcu.topsrider.plugins.module_utils._envcheck import (
    ENV_NAME_RE, ENV_VALUE_RE, env_name_ok, env_problems, env_value_ok,
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
