# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/topsrider-manifest sign and verify on real keys made here: the
operator's gpg signs a checked bundle's manifest and a revocation list;
verify refuses every tampering with the file, the key id and what is wrong,
and accepts a signed, unrevoked, intact bundle."""
import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest

import gpg_keys
from gpg_keys import write_list
from conftest import TOP

TOOL = os.path.join(TOP, "scripts", "topsrider-manifest")


def tool(*args, key=None):
    env = dict(os.environ, GNUPGHOME=key.home) if key else None
    return subprocess.run([sys.executable, TOOL] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, env=env, check=False)


def bundle(base, version):
    d = base / version
    d.mkdir()
    (d / ("tops-sdk_%s-1_amd64.bin" % version)).write_bytes(b"sdk " + version.encode())
    (d / "notes.txt").write_text("release %s\n" % version)
    proc = tool("create", str(d), "--version", version)
    assert proc.returncode == 0, proc.stderr
    return str(d)


@pytest.fixture
def signed(tmp_path, keys):
    """A bundle signed by the ops key, the ops keyring, and an empty signed revocation list."""
    d = bundle(tmp_path, "2.5.140")
    ring = keys["ops"].export(str(tmp_path / "trusted.gpg"))
    proc = tool("sign", d, "--keyring", ring, key=keys["ops"])
    assert proc.returncode == 0, proc.stderr
    assert "signed by key %s" % keys["ops"].fingerprint in proc.stdout
    rev = write_list(str(tmp_path / "revocations.json"), 1)
    assert tool("sign", rev, key=keys["ops"]).returncode == 0
    return d, ring, rev


def refused(proc, *words):
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    for word in words:
        assert word in proc.stderr, (word, proc.stderr)


def test_a_signed_bundle_verifies_and_check_and_create_ignore_its_signature(signed, keys, tmp_path):
    d, ring, rev = signed
    seen = str(tmp_path / "seen.json")
    proc = tool("verify", d, "--keyring", ring, "--revocations", rev, "--seen", seen)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "%s: TopsRider 2.5.140: manifest.json signed by key %s (%s), not revoked (%s), 2 files " \
        "match\n" % (d, keys["ops"].key_id, keys["ops"].fingerprint, rev)
    with open(seen) as f:
        assert json.load(f)["serial"] == 1
    check = tool("check", d)
    assert (check.returncode, check.stderr) == (0, "")
    again = tool("create", d, "--version", "2.5.140")
    assert again.returncode == 0 and "manifest.json.sig signed the manifest this replaced" in again.stderr
    with open(os.path.join(d, "manifest.json")) as f:
        assert [e["file"] for e in json.load(f)["files"]] == ["notes.txt", "tops-sdk_2.5.140-1_amd64.bin"]


def test_sign_refuses_a_bundle_whose_files_do_not_match(tmp_path, keys):
    d = bundle(tmp_path, "2.5.140")
    with open(os.path.join(d, "notes.txt"), "a") as f:
        f.write("changed\n")
    proc = tool("sign", d, key=keys["ops"])
    assert proc.returncode == 1
    assert "notes.txt: size mismatch" in proc.stderr and "not signing" in proc.stderr
    assert not os.path.exists(os.path.join(d, "manifest.json.sig"))


def test_sign_refuses_a_malformed_revocation_list(tmp_path, keys):
    rev = str(tmp_path / "revocations.json")
    with open(rev, "w") as f:
        json.dump({"serial": 0, "issued": "now", "revoked": []}, f)
    proc = tool("sign", rev, key=keys["ops"])
    assert proc.returncode == 2 and "serial must be an integer >= 1" in proc.stderr
    assert not os.path.exists(rev + ".sig")


def test_unsigned(signed):
    d, ring = signed[:2]
    os.remove(os.path.join(d, "manifest.json.sig"))
    refused(tool("verify", d, "--keyring", ring), "manifest.json is not signed")


def test_signed_by_a_key_not_in_the_keyring(signed, keys):
    d, ring = signed[:2]
    assert tool("sign", d, key=keys["other"]).returncode == 0
    refused(tool("verify", d, "--keyring", ring), keys["other"].key_id, "not in the keyring")


def test_a_manifest_changed_after_signing(signed, keys):
    d, ring = signed[:2]
    path = os.path.join(d, "manifest.json")
    with open(path) as f:
        data = json.load(f)
    data["version"] = "2.5.141"  # a release the operators did not approve
    with open(path, "w") as f:
        json.dump(data, f)
    refused(tool("verify", d, "--keyring", ring), "BAD signature", keys["ops"].key_id)


def test_a_file_swapped_after_signing(signed):
    d, ring = signed[:2]
    with open(os.path.join(d, "tops-sdk_2.5.140-1_amd64.bin"), "wb") as f:
        f.write(b"sdk 2.5.666")  # same size, other bytes
    refused(tool("verify", d, "--keyring", ring), "tops-sdk_2.5.140-1_amd64.bin: sha256 mismatch",
            "do not match the signed manifest")


def test_the_signature_of_another_release(signed, tmp_path, keys):
    d, ring = signed[:2]
    other = bundle(tmp_path, "2.5.136")
    assert tool("sign", other, key=keys["ops"]).returncode == 0
    shutil.copy(os.path.join(other, "manifest.json.sig"), os.path.join(d, "manifest.json.sig"))
    refused(tool("verify", d, "--keyring", ring), "BAD signature", "signature of another file")


def test_a_truncated_signature(signed):
    d, ring = signed[:2]
    path = os.path.join(d, "manifest.json.sig")
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[:40])
    refused(tool("verify", d, "--keyring", ring), "is not an OpenPGP signature")


def test_an_expired_key(signed, tmp_path, keys):
    d = signed[0]
    keys["expired"].sign(os.path.join(d, "manifest.json"), faked_time=gpg_keys.PAST_LATER)
    ring = keys["expired"].export(str(tmp_path / "old.gpg"))
    refused(tool("verify", d, "--keyring", ring), keys["expired"].key_id, "has expired")


def test_a_revoked_release(signed, keys):
    d, ring, rev = signed
    with open(os.path.join(d, "manifest.json"), "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    write_list(rev, 2, [{"version": "2.5.140", "manifest_sha256": digest, "reason": "ECCL hangs (advisory 7)"}])
    assert tool("sign", rev, key=keys["ops"]).returncode == 0
    refused(tool("verify", d, "--keyring", ring, "--revocations", rev),
            "release 2.5.140 (manifest sha256 %s) is revoked by %s (serial 2): ECCL hangs (advisory 7)" % (digest, rev))


def test_a_revocation_list_older_than_the_one_seen(signed, tmp_path, keys):
    d, ring, rev = signed
    seen = str(tmp_path / "seen.json")
    old = str(tmp_path / "old.json")
    shutil.copy(rev, old)
    shutil.copy(rev + ".sig", old + ".sig")
    write_list(rev, 3, [{"version": "2.5.140", "reason": "withdrawn"}])
    assert tool("sign", rev, key=keys["ops"]).returncode == 0
    refused(tool("verify", d, "--keyring", ring, "--revocations", rev, "--seen", seen), "is revoked", "withdrawn")
    with open(seen) as f:
        assert json.load(f)["serial"] == 3  # accepted, so an older list can no longer unrevoke the release
    refused(tool("verify", d, "--keyring", ring, "--revocations", old, "--seen", seen),
            "serial 1 is older than serial 3 already seen")
    write_list(rev, 3)  # other content, same serial
    assert tool("sign", rev, key=keys["ops"]).returncode == 0
    refused(tool("verify", d, "--keyring", ring, "--revocations", rev, "--seen", seen),
            "serial 3 was already seen with other content")


@pytest.mark.parametrize("case", ["unsigned", "other key", "changed"])
def test_an_unsigned_or_wrongly_signed_revocation_list(signed, keys, case):
    d, ring, rev = signed
    if case == "unsigned":
        os.remove(rev + ".sig")
        words = ["revocations.json is not signed"]
    elif case == "other key":
        assert tool("sign", rev, key=keys["other"]).returncode == 0
        words = [keys["other"].key_id, "not in the keyring"]
    else:
        write_list(rev, 1, [{"version": "2.5.136", "reason": "added after signing"}])
        words = ["BAD signature", keys["ops"].key_id]
    refused(tool("verify", d, "--keyring", ring, "--revocations", rev), *words)


def test_an_unusable_keyring_is_an_unusable_input(signed, keys):
    d, ring = signed[:2]
    keys["ops"].export(ring, armor=True)
    proc = tool("verify", d, "--keyring", ring)
    assert proc.returncode == 2
    assert proc.stderr == "keyring %s is ASCII-armored; gpgv reads a binary keyring: export it without --armor " \
        "(or gpg --dearmor it)\n" % ring
