# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Real OpenPGP keys for the signature tests, made with Debian's gpg in a
temporary GNUPGHOME (scripts/ensure-docker.sh installs gpg when missing):
a current key, one that expired, one that is revoked, one whose signatures
expire, and ways to export keyrings and sign files with them. No test skips
when gpg is missing: it fails, naming the package."""
import json
import os
import shutil
import subprocess

GPG = shutil.which("gpg")
GPGV = shutil.which("gpgv")
# A time before any key here is made: keys "from the past" are made then.
PAST = "20200101T000000"
PAST_LATER = "20200101T010000"


def _require():
    assert GPG and GPGV, "these tests need Debian's gpg and gpgv on PATH (apt-get install gpg gpgv)"


class Key:
    """One key pair in its own GNUPGHOME (so that exporting it exports it alone)."""

    def __init__(self, home, uid, expire="1y", faked_time=None):
        _require()
        os.makedirs(home, mode=0o700)
        self.home = home
        self.env = dict(os.environ, GNUPGHOME=home, LC_ALL="C")
        self.gpg("--passphrase", "", "--quick-gen-key", uid, "ed25519", "sign", expire, faked_time=faked_time)
        colons = self.gpg("--with-colons", "--list-keys").stdout
        self.fingerprint = [line.split(":")[9] for line in colons.splitlines() if line.startswith("fpr:")][0]
        self.key_id = self.fingerprint[-16:]

    def gpg(self, *args, faked_time=None):
        argv = [GPG, "--batch", "--yes"] + (["--faked-system-time", faked_time] if faked_time else []) + list(args)
        proc = subprocess.run(argv, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, check=False)
        assert proc.returncode == 0, "%s: %s" % (" ".join(argv), proc.stderr)
        return proc

    def export(self, path, armor=False):
        """The public key (with its revocation, if any) as a keyring file."""
        proc = subprocess.run([GPG, "--batch", "--export"] + (["--armor"] if armor else []) + [self.fingerprint],
                              env=self.env, stdout=subprocess.PIPE, check=True)
        with open(path, "wb") as f:
            f.write(proc.stdout)
        return path

    def sign(self, path, out=None, faked_time=None, sig_expire=None):
        out = out or path + ".sig"
        extra = ["--default-sig-expire", sig_expire] if sig_expire else []
        self.gpg(*(extra + ["--local-user", self.fingerprint, "--detach-sign", "-o", out, path]),
                 faked_time=faked_time)
        return out

    def revoke(self):
        """Import the revocation certificate gpg made with the key (its first
        line is disarmed with a ':' against accidents; the operator removes it)."""
        cert = os.path.join(self.home, "openpgp-revocs.d", self.fingerprint + ".rev")
        with open(cert) as f:
            text = f.read().replace("\n:-----BEGIN", "\n-----BEGIN")
        armored = os.path.join(self.home, "revoke.asc")
        with open(armored, "w") as f:
            f.write(text)
        self.gpg("--import", armored)

    def close(self):
        subprocess.run(["gpgconf", "--kill", "gpg-agent"], env=self.env, check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_keys(base):
    """{name: Key}: ops (current), other (not in the keyring), expired (made
    in 2020 for a day), past (made in 2020, never expires: its signatures
    can be made to expire). A revoked key is made by its test (a key signs
    nothing once revoked)."""
    keys = {
        "ops": Key(os.path.join(base, "ops"), "Ops Release <ops@example.org>"),
        "other": Key(os.path.join(base, "other"), "Somebody Else <else@example.org>"),
        "expired": Key(os.path.join(base, "expired"), "Old Ops <old@example.org>", expire="1d",
                       faked_time=PAST),
        "past": Key(os.path.join(base, "past"), "Past Ops <past@example.org>", expire="never", faked_time=PAST),
    }
    return keys


def write_list(path, serial, revoked=()):
    """Write a revocation list in docs/signing.md's format to PATH; returns PATH."""
    with open(path, "w") as f:
        json.dump({"serial": serial, "issued": "2026-11-26T12:00:00Z", "revoked": list(revoked)}, f)
    return path


def signed_list(path, key, serial, revoked=()):
    """write_list, then KEY's detached signature beside it (PATH.sig)."""
    write_list(path, serial, revoked)
    key.sign(path)
    return path
