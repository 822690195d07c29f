#!/usr/bin/env bash
# molecule/signing's keys and releases, in the ephemeral directory E (argument 1;
# argument 2: the collection). Four ed25519 keys made with gpg in temporary
# GNUPGHOMEs (short paths: gpg-agent's socket), removed at the end: nothing
# secret is kept or committed. Only the public keyring E/trust/trusted.gpg
# stays: ops's key, an old key that expired in 2020 and a retired key with
# its revocation (both once the operators', so they are in the keyring).
#   rel/2.5.136, rel/2.5.140   signed by ops
#   rel/unsigned               2.5.140, no signature
#   rel/other-key              2.5.140 signed by a key not in the keyring
#   rel/changed                2.5.136, its manifest changed after signing
#   rel/swapped                2.5.136, a deb swapped after signing
#   rel/another                2.5.140 with 2.5.136's signature
#   rel/truncated              2.5.136, its signature cut short
#   rel/expired-key            2.5.140 signed in 2020 by the old key, before it expired
#   rel/revoked-key            2.5.140 signed by the retired key, before it was revoked
#   trust/revocations-1.json   serial 1, nothing revoked (signed)
#   trust/revocations-2.json   serial 2, revokes 2.5.136 (signed)
#   trust/unsigned-list.json   serial 3, no signature
#   trust/other-list.json      serial 3, signed by the other key
set -euo pipefail
E=$1
TOP=$2
B=$TOP/.cache/bundles
tool=$TOP/scripts/topsrider-manifest
ops=$(mktemp -d /tmp/sig-ops.XXXXXX)
other=$(mktemp -d /tmp/sig-other.XXXXXX)
old=$(mktemp -d /tmp/sig-old.XXXXXX)
retired=$(mktemp -d /tmp/sig-retired.XXXXXX)
cleanup() {
  for home in "$ops" "$other" "$old" "$retired"; do
    GNUPGHOME=$home gpgconf --kill gpg-agent || true
  done
  rm -rf "$ops" "$other" "$old" "$retired"
}
trap cleanup EXIT
rm -rf "$E/rel" "$E/trust"
mkdir -p "$E/rel" "$E/trust"
GNUPGHOME=$ops gpg --batch --passphrase '' --quick-gen-key "Ops Release <ops@example.org>" ed25519 sign 1y 2>/dev/null
GNUPGHOME=$other gpg --batch --passphrase '' --quick-gen-key "Somebody Else <else@example.org>" ed25519 sign 1y 2>/dev/null
# The old key: made on 2020-01-01 for a day, so it has expired (gpg's faked time).
GNUPGHOME=$old gpg --batch --passphrase '' --faked-system-time 20200101T000000 \
  --quick-gen-key "Old Ops <old@example.org>" ed25519 sign 1d 2>/dev/null
GNUPGHOME=$retired gpg --batch --passphrase '' --quick-gen-key "Retired Ops <retired@example.org>" ed25519 sign 1y 2>/dev/null

rel() { cp -r "$B/$1" "$E/rel/$2"; rm -f "$E/rel/$2/manifest.json.sig"; }
sign() { GNUPGHOME=$ops "$tool" sign "$1" >/dev/null; }
sign_other() { GNUPGHOME=$other "$tool" sign "$1" >/dev/null; }
sign_old() {
  GNUPGHOME=$old gpg --batch --yes --faked-system-time 20200101T010000 --detach-sign -o "$1/manifest.json.sig" "$1/manifest.json" 2>/dev/null
}
sign_retired() { GNUPGHOME=$retired "$tool" sign "$1" >/dev/null; }
list() {
  printf '{"serial": %d, "issued": "2026-11-26T12:00:00Z", "revoked": %s}\n' "$2" "$3" > "$E/trust/$1"
}

rel 2.5.136 2.5.136 && sign "$E/rel/2.5.136"
rel 2.5.140 2.5.140 && sign "$E/rel/2.5.140"
rel 2.5.140 unsigned
rel 2.5.140 other-key && sign_other "$E/rel/other-key"
rel 2.5.136 changed && sign "$E/rel/changed" && printf ' \n' >> "$E/rel/changed/manifest.json"
rel 2.5.136 swapped && sign "$E/rel/swapped" \
  && cp "$B/2.5.140/tops-sdk_2.5.140-1_amd64.deb" "$E/rel/swapped/tops-sdk_2.5.136-1_amd64.deb"
rel 2.5.140 another && cp "$E/rel/2.5.136/manifest.json.sig" "$E/rel/another/"
rel 2.5.136 truncated && sign "$E/rel/truncated" && truncate -s 40 "$E/rel/truncated/manifest.json.sig"
rel 2.5.140 expired-key && sign_old "$E/rel/expired-key"
rel 2.5.140 revoked-key && sign_retired "$E/rel/revoked-key"
# The retired key revoked with the certificate gpg made with it (its first line is
# disarmed with ':' against accidents, as gpg writes it; the operator removes it).
fpr=$(GNUPGHOME=$retired gpg --batch --with-colons --list-keys 2>/dev/null | awk -F: '$1 == "fpr" {print $10; exit}')
sed 's/^:-----BEGIN/-----BEGIN/' "$retired/openpgp-revocs.d/$fpr.rev" > "$retired/revoke.asc"
GNUPGHOME=$retired gpg --batch --import "$retired/revoke.asc" 2>/dev/null
for home in "$ops" "$old" "$retired"; do
  GNUPGHOME=$home gpg --batch --export
done > "$E/trust/trusted.gpg"

list revocations-1.json 1 '[]' && sign "$E/trust/revocations-1.json"
list revocations-2.json 2 '[{"version": "2.5.136", "reason": "ECCL all-reduce hangs (advisory 7)"}]' \
  && sign "$E/trust/revocations-2.json"
list unsigned-list.json 3 '[]'
list other-list.json 3 '[]' && sign_other "$E/trust/other-list.json"
echo "made"
