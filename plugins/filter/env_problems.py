# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter gcu.topsrider.env_problems: a thin wrapper of
plugins/module_utils/_envcheck.py, the collection's one rule for environment
names and values (eccl_env, dist_launch, eccl_probe)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
name: env_problems
author: gcu.topsrider contributors
version_added: 0.1.0
short_description: What is wrong with an environment mapping before it is written to a shell file
description:
  - Checks every name and value of a mapping of environment variables and returns one line per problem,
    in the mapping's order; an empty list means every name and value is safe to write.
  - Names must match C(^[A-Z_][A-Z0-9_]*\Z) (upper-case letters, digits and C(_), not starting with a digit).
  - >-
    Values must be strings or numbers (not booleans, null, dicts or lists) made only of letters, digits and
    C(_ . , : / = + @ % -). Spaces, quotes, C($), backticks, C(;), C(|), C(&), newlines (a trailing one
    included) and NUL are refused.
  - >-
    A well-formed name that the loader, the shell, glibc or an interpreter acts on is refused unless O(allow)
    names it: C(LD_PRELOAD), C(LD_AUDIT), every other C(LD_*) and C(MALLOC_*) name, C(PATH), C(BASH_ENV),
    C(ENV), C(PROMPT_COMMAND), C(IFS), C(SHELLOPTS), C(PYTHONPATH), C(PYTHONSTARTUP), C(PERL5OPT),
    C(NODE_OPTIONS), C(GLIBC_TUNABLES), C(GCONV_PATH) and their kin (the table C(GUARDED_NAMES) in
    C(plugins/module_utils/_envcheck.py) says what each one does).
  - >-
    An allowed search path (C(PATH), C(LD_LIBRARY_PATH), C(PYTHONPATH), C(PERL5LIB), C(NODE_PATH)) is written
    as an extension of the shell's own value (see the filter P(gcu.topsrider.env_export_lines#filter)), and
    each of its C(:)-separated entries must be an absolute directory (an empty or relative entry would search
    the current directory).
  - The same rule as the roles C(gcu.topsrider.eccl_env) and C(gcu.topsrider.dist_launch) and the module
    M(gcu.topsrider.eccl_probe) apply; the code is C(plugins/module_utils/_envcheck.py).
positional: sources, allow, allow_label
options:
  _input:
    description: The environment, a mapping of variable names to values.
    type: dict
    required: true
  sources:
    description:
      - Where the names came from, for the messages. Either one label for every name, or a mapping of
        label to mapping, in the order the environment was combined from them; a problem then names,
        after the variable, the last source that sets it.
      - Omitted, the messages name no source.
    type: raw
  allow:
    description:
      - The guarded names the operator allows (for example C([LD_LIBRARY_PATH])). Omitted or empty, every
        guarded name is refused. When it is not a list of valid names, one problem line says so and nothing is allowed.
    type: list
    elements: str
    version_added: 0.3.0
  allow_label:
    description: What the messages call O(allow), for example the variable the operator sets.
    type: str
    default: the allow list
    version_added: 0.3.0
"""

EXAMPLES = r"""
- name: Refuse unsafe environment names and values before anything is written
  ansible.builtin.assert:
    that: (my_env | gcu.topsrider.env_problems) | length == 0
    fail_msg: "refused, nothing was written: {{ my_env | gcu.topsrider.env_problems | join('; ') }}"
  vars:
    my_env:
      ECCL_DEBUG: INFO
      ECCL_MAX_NCHANNELS: 2

# ['the value of "ECCL_ALGO" (from my_vars), "ring\ntouch /tmp/x", has characters that are not allowed']
- name: Name the variable the bad value came from
  ansible.builtin.debug:
    msg: >-
      {{ my_defaults | combine(my_vars)
         | gcu.topsrider.env_problems({'my_defaults': my_defaults, 'my_vars': my_vars}) }}
  vars:
    my_defaults: {ECCL_DEBUG: WARN}
    my_vars: {ECCL_ALGO: "ring\ntouch /tmp/x"}

# ['"LD_PRELOAD" (from my_vars) is the dynamic loader's settings (what every program loads):
#   refused unless my_allow names it']
- name: Refuse a name the loader acts on; allow a search path explicitly
  ansible.builtin.debug:
    msg: "{{ my_vars | gcu.topsrider.env_problems('my_vars', my_allow, 'my_allow') }}"
  vars:
    my_vars: {LD_PRELOAD: /tmp/x.so, LD_LIBRARY_PATH: /opt/tops/lib}
    my_allow: [LD_LIBRARY_PATH]
"""

RETURN = r"""
_value:
  description:
    - >-
      One line per problem, in the mapping's order, each naming the variable (JSON-quoted, so a newline
      reads C(\n)) and what is wrong, for example C(variable name "ECCL-DEBUG" is not a valid name),
      C(the value of "ECCL_ASYNC" is a boolean, not a string or number),
      C(the value of "ECCL_DEBUG", "INFO; touch /tmp/x", has characters that are not allowed) or
      C("LD_PRELOAD" is the dynamic loader's settings (what every program loads): refused unless the allow list names it).
    - An empty list when every name and value is allowed (an empty mapping included).
    - When the input is not a mapping, the one line C(the environment is a <type>, not a dict of names and values).
  type: list
  elements: str
"""

from ansible_collections.gcu.topsrider.plugins.plugin_utils._filters import deferred, guarded

env_problems = deferred("module_utils._envcheck.env_problems")
export_line = deferred("module_utils._envcheck.export_line")


def env_export_lines(mapping):
    """The profile's export lines, sorted by name (a mapping env_problems passed)."""
    return [export_line(name, mapping[name]) for name in sorted(mapping)]


class FilterModule(object):
    def filters(self):
        return {"env_problems": env_problems, "env_export_lines": env_export_lines,
                "eccl_env_problems": guarded(deferred("plugin_utils._eccl_settings.settings_problems")),
                "eccl_env_environment": guarded(deferred("plugin_utils._eccl_settings.written_environment"))}
