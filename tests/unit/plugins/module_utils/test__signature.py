# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""_signature: real keys and signatures made here with gpg, checked with gpgv;
every tampering is refused with one sentence naming the file, the key id and
what is wrong; the revocation list's rules (format, revoked releases, serial)."""
import json
import os
import shutil

import pytest

import gpg_keys
from gpg_keys import signed_list
from ansible_collections.gcu.topsrider.plugins.module_utils import _signature as sig

MANIFEST = {"format": 1, "product": "TopsRider", "version": "2.5.140",
            "files": [{"file": "tops-sdk_2.5.140-1_amd64.deb", "sha256": "a" * 64, "size": 4}]}


@pytest.fixture
def signed(tmp_path, keys):
    """A manifest signed by the ops key, and a keyring holding the ops key only."""
    path = str(tmp_path / "manifest.json")
    with open(path, "w") as f:
        json.dump(MANIFEST, f)
    keys["ops"].sign(path)
    return path, keys["ops"].export(str(tmp_path / "trusted.gpg"))


def test_a_signed_manifest_is_valid_and_names_its_key(signed, keys):
    path, ring = signed
    result = sig.verify(path, ring)
    assert result == {"ok": True, "code": None, "problem": None, "key_id": keys["ops"].key_id,
                      "fingerprint": keys["ops"].fingerprint}


def test_an_armored_signature_is_read_too(tmp_path, signed, keys):
    path, ring = signed
    keys["ops"].gpg("--armor", "--detach-sign", "-o", path + ".sig", path)
    with open(path + ".sig") as f:
        assert f.read().startswith("-----BEGIN PGP SIGNATURE")
    assert sig.verify(path, ring)["ok"] is True


def refused(result, code, *words):
    assert result["ok"] is False, result
    assert result["code"] == code, result
    for word in words:
        assert word in result["problem"], (word, result["problem"])
    return result


def test_unsigned(signed):
    path, ring = signed
    os.remove(path + ".sig")
    refused(sig.verify(path, ring), "unsigned", path + " is not signed", path + ".sig does not exist")


def test_signed_by_a_key_not_in_the_keyring(signed, keys):
    path, ring = signed
    keys["other"].sign(path)
    result = refused(sig.verify(path, ring), "unknown_key", path, keys["other"].key_id, "not in the keyring " + ring)
    assert result["key_id"] == keys["other"].key_id


def test_a_manifest_changed_after_signing(signed, keys):
    path, ring = signed
    with open(path, "a") as f:
        f.write(" ")
    refused(sig.verify(path, ring), "bad_signature", path, "BAD signature", keys["ops"].key_id, "changed after signing")


def test_the_signature_of_another_file(tmp_path, signed, keys):
    path, ring = signed
    other = str(tmp_path / "other.json")
    with open(other, "w") as f:
        json.dump(dict(MANIFEST, version="2.5.136"), f)
    shutil.copy(keys["ops"].sign(other), path + ".sig")
    refused(sig.verify(path, ring), "bad_signature", path, keys["ops"].key_id, "signature of another file")


@pytest.mark.parametrize("damage", ["truncated", "empty", "garbage"])
def test_a_damaged_signature(signed, damage):
    path, ring = signed
    with open(path + ".sig", "rb") as f:
        data = f.read()
    data = {"truncated": data[:len(data) // 2], "empty": b"", "garbage": b"not a signature\n"}[damage]
    with open(path + ".sig", "wb") as f:
        f.write(data)
    refused(sig.verify(path, ring), "not_a_signature", path, path + ".sig is not an OpenPGP signature")


def test_an_expired_key(tmp_path, signed, keys):
    path, ring = signed
    keys["expired"].sign(path, faked_time=gpg_keys.PAST_LATER)
    ring = keys["expired"].export(str(tmp_path / "old.gpg"))
    refused(sig.verify(path, ring), "expired_key", path, keys["expired"].key_id, "has expired")


def test_a_revoked_key(tmp_path, signed):
    path = signed[0]
    key = gpg_keys.Key(str(tmp_path / "lost"), "Lost Ops <lost@example.org>")
    try:
        key.sign(path)
        good = key.export(str(tmp_path / "before.gpg"))
        assert sig.verify(path, good)["ok"] is True
        key.revoke()
        ring = key.export(str(tmp_path / "after.gpg"))
    finally:
        key.close()
    refused(sig.verify(path, ring), "revoked_key", path, key.key_id, "has been revoked")


def test_an_expired_signature(tmp_path, signed, keys):
    path = signed[0]
    keys["past"].sign(path, faked_time=gpg_keys.PAST_LATER, sig_expire="1d")
    ring = keys["past"].export(str(tmp_path / "past.gpg"))
    refused(sig.verify(path, ring), "expired_signature", path, keys["past"].key_id, "signature", "has expired")


def test_two_signatures_both_must_verify(tmp_path, signed, keys):
    path, ring = signed
    with open(path + ".sig", "rb") as f:
        ops = f.read()
    with open(keys["other"].sign(path, out=str(tmp_path / "other.sig")), "rb") as f:
        other = f.read()
    with open(path + ".sig", "wb") as f:
        f.write(ops + other)
    refused(sig.verify(path, ring), "unknown_key", keys["other"].key_id)
    both = str(tmp_path / "both.gpg")
    with open(both, "wb") as f:
        for name in ("ops", "other"):
            with open(keys[name].export(str(tmp_path / (name + ".gpg"))), "rb") as k:
                f.write(k.read())
    assert sig.verify(path, both)["ok"] is True


@pytest.mark.parametrize("case, words", [
    ("missing", "cannot read it"), ("empty", "is empty"), ("armored", "ASCII-armored")])
def test_an_unusable_keyring_is_named(tmp_path, signed, keys, case, words):
    path, ring = signed
    if case == "missing":
        os.remove(ring)
    elif case == "empty":
        open(ring, "w").close()
    else:
        keys["ops"].export(ring, armor=True)
    refused(sig.verify(path, ring), "keyring", path, "keyring " + ring, words)


def test_no_gpgv_is_named(signed):
    path, ring = signed
    refused(sig.verify(path, ring, gpgv="/nonexistent/gpgv"), "no_gpgv", "cannot run /nonexistent/gpgv", "apt")


# The parser on its own: what gpgv printed in each case (GnuPG 2.2's doc/DETAILS).
GOOD = ("[GNUPG:] NEWSIG\n[GNUPG:] GOODSIG 306CC8534ED64A4D Ops <ops@x>\n"
        "[GNUPG:] VALIDSIG 26AAAAAAAAAAAAAAAAAAAAAAAAAA306CC8534ED64A4D 2026-11-26 1795695043 0 4 0 22 8 00 "
        "263077D9FA414D6EB4C53CD8306CC8534ED64A4D\n")


def test_parse_status_reads_the_primary_fingerprint_and_times():
    status = sig.parse_status("gpgv: noise\n" + GOOD)
    assert status["signatures"] == [{
        "states": [], "good": True, "key_id": "306CC8534ED64A4D",
        "fingerprint": "263077D9FA414D6EB4C53CD8306CC8534ED64A4D", "created": "1795695043", "expires": "0",
        "errsig_rc": None}]


@pytest.mark.parametrize("status, rc, code", [
    (GOOD, 0, None),
    (GOOD, 2, "cannot_check"),  # gpgv's exit status can only add a refusal
    (GOOD.replace("GOODSIG", "EXPKEYSIG"), 0, "expired_key"),  # gpgv exits 0 for it
    (GOOD.replace("GOODSIG", "REVKEYSIG"), 0, "revoked_key"),
    (GOOD.replace("GOODSIG", "EXPSIG"), 1, "expired_signature"),
    ("[GNUPG:] NEWSIG\n[GNUPG:] GOODSIG 306CC8534ED64A4D Ops <ops@x>\n", 0, "cannot_check"),  # no VALIDSIG
    ("[GNUPG:] NEWSIG\n[GNUPG:] ERRSIG 306CC8534ED64A4D 22 8 00 1795695043 4 -\n", 2, "cannot_check"),
    ("[GNUPG:] NODATA 3\n[GNUPG:] NODATA 4\n", 2, "not_a_signature"),
    ("", 2, "not_a_signature"),
    (GOOD + "[GNUPG:] NEWSIG\n[GNUPG:] BADSIG 1111111111111111 X <x@x>\n", 1, "bad_signature"),
])
def test_judge(status, rc, code):
    result = sig.judge(status, rc, "m.json", "m.json.sig", "k.gpg")
    assert (result["ok"], result["code"]) == (code is None, code)
    assert (result["problem"] is None) == (code is None)


# ---------------------------------------------------------------- revocation list

def revocations(serial=1, revoked=(), **extra):
    return dict({"serial": serial, "issued": "2026-11-26T12:00:00Z", "revoked": list(revoked)}, **extra)


ENTRY = {"version": "2.5.140", "manifest_sha256": "b" * 64, "reason": "ECCL all-reduce hangs (advisory 7)"}


def test_a_valid_list_parses():
    doc = revocations(3, [ENTRY, {"version": "2.5.136", "reason": "security advisory"}])
    assert sig.parse_revocations(json.dumps(doc).encode()) == doc


@pytest.mark.parametrize("doc, words", [
    ("{", "is not valid JSON"),
    ("[]", "must be a JSON object"),
    (revocations(0), "serial must be an integer >= 1"),
    (revocations(True), "serial must be an integer >= 1"),
    (revocations(issued=""), "issued must be"),
    (dict(revocations(), revoked={}), "revoked must be a list"),
    (revocations(revoked=[dict(ENTRY, manifest_sha256="B" * 64)]), "revoked[1]: manifest_sha256 must be 64"),
    (revocations(revoked=[dict(ENTRY, manifest_sha=ENTRY["manifest_sha256"])]), "revoked[1]: unknown key(s) manifest_sha"),
    (revocations(revoked=[dict(ENTRY, version="../2.5")]), "revoked[1]: version"),
    (revocations(revoked=[dict(ENTRY, reason=" ")]), "revoked[1]: reason must be"),
    (revocations(revoked=[dict(ENTRY, reason="two\nlines")]), "revoked[1]: reason must be"),
    (revocations(serail=2), "unknown key(s) serail"),
])
def test_a_malformed_list_is_refused_with_its_problem(doc, words):
    with pytest.raises(sig.RevocationError) as e:
        sig.parse_revocations(doc if isinstance(doc, str) else json.dumps(doc), name="/etc/rev.json")
    assert str(e.value).startswith("/etc/rev.json")
    assert words in str(e.value)


def test_is_revoked_matches_the_manifest_or_every_build_of_a_version():
    by_version = {"version": "2.5.136", "reason": "withdrawn"}
    doc = revocations(2, [ENTRY, by_version])
    assert sig.is_revoked(doc, "2.5.140", "b" * 64) == ENTRY
    assert sig.is_revoked(doc, "2.5.140", "c" * 64) is None  # another build of 2.5.140 stands
    assert sig.is_revoked(doc, "2.5.136", "d" * 64) == by_version
    assert sig.is_revoked(doc, "2.5.141", "e" * 64) is None
    assert sig.is_revoked(revocations(), "2.5.140", "b" * 64) is None


def test_the_serial_only_moves_forward():
    five = json.dumps(revocations(5)).encode()
    seen = sig.check_serial(sig.parse_revocations(five), five, None)
    assert seen == {"serial": 5, "sha256": sig.sha256_bytes(five)}
    assert sig.check_serial(sig.parse_revocations(five), five, seen) == seen  # the same list again
    four = json.dumps(revocations(4)).encode()
    with pytest.raises(sig.RevocationError, match="serial 4 is older than serial 5 already seen"):
        sig.check_serial(sig.parse_revocations(four), four, seen)
    other_five = json.dumps(revocations(5, [ENTRY])).encode()
    with pytest.raises(sig.RevocationError, match="serial 5 was already seen with other content"):
        sig.check_serial(sig.parse_revocations(other_five), other_five, seen)
    six = json.dumps(revocations(6, [ENTRY])).encode()
    assert sig.check_serial(sig.parse_revocations(six), six, seen)["serial"] == 6


# ---------------------------------------------------------------- offered_problem: the node's check before a deploy or rollback

def _seen_file(tmp_path, serial):
    """A node's record of list SERIAL as check_release writes it; (path, the record, the list's bytes)."""
    raw = json.dumps(revocations(serial)).encode()
    record = sig.check_serial(sig.parse_revocations(raw), raw, None)
    path = str(tmp_path / "revocations-seen.json")
    sig.write_seen(path, record)
    return path, record, raw


def test_an_older_list_than_the_nodes_is_refused_naming_both_serials(tmp_path):
    path, record, dummy = _seen_file(tmp_path, 2)
    with open(path, "rb") as f:
        before = f.read()
    one = json.dumps(revocations(1)).encode()
    seen, problem = sig.offered_problem(sig.seen_record(revocations(1), one), path, "/srv/revocations-1.json")
    assert seen == record
    assert problem == ("/srv/revocations-1.json: serial 1 is older than serial 2 already seen here; refusing an older "
                       "revocation list (a replay) (the node's record: %s)" % path)
    with open(path, "rb") as f:
        assert f.read() == before  # read only


def test_the_nodes_own_list_or_a_newer_one_passes(tmp_path):
    path, record, raw = _seen_file(tmp_path, 2)
    assert sig.offered_problem(dict(record), path) == (record, None)
    three = json.dumps(revocations(3, [ENTRY])).encode()
    assert sig.offered_problem(sig.seen_record(revocations(3, [ENTRY]), three), path) == (record, None)
    other_two = json.dumps(revocations(2, [ENTRY])).encode()
    seen, problem = sig.offered_problem(sig.seen_record(revocations(2, [ENTRY]), other_two), path)
    assert "serial 2 was already seen with other content" in problem


def test_no_list_is_refused_only_where_the_node_accepted_one(tmp_path):
    assert sig.offered_problem(None, str(tmp_path / "none.json")) == (None, None)
    assert sig.offered_problem({"serial": 1, "sha256": "a" * 64}, str(tmp_path / "none.json")) == (None, None)
    path, record, dummy = _seen_file(tmp_path, 4)
    seen, problem = sig.offered_problem(None, path)
    assert seen == record
    assert problem.startswith("%s has accepted revocation list serial 4; a run that gives no revocation list" % path)
    assert "topsrider_revocations with serial 4 or newer" in problem


def test_a_damaged_node_record_is_named_not_passed(tmp_path):
    path = tmp_path / "revocations-seen.json"
    path.write_text(u'{"serial": true, "sha256": "x"}')
    seen, problem = sig.offered_problem({"serial": 9, "sha256": "a" * 64}, str(path))
    assert seen is None and problem == ("%s is not a {serial, sha256} record of the newest revocation list seen" % path)


# ---------------------------------------------------------------- check_release: the whole check, as deploy runs it

def test_check_release_accepts_and_records_the_list_once(tmp_path, signed, keys):
    path, ring = signed
    rev = signed_list(str(tmp_path / "revocations.json"), keys["ops"], 4)
    seen = str(tmp_path / "state" / "seen.json")
    result = sig.check_release(path, ring, rev, seen, record=False)
    assert result["ok"] and result["recorded"] and not os.path.exists(seen), result  # check mode: predicted, not written
    result = sig.check_release(path, ring, rev, seen)
    assert result["ok"] and result["recorded"] and result["revocations_serial"] == 4, result
    with open(rev, "rb") as f:
        assert result["revocations_sha256"] == sig.sha256_bytes(f.read())
    assert result["key_id"] == keys["ops"].key_id and result["version"] == "2.5.140"
    with open(seen) as f:
        assert json.load(f)["serial"] == 4
    assert not sig.check_release(path, ring, rev, seen)["recorded"]  # the same list again: nothing to write


def test_check_release_refuses_a_revoked_release_with_the_lists_reason(tmp_path, signed, keys):
    path, ring = signed
    rev = signed_list(str(tmp_path / "revocations.json"), keys["ops"], 2,
                      [{"version": "2.5.140", "reason": "ECCL all-reduce hangs (advisory 7)"}])
    seen = str(tmp_path / "seen.json")
    result = sig.check_release(path, ring, rev, seen)
    assert (result["ok"], result["code"]) == (False, "revoked"), result
    assert result["revoked"]["reason"] in result["problem"] and rev in result["problem"]
    assert keys["ops"].key_id in result["problem"]
    # Recorded even though it refused: an older list that does not revoke it is never taken back.
    with open(seen) as f:
        assert json.load(f)["serial"] == 2


def test_check_release_refuses_an_older_list_and_keeps_the_record(tmp_path, signed, keys):
    path, ring = signed
    seen = str(tmp_path / "seen.json")
    assert sig.check_release(path, ring, signed_list(str(tmp_path / "new.json"), keys["ops"], 5), seen)["ok"]
    with open(seen) as f:
        before = f.read()
    result = sig.check_release(path, ring, signed_list(str(tmp_path / "old.json"), keys["ops"], 4), seen)
    assert result["code"] == "revocations" and "serial 4 is older than serial 5" in result["problem"], result
    assert keys["ops"].key_id in result["problem"]
    with open(seen) as f:
        assert f.read() == before


@pytest.mark.parametrize("case", ["unsigned", "other key"])
def test_check_release_refuses_a_list_not_signed_by_the_keyring(tmp_path, signed, keys, case):
    path, ring = signed
    rev = str(tmp_path / "revocations.json")
    signed_list(rev, keys["other"], 1)
    if case == "unsigned":
        os.remove(rev + ".sig")
    seen = str(tmp_path / "seen.json")
    result = sig.check_release(path, ring, rev, seen)
    assert not result["ok"] and rev in result["problem"] and not os.path.exists(seen), result
    if case == "other key":
        assert keys["other"].key_id in result["problem"]


def test_check_release_refuses_an_unsigned_manifest_before_reading_the_list(tmp_path, signed, keys):
    path, ring = signed
    os.remove(path + ".sig")
    rev = signed_list(str(tmp_path / "revocations.json"), keys["ops"], 1)
    result = sig.check_release(path, ring, rev, str(tmp_path / "seen.json"))
    assert result["code"] == "unsigned" and "manifest.json.sig does not exist" in result["problem"]
    assert not os.path.exists(str(tmp_path / "seen.json"))


def test_a_damaged_seen_record_is_named(tmp_path, signed, keys):
    path, ring = signed
    seen = tmp_path / "seen.json"
    seen.write_text(u'{"serial": "7"}')
    result = sig.check_release(path, ring, signed_list(str(tmp_path / "r.json"), keys["ops"], 1), str(seen))
    assert result["code"] == "revocations" and str(seen) in result["problem"], result


@pytest.mark.parametrize("keyring, require, words", [
    ("", True, "topsrider_require_signature is true but topsrider_keyring is not set"),
    ("/k.gpg", False, "with a keyring every release must be signed"),
])
def test_contradictory_settings_are_refused(keyring, require, words):
    assert words in sig.settings_problem(keyring, require)


@pytest.mark.parametrize("keyring, require", [("", False), ("", None), ("/k.gpg", True), ("/k.gpg", None)])
def test_agreeing_settings(keyring, require):
    assert sig.settings_problem(keyring, require) is None
