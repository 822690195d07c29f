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
    Waits until the C(async) jobs named in O(jobs) (for example C(ansible.builtin.get_url) started with
    C(poll: 0)) have finished on the node, and prints one line per poll on the controller, such as
    C(node3: 2.5.136 from node1: 512.0 MiB of 1.0 GiB (50 percent)). The bytes are those of the finished jobs' files
    plus what lies in O(partial_dir) (where the downloads write before their checksum is checked and they
    are moved into place).
  - Fails, naming O(source) and every file's own error, when a job failed or O(timeout) passed. The role
    C(gcu.topsrider.bundle_stage) uses it for peer staging.
  - An action plugin; each poll runs C(async_status) for the unfinished jobs and one C(find) on the node.
author:
  - gcu.topsrider contributors (@gcu-topsrider)
options:
  jobs:
    description:
      - The C(results) of the async loop task that started the downloads, as registered. Each started job
        needs C(ansible_job_id) and its loop C(item) with C(file) (the name, for the messages) and C(size)
        (bytes); results without a job id (skipped items) are ignored.
    type: list
    elements: dict
    required: true
  partial_dir:
    description: Where the jobs write unfinished downloads (get_url's C(tmp_dest)).
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
    description: Seconds between polls (and lines) once the transfer runs long; the first polls come sooner (0.5, 1, 2, 4 ... seconds).
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
  ansible.builtin.get_url:
    url: "http://node1:8080/{{ item.file }}"
    dest: "/var/cache/topsrider/2.5.136/{{ item.file }}"
    checksum: "sha256:{{ item.sha256 }}"
    tmp_dest: /var/cache/topsrider/.partial
    mode: "0600"
  loop: "{{ files }}"
  async: 3600
  poll: 0
  changed_when: false
  register: fetch_jobs

- name: Progress, until every file is in place
  gcu.topsrider.bundle_progress:
    jobs: "{{ fetch_jobs.results }}"
    partial_dir: /var/cache/topsrider/.partial
    source: node1
    label: "2.5.136"
'''

RETURN = r'''
files:
  description: Each job's file, whether it changed the node and whether it failed.
  returned: always
  type: list
  elements: dict
  sample: [{"file": "tops-sdk_2.5.136_amd64.deb", "changed": true, "failed": false}]
bytes:
  description: Bytes of the files whose jobs succeeded.
  returned: always
  type: int
  sample: 1073741824
'''
