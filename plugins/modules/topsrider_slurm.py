#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: topsrider_slurm
short_description: Drain, resume and tag a Slurm node for a deploy or rollback, never over someone else's drain
version_added: "0.2.0"
description:
  - Takes a node out of Slurm's hands for one run of C(playbooks/deploy.yml) or C(playbooks/rollback.yml)
    and gives it back, as C(scontrol update) from the node itself (it needs the Slurm client commands).
  - >-
    O(state=drained) drains the node with the reason C(gcu.topsrider <kind> <run id>: <reason>); running
    jobs finish, no new job starts. A node already drained by someone else (an administrator, Slurm itself,
    the health gate's C(topsrider:) reason) is left as it is, with its reason. A node an earlier run of this
    collection left draining is taken over (its reason names this run).
  - O(state=resumed) resumes the node only while its reason is this run's. A node someone else drained
    (before the run or during it) is never resumed.
  - O(state=noted) replaces this run's reason with O(reason) (a failure, a deferral), only while the
    reason is this run's. O(state=present) changes neither.
  - O(release) sets the node feature C(tops_<release>) (other features kept), before a resume, so that
    C(sbatch --constraint=tops_<release>) never gives one job nodes of two releases.
  - Never cancels, requeues or signals a job.
author:
  - gcu.topsrider contributors (@gcu-topsrider)
options:
  name:
    description: The node's Slurm NodeName.
    type: str
    required: true
  run:
    description: The run that drains the node, C(kind) (C(deploy) or C(rollback)) and C(id) (its run id).
    type: dict
    required: true
  state:
    description: What the run wants of the node's drain (see the description).
    type: str
    choices: [drained, resumed, noted, present]
    default: present
  reason:
    description: The text after the run's prefix in the drain reason (required for C(drained) and C(noted)).
    type: str
  release:
    description: The release the node runs now; the node's features get C(<feature_prefix><release>).
    type: str
  feature_prefix:
    description: Prefix of the release feature.
    type: str
    default: tops_
  cluster:
    description: Also return every running job with its nodes and the jobs whose nodes carry two releases.
    type: bool
    default: false
extends_documentation_fragment:
  - gcu.topsrider.attributes
attributes:
  check_mode:
    support: full
    description: Reads the node and returns what it would change (RV(after)), changing nothing.
  diff_mode:
    support: none
    description: RV(before) and RV(after) say what changed; there is no diff.
  platform:
    description: Nodes with the Slurm client commands (C(sinfo), C(squeue), C(scontrol)) and rights to update nodes.
notes:
  - Features set with C(scontrol) live until slurmctld reads C(slurm.conf) again (a restart without C(-R), or
    C(scontrol reconfigure)); the role P(gcu.topsrider.slurm_node#role) writes them into the node lines it renders,
    merge those after a rollout (docs/rollout.md).
seealso:
  - module: gcu.topsrider.topsrider_wait_free
  - module: gcu.topsrider.topsrider_state
"""

EXAMPLES = r"""
- name: Drain the node for this deploy (a drain by someone else stays as it is)
  gcu.topsrider.topsrider_slurm:
    name: "{{ inventory_hostname_short }}"
    run: {kind: deploy, id: "{{ topsrider_run_id }}"}
    state: drained
    reason: upgrading to 2.5.140; resumed by this run when proven

- name: Tag the node with its release and resume it (only if the reason is still this run's)
  gcu.topsrider.topsrider_slurm:
    name: "{{ inventory_hostname_short }}"
    run: {kind: deploy, id: "{{ topsrider_run_id }}"}
    state: resumed
    release: 2.5.140
"""

RETURN = r"""
before:
  description: The node as Slurm had it (C(name), C(state) as sinfo's C(%T), C(drain), C(reason), C(features), C(active_features)).
  returned: always
  type: dict
after:
  description: The node as Slurm has it now (in check mode, as it would).
  returned: always
  type: dict
owner:
  description: Who had drained the node before this call, C(run), C(collection) (an earlier run), C(other), or null.
  returned: always
  type: str
drained:
  description: This call drained the node, or took over an earlier run's drain.
  returned: always
  type: bool
resumed:
  description: This call resumed the node.
  returned: always
  type: bool
noted:
  description: This call replaced this run's reason.
  returned: always
  type: bool
features_changed:
  description: This call set the release feature.
  returned: always
  type: bool
why:
  description: Why the drain part was left alone (drained by someone else, not drained), or null.
  returned: always
  type: str
cluster:
  description: With O(cluster), C(running) jobs with their nodes, C(features) per node and C(two_releases).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gcu.topsrider.plugins.module_utils._slurm import FEATURE, NODE_NAME, SlurmError, apply


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            run=dict(type="dict", required=True),
            state=dict(type="str", default="present", choices=["drained", "resumed", "noted", "present"]),
            reason=dict(type="str"),
            release=dict(type="str"),
            feature_prefix=dict(type="str", default="tops_"),
            cluster=dict(type="bool", default=False),
        ),
        required_if=[("state", "drained", ["reason"]), ("state", "noted", ["reason"])],
        supports_check_mode=True,
    )
    p = module.params
    run = p["run"]
    problems = []
    if not NODE_NAME.match(p["name"]):
        problems.append("name is a Slurm NodeName (letters, digits, _ . -), got %r" % p["name"])
    if run.get("kind") not in ("deploy", "rollback") or not NODE_NAME.match(str(run.get("id") or "")):
        problems.append("run needs kind (deploy or rollback) and id (a plain run id), got %r" % (run,))
    if p["release"] is not None and not FEATURE.match(p["feature_prefix"] + p["release"]):
        problems.append("release and feature_prefix make a Slurm feature (letters, digits, _ . -), got %r"
                        % (p["feature_prefix"] + p["release"]))
    if problems:
        module.fail_json(msg="topsrider_slurm: refused, nothing was changed: " + "; ".join(problems))
    try:
        result = apply(module, p["name"], p["state"], run["kind"], str(run["id"]), p["reason"], p["release"],
                       p["feature_prefix"], p["cluster"])
    except SlurmError as e:
        module.fail_json(msg="%s: %s" % (p["name"], e))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
