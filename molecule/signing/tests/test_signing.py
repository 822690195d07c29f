# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nodes after molecule/signing's converge: each holds the keyring and
the signed list that bundle_stage sent, root-only, and the newest serial it
accepted; node1 went back to the revoked 2.5.136 only with the override."""
import json

testinfra_hosts = ["all"]


def test_the_trust_files_are_root_only(host):
    for name in ("keyring.gpg", "revocations.json", "revocations.json.sig"):
        f = host.file("/var/lib/topsrider/trust/" + name)
        assert f.exists and f.user == "root" and f.mode == 0o600, name
    assert host.file("/var/lib/topsrider/trust").mode == 0o700


def test_the_signature_is_staged_beside_the_manifest(host):
    f = host.file("/var/cache/topsrider/2.5.136/manifest.json.sig")
    assert f.exists and f.mode == 0o600


def test_the_node_records_the_newest_list_it_accepted(host):
    seen = json.loads(host.file("/var/lib/topsrider/revocations-seen.json").content_string)
    # node1 accepted serial 2 with its 2.5.140 deploy; node2 never installed after serial 1.
    assert seen["serial"] in (1, 2) and len(seen["sha256"]) == 64


def test_2_5_136_is_installed(host):
    assert host.package("tops-sdk").version == "2.5.136-1"
