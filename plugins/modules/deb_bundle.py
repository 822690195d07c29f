#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: deb_bundle
short_description: Install a TopsRider bundle of .deb files as one verified, journalled, reversible transaction
version_added: "0.1.0"
description:
  - Installs the C(.deb) files of a TopsRider bundle (a directory with a C(manifest.json), see C(docs/manifest.md))
    in one C(dpkg) transaction, after checking every file's sha256 against the manifest, reading Package, Version,
    Architecture and Depends from each deb with C(dpkg-deb), checking the architecture and the dependencies, and
    checking the dpkg database for an interrupted earlier run (C(dpkg --audit)).
  - Only the packages whose installed version differs are installed. An empty plan means C(changed=false) and no
    C(dpkg) call that changes anything.
  - Before changing anything the previous state of every package it touches (version or absent, hold) is written
    to a snapshot in O(journal_dir), atomically and readable by root only. The snapshot id is returned.
  - If the C(dpkg) transaction fails, the node is put back to the previous versions from the journal and the
    module fails saying what failed and what state the node is left in.
  - O(state=rolled_back) restores a snapshot exactly; previous versions are reinstalled from the debs they were
    installed from (recorded in the journal) or found in O(cache_dirs), packages that were absent are purged,
    holds are set as they were.
  - Holds are dpkg selections (C(dpkg --set-selections)), so unattended upgrades and apt cannot move the stack.
  - Never uses C(--force-*) dpkg options.
author:
  - gcu.topsrider contributors (@gcu-topsrider)
options:
  path:
    description:
      - Directory on the node that holds the bundle's files.
      - Required with O(state=present).
    type: path
  manifest:
    description:
      - Path on the node of the bundle manifest. A relative path is relative to O(path).
      - Defaults to C(manifest.json) in O(path) when neither this nor O(manifest_content) is given.
    type: path
  manifest_content:
    description:
      - The manifest itself, as a dict in the format of C(docs/manifest.md).
    type: dict
  packages:
    description:
      - The subset of the manifest's deb packages to manage. Defaults to every deb in the manifest.
      - With O(state=absent) and no manifest, the packages to remove.
      - With O(state=rolled_back), limits the restore to these packages of the snapshot.
    type: list
    elements: str
  state:
    description:
      - V(present) installs the bundle's versions.
      - V(absent) removes the packages.
      - V(rolled_back) restores the packages recorded in O(snapshot) to their state before that snapshot.
    type: str
    choices: [present, absent, rolled_back]
    default: present
  snapshot:
    description:
      - With O(state=present) or O(state=absent), the id under which the previous state is journalled; default a
        generated timestamp id (C(20250101T120000Z)). When a snapshot with this id already exists, packages already
        recorded in it keep their first recorded previous state and new ones are added, so a deploy that calls the
        module twice has one snapshot.
      - With O(state=rolled_back), the snapshot to restore; default the latest snapshot whose change was applied.
      - Letters, digits, C(.), C(_) and C(-) only.
    type: str
  hold:
    description:
      - V(true) holds the managed packages (dpkg selection C(hold)) after the change, V(false) makes sure they are
        not held. Not used with O(state=rolled_back), which restores the holds recorded in the snapshot.
    type: bool
    default: false
  allow_downgrade:
    description:
      - Allow O(state=present) to install a version older than the installed one. When false a downgrade is refused
        before anything changes. O(state=rolled_back) always may downgrade.
    type: bool
    default: false
  purge:
    description:
      - With O(state=absent), purge (C(dpkg --purge)) rather than remove (C(dpkg --remove)), so that no
        configuration files and no C(rc) entry in the dpkg database remain.
      - Restoring a snapshot where a package was absent always purges, to return to exactly that state.
    type: bool
    default: true
  lock_timeout:
    description:
      - Seconds to wait for the dpkg frontend lock (C(/var/lib/dpkg/lock-frontend)) and the dpkg database lock
        before failing. Between 0 and 3600.
    type: int
    default: 60
  recover_interrupted:
    description:
      - When C(dpkg --audit) reports a half-finished earlier run, repair it with C(dpkg --configure -a) before
        planning. When false such a state fails the task before anything changes.
    type: bool
    default: false
  journal_dir:
    description:
      - Directory of the journal (snapshots and the deb index). Created with mode C(0700).
    type: path
    default: /var/lib/topsrider
  cache_dirs:
    description:
      - Directories searched (recursively) for the deb of a previous version when the journal does not record one,
        e.g. for a version that was installed before this module managed the node.
    type: list
    elements: path
    default: [/var/cache/topsrider]
  keyring:
    description:
      - The binary keyring (C(gpg --export)) of the trusted release keys on the node. Set, the manifest must have
        a valid detached signature C(manifest.json.sig) beside it by a key of this keyring, checked with C(gpgv)
        before anything else is read or changed (C(docs/signing.md)); each refusal names the file, the key id and
        what is wrong. Only with O(state=present) and a manifest file (not O(manifest_content)).
    type: path
    version_added: 0.3.0
  revocations:
    description:
      - The signed revocation list on the node (its signature C(FILE.sig) beside it); needs O(keyring). Refused
        when its signature is not valid, it is malformed, it is older than the newest list this node accepted
        (O(revocations_seen)), or it revokes this release (the list's reason is named).
    type: path
    version_added: 0.3.0
  revocations_seen:
    description:
      - The node's record of the newest revocation list it accepted (written atomically when a newer one passes;
        C(changed), predicted in check mode). Default C(revocations-seen.json) in O(journal_dir).
    type: path
    version_added: 0.3.0
notes:
  - The node must be Debian-based with C(dpkg), C(dpkg-deb) and C(dpkg-query). Must run as root (C(become)).
  - The module waits for the dpkg lock like apt does, takes C(/var/lib/dpkg/lock-frontend) itself and runs dpkg
    with C(DPKG_FRONTEND_LOCKED=1), so that no apt or unattended-upgrades run can slip in between the steps of
    one transaction and its rollback. apt and dpkg hold their locks with C(fcntl); a lock counts as free only
    when no C(flock) holder has it either (a script that wraps its package run in C(flock(1)) waits too).
  - Conflicts and Breaks are left to dpkg; Depends and Pre-Depends are checked before anything changes.
extends_documentation_fragment:
  - gcu.topsrider.attributes
attributes:
  check_mode:
    support: full
    description: Returns the exact plan (install, upgrade, downgrade, remove, reinstall, hold, unhold per package) and changes nothing.
  diff_mode:
    support: full
    description: Shows the managed packages' versions and holds before and after.
  platform:
    platforms: debian
    description: Debian and derivatives (dpkg).
seealso:
  - name: Bundle manifest format
    description: docs/manifest.md in the gcu.topsrider collection.
    link: https://example.invalid/gcu/topsrider/docs/manifest.md
'''

EXAMPLES = r'''
- name: Install TopsRider 2.5.140 from the staged bundle and hold it
  gcu.topsrider.deb_bundle:
    path: /var/cache/topsrider/2.5.140
    hold: true
    snapshot: "deploy-{{ deploy_id }}"
  register: topsrider_install

- name: Show what would change, without changing anything
  gcu.topsrider.deb_bundle:
    path: /var/cache/topsrider/2.5.140
    hold: true
  check_mode: true
  diff: true

- name: Install only the SDK and ECCL, repairing an interrupted dpkg run first
  gcu.topsrider.deb_bundle:
    path: /var/cache/topsrider/2.5.140
    manifest: manifest.json
    packages: [tops-sdk, tops-eccl]
    recover_interrupted: true
    lock_timeout: 300

- name: Go back to the versions before the last deploy
  gcu.topsrider.deb_bundle:
    state: rolled_back

- name: Go back to a named snapshot
  gcu.topsrider.deb_bundle:
    state: rolled_back
    snapshot: "{{ topsrider_install.snapshot }}"

- name: Remove the stack
  gcu.topsrider.deb_bundle:
    state: absent
    packages: [tops-eccl, topsfactor, tops-sdk]
'''

RETURN = r'''
plan:
  description: What the module does (or would do in check mode), one entry per package and action.
  returned: always
  type: list
  elements: dict
  contains:
    package:
      description: Package name.
      type: str
    action:
      description: One of install, upgrade, downgrade, remove, reinstall, hold, unhold.
      type: str
    before:
      description: Installed version before (null when absent). For hold/unhold, the version the package ends at.
      type: str
    after:
      description: Version after (null when removed). For hold/unhold, the version the package ends at.
      type: str
  sample:
    - {package: tops-sdk, action: upgrade, before: 2.5.136-1, after: 2.5.140-1}
    - {package: tops-sdk, action: hold, before: 2.5.140-1, after: 2.5.140-1}
snapshot:
  description: Id of the snapshot the previous state was journalled under (present/absent), or the snapshot restored
    (rolled_back). Null when nothing was applied (empty plan or check mode). When the dpkg transaction failed,
    the snapshot that records the failure (status C(failed-restored) or C(failed); never chosen as the default
    rollback target).
  returned: always
  type: str
  sample: 20250101T120000Z
packages:
  description: Managed package name to installed version after the run (null when absent); predicted in check mode.
  returned: always
  type: dict
  sample: {tops-sdk: 2.5.140-1, topsfactor: 2.5.140-1, tops-eccl: 2.5.140-1}
held:
  description: Managed packages held after the run.
  returned: always
  type: list
  elements: str
  sample: [tops-eccl, tops-sdk, topsfactor]
recovered:
  description: Whether an interrupted dpkg run was repaired with C(dpkg --configure -a) (or would be, in check mode).
  returned: always
  type: bool
verified:
  description: Files whose size and sha256 matched the manifest.
  returned: when state=present
  type: list
  elements: str
restored:
  description: On a failed transaction, whether the node was put back to its previous versions.
  returned: failure of the dpkg transaction
  type: bool
unmet:
  description: Unmet dependencies that made the module refuse (package, version, requires).
  returned: failure on dependencies
  type: list
  elements: dict
mismatches:
  description: Files that are missing or do not match the manifest (file, problem, expected, actual).
  returned: failure on checksums
  type: list
  elements: dict
signature:
  description:
    - With O(keyring), the signature check, else absent. On a refusal also its C(code) (C(docs/signing.md)).
  returned: when keyring is set
  type: dict
  contains:
    key_id:
      description: The signing key's id (16 hex digits).
      type: str
    fingerprint:
      description: The signing key's primary fingerprint.
      type: str
    revocations_serial:
      description: The serial of the revocation list checked, or null.
      type: int
    recorded:
      description: Whether a newer revocation list was recorded (or would be, in check mode).
      type: bool
    revoked:
      description: The list's entry that revokes the release (on a refusal), else null.
      type: dict
diff:
  description: Versions and holds of the managed packages before and after.
  returned: when diff mode is on
  type: dict
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gcu.topsrider.plugins.module_utils._deb_bundle import DebBundle, check_params


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path"),
            manifest=dict(type="path"),
            manifest_content=dict(type="dict"),
            packages=dict(type="list", elements="str"),
            state=dict(type="str", default="present", choices=["present", "absent", "rolled_back"]),
            snapshot=dict(type="str"),
            hold=dict(type="bool", default=False),
            allow_downgrade=dict(type="bool", default=False),
            purge=dict(type="bool", default=True),
            lock_timeout=dict(type="int", default=60),
            recover_interrupted=dict(type="bool", default=False),
            journal_dir=dict(type="path", default="/var/lib/topsrider"),
            cache_dirs=dict(type="list", elements="path", default=["/var/cache/topsrider"]),
            keyring=dict(type="path"),
            revocations=dict(type="path"),
            revocations_seen=dict(type="path"),
        ),
        mutually_exclusive=[("manifest", "manifest_content")],
        required_if=[
            ("state", "present", ("path",)),
            ("state", "absent", ("packages", "manifest", "manifest_content", "path"), True),
        ],
        supports_check_mode=True,
    )
    check_params(module)
    DebBundle(module).main()


if __name__ == "__main__":
    main()
