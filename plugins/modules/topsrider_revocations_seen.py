#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: topsrider_revocations_seen
short_description: Refuse, on the node, a revocation list older than the newest one the node accepted
version_added: 0.4.0
description:
  - The node's own check before a run moves it to another release (C(playbooks/tasks/node_revocations.yml), which
    C(deploy.yml) and C(rollback.yml) run under the node lock before anything changes; C(docs/signing.md)). Reads the
    node's record of the newest revocation list it accepted (the one M(gcu.topsrider.deb_bundle) keeps and reads,
    O(path)) and compares the list the controller checked (O(serial), O(sha256)) with it.
  - Refused, naming the serial the node has seen and the serial offered - a list with a lower serial than the
    node's (a replay), a list with the node's serial and other content, and no list at all (O(serial) unset) on a
    node that has accepted one.
  - The node keeps the serial and sha256 of the list, not the list itself, so a list that passes is the node's own
    newest list byte for byte, or a newer one; the target release is checked against it by the caller (on the
    controller, P(gcu.topsrider.topsrider_revoked_findings#filter)).
  - Read-only; never reports C(changed). A newer list is recorded on the node only by a deploy's
    C(gcu.topsrider.deb_bundle).
author:
  - gcu.topsrider contributors (@gcu-topsrider)
options:
  serial:
    description:
      - The serial of the revocation list the run uses (the controller's check,
        M(gcu.topsrider.topsrider_release_trust)'s RV(gcu.topsrider.topsrider_release_trust#module:revocations_serial)).
        Unset when the run gives no list.
    type: int
  sha256:
    description:
      - The sha256 of that list's bytes (RV(gcu.topsrider.topsrider_release_trust#module:revocations_sha256)).
    type: str
  name:
    description:
      - What the refusal calls the list (its path on the controller).
    type: str
    default: revocations.json
  path:
    description:
      - The node's record of the newest revocation list it accepted.
    type: path
    default: /var/lib/topsrider/revocations-seen.json
extends_documentation_fragment:
  - gcu.topsrider.attributes
  - gcu.topsrider.attributes.read_only
seealso:
  - module: gcu.topsrider.deb_bundle
  - module: gcu.topsrider.topsrider_release_trust
"""

EXAMPLES = r"""
- name: The list this rollback uses is no older than the node's newest
  gcu.topsrider.topsrider_revocations_seen:
    serial: "{{ rollback_trust.revocations_serial }}"
    sha256: "{{ rollback_trust.revocations_sha256 }}"
    name: /srv/topsrider/revocations.json
"""

RETURN = r"""
seen:
  description: The node's record (serial and sha256 of the newest list it accepted), or null when it has none.
  returned: always
  type: dict
  sample: {serial: 2, sha256: 9f2c0b4e5d6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gcu.topsrider.plugins.module_utils._signature import offered_problem


def main():
    module = AnsibleModule(
        argument_spec=dict(
            serial=dict(type="int"),
            sha256=dict(type="str"),
            name=dict(type="str", default="revocations.json"),
            path=dict(type="path", default="/var/lib/topsrider/revocations-seen.json"),
        ),
        required_together=[("serial", "sha256")],
        supports_check_mode=True,
    )
    p = module.params
    offered = None if p["serial"] is None else {"serial": p["serial"], "sha256": p["sha256"]}
    seen, problem = offered_problem(offered, p["path"], p["name"])
    if problem:
        module.fail_json(msg="refused on the node, nothing was changed: %s" % problem, seen=seen)
    module.exit_json(changed=False, seen=seen)


if __name__ == "__main__":
    main()
