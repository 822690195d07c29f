#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: bundle_push
short_description: Copy bundle files from the controller to a node, printing bytes and percent while it sends
version_added: "0.2.0"
description:
  - Copies each file of O(files) from O(src_dir) on the controller to O(dest_dir) on the node with
    M(ansible.builtin.copy) (the same transfer, checksum check and idempotence; a file the node already has with
    the same checksum is not sent), one after the other.
  - >-
    While a file is sent it prints a line every O(interval) seconds on the controller, such as
    C(t20-node-1: 2.5.140 from the controller: file 2 of 3, tops-sdk_2.5.140-1_amd64.deb, 1.2 GiB of 3.1 GiB;
    1.3 GiB of 3.4 GiB in all (38%)), and one when it is done. How far a file is comes from the controller
    itself, the offset to which the transfer (sftp or scp under SSH, the docker client under the docker
    connection) has read the file (C(/proc/<pid>/fdinfo)); while nothing reads it (the checksums, the copy's
    other steps, or no C(/proc)) the line says how long the file's copy has run.
  - Fails on the first file that cannot be copied, naming it, with copy's own message. The role
    C(gcu.topsrider.bundle_stage) uses it for the copy from the controller (the seed of a run).
  - An action plugin.
author:
  - gcu.topsrider contributors (@gcu-topsrider)
options:
  files:
    description:
      - The files, each a dict with C(file) (a plain file name in O(src_dir)) and C(size) (bytes, for the
        lines); other keys (C(sha256)) are ignored.
    type: list
    elements: dict
    required: true
  src_dir:
    description:
      - The directory of the files on the controller.
    type: path
    required: true
  dest_dir:
    description:
      - The directory on the node; it must exist.
    type: path
    required: true
  label:
    description:
      - What is copied, for the lines (the release's version).
    type: str
    default: bundle
  owner:
    description:
      - Owner of the copied files (as M(ansible.builtin.copy)'s C(owner)).
    type: str
  group:
    description:
      - Group of the copied files (as M(ansible.builtin.copy)'s C(group)).
    type: str
  mode:
    description:
      - Mode of the copied files (as M(ansible.builtin.copy)'s C(mode)).
    type: raw
  interval:
    description:
      - Seconds between two progress lines while a file is sent.
    type: float
    default: 10
extends_documentation_fragment:
  - gcu.topsrider.attributes
attributes:
  action:
    support: full
    description: Runs M(ansible.builtin.copy) for each file from the controller.
  async:
    support: none
    description: The copies run in the foreground; the lines are printed while they run.
  check_mode:
    support: full
    description: As M(ansible.builtin.copy) in check mode, per file; nothing is sent and no line is printed.
  diff_mode:
    support: full
    description: The diffs of the files' copies.
  platform:
    platforms: posix
    description: The controller reads the files; the node writes them.
seealso:
  - module: gcu.topsrider.bundle_progress
  - module: ansible.builtin.copy
'''

EXAMPLES = r'''
- name: Copy the release's files this node lacks, with a line per poll while each is sent
  gcu.topsrider.bundle_push:
    files: "{{ missing_files }}"   # [{file: tops-sdk_2.5.140-1_amd64.deb, size: 3328599654, sha256: ...}, ...]
    src_dir: /srv/topsrider/2.5.140
    dest_dir: /var/cache/topsrider/2.5.140
    owner: root
    group: root
    mode: "0600"
    label: "2.5.140"
'''

RETURN = r'''
copies:
  description: The result of each file's copy (M(ansible.builtin.copy)'s), with C(file), in order.
  returned: always
  type: list
  elements: dict
sent_bytes:
  description: The bytes of the files that were copied (changed); 0 in check mode.
  returned: always
  type: int
  sample: 3328599654
msg:
  description: What was copied, or which file could not be and why.
  returned: always
  type: str
  sample: "t20-node-1: 3.1 GiB of 3.4 GiB copied from the controller (3 file(s))"
'''
