#!/usr/bin/env bash
# molecule/signing's key and releases, in the ephemeral directory E (argument 1;
# argument 2: the collection). The ops key, an ed25519 key made with gpg in a
# temporary GNUPGHOME (a short path: gpg-agent's socket), removed at the end:
# nothing secret is kept or committed. Only the public keyring
# E/trust/trusted.gpg (ops's key) stays.
#   rel/2.5.136, rel/2.5.140   signed by ops
#   rel/changed                2.5.136, its manifest changed after signing
#   rel/swapped                2.5.136, a deb swapped after signing
#   trust/revocations-1.json   serial 1, nothing revoked (signed)
#   trust/revocations-2.json   serial 2, revokes 2.5.136 (signed)
#   trust/unsigned-list.json   serial 3, no signature
# The other kinds of tampering (another key, another file's signature, a
# truncated signature, an expired or revoked key, a list signed by another
# key) are made and refused in tests/unit/plugins/action/test_topsrider_release_trust.py.
set -euo pipefail
E=$1
TOP=$2
B=$TOP/.cache/bundles
tool=$TOP/scripts/topsrider-manifest
ops=$(mktemp -d /tmp/sig-ops.XXXXXX)
cleanup() {
  GNUPGHOME=$ops gpgconf --kill gpg-agent || true
  rm -rf "$ops"
}
trap cleanup EXIT
rm -rf "$E/rel" "$E/trust"
mkdir -p "$E/rel" "$E/trust"
GNUPGHOME=$ops gpg --batch --passphrase '' --quick-gen-key "Ops Release <ops@example.org>" ed25519 sign 1y 2>/dev/null

rel() { cp -r "$B/$1" "$E/rel/$2"; rm -f "$E/rel/$2/manifest.json.sig"; }
sign() { GNUPGHOME=$ops "$tool" sign "$1" >/dev/null; }
list() {
  printf '{"serial": %d, "issued": "2026-11-26T12:00:00Z", "revoked": %s}\n' "$2" "$3" > "$E/trust/$1"
}

rel 2.5.136 2.5.136 && sign "$E/rel/2.5.136"
rel 2.5.140 2.5.140 && sign "$E/rel/2.5.140"
rel 2.5.136 changed && sign "$E/rel/changed" && printf ' \n' >> "$E/rel/changed/manifest.json"
rel 2.5.136 swapped && sign "$E/rel/swapped" \
  && cp "$B/2.5.140/tops-sdk_2.5.140-1_amd64.deb" "$E/rel/swapped/tops-sdk_2.5.136-1_amd64.deb"
GNUPGHOME=$ops gpg --batch --export > "$E/trust/trusted.gpg"

list revocations-1.json 1 '[]' && sign "$E/trust/revocations-1.json"
list revocations-2.json 2 '[{"version": "2.5.136", "reason": "ECCL all-reduce hangs (advisory 7)"}]' \
  && sign "$E/trust/revocations-2.json"
list unsigned-list.json 3 '[]'
echo "made"
