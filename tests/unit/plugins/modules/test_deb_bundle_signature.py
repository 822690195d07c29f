# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""deb_bundle's own check on the node (docs/signing.md), on real keys and
signatures made here: with a keyring, the staged manifest must be signed by a
key of it and not revoked by the list sent with it, no older than the newest
list the node has seen; every refusal changes nothing (no dpkg call that
mutates, no journal, the node's record as it was)."""
import json
import os

import pytest

from gpg_keys import signed_list
import test_deb_bundle
from test_deb_bundle import PKGS, V136, run

# deb_bundle run as Ansible runs a module, through test_deb_bundle's helper.
pytestmark = pytest.mark.ansible_core

# test_deb_bundle's fixture (a fake dpkg, the two sample bundles), shared.
env = test_deb_bundle.env

SEEN = "revocations-seen.json"


@pytest.fixture
def trust(env, keys):
    """The 2.5.136 bundle signed by ops, ops's keyring and a signed list (serial 2) on the node."""
    keys["ops"].sign(os.path.join(env["b136"], "manifest.json"))
    d = env["tmp"] / "trust"
    d.mkdir()
    return {"keyring": keys["ops"].export(str(d / "keyring.gpg")),
            "revocations": signed_list(str(d / "revocations.json"), keys["ops"], 2)}


def unchanged(env, r):
    assert r.get("failed") and r["msg"].startswith("refused, nothing was changed: "), r
    assert env["fake"].mutations() == []
    assert not os.path.exists(os.path.join(env["base"]["journal_dir"], "snapshots"))


def test_a_signed_release_installs_records_the_list_and_reruns_with_no_change(env, trust, keys):
    r = run(env, check_mode=True, path=env["b136"], hold=True, **trust)
    assert r["changed"] and r["signature"]["recorded"] and not r.get("failed"), r
    assert not os.path.exists(os.path.join(env["base"]["journal_dir"], SEEN))
    r = run(env, path=env["b136"], hold=True, **trust)
    assert r["changed"] and not r.get("failed"), r
    assert r["signature"]["key_id"] == keys["ops"].key_id and r["signature"]["revocations_serial"] == 2
    with open(os.path.join(env["base"]["journal_dir"], SEEN)) as f:
        assert json.load(f)["serial"] == 2
    assert env["fake"].versions() == dict((n, V136) for n in PKGS)
    r = run(env, path=env["b136"], hold=True, **trust)
    assert r["changed"] is False and not r["signature"]["recorded"], r


def test_unsigned(env, trust):
    os.remove(os.path.join(env["b136"], "manifest.json.sig"))
    r = run(env, path=env["b136"], **trust)
    unchanged(env, r)
    assert "manifest.json.sig does not exist" in r["msg"] and r["signature"]["code"] == "unsigned"


def test_a_key_not_in_the_keyring(env, trust, keys):
    keys["other"].sign(os.path.join(env["b136"], "manifest.json"))
    r = run(env, path=env["b136"], **trust)
    unchanged(env, r)
    assert keys["other"].key_id in r["msg"] and "not in the keyring" in r["msg"]


def test_the_node_manifest_altered_after_the_controller_checked_it(env, trust, keys):
    path = os.path.join(env["b136"], "manifest.json")
    with open(path) as f:
        doc = json.load(f)
    doc["files"][0]["sha256"] = "0" * 64
    with open(path, "w") as f:
        json.dump(doc, f)
    r = run(env, path=env["b136"], **trust)
    unchanged(env, r)
    assert "BAD signature by key %s" % keys["ops"].key_id in r["msg"] and path in r["msg"]


def test_a_truncated_signature(env, trust):
    sig = os.path.join(env["b136"], "manifest.json.sig")
    with open(sig, "rb") as f:
        data = f.read()
    with open(sig, "wb") as f:
        f.write(data[:len(data) // 2])
    r = run(env, path=env["b136"], **trust)
    unchanged(env, r)


def test_a_revoked_release_names_the_lists_reason(env, trust, keys):
    signed_list(trust["revocations"], keys["ops"], 3, [{"version": "2.5.136", "reason": "ECCL hangs (advisory 7)"}])
    r = run(env, path=env["b136"], **trust)
    assert r.get("failed") and env["fake"].mutations() == [], r
    assert "is revoked by %s (serial 3): ECCL hangs (advisory 7)" % trust["revocations"] in r["msg"]


def test_a_list_older_than_the_one_the_node_has_seen(env, trust, keys):
    assert not run(env, path=env["b136"], **trust).get("failed")
    seen = os.path.join(env["base"]["journal_dir"], SEEN)
    with open(seen) as f:
        before = f.read()
    env["fake"].calls[:] = []
    signed_list(trust["revocations"], keys["ops"], 1)
    r = run(env, path=env["b136"], **trust)
    assert r.get("failed") and env["fake"].mutations() == [], r
    assert "serial 1 is older than serial 2 already seen here" in r["msg"]
    with open(seen) as f:
        assert f.read() == before


@pytest.mark.parametrize("case", ["unsigned", "other key"])
def test_an_unsigned_or_wronglysigned_list(env, trust, keys, case):
    if case == "unsigned":
        os.remove(trust["revocations"] + ".sig")
    else:
        keys["other"].sign(trust["revocations"])
    r = run(env, path=env["b136"], **trust)
    unchanged(env, r)
    assert trust["revocations"] in r["msg"]
    assert not os.path.exists(os.path.join(env["base"]["journal_dir"], SEEN))


def test_revocations_without_a_keyring_is_refused(env, trust):
    r = run(env, path=env["b136"], revocations=trust["revocations"])
    assert r.get("failed") and "revocations needs keyring" in r["msg"] and env["fake"].mutations() == []
