#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: topsrider_wait_free
short_description: Wait until no job and no process uses a node's cards, printing who is left
version_added: "0.2.0"
description:
  - Reads who uses the node with M(gcu.topsrider.topsrider_state), the one busy reader (the processes holding
    a card's device file, with pid, user, command, cards and Slurm job; on a Slurm node also the jobs Slurm runs
    there), and, while the node is in use, reads again until it is free or O(timeout) has passed, printing one line
    per poll on the controller (the node, each job with its remaining time, the processes holding cards).
  - Never stops, signals, cancels or requeues anything; a node still in use at the end is returned with
    RV(free=false), not a failure. O(timeout=0) reads once (the busy check of a run without a scheduler).
  - The jobs seen on the node are looked up again after they left it (C(scontrol show job)), so that the
    caller can tell a job that ended by itself from one that was cancelled, requeued or lost its node.
  - An action plugin. Check mode reads once and waits for nothing.
author:
  - gcu.topsrider contributors (@gcu-topsrider)
options:
  slurm_node:
    description: The node's Slurm NodeName; unset on a node without Slurm (then only processes count).
    type: str
  timeout:
    description: Seconds to wait in all (C(topsrider_drain_timeout) in the playbooks; 0 reads once).
    type: float
    default: 14400
  interval:
    description: Seconds between polls (and lines) once the wait runs long; the first come sooner (1, 2, 4 ...).
    type: float
    default: 30
  label:
    description: What waits, for the lines (for example C(deploy 20261125T140000Z)).
    type: str
    default: ""
  feature_prefix:
    description: Prefix of the release feature, to name the cluster's jobs on two releases.
    type: str
    default: tops_
extends_documentation_fragment:
  - gcu.topsrider.attributes
attributes:
  action:
    support: full
    description: Runs on the controller and polls the node.
  async:
    support: none
    description: It waits itself, one line per poll.
  check_mode:
    support: full
    description: Reads once and predicts from what the node has now.
  diff_mode:
    support: none
    description: It changes nothing.
seealso:
  - module: gcu.topsrider.topsrider_slurm
  - module: gcu.topsrider.topsrider_state
'''

EXAMPLES = r'''
- name: Wait (at most four hours) until Slurm runs nothing on the drained node and no process holds a card
  gcu.topsrider.topsrider_wait_free:
    slurm_node: "{{ inventory_hostname_short }}"
    timeout: 14400
    label: "deploy {{ topsrider_run_id }}"
  register: node_free

- name: Is anyone using the node right now (one read, no waiting)
  gcu.topsrider.topsrider_wait_free:
    timeout: 0
  register: node_use
'''

RETURN = r'''
free:
  description: Nothing used the node at the last read.
  returned: always
  type: bool
timed_out:
  description: The node was still in use when O(timeout) passed.
  returned: always
  type: bool
waited_s:
  description: Seconds waited.
  returned: always
  type: float
holders:
  description: The processes holding a card at the last read (as RV(gcu.topsrider.topsrider_state#module:state.holders)'s C(processes)).
  returned: always
  type: list
  elements: dict
  sample: [{"pid": 4242, "ppid": 4200, "user": "alice", "command": "python train.py", "devices": ["gcu0"], "cards": [0],
            "slurm_job_id": "17"}]
jobs:
  description: The Slurm jobs on the node at the last read (C(id), C(state), C(user), C(time_left), C(name)).
  returned: always
  type: list
  elements: dict
node:
  description: The node as Slurm had it at the last read (state, drain, reason, features), null without O(slurm_node).
  returned: always
  type: dict
jobs_seen:
  description: >-
    Every job seen on the node while waiting: C(id), C(name), C(user), C(left) (it left the node),
    C(end_state) and C(exit_code) (scontrol's record once it left), C(restarts_before), C(restarts), and
    C(stopped_from_outside) (cancelled, requeued, preempted or lost with its node, not ended by itself).
  returned: always
  type: list
  elements: dict
in_use:
  description: Who used the node at the last read, in one sentence (empty when free).
  returned: always
  type: str
  sample: "Slurm job(s) 17 (train, alice, 1:02:03 left); pid 4242 (alice: python train.py) holds gcu0 (Slurm job 17)"
two_releases:
  description: Running jobs of the cluster seen on nodes of two release features (C(id), C(nodes), C(releases)).
  returned: always
  type: list
  elements: dict
'''
