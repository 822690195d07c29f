# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils/_eccl_settings.py: the ECCL environment settings as eccl_env's
preflight and deploy.yml's input checks judge them (the role's real argument
spec, the checks it cannot say, the one rule for names and values), and the
filter gcu.topsrider.eccl_env_problems in a real play."""

import pytest

from ansible_collections.gcu.topsrider.plugins.plugin_utils._eccl_settings import (
    SETTINGS, preflight_spec, settings_problems, written_environment)
from conftest import run_play

# The labels deploy.yml gives (playbooks/tasks/inputs.yml).
DEPLOY = {"eccl_env_profile": "topsrider_profile", "eccl_env_vars": "topsrider_env_vars",
          "eccl_env_allow_names": "topsrider_env_allow_names", "eccl_env_visible_devices": "topsrider_visible_devices"}


def test_the_spec_is_the_roles_own_and_names_every_setting():
    spec = preflight_spec()
    assert sorted(spec) == sorted(SETTINGS)
    assert spec["eccl_env_profile"]["choices"] == ["dev", "staging", "prod"]
    assert spec["eccl_env_vars"]["type"] == "dict"
    assert all("description" not in opts for opts in spec.values())


def test_the_defaults_are_sound():
    assert settings_problems({}) == []
    assert settings_problems({}, DEPLOY, True) == []


@pytest.mark.parametrize("settings, words", [
    ({"eccl_env_vars": ["ECCL_DEBUG"]}, ["eccl_env: refused, nothing was changed: argument 'topsrider_env_vars'", "dict"]),
    ({"eccl_env_profile": "fast"}, ["value of topsrider_profile must be one of: dev, staging, prod, got: fast"]),
    ({"eccl_env_allow_names": "LD_PRELOAD"}, ["topsrider_env_allow_names"]),
])
def test_the_argument_spec_names_the_operators_variable(settings, words):
    (problem,) = settings_problems(settings, DEPLOY, True)
    assert all(w in problem for w in words), problem


def test_the_spec_is_not_checked_unless_asked():
    # The role used alone: Ansible checks its spec; a profile the spec would refuse is then refused here
    # because eccl_env_profiles has no such entry.
    assert settings_problems({"eccl_env_profile": "fast"}) == [
        'eccl_env: refused, nothing was changed: eccl_env_profile must name an entry of eccl_env_profiles '
        '(got "fast"; defined: dev, staging, prod).']


SAYS = "eccl_env: refused, nothing was changed: "
# Every rule the spec cannot say, each refusal's whole sentence: the one setting broken, as the operator
# set it, its value and the rule; no other setting is named.
ONE_RULE = [
    ({"eccl_env_visible_devices": "0,1;touch /tmp/pwned"},
     "topsrider_visible_devices must be 'all', 'none' or a comma list of card indexes such as '0,1,2' "
     '(got "0,1;touch /tmp/pwned").'),
    ({"eccl_env_visible_devices": "0,1\n"},
     "topsrider_visible_devices must be 'all', 'none' or a comma list of card indexes such as '0,1,2' (got \"0,1\\n\")."),
    ({"eccl_env_vars": {"ENFLAME_VISIBLE_DEVICES": "0"}},
     'topsrider_env_vars sets ENFLAME_VISIBLE_DEVICES to "0": topsrider_visible_devices is the only place to set it.'),
    ({"eccl_env_profiles": {"prod": {"ENFLAME_VISIBLE_DEVICES": "0"}}},
     'eccl_env_profiles.prod sets ENFLAME_VISIBLE_DEVICES to "0": topsrider_visible_devices is the only place to set it.'),
    ({"eccl_env_profiles": {"prod": "WARN"}},
     'eccl_env_profiles.prod, the profile topsrider_profile names, must be a dict of variables (got "WARN").'),
    ({"eccl_env_profiles": {"dev": {}}}, 'topsrider_profile must name an entry of eccl_env_profiles (got "prod"; defined: dev).'),
    ({"eccl_env_file": "/etc/profile.d/../x.sh"},
     "eccl_env_file must be an absolute path of plain characters (letters, digits, _ . + ~ @ -, no '..' part; "
     'got "/etc/profile.d/../x.sh").'),
]


@pytest.mark.parametrize("settings, sentence", ONE_RULE)
def test_what_the_spec_cannot_say_names_the_one_setting_its_value_and_the_rule(settings, sentence):
    # The whole sentence: no other setting or rule is in it.
    assert settings_problems(settings, DEPLOY, True) == [SAYS + sentence]


def test_a_type_the_spec_would_refuse_is_named_where_the_spec_is_not_checked():
    # The role used alone has Ansible check its spec first; a caller that does not still gets one rule.
    assert settings_problems({"eccl_env_vars": "ECCL_DEBUG=1"}, DEPLOY) == [
        SAYS + 'topsrider_env_vars must be a dict of variable names to values (got "ECCL_DEBUG=1").']
    assert settings_problems({"eccl_env_profiles": ["prod"]}) == [
        SAYS + 'eccl_env_profiles must be a dict of profile names to dicts of variables (got ["prod"]).']
    assert settings_problems({"eccl_env_profile": ["prod"]}) == [
        SAYS + 'eccl_env_profile must name an entry of eccl_env_profiles (got ["prod"]; defined: dev, staging, prod).']


def test_a_guarded_name_is_named_with_the_variable_it_came_from():
    (problem,) = settings_problems({"eccl_env_vars": {"PATH": "/usr/local/tops/bin", "LD_PRELOAD": "/tmp/x.so"}}, DEPLOY, True)
    assert problem.startswith('eccl_env: refused, nothing was changed: "PATH" (from topsrider_env_vars) is the shell'), problem
    assert '"LD_PRELOAD" (from topsrider_env_vars)' in problem
    assert problem.count("refused unless topsrider_env_allow_names names it") == 2
    # Only the rule broken: no name or value rule, the allow list's once.
    assert problem.endswith("refused unless topsrider_env_allow_names names it. "
                            "A name the loader or the shell acts on needs topsrider_env_allow_names."), problem
    assert "Names must match" not in problem and "Values must be" not in problem
    assert problem.count("nothing was changed") == 1


@pytest.mark.parametrize("env_vars, rules", [
    ({"ECCL-DEBUG": "1"}, ["Names must match"]),
    ({"ECCL_ALGO": "ring\ntouch /tmp/x"}, ["Values must be strings or numbers"]),
    ({"ECCL-DEBUG": "1", "ECCL_ALGO": "ring;x"}, ["Names must match", "Values must be strings or numbers"]),
])
def test_a_bad_name_or_value_is_told_the_rule_it_breaks_and_no_other(env_vars, rules):
    (problem,) = settings_problems({"eccl_env_vars": env_vars}, DEPLOY, True)
    for rule in ("Names must match", "Values must be strings or numbers", "A name the loader or the shell acts on"):
        assert (rule in problem) == (rule in rules), (rule, problem)
    assert problem.count("Names must match") <= 1 and problem.count("Values must be") <= 1, problem


def test_an_allowed_search_path_passes_and_a_profile_value_is_named_by_its_profile():
    assert settings_problems({"eccl_env_vars": {"LD_LIBRARY_PATH": "/opt/tops/lib"},
                              "eccl_env_allow_names": ["LD_LIBRARY_PATH"]}, DEPLOY, True) == []
    (problem,) = settings_problems({"eccl_env_profile": "dev",
                                    "eccl_env_profiles": {"dev": {"ECCL_ALGO": "ring\ntouch /tmp/x"}}}, DEPLOY, True)
    assert '"ECCL_ALGO" (from eccl_env_profiles.dev)' in problem and "characters that are not allowed" in problem


def test_the_allow_label_is_what_the_caller_names():
    (problem,) = settings_problems({"eccl_env_vars": {"PATH": "/x"}}, {}, False, "my_allow")
    assert "refused unless my_allow names it" in problem and problem.endswith("needs my_allow."), problem


def test_the_environment_written_is_profile_then_vars_then_the_visible_cards():
    profiles = {"prod": {"ECCL_DEBUG": "WARN", "ECCL_ALGO": "ring"}, "dev": "not a mapping"}
    env = written_environment(profiles, "prod", {"ECCL_DEBUG": "INFO", "ECCL_X": 1}, "0,1")
    assert list(env.items()) == [("ECCL_DEBUG", "INFO"), ("ECCL_ALGO", "ring"), ("ECCL_X", 1),
                                 ("ENFLAME_VISIBLE_DEVICES", "0,1")]
    assert profiles["prod"] == {"ECCL_DEBUG": "WARN", "ECCL_ALGO": "ring"}          # not changed in place
    # An unknown profile, or one that is not a mapping, contributes nothing (settings_problems refuses it).
    assert written_environment(profiles, "staging") == {"ENFLAME_VISIBLE_DEVICES": "all"}
    assert written_environment(profiles, "dev", None, "none") == {"ENFLAME_VISIBLE_DEVICES": "none"}
    assert written_environment(None, "prod") == {"ENFLAME_VISIBLE_DEVICES": "all"}


def test_the_role_and_the_desired_state_write_the_same_environment(tmp_path):
    """roles/eccl_env/vars/main.yml and playbooks/vars/desired_state.yml both
    use the filter: the same inputs give the same mapping, ENFLAME_VISIBLE_DEVICES last."""
    import os
    import yaml
    from conftest import TOP
    with open(os.path.join(TOP, "roles", "eccl_env", "vars", "main.yml")) as f:
        role = yaml.safe_load(f)["eccl_env_environment"]
    with open(os.path.join(TOP, "playbooks", "vars", "desired_state.yml")) as f:
        desired = yaml.safe_load(f)["desired_environment"]
    rc, out = run_play(tmp_path, [
        {"name": "Same", "ansible.builtin.assert": {"that": [
            "role_env == desired_env",
            "role_env | list == ['ECCL_DEBUG', 'ECCL_ALGO', 'ENFLAME_VISIBLE_DEVICES']",
            "role_env.ECCL_DEBUG == 'INFO' and role_env.ENFLAME_VISIBLE_DEVICES == '2,3'"]}},
    ], {"role_env": role, "desired_env": desired,
        "eccl_env_profiles": {"prod": {"ECCL_DEBUG": "WARN", "ECCL_ALGO": "ring"}},
        "eccl_env_profile": "prod", "desired_profile": "prod",
        "eccl_env_vars": {"ECCL_DEBUG": "INFO"}, "desired_env_vars": {"ECCL_DEBUG": "INFO"},
        "eccl_env_visible_devices": "2,3", "desired_visible_devices": "2,3"})
    assert rc == 0, out


def test_the_filter_in_a_play(tmp_path):
    rc, out = run_play(tmp_path, [
        {"name": "Sound", "ansible.builtin.assert": {"that": "({} | gcu.topsrider.eccl_env_problems({}, true)) == []"}},
        {"name": "Refused", "ansible.builtin.assert": {"that": [
            "(bad | gcu.topsrider.eccl_env_problems(labels, true)) | length == 1",
            "'(from topsrider_env_vars)' in (bad | gcu.topsrider.eccl_env_problems(labels, true))[0]"]}},
    ], {"bad": {"eccl_env_vars": {"LD_PRELOAD": "/tmp/x.so"}}, "labels": DEPLOY})
    assert rc == 0, out
