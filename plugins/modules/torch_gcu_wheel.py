#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: torch_gcu_wheel
short_description: The torch_gcu wheel of a training environment - check it against a bundle, install, put back, remove (offline)
version_added: "0.2.0"
description:
  - The work of the C(gcu.topsrider.torch_gcu) role in one call. Reads the interpreter O(python) with the collection's
    one node probe (the code of C(gcu.topsrider.topsrider_state) - its C(major.minor) and its torch, torch_gcu and
    pip versions from package metadata, without importing torch), and checks, in this order, naming the first problem
    and its remedy before anything changes - the settings are absolute paths; the interpreter answers and O(pip)
    exists; the bundle's manifest is given or staged; it has a torch_gcu wheel for that C(major.minor); the torch
    installed there satisfies C(==) that wheel's C(requires_torch) (PEP 440's rule, see the notes).
  - With O(state=checked) that is all (a deploy's preflight, on every node before any role changes anything).
  - With O(state=present), when the installed torch_gcu is not the wheel's version - records the previous and new
    version in O(state_file) (before pip runs, so a failed install still knows what to go back to), then, once the
    staged wheel file's sha256 is the manifest's, runs O(pip) C(install --no-index --no-deps) on it - no network, and torch and everything else stay
    untouched. Then, installed now or already, C(import torch_gcu) must work in O(python), torch_gcu must be the
    wheel's version and torch the version it was.
  - With O(state=restored), puts back the torch_gcu version O(version) that a deploy snapshot recorded (what
    C(playbooks/tasks/restore.yml) of rollback.yml and of a failed deploy's rescue uses) - from O(wheel), the file it
    came from, else C(torch_gcu==<version>) from O(find_links), offline and without dependencies; an empty O(version)
    means there was none, as O(state=absent). Then torch_gcu must be that version and torch the version it was.
  - With O(state=absent), uninstalls torch_gcu when it is there.
  - Every change writes O(state_file) first (previous and new version, and the file each came from when known).
  - Uses pip directly rather than C(ansible.builtin.pip), which needs C(packaging) or C(pkg_resources) importable by
    the node's module interpreter (Debian's python3 has neither by default).
author:
  - gcu.topsrider contributors (@gcu-topsrider)
options:
  python:
    description: The interpreter of the environment that trains (a venv's or conda env's C(bin/python)). Absolute.
    type: str
    required: true
  pip:
    description: That environment's pip. Absolute. Default C(pip3) next to O(python).
    type: str
  bundle_path:
    description:
      - Node directory of the staged bundle, its wheels and its C(manifest.json). Absolute.
      - Required with O(state=checked) and O(state=present).
    type: str
  manifest:
    description:
      - The bundle manifest (format of C(docs/manifest.md)); empty - read C(manifest.json) in O(bundle_path).
      - A check-mode run on a node where the bundle is not staged yet needs it passed.
    type: dict
    default: {}
  state_file:
    description:
      - JSON record (0600 root, directory 0700) of C(python), C(previous) and C(current) torch_gcu C({version, wheel}),
        written when the version changes, before pip runs. C(previous.wheel) is null when this module did not install
        the previous version. Absolute.
    type: str
    default: /var/lib/topsrider/torch_gcu.json
  state:
    description:
      - V(checked) only checks; V(present) installs the bundle's wheel when the installed version differs.
      - V(restored) puts back O(version) (none when empty); V(absent) removes torch_gcu.
    type: str
    choices: [checked, present, restored, absent]
    default: present
  version:
    description: With O(state=restored), the torch_gcu version to put back; empty or null - none (uninstall).
    type: str
  wheel:
    description:
      - With O(state=restored), the wheel file that version came from (a path or a C(file://) URL, as C(pip freeze)
        names it), so that the environment is what it was, file for file.
    type: str
  find_links:
    description: With O(state=restored), a node directory holding the wheel (the release's bundle cache). Absolute.
    type: str
notes:
  - In check mode with O(state=present) and a version to change, pip runs with C(--dry-run) when it is 22.2 or later
    and the wheel is staged (O(state=restored) - when pip is 22.2 or later); otherwise the result's C(msg) says that
    pip cannot predict the install. The import check runs in check mode only when nothing would change.
extends_documentation_fragment:
  - gcu.topsrider.attributes
  - gcu.topsrider.attributes.torch_rule
attributes:
  check_mode:
    support: full
    description: Predicts the change; pip runs with C(--dry-run) where it can.
  diff_mode:
    support: none
    description: The result's C(previous) and C(version) say what changes.
'''

EXAMPLES = r'''
- name: Preflight, on every node before anything changes
  gcu.topsrider.torch_gcu_wheel:
    python: /opt/venvs/train/bin/python
    bundle_path: /var/cache/topsrider/2.5.136
    manifest: "{{ bundle_manifest }}"
    state: checked

- name: The staged wheel for the training Python
  gcu.topsrider.torch_gcu_wheel:
    python: /opt/venvs/train/bin/python
    bundle_path: /var/cache/topsrider/2.5.136

- name: Back to the torch_gcu a deploy snapshot recorded, from the cache it came from
  gcu.topsrider.torch_gcu_wheel:
    python: /opt/venvs/train/bin/python
    state: restored
    version: 2.13.0+2.5.136
    find_links: /var/cache/topsrider/2.5.136
'''

RETURN = r'''
environment:
  description: The interpreter as the probe read it before any change (C(gcu.topsrider.topsrider_state)'s C(python)).
  returned: always
  type: dict
  sample: {"path": "/opt/venvs/train/bin/python", "python": "3.11", "executable": "/opt/venvs/train/bin/python",
           "torch": "2.13.0+cpu", "torch_gcu": null, "pip": "23.0.1", "error": null}
wheel:
  description: The manifest entry of the wheel chosen for the interpreter's Python.
  returned: success, with O(state=checked) and O(state=present)
  type: dict
  sample: {"file": "torch_gcu-2.13.0+2.5.136-py311-none-any.whl", "type": "wheel", "package": "torch_gcu",
           "version": "2.13.0+2.5.136", "python": "3.11", "requires_torch": "2.13.0"}
previous:
  description: The torch_gcu version installed before (null - none).
  returned: success
  type: str
version:
  description: The wheel's torch_gcu version (O(state=restored) - the version put back; O(state=absent) - null).
  returned: success
  type: str
needs_change:
  description: The installed torch_gcu is not the wheel's version (O(state=present) installs it).
  returned: success, with O(state=checked) and O(state=present)
  type: bool
msg:
  description: What was done or, in check mode, what would be.
  returned: always
  type: str
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gcu.topsrider.plugins.module_utils._wheel import run


def main():
    module = AnsibleModule(
        argument_spec=dict(
            python=dict(type="str", required=True),
            pip=dict(type="str"),
            bundle_path=dict(type="str"),
            manifest=dict(type="dict", default={}),
            state_file=dict(type="str", default="/var/lib/topsrider/torch_gcu.json"),
            state=dict(type="str", choices=["checked", "present", "restored", "absent"], default="present"),
            version=dict(type="str"),
            wheel=dict(type="str"),
            find_links=dict(type="str"),
        ),
        required_if=[("state", "checked", ["bundle_path"]), ("state", "present", ["bundle_path"])],
        supports_check_mode=True,
    )
    run(module)


if __name__ == "__main__":
    main()
