#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: bundle_progress
short_description: Wait for a node's background bundle downloads, printing bytes and percent
version_added: "0.2.0"
description:
  - >-
    Waits until the C(async) job named in O(job) (M(gcu.topsrider.bundle_fetch) started with C(poll: 0)) has
    finished on the node, and prints one line per poll on the controller, such as
    C(node3: 2.5.136 from node1: 512.0 MiB of 1.0 GiB (50 percent)). The bytes are those of the job's O(files)
    found in O(dest_dir) (fetched and checked) or in O(partial_dir) (still arriving).
  - Fails, naming O(source), the file and the job's own error, when the job failed or O(timeout) passed. The
    role C(gcu.topsrider.bundle_stage) uses it for peer staging.
  - An action plugin; each poll runs C(async_status) for the job and, while it runs, one C(find) on the node.
author:
  - gcu.topsrider contributors (@gcu-topsrider)
options:
  job:
    description:
      - The result of the task that started the job, as registered (it needs C(ansible_job_id)).
    type: dict
    required: true
  files:
    description:
      - The files the job fetches, each with C(file) (its name) and C(size) (bytes), for the totals.
    type: list
    elements: dict
    required: true
  dest_dir:
    description: Where the job moves each file once it is checked.
    type: path
    required: true
  partial_dir:
    description: Where the job writes a file while it arrives.
    type: path
    required: true
  source:
    description: Where the files come from, named in every line and in the failure.
    type: str
    required: true
  label:
    description: What is staged, for the lines (for example the release version).
    type: str
    default: bundle
  interval:
    description: Seconds between polls (and lines) once the transfer runs long; the first polls come sooner (0.5, 0.5, 1, 1, 2, 2, 4 ... seconds).
    type: float
    default: 10
  timeout:
    description: Seconds to wait in all; past it the task fails and names the files still running.
    type: float
    default: 3600
extends_documentation_fragment:
  - gcu.topsrider.attributes
attributes:
  action:
    support: full
    description: Runs on the controller and polls the node.
  async:
    support: none
    description: It is the waiting side of async jobs.
  check_mode:
    support: none
    description: There are no downloads to wait for in check mode; the task fails if asked to run there.
  diff_mode:
    support: none
    description: It changes nothing itself.
'''

EXAMPLES = r'''
- name: Fetch the files in the background
  gcu.topsrider.bundle_fetch:
    files: "{{ files }}"
    dest: /var/cache/topsrider/2.5.136
    partial_dir: /var/cache/topsrider/.partial
    url: "http://node1:8080"
  async: 3600
  poll: 0
  changed_when: false
  register: fetch_job

- name: Progress, until every file is in place
  gcu.topsrider.bundle_progress:
    job: "{{ fetch_job }}"
    files: "{{ files }}"
    dest_dir: /var/cache/topsrider/2.5.136
    partial_dir: /var/cache/topsrider/.partial
    source: node1
    label: "2.5.136"
'''

RETURN = r'''
files:
  description: The job's own RV(gcu.topsrider.bundle_fetch#module:files), each file with whether it was fetched and its bytes.
  returned: when the job finished
  type: list
  elements: dict
  sample: [{"file": "tops-sdk_2.5.136_amd64.deb", "changed": true, "bytes": 1073741824}]
bytes:
  description: Bytes the job fetched.
  returned: always
  type: int
  sample: 1073741824
'''
