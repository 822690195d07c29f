#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: bundle_fetch
short_description: Check which bundle files a node lacks, and fetch them from a peer over HTTP, sha256-checked
version_added: "0.2.0"
description:
  - Compares the files named in O(files) with what O(dest) holds (sha256 of each) and, unless in check mode,
    fetches every file that is missing or wrong from O(url) over HTTP with Ansible's own URL client
    (C(ansible.module_utils.urls), as C(ansible.builtin.get_url) uses), one file after another.
  - Each file is written into O(partial_dir) and hashed as it arrives; it is moved into O(dest) only when its
    size and sha256 are those given. So every byte is checked once, as it is written (C(get_url) reads a
    downloaded file three more times), and one call fetches a whole bundle, which one C(async) job can
    run while M(gcu.topsrider.bundle_progress) prints bytes and percent.
  - O(partial_dir) is emptied first (what an interrupted transfer left is dropped; the transfer restarts
    cleanly) and removed at the end. A wrong file in O(dest) is removed before its fetch.
  - Fails on the first file that cannot be fetched or does not match, naming its URL and the reason; files
    fetched before it stay in place. The role C(gcu.topsrider.bundle_stage) uses it for peer staging, and
    in check mode to learn what a node lacks.
author:
  - gcu.topsrider contributors (@gcu-topsrider)
options:
  files:
    description:
      - The bundle's files, each with C(file) (a plain name), C(sha256) (64 lowercase hex digits) and
        C(size) (bytes), as in the bundle's C(manifest.json).
    type: list
    elements: dict
    required: true
  dest:
    description: The directory the files belong in (it must exist, except in check mode).
    type: path
    required: true
  url:
    description:
      - Where the files are served; each is fetched from O(url)/<file> (the name URL-encoded). Needed only
        when a file is missing and the module is not in check mode.
    type: str
  partial_dir:
    description: Where files are written until they are checked; on the same file system as O(dest).
    type: path
    required: true
  fetch:
    description:
      - V(false) compares only, as check mode does, and, unless in check mode, makes O(dest) and its missing
        parents root-only directories (mode C(0700); an existing O(dest) is set to C(0700)), so that what is
        missing can be put there (the role C(gcu.topsrider.bundle_stage) does this first).
      - V(true) fetches what is missing from O(url).
    type: bool
    default: true
  timeout:
    description: Seconds to wait for the connection and for each read.
    type: int
    default: 60
notes:
  - Files are created with mode C(0600), owned by the connecting user (root with C(become)).
  - Proxies from the environment are not used, since the sources are nodes of the same fleet.
extends_documentation_fragment:
  - gcu.topsrider.attributes
attributes:
  check_mode:
    support: full
    description: Compares only; RV(missing) names what a real run would fetch.
  diff_mode:
    support: none
    description: Files are binary; RV(files) says which changed.
'''

EXAMPLES = r'''
- name: Which files of the bundle this node lacks; the directory they go in
  gcu.topsrider.bundle_fetch:
    files: "{{ manifest.files }}"
    dest: /var/cache/topsrider/2.5.136
    partial_dir: /var/cache/topsrider/.partial
    fetch: false
  register: held

- name: Fetch them from a peer in the background
  gcu.topsrider.bundle_fetch:
    files: "{{ manifest.files }}"
    dest: /var/cache/topsrider/2.5.136
    partial_dir: /var/cache/topsrider/.partial
    url: "http://node1:8080"
  async: 3600
  poll: 0
  register: fetch_job
'''

RETURN = r'''
missing:
  description: The files that were missing or wrong when the module started (in the order of O(files)).
  returned: always
  type: list
  elements: str
  sample: ["tops-sdk_2.5.136-1_amd64.deb"]
files:
  description: Every file of O(files), whether it was fetched and how many bytes came.
  returned: success, not in check mode
  type: list
  elements: dict
  sample: [{"file": "tops-sdk_2.5.136-1_amd64.deb", "changed": true, "bytes": 1073741824}]
bytes:
  description: Bytes fetched in all.
  returned: success, not in check mode
  type: int
  sample: 1073741824
made:
  description: The directories made, or set to C(0700), with O(fetch=false) (in check mode, those that would be).
  returned: with O(fetch=false)
  type: list
  elements: str
  sample: ["/var/cache/topsrider", "/var/cache/topsrider/2.5.136"]
file:
  description: The file that failed.
  returned: failure while fetching
  type: str
'''

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url
from ansible_collections.gcu.topsrider.plugins.module_utils._fetch import (
    FetchError, fetch_all, make_dirs, missing, spec_problems)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            files=dict(type="list", elements="dict", required=True),
            dest=dict(type="path", required=True),
            url=dict(type="str"),
            partial_dir=dict(type="path", required=True),
            timeout=dict(type="int", default=60),
            fetch=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    problems = spec_problems(p["files"])
    if problems:
        module.fail_json(msg="files is not a usable list of bundle files: %s" % "; ".join(problems))
    # In check mode dest may not exist yet (nothing was created): then every file is missing.
    lacking = missing(p["dest"], p["files"])
    if not p["fetch"]:
        try:
            made = make_dirs(p["dest"], dry_run=module.check_mode)
        except (IOError, OSError) as e:
            module.fail_json(msg="cannot make %s: %s" % (p["dest"], e), missing=lacking)
        module.exit_json(changed=bool(made), missing=lacking, made=made)
    if module.check_mode or not lacking:
        module.exit_json(changed=bool(lacking), missing=lacking)
    if not os.path.isdir(p["dest"]):
        module.fail_json(msg="dest %s is not a directory" % p["dest"], missing=lacking)
    if not p["url"] or not p["url"].startswith(("http://", "https://")):
        module.fail_json(msg="url must be an http:// or https:// URL to fetch %s from, got %r"
                         % (", ".join(lacking), p["url"]), missing=lacking)

    def opener(url):
        return open_url(url, timeout=p["timeout"], use_proxy=False, follow_redirects="none",
                        http_agent="gcu.topsrider bundle_fetch")

    try:
        results = fetch_all(opener, p["url"], p["files"], p["dest"], p["partial_dir"])
    except FetchError as e:
        module.fail_json(msg=str(e), file=e.name, missing=lacking)
    except (IOError, OSError) as e:
        module.fail_json(msg="cannot stage into %s: %s" % (p["dest"], e), missing=lacking)
    module.exit_json(changed=True, missing=lacking, files=results, bytes=sum(r["bytes"] for r in results))


if __name__ == "__main__":
    main()
