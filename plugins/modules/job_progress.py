#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: job_progress
short_description: Wait for a background job on a node, printing what it waits for and how long
version_added: "0.2.0"
description:
  - >-
    Waits until the C(async) job named in O(job) (a task started with C(poll: 0)) has finished on the node, and
    prints one line per poll on the controller, such as C(t20-node-1: ECCL probe at level collective: running,
    12 s of 360 s), then C(done after 40 s) or C(failed after 40 s). Plain lines under any stdout callback, in
    place of C(async)'s own C(ASYNC POLL) lines.
  - Returns the job's own result (what the started module returned), so the task registers it as a task with
    C(poll) would; fails when the job failed, or when O(timeout) passed (the job is left to end by its own
    C(async) limit).
  - Polls at once, then after 0.5, 0.5, 1, 1, 2, 2, 4 ... seconds, up to O(interval).
  - An action plugin; each poll runs C(async_status) for the job on the node.
author:
  - gcu.topsrider contributors (@gcu-topsrider)
options:
  job:
    description:
      - The result of the task that started the job, as registered (it needs C(ansible_job_id)); a skipped
        task's result skips this one.
    type: dict
    required: true
  label:
    description:
      - What the job is, for the lines (C(ECCL probe at level collective)).
    type: str
    required: true
  timeout:
    description:
      - Seconds to wait before failing.
    type: float
    default: 3600
  interval:
    description:
      - The longest time between two polls, in seconds.
    type: float
    default: 10
extends_documentation_fragment:
  - gcu.topsrider.attributes
attributes:
  action:
    support: full
    description: Polls the job from the controller; nothing but C(async_status) runs on the node.
  async:
    support: none
    description: It is the wait for an async job.
  check_mode:
    support: full
    description: >-
      Waits the same in check mode (the started module ran in check mode if its task did).
  diff_mode:
    support: none
    description: No diff.
  platform:
    platforms: posix
    description: Any node that ran the job.
seealso:
  - module: gcu.topsrider.bundle_progress
  - module: gcu.topsrider.eccl_probe
'''

EXAMPLES = r'''
- name: ECCL probe, in the background
  gcu.topsrider.eccl_probe:
    level: collective
    python: /opt/venvs/train/bin/python
    fail_on_problem: false
  async: 360
  poll: 0
  register: probe_job

- name: Wait for the probe, a line per poll
  gcu.topsrider.job_progress:
    job: "{{ probe_job }}"
    label: ECCL probe at level collective
    timeout: 360
  register: probe
'''

RETURN = r'''
finished:
  description: 1 when the job ended (its own result is returned with it), 0 when the wait gave up at O(timeout).
  returned: when there was a job
  type: int
msg:
  description: The started module's message, or why the wait failed.
  returned: when the module or the wait gave one
  type: str
  sample: "t20-node-1: ECCL probe: still running after 361 s (timeout 360 s); it is left to end by its own async limit"
'''
