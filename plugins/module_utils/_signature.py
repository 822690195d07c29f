# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Signed releases (issue 32, docs/signing.md): a detached OpenPGP signature
over a bundle's manifest.json checked with gpgv against a keyring file, and
the operators' signed revocation list.

The verifier is `gpgv` because every Debian and Ubuntu node has it (apt
depends on it): nothing is installed on a node to check a signature. gpgv
trusts every key in the keyring it is given, so the keyring file IS the trust
decision: it holds the operators' public keys and nothing else.

Valid means, for every signature in the signature file (one is usual; a file
holding two approvers' signatures needs both to verify):

- a GOODSIG and a VALIDSIG line (the signature is cryptographically good and
  gpgv tells the full fingerprint of the key that made it), and
- none of BADSIG (the file is not what was signed), ERRSIG/NO_PUBKEY (the key
  is not in the keyring, or gpgv cannot check it), EXPSIG (the signature
  itself expired), EXPKEYSIG (made by a key that has expired) or REVKEYSIG
  (made by a key that has been revoked), and
- gpgv exits 0.

gpgv exits 0 for a signature by an expired or revoked key (it prints
EXPKEYSIG or REVKEYSIG with a VALIDSIG), so its exit status alone would accept
them: the status lines decide, the exit status only adds a refusal. An expired
or revoked key is refused even for a signature made before it expired or was
revoked: gpgv does not say when or why a key was revoked (superseded or
compromised), and an expired key is the operators' own statement that it is no
longer to be trusted. Extending the key's expiry (and exporting the keyring
again) makes its signatures valid again; a retired key's releases are signed
again with the new key before the old one is revoked.

Pure helpers (parse_status, judge, the revocation list's rules) import
nothing but the standard library and the collection's value rules; verify()
runs gpgv; check_release() is the whole check of a release (its manifest's
signature, the revocation list's signature and serial, whether it revokes the
release) that the controller (the action gcu.topsrider.topsrider_release_trust),
the node (deb_bundle) and scripts/topsrider-manifest verify all run.
Runs on the node: Python 3.6+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib
import json
import os
import subprocess

from ansible_collections.gcu.topsrider.plugins.module_utils._atomic import write_atomic
from ansible_collections.gcu.topsrider.plugins.module_utils._manifest import SHA256_RE
from ansible_collections.gcu.topsrider.plugins.module_utils._values import value_problem

# The signature of FILE is FILE + ".sig" beside it: what `gpg --detach-sign FILE`
# writes. Binary or ASCII-armored (gpg --armor --detach-sign -o FILE.sig FILE):
# gpgv reads both.
SIGNATURE_SUFFIX = ".sig"
REVOCATIONS_NAME = "revocations.json"

# Status keywords that refuse a signature, and the short code each becomes.
_REFUSING = {
    "BADSIG": "bad_signature",
    "EXPSIG": "expired_signature",
    "EXPKEYSIG": "expired_key",
    "REVKEYSIG": "revoked_key",
    "ERRSIG": "cannot_check",
}
# ERRSIG's return code 9: the key is not in the keyring (gnupg doc/DETAILS).
_ERRSIG_NO_PUBKEY = "9"


def signature_path(path):
    """Where the detached signature of `path` lives."""
    return path + SIGNATURE_SUFFIX


def parse_status(text):
    """gpgv's --status-fd output -> {"signatures": [...], "nodata": bool,
    "errors": [...]}. Each signature (one per NEWSIG) is a dict of what its
    lines said: "states" (the refusing keywords seen, in order), "good"
    (GOODSIG seen), "key_id" (16 hex digits of the signing key), "fingerprint"
    (VALIDSIG's primary key fingerprint), "created", "expires" (VALIDSIG's
    times, seconds since the epoch as text; expires "0" = never), "errsig_rc".
    Lines that are not status lines are ignored."""
    sigs, nodata, errors = [], False, []
    current = None
    for line in text.splitlines():
        if not line.startswith("[GNUPG:] "):
            continue
        words = line[len("[GNUPG:] "):].split()
        if not words:
            continue
        keyword, args = words[0], words[1:]
        if keyword == "NEWSIG":
            current = {"states": [], "good": False, "key_id": None, "fingerprint": None,
                       "created": None, "expires": None, "errsig_rc": None}
            sigs.append(current)
            continue
        if keyword == "NODATA":
            nodata = True
            continue
        if keyword == "ERROR":
            errors.append(" ".join(args))
            continue
        if current is None:
            continue
        if keyword == "GOODSIG":
            current["good"] = True
            current["key_id"] = args[0] if args else current["key_id"]
        elif keyword in _REFUSING:
            current["states"].append(keyword)
            if args:
                current["key_id"] = current["key_id"] or args[0]
            if keyword == "ERRSIG" and len(args) >= 6:
                current["errsig_rc"] = args[5]
                if len(args) >= 7:
                    current["fingerprint"] = args[6]
        elif keyword == "NO_PUBKEY":
            current["states"].append("NO_PUBKEY")
            current["key_id"] = current["key_id"] or (args[0] if args else None)
        elif keyword == "VALIDSIG" and args:
            # VALIDSIG <fpr> <date> <ts> <expire-ts> <v> <rsv> <pk-algo> <hash-algo> <class> [<primary-fpr>]
            current["fingerprint"] = args[9] if len(args) >= 10 else args[0]
            current["created"] = args[2] if len(args) >= 3 else None
            current["expires"] = args[3] if len(args) >= 4 else None
    return {"signatures": sigs, "nodata": nodata, "errors": errors}


def _result(ok, code, problem, key_id=None, fingerprint=None):
    return {"ok": ok, "code": code, "problem": problem, "key_id": key_id, "fingerprint": fingerprint}


def _one(sig, path, sig_path, keyring):
    """None when one signature of the file is valid, else its _result."""
    key = sig["key_id"] or "(unknown)"
    states = sig["states"]
    if "NO_PUBKEY" in states or ("ERRSIG" in states and sig["errsig_rc"] == _ERRSIG_NO_PUBKEY):
        return _result(False, "unknown_key", "%s: signed by key %s, which is not in the keyring %s"
                       % (path, key, keyring), sig["key_id"], sig["fingerprint"])
    if "BADSIG" in states:
        return _result(False, "bad_signature",
                       "%s: BAD signature by key %s: the file is not what that key signed (changed after "
                       "signing, or %s is the signature of another file)" % (path, key, sig_path),
                       sig["key_id"], sig["fingerprint"])
    if "ERRSIG" in states:
        return _result(False, "cannot_check",
                       "%s: gpgv cannot check the signature by key %s in %s (error code %s: an unsupported "
                       "algorithm or a damaged signature)" % (path, key, sig_path, sig["errsig_rc"]),
                       sig["key_id"], sig["fingerprint"])
    if "REVKEYSIG" in states:
        return _result(False, "revoked_key", "%s: signed by key %s, which has been revoked (its revocation is in "
                       "the keyring %s); sign it again with a current key" % (path, key, keyring),
                       sig["key_id"], sig["fingerprint"])
    if "EXPKEYSIG" in states:
        return _result(False, "expired_key", "%s: signed by key %s, which has expired; extend the key's expiry "
                       "and export the keyring again, or sign it again with a current key" % (path, key),
                       sig["key_id"], sig["fingerprint"])
    if "EXPSIG" in states:
        return _result(False, "expired_signature", "%s: the signature by key %s in %s has expired; sign it again"
                       % (path, key, sig_path), sig["key_id"], sig["fingerprint"])
    if not sig["good"] or not sig["fingerprint"]:
        return _result(False, "cannot_check", "%s: gpgv did not confirm the signature by key %s in %s"
                       % (path, key, sig_path), sig["key_id"], sig["fingerprint"])
    return None


def judge(status_text, returncode, path, sig_path, keyring, stderr=""):
    """The verdict on gpgv's status output and exit status (module docstring
    says what is valid): a _result dict, problem one sentence naming the
    file, the key id and what is wrong (None when ok)."""
    status = parse_status(status_text)
    if not status["signatures"]:
        return _result(False, "not_a_signature",
                       "%s: %s is not an OpenPGP signature (empty, truncated or garbage); sign %s again"
                       % (path, sig_path, os.path.basename(path)))
    for sig in status["signatures"]:
        refused = _one(sig, path, sig_path, keyring)
        if refused:
            return refused
    first = status["signatures"][0]
    if status["nodata"] or returncode != 0:
        tail = (stderr or "").strip().splitlines()
        return _result(False, "cannot_check", "%s: gpgv refused %s (exit %d%s)"
                       % (path, sig_path, returncode, ": " + tail[-1] if tail else ""),
                       first["key_id"], first["fingerprint"])
    return _result(True, None, None, first["key_id"], first["fingerprint"])


def keyring_problem(keyring):
    """None when `keyring` is a readable binary keyring file, else a sentence."""
    try:
        with open(keyring, "rb") as f:
            head = f.read(64)
    except (IOError, OSError) as e:
        return "keyring %s: cannot read it (%s)" % (keyring, e.strerror or e)
    if not head:
        return "keyring %s is empty: export the trusted public keys into it (gpg --export KEYID > %s)" % (
            keyring, keyring)
    if head.lstrip().startswith(b"-----BEGIN PGP"):
        return ("keyring %s is ASCII-armored; gpgv reads a binary keyring: export it without --armor "
                "(or gpg --dearmor it)" % keyring)
    return None


def verify(path, keyring, sig_path=None, gpgv="gpgv"):
    """Check the detached signature of `path` (default: path + ".sig") with
    gpgv against the keyring file `keyring`; returns judge()'s dict. Nothing
    is written anywhere."""
    sig_path = sig_path or signature_path(path)
    if not os.path.isfile(path):
        return _result(False, "no_file", "%s: no such file to check" % path)
    if not os.path.isfile(sig_path):
        return _result(False, "unsigned", "%s is not signed: %s does not exist (docs/signing.md)" % (path, sig_path))
    problem = keyring_problem(keyring)
    if problem:
        return _result(False, "keyring", "%s: %s" % (path, problem))
    # An absolute keyring: gpgv looks for a name without a slash in its home directory.
    argv = [gpgv, "--status-fd", "1", "--keyring", os.path.abspath(keyring), sig_path, path]
    try:
        # Also run by scripts/topsrider-manifest, where there is no AnsibleModule.run_command.
        proc = subprocess.run(  # pylint: disable=ansible-bad-function
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
            env=dict(os.environ, LC_ALL="C", LANG="C"), check=False)
    except OSError as e:
        return _result(False, "no_gpgv", "%s: cannot run %s (%s); gpgv is Debian's and Ubuntu's package gpgv, "
                       "which apt depends on" % (path, gpgv, e.strerror or e))
    return judge(proc.stdout, proc.returncode, path, sig_path, keyring, proc.stderr)


# ---------------------------------------------------------------- revocation list

class RevocationError(Exception):
    """A revocation list that cannot be used: unreadable, malformed, or older
    than one already seen."""


_TOP_KEYS = ("serial", "issued", "revoked")
_ENTRY_KEYS = ("version", "manifest_sha256", "reason")


def sha256_bytes(data):
    return hashlib.sha256(data).hexdigest()


def parse_revocations(data, name=REVOCATIONS_NAME):
    """Validate a revocation list (bytes or text of its JSON, docs/signing.md):
    {"serial": N >= 1, "issued": "<when>", "revoked": [{"version": V,
    "manifest_sha256": H (optional), "reason": R}, ...]}. Returns the dict;
    raises RevocationError naming every problem. Unknown keys are refused: a
    misspelt "manifest_sha256" must not silently widen an entry to every
    build of its version."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise RevocationError("%s is not UTF-8 text" % name)
    try:
        doc = json.loads(data)
    except ValueError as e:
        raise RevocationError("%s is not valid JSON: %s" % (name, e))
    if not isinstance(doc, dict):
        raise RevocationError("%s must be a JSON object {serial, issued, revoked}" % name)
    problems = []
    unknown = sorted(set(doc) - set(_TOP_KEYS))
    if unknown:
        problems.append("unknown key(s) %s (allowed: %s)" % (", ".join(unknown), ", ".join(_TOP_KEYS)))
    serial = doc.get("serial")
    if not isinstance(serial, int) or isinstance(serial, bool) or serial < 1:
        problems.append("serial must be an integer >= 1 (got %s)" % json.dumps(serial))
    issued_problem = value_problem(doc.get("issued"), "line")
    if issued_problem or not doc.get("issued"):
        problems.append("issued must be a non-empty line of text, e.g. 2026-11-26T12:00:00Z")
    revoked = doc.get("revoked")
    if not isinstance(revoked, list):
        problems.append("revoked must be a list (empty when nothing is revoked)")
        revoked = []
    for n, entry in enumerate(revoked, 1):
        where = "revoked[%d]" % n
        if not isinstance(entry, dict):
            problems.append("%s must be an object {version, manifest_sha256, reason}" % where)
            continue
        unknown = sorted(set(entry) - set(_ENTRY_KEYS))
        if unknown:
            problems.append("%s: unknown key(s) %s (allowed: %s)" % (where, ", ".join(unknown), ", ".join(_ENTRY_KEYS)))
        problem = value_problem(entry.get("version"), "name")
        if problem:
            problems.append("%s: version %s" % (where, problem))
        if "manifest_sha256" in entry and (not isinstance(entry["manifest_sha256"], str)
                                           or not SHA256_RE.match(entry["manifest_sha256"])):
            problems.append("%s: manifest_sha256 must be 64 lower-case hex digits" % where)
        problem = value_problem(entry.get("reason"), "line")
        if problem or not entry.get("reason", "").strip():
            problems.append("%s: reason must be a non-empty line of text" % where)
    if problems:
        raise RevocationError("%s: %s" % (name, "; ".join(problems)))
    return doc


def is_revoked(revocations, version, manifest_sha256):
    """The first entry of the list that revokes this release, else None. An
    entry with a manifest_sha256 revokes exactly that manifest (that build,
    whatever version it names); an entry without one revokes every build of
    its version (a rebuilt bundle of a withdrawn release stays withdrawn)."""
    for entry in revocations.get("revoked", []):
        if "manifest_sha256" in entry:
            if entry["manifest_sha256"] == manifest_sha256:
                return entry
        elif entry["version"] == version:
            return entry
    return None


def seen_record(revocations, raw):
    """What a controller or node keeps of the newest list it accepted: its
    serial and the sha256 of its bytes."""
    return {"serial": revocations["serial"], "sha256": sha256_bytes(raw)}


def check_serial(revocations, raw, seen, name=REVOCATIONS_NAME):
    """Refuse a replay: a list whose serial is lower than the highest already
    seen (`seen`: seen_record() of it, or None when none was), or the same
    serial with other content (every change raises the serial, so two
    different lists never share one). Returns the record to keep."""
    record = seen_record(revocations, raw)
    compare_seen(record, seen, name)
    return record


def compare_seen(record, seen, name=REVOCATIONS_NAME):
    """check_serial's rule on records ({serial, sha256}, seen_record's): raise
    RevocationError naming both serials when `record` is older than `seen`
    (None: nothing seen, anything passes), or has its serial with other
    content."""
    if seen:
        if record["serial"] < seen["serial"]:
            raise RevocationError("%s: serial %d is older than serial %d already seen here; refusing an older "
                                  "revocation list (a replay)" % (name, record["serial"], seen["serial"]))
        if record["serial"] == seen["serial"] and record["sha256"] != seen["sha256"]:
            raise RevocationError("%s: serial %d was already seen with other content; a changed list needs a "
                                  "higher serial" % (name, record["serial"]))


def offered_problem(offered, seen_path, name=REVOCATIONS_NAME):
    """A node's own check of the list a run moves it to another release with
    (deploy, rollback, restore of an older snapshot; docs/signing.md), read
    only: `offered` is the record ({serial, sha256}) of the list the
    controller checked, or None when the run gives none; `seen_path` the
    node's record of the newest list it accepted (read_seen, the reader
    deb_bundle's check uses). Returns (seen, problem): the node's record (None
    when it has none) and None when the list may be used, else the sentence.
    The node keeps the serial and sha256 only, not the list: a list as new as
    the node's is its list byte for byte (or newer), so the controller's
    check of the target release against it is the check against the node's
    newest; an older one, or none at all where the node has accepted one, is
    refused."""
    try:
        seen = read_seen(seen_path)
    except RevocationError as e:
        return None, str(e)
    if offered is None:
        if seen is None:
            return None, None
        return seen, ("%s has accepted revocation list serial %d; a run that gives no revocation list could bring a "
                      "release it revokes back: give topsrider_keyring and topsrider_revocations with serial %d or "
                      "newer" % (seen_path, seen["serial"], seen["serial"]))
    try:
        compare_seen(offered, seen, name)
    except RevocationError as e:
        return seen, "%s (the node's record: %s)" % (e, seen_path)
    return seen, None


def settings_problem(keyring, require):
    """None when a run's signature settings agree, else the sentence. A
    keyring configured means every release is signed: unsigned is refused,
    so require=False beside a keyring is a contradiction, not a way to let
    unsigned bundles through; require=True without a keyring cannot be met."""
    if require and not keyring:
        return ("topsrider_require_signature is true but topsrider_keyring is not set: set it to the binary keyring "
                "of the operators' release keys (docs/signing.md), or leave topsrider_require_signature unset")
    if keyring and require is False:
        return ("topsrider_keyring %s is set and topsrider_require_signature is false: with a keyring every release "
                "must be signed; unset topsrider_require_signature (or topsrider_keyring to deploy unsigned bundles)"
                % keyring)
    return None


def read_seen(path):
    """The newest revocation list accepted here ({serial, sha256}, what
    check_serial returned), or None when none was (no file)."""
    if not path or not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            seen = json.load(f)
    except (IOError, OSError, ValueError) as e:
        raise RevocationError("%s: cannot read the record of the newest revocation list seen (%s); it is "
                              "{\"serial\": N, \"sha256\": H}" % (path, getattr(e, "strerror", None) or e))
    if (not isinstance(seen, dict) or not isinstance(seen.get("serial"), int) or isinstance(seen.get("serial"), bool)
            or not isinstance(seen.get("sha256"), str)):
        raise RevocationError("%s is not a {serial, sha256} record of the newest revocation list seen" % path)
    return seen


def write_seen(path, record):
    """Keep `record` (check_serial's) in `path`, atomically (a crash leaves
    the old record or the new one), its directory made (0755) when missing."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    write_atomic(path, json.dumps(record, sort_keys=True) + "\n", 0o644, prefix=".seen-")


def _release(ok, code, problem, version, digest, sig=None, listed=None):
    out = dict(sig or _result(ok, code, problem))
    out.update(ok=ok, code=code, problem=problem, version=version, manifest_sha256=digest,
               revocations_serial=listed["serial"] if listed else None, recorded=False, revoked=None,
               revocations_list=listed, revocations_sha256=None)
    return out


def check_revocations(revocations, keyring, seen=None, record=True, gpgv="gpgv"):
    """The revocation list alone (what rollback and drift need without a
    release to install): its signature against `keyring`, its format, its
    serial against the record in `seen` (recorded there when it passes; not
    with `record` false). Returns verify()'s dict (the list's signer) plus
    "list" (the parsed list, None on a refusal), "recorded" and "record"
    (the list's {serial, sha256}, None on a refusal)."""
    listed_sig = verify(revocations, keyring, gpgv=gpgv)
    out = dict(listed_sig, list=None, recorded=False, record=None)
    if not listed_sig["ok"]:
        return out
    try:
        with open(revocations, "rb") as f:
            raw = f.read()
        doc = parse_revocations(raw, name=revocations)
        before = read_seen(seen)
        kept = check_serial(doc, raw, before, name=revocations)
    except (IOError, OSError) as e:
        return dict(out, ok=False, code="revocations", problem="%s: cannot read it (%s)" % (revocations, e.strerror or e))
    except RevocationError as e:
        return dict(out, ok=False, code="revocations", problem="%s (list signed by key %s)" % (e, listed_sig["key_id"]))
    recorded = bool(seen) and kept != before
    if recorded and record:
        try:
            write_seen(seen, kept)
        except (IOError, OSError) as e:
            return dict(out, ok=False, code="revocations", problem="%s: cannot record the revocation list's serial %d "
                        "there (%s)" % (seen, kept["serial"], e.strerror or e))
    return dict(out, list=doc, recorded=recorded, record=kept)


def revoked_problem(revocations_list, name, version, manifest_sha256, key_id=None):
    """(the list's entry, one sentence) when the list revokes this release, else (None, None)."""
    entry = is_revoked(revocations_list, version, manifest_sha256)
    if not entry:
        return None, None
    return entry, ("release %s (manifest sha256 %s) is revoked by %s (serial %d): %s%s"
                   % (version, manifest_sha256, name, revocations_list["serial"], entry["reason"],
                      " (the list is signed by key %s)" % key_id if key_id else ""))


def check_release(manifest_path, keyring, revocations=None, seen=None, record=True, gpgv="gpgv",
                  refuse_revoked=True):
    """The whole check of a release before anything is installed: the
    signature of `manifest_path` (manifest.json, its .sig beside it) against
    `keyring`; then, with `revocations` (the list's path, its .sig beside
    it): check_revocations (the list's signature, format and serial against
    `seen`), and whether it revokes this release. In that order; the first
    refusal stops.

    The list is recorded in `seen` (write_seen) as soon as its signature and
    serial pass, even when it then refuses the release: an older list that
    does not revoke it must never be taken back. `record` false (check mode)
    writes nothing and says whether it would have. `refuse_revoked` false
    (drift: it reports, it does not refuse) returns a revoked release as ok
    with its entry in "revoked".

    Returns verify()'s dict plus version, manifest_sha256 (of the manifest's
    bytes), revocations_serial, revocations_sha256 (of the list's bytes),
    revocations_list (the parsed list), recorded
    (the record was, or would be, written), revoked (the list's entry when it
    revokes the release); code "revoked", "revocations" (the list unusable or
    older than the one seen) or verify()'s codes, problem one sentence naming
    the file, the key id and what is wrong."""
    try:
        with open(manifest_path, "rb") as f:
            raw_manifest = f.read()
        version = json.loads(raw_manifest.decode("utf-8")).get("version")
    except (IOError, OSError) as e:
        return _release(False, "no_file", "%s: cannot read it (%s)" % (manifest_path, e.strerror or e), None, None)
    except (ValueError, AttributeError):
        return _release(False, "manifest", "%s is not a JSON manifest object" % manifest_path, None, None)
    digest = sha256_bytes(raw_manifest)
    sig = verify(manifest_path, keyring, gpgv=gpgv)
    if not sig["ok"]:
        return _release(False, sig["code"], sig["problem"], version, digest, sig)
    if not revocations:
        return _release(True, None, None, version, digest, sig)
    listed = check_revocations(revocations, keyring, seen, record, gpgv)
    if not listed["ok"]:
        return _release(False, listed["code"], listed["problem"], version, digest, listed)
    doc = listed["list"]
    entry, problem = revoked_problem(doc, revocations, version, digest, listed["key_id"])
    if entry and refuse_revoked:
        out = _release(False, "revoked", problem, version, digest, sig, doc)
    else:
        out = _release(True, None, None, version, digest, sig, doc)
    out.update(recorded=listed["recorded"], revoked=entry, revocations_sha256=listed["record"]["sha256"])
    return out
