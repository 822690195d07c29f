# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ECCL environment settings, checked before anything changes: the
eccl_env role's `preflight` entry point (the role used alone) and a deploy's
inputs (playbooks/tasks/inputs.yml, with the operator's topsrider_* values, in
the one assert of its input checks). Controller side.

Three steps, the first that fails is the answer (one sentence):
1. the role's own argument spec for `preflight` (roles/eccl_env/meta/argument_specs.yml:
   types and choices), when asked (the role used alone has Ansible check it);
2. what the spec cannot say: a profile that is a dict, the visible devices,
   ENFLAME_VISIBLE_DEVICES only through its own setting, the file's path (the
   first broken rule alone, naming its one setting, the value and the rule);
3. every name and value of the environment written, by the collection's one
   rule (module_utils/_envcheck.py).
Each message names the variable the operator set (`labels`)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import functools
import json
import os
import re
from collections import OrderedDict

from ansible_collections.gcu.topsrider.plugins.module_utils._envcheck import broken_rules, env_problems, guarded_reason
from ansible_collections.gcu.topsrider.plugins.module_utils._values import value_problems
from ansible_collections.gcu.topsrider.plugins.module_utils._vendors import vendor_spec

# The settings of the preflight, in the order the messages name them.
SETTINGS = ("eccl_env_profile", "eccl_env_profiles", "eccl_env_vars", "eccl_env_allow_names",
            "eccl_env_visible_devices", "eccl_env_file")
DEVICES_RE = re.compile(r"^(all|none|[0-9]+(,[0-9]+)*)\Z")
# Written from eccl_env_visible_devices only: the vendor table's name for the cards a job sees.
DEVICES_NAME = vendor_spec("enflame")["visible_env"]
SPEC_FILE = os.path.join(os.path.dirname(__file__), "..", "..", "roles", "eccl_env", "meta", "argument_specs.yml")
# What ArgumentSpecValidator reads of an option; the rest is documentation.
SPEC_KEYS = ("type", "elements", "choices", "default", "required", "options", "no_log")


@functools.lru_cache(maxsize=4)
def preflight_spec(path=SPEC_FILE):
    """The options of the role's `preflight` entry point, as ArgumentSpecValidator takes them
    (read once per process that checks settings; callers do not change it)."""
    import yaml
    with open(path) as f:
        # libyaml's loader where PyYAML has it: ten times faster than the pure-Python one.
        options = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))["argument_specs"]["preflight"]["options"]
    return dict((name, dict((k, v) for k, v in opts.items() if k in SPEC_KEYS)) for name, opts in options.items())


def spec_problems(settings, labels, spec=None):
    """The argument spec's errors for `settings`, each naming the operator's variable."""
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
    spec = preflight_spec() if spec is None else spec
    named = dict((labels.get(k, k), v) for k, v in spec.items() if k in settings)
    result = ArgumentSpecValidator(named).validate(dict((labels.get(k, k), settings[k]) for k in settings if k in spec))
    return list(result.error_messages)


def settings_problems(settings, labels=None, check_spec=False, allow_label=None):
    """[] when the settings are sound, else [one sentence] (see the module's docstring).

    `settings`: the eccl_env_* values of SETTINGS (missing ones take the spec's default);
    `labels`: setting -> the operator's variable the messages name (default: the setting);
    `allow_label`: what the messages call eccl_env_allow_names (default: its label)."""
    labels = dict((k, k) for k in SETTINGS) if labels is None else dict((k, labels.get(k, k)) for k in SETTINGS)
    spec = preflight_spec()
    values = dict((k, settings[k] if k in settings else copy.deepcopy(spec[k].get("default"))) for k in SETTINGS)
    if check_spec:
        problems = spec_problems(values, labels, spec)
        if problems:
            return ["eccl_env: refused, nothing was changed: %s." % "; ".join(problems)]
    problem = _setting_problem(values, labels)
    if problem:
        return ["eccl_env: refused, nothing was changed: %s." % problem]
    profile, profiles, env_vars = values["eccl_env_profile"], values["eccl_env_profiles"], values["eccl_env_vars"]
    visible = values["eccl_env_visible_devices"]
    chosen = profiles[profile]
    environment = written_environment(profiles, profile, env_vars, visible)
    allow_label = allow_label or labels["eccl_env_allow_names"]
    sources = OrderedDict([("eccl_env_profiles." + profile, chosen), (labels["eccl_env_vars"], env_vars),
                           (labels["eccl_env_visible_devices"], {DEVICES_NAME: visible})])
    problems = env_problems(environment, sources, values["eccl_env_allow_names"], allow_label)
    if not problems:
        return []
    # The rules broken, each once: the names' and the values' (broken_rules), and the allow list's where a
    # guarded name was refused.
    rules = [broken_rules(environment)]
    allow = values["eccl_env_allow_names"]
    allowed = set(allow) if isinstance(allow, (list, tuple)) else set()
    if any(guarded_reason(name) and name not in allowed for name in environment):
        rules.append("A name the loader or the shell acts on needs %s." % allow_label)
    return ["eccl_env: refused, nothing was changed: %s." % "; ".join(problems) + "".join(" " + r for r in rules if r)]


def written_environment(profiles, profile, env_vars=None, visible="all"):
    """The environment eccl_env writes (its template, topsrider.sh.j2) and a
    deploy's or drift check's desired state expects: the chosen profile's
    variables, `env_vars` over them, then ENFLAME_VISIBLE_DEVICES from
    `visible`. A profile that is not there (or not a mapping) contributes
    nothing; settings_problems refuses it before anything is written. The
    filter gcu.topsrider.eccl_env_environment."""
    chosen = profiles.get(profile) if isinstance(profiles, dict) else None
    environment = dict(chosen if isinstance(chosen, dict) else {})
    environment.update(env_vars or {})
    environment[DEVICES_NAME] = visible
    return environment


def _setting_problem(values, labels):
    """What the spec cannot say, one rule at a time in SETTINGS' order: the first
    broken rule, naming its one setting (as the operator set it), the value and
    the rule; None when all hold."""
    profile, profiles, env_vars = values["eccl_env_profile"], values["eccl_env_profiles"], values["eccl_env_vars"]
    visible, env_file = values["eccl_env_visible_devices"], values["eccl_env_file"]
    if not isinstance(profiles, dict):
        return "eccl_env_profiles must be a dict of profile names to dicts of variables (got %s)" % _json(profiles)
    if not isinstance(profile, str) or profile not in profiles:
        return ("%s must name an entry of eccl_env_profiles (got %s; defined: %s)"
                % (labels["eccl_env_profile"], _json(profile), ", ".join(profiles)))
    chosen = profiles[profile]
    if not isinstance(chosen, dict):
        return ("eccl_env_profiles.%s, the profile %s names, must be a dict of variables (got %s)"
                % (profile, labels["eccl_env_profile"], _json(chosen)))
    if not isinstance(env_vars, dict):
        return "%s must be a dict of variable names to values (got %s)" % (labels["eccl_env_vars"], _json(env_vars))
    if not isinstance(visible, str) or not DEVICES_RE.match(visible):
        return ("%s must be 'all', 'none' or a comma list of card indexes such as '0,1,2' (got %s)"
                % (labels["eccl_env_visible_devices"], _json(visible)))
    for where, variables in ((labels["eccl_env_vars"], env_vars), ("eccl_env_profiles." + profile, chosen)):
        if DEVICES_NAME in variables:
            return ("%s sets %s to %s: %s is the only place to set it"
                    % (where, DEVICES_NAME, _json(variables[DEVICES_NAME]), labels["eccl_env_visible_devices"]))
    if value_problems({"eccl_env_file": env_file}, "path"):
        return ("%s must be an absolute path of plain characters (letters, digits, _ . + ~ @ -, no '..' part; got %s)"
                % (labels["eccl_env_file"], _json(env_file)))
    return None


def _json(value):
    return json.dumps(value, default=repr)
