# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action of gcu.topsrider.topsrider_release_trust (documented in
plugins/modules/topsrider_release_trust.py).

The controller's check of a release before anything is sent to a node
(playbooks/tasks/inputs.yml): the manifest's signature, the revocation list's
signature and serial, whether the list revokes the release. The whole rule is
_signature.check_release, which each node runs again (deb_bundle) and
scripts/topsrider-manifest verify runs for the operators; this file reads the
arguments, expands the controller's paths and says the result.
"""
from __future__ import annotations

import os

from ansible.plugins.action import ActionBase
from ansible_collections.gcu.topsrider.plugins.module_utils import _signature

# The controller's record of the newest revocation list it accepted (beside
# the .run extraction cache, ~/.cache/topsrider/runs): per operator account,
# kept across runs and across report directories.
DEFAULT_SEEN = "~/.cache/topsrider/revocations-seen.json"

ARGUMENT_SPEC = {"manifest": {"type": "path"},
                 "refuse_revoked": {"type": "bool", "default": True},
                 "keyring": {"type": "str", "default": ""},
                 "revocations": {"type": "str", "default": ""},
                 "require": {"type": "bool"},
                 "seen": {"type": "str", "default": DEFAULT_SEEN}}


def _path(value):
    return os.path.abspath(os.path.expanduser(value)) if value else ""


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    @staticmethod
    def _refuse(result, problem, code):
        # A failed result, not an exception: a caller may register it with failed_when false and judge
        # it per host (tasks/inputs.yml runs it once per run for every host).
        result.update(failed=True, changed=False, msg=problem, problem=problem, code=code)
        return result

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        keyring, revocations = _path(args["keyring"]), _path(args["revocations"])
        # Unset: required exactly when a keyring is configured.
        require = bool(keyring) if args["require"] is None else args["require"]
        problem = _signature.settings_problem(keyring, require)
        if problem:
            return self._refuse(result, problem, "settings")
        if revocations and not keyring:
            return self._refuse(result, "topsrider_revocations %s is set but topsrider_keyring is not: a revocation list "
                                "is trusted only with the keyring that checks its signature" % revocations, "settings")
        # problem: None when the release is accepted, the refusal's sentence otherwise (a caller that
        # registers the result with failed_when false reads it).
        result.update(changed=False, problem=None, signed=False, key_id=None, fingerprint=None, revocations_serial=None,
                      keyring=keyring or None, revocations=revocations or None, revoked=None, revoked_releases=[],
                      revocations_sha256=None)
        if not keyring:
            result["msg"] = "no topsrider_keyring: the release's signature is not checked (docs/signing.md)"
            return result
        if not args["manifest"]:
            # The list alone (rollback.yml: its target is checked against it on each node).
            if not revocations:
                return self._refuse(result, "no manifest and no revocation list to check", "settings")
            listed = _signature.check_revocations(revocations, keyring, _path(args["seen"]),
                                                  record=not self._task.check_mode)
            if not listed["ok"]:
                result.update(key_id=listed["key_id"], fingerprint=listed["fingerprint"])
                return self._refuse(result, listed["problem"], listed["code"])
            result.update(changed=listed["recorded"], key_id=listed["key_id"], fingerprint=listed["fingerprint"],
                          revocations_serial=listed["list"]["serial"], revocations_sha256=listed["record"]["sha256"],
                          revoked_releases=listed["list"]["revoked"],
                          msg="%s: revocation list serial %d signed by key %s" % (
                              revocations, listed["list"]["serial"], listed["key_id"]))
            return result
        checked = _signature.check_release(args["manifest"], keyring, revocations or None, _path(args["seen"]),
                                           record=not self._task.check_mode, refuse_revoked=args["refuse_revoked"])
        if not checked["ok"]:
            result.update(key_id=checked["key_id"], fingerprint=checked["fingerprint"], revoked=checked["revoked"],
                          revocations_serial=checked["revocations_serial"])
            return self._refuse(result, checked["problem"], checked["code"])
        listed = checked["revocations_list"] or {}
        # A newer revocation list recorded is the controller's own state, reported as the change it is
        # (predicted in check mode, which writes nothing); the same list again changes nothing.
        result.update(changed=checked["recorded"], signed=True, key_id=checked["key_id"],
                      fingerprint=checked["fingerprint"], version=checked["version"],
                      manifest_sha256=checked["manifest_sha256"], revocations_serial=checked["revocations_serial"],
                      revocations_sha256=checked["revocations_sha256"], revoked=checked["revoked"], revoked_releases=listed.get("revoked", []),
                      msg="%s: release %s signed by key %s%s" % (
                          args["manifest"], checked["version"], checked["key_id"],
                          ", not revoked (%s, serial %d)" % (revocations, checked["revocations_serial"])
                          if revocations and not checked["revoked"] else
                          ", REVOKED (%s, serial %d): %s" % (revocations, checked["revocations_serial"],
                                                             checked["revoked"]["reason"])
                          if revocations else ", no revocation list"))
        return result
