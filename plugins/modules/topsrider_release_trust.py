#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: topsrider_release_trust
short_description: Check a release's signature and the revocation list on the controller, before anything is sent
version_added: "0.3.0"
description:
  - Checks the detached signature C(manifest.json.sig) of a release's C(manifest.json) with C(gpgv) against
    O(keyring); then, with O(revocations), the revocation list's own signature (same keyring), its format, its
    serial against the newest list this controller accepted (O(seen)), and whether it revokes the release (by
    the manifest's sha256, or every build of its version). The first refusal fails the task with one sentence
    naming the file, the key id and what is wrong.
  - The rules are docs/signing.md's, the same code each node runs again before C(deb_bundle) changes anything
    and C(scripts/topsrider-manifest verify) runs for the operators.
  - Without O(keyring) (and O(require) not true) nothing is checked and the result says so.
  - Runs on the controller inside C(ansible-playbook); nothing is sent to any node.
author:
  - gcu.topsrider contributors (@gcu-topsrider)
options:
  manifest:
    description:
      - The release's C(manifest.json) on the controller; its signature is C(manifest.json.sig) beside it.
      - Omitted, only the revocation list is checked (its signature, format and serial), for a run that installs
        no release (C(rollback.yml)); O(revocations) is then required.
    type: path
  refuse_revoked:
    description:
      - Refuse a release the list revokes. V(false) (C(drift.yml), which reports and never refuses) returns it in
        RV(revoked) instead.
    type: bool
    default: true
  keyring:
    description:
      - The binary keyring of the trusted public keys (C(gpg --export), not C(--armor)) on the controller.
        Empty, nothing is checked. A relative path is taken from the directory C(ansible-playbook) runs in.
    type: str
    default: ""
  revocations:
    description: The signed revocation list on the controller (its signature C(FILE.sig) beside it). Empty, none.
    type: str
    default: ""
  require:
    description:
      - Refuse an unsigned release. Unset, true exactly when O(keyring) is set. True without a keyring, and false
        with one, are refused as contradictory settings (with a keyring, unsigned is always refused).
    type: bool
  seen:
    description:
      - The controller's record of the newest revocation list it accepted (C({serial, sha256}) JSON, written
        atomically, its directory made when missing). A list with a lower serial, or the same serial and other
        content, is refused.
    type: str
    default: ~/.cache/topsrider/revocations-seen.json
extends_documentation_fragment:
  - gcu.topsrider.attributes
attributes:
  action:
    support: full
    description: Runs on the controller only; nothing is sent to a node.
  async:
    support: none
    description: One gpgv run per file, milliseconds.
  check_mode:
    support: full
    description: Checks as in a real run; writes no record, and predicts C(changed) when it would.
  diff_mode:
    support: none
    description: No diff is shown.
  platform:
    platforms: posix
    description: The controller, with C(gpgv) on its PATH.
seealso:
  - module: gcu.topsrider.deb_bundle
'''

EXAMPLES = r'''
- name: The release's signature and the revocation list, before anything is sent
  gcu.topsrider.topsrider_release_trust:
    manifest: /srv/topsrider/2.5.140/manifest.json
    keyring: /srv/topsrider/topsrider-trusted.gpg
    revocations: /srv/topsrider/revocations.json
  delegate_to: localhost
  run_once: true
'''

RETURN = r'''
signed:
  description: Whether the signature was checked (and passed).
  returned: always
  type: bool
key_id:
  description: The signing key's id (16 hex digits); on a refusal, the key the refusal names.
  returned: always
  type: str
fingerprint:
  description: The signing key's primary fingerprint.
  returned: always
  type: str
revocations_serial:
  description: The serial of the revocation list checked, or null.
  returned: always
  type: int
revocations_sha256:
  description:
    - The sha256 of the revocation list's bytes when it passed, else null. With RV(revocations_serial), what each node
      compares with its own record of the newest list it accepted (M(gcu.topsrider.topsrider_revocations_seen)).
  returned: always
  type: str
  version_added: 0.4.0
problem:
  description: Null when the release is accepted, else the refusal's sentence (also the task's C(msg)).
  returned: always
  type: str
code:
  description: On a refusal, its short code (docs/signing.md's table, C(revoked), C(revocations), C(settings)).
  returned: failure
  type: str
revoked:
  description: When the list revokes the release, its entry (version, manifest_sha256, reason), else null.
  returned: always
  type: dict
revoked_releases:
  description: The list's revoked entries (empty without a list), for the checks of what the nodes run.
  returned: success
  type: list
  elements: dict
changed:
  description: True when a newer revocation list was recorded in O(seen) (would be, in check mode).
  returned: always
  type: bool
'''
