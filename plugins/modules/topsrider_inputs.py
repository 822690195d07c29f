#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: topsrider_inputs
short_description: Check a run's inputs on a host before anything is compared or changed
version_added: "0.3.0"
description:
  - Judges, in this order, and fails the host with the first failing check's sentence (C(refused, nothing was
    changed) or the like). Nothing is changed anywhere.
  - C(release) - the vendor's C(.run) refused by its checks, or the release's signature or revocation list
    refused; both are checked once per run on the controller (C(playbooks/tasks/inputs.yml)) and their results
    handed in here.
  - C(python) - the node's Python, found by one raw command (the first of O(python) that runs, its path and
    version) and compared with the floor of the module code of the C(ansible-core) that runs the play. No
    module is sent, so a node whose Python is too old gets this sentence instead of C(ansible-core)'s own
    error. The command runs only when the release passed; a refused release reaches no node. A command that
    fails for any other reason than a missing Python (the connection's) is not judged here; the next task
    that contacts the node reports it.
  - C(settings) - the manifest's names, the operator's paths and the ECCL environment settings, from the
    variable named by O(settings_var), which is templated only when the release and the Python passed.
  - The logic is in C(plugins/plugin_utils/_inputs.py); C(playbooks/tasks/inputs.yml) is its one caller.
author:
  - gcu.topsrider contributors (@gcu-topsrider)
options:
  checks:
    description: Which checks run, of C(release), C(python) and C(settings); always in that order.
    type: list
    elements: str
    default: [release, python, settings]
  release:
    description:
      - C(bundle) (C(topsrider_bundle)), C(installer) (the C(.run) extraction's result, or none) and C(trust) (the
        signature check's result, or none).
    type: dict
    default: {}
  python:
    description:
      - The interpreters to try on the node, in order (the inventory's C(ansible_python_interpreter), or
        C(ansible-core)'s own fallback list). Needed for the C(python) check.
    type: list
    elements: str
    default: []
  settings_var:
    description:
      - The name of the variable that holds the settings (C(bundle_dir), C(manifest), C(python), C(cache_keep),
        C(eccl)), resolved as C(debug)'s C(var) is, only when the checks before it passed. Needed for the
        C(settings) check.
    type: str
extends_documentation_fragment:
  - gcu.topsrider.attributes
attributes:
  action:
    support: full
    description: Runs in its action plugin; only the Python check's one raw command reaches the node.
  async:
    support: none
    description: One short command.
  check_mode:
    support: full
    description: Read-only; it checks in check mode too.
  diff_mode:
    support: none
    description: Nothing to show.
  platform:
    platforms: posix
    description: The controller, and a POSIX shell on the node for the Python check.
seealso:
  - module: gcu.topsrider.topsrider_state
'''

EXAMPLES = r'''
- name: The release passed its checks; the node's Python is new enough; the settings follow the rules
  gcu.topsrider.topsrider_inputs:
    release:
      bundle: "{{ topsrider_bundle | default('') }}"
    python: ["{{ ansible_python_interpreter | default('/usr/bin/python3') }}"]
    settings_var: inputs_settings
  vars:
    inputs_settings:
      bundle_dir: /srv/topsrider/2.5.140
      manifest: "{{ lookup('ansible.builtin.file', '/srv/topsrider/2.5.140/manifest.json') | from_json }}"
      python: /opt/venvs/train/bin/python
      cache_keep: 2
      eccl: {eccl_env_profile: prod, eccl_env_vars: {}, eccl_env_allow_names: [], eccl_env_visible_devices: all}
'''

RETURN = r'''
python:
  description: The raw command's C(rc), C(stdout) (the interpreter's path and version) and C(stderr); null when it
    did not run.
  returned: always
  type: dict
  sample: {"rc": 0, "stdout": "/usr/bin/python3\n3.11.2\n", "stderr": ""}
msg:
  description: The first failing check's sentence.
  returned: failure
  type: str
  sample: "the node's Python /usr/bin/python3 is 3.6.9; gcu.topsrider needs Python 3.8 or newer on managed nodes ..."
'''
