# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gcu.topsrider.topsrider_release_trust as a play runs it on the controller,
on real keys and signatures made here: a signed release passes and records
the revocation list once (check mode predicts and writes nothing); each
refusal fails the task with the file, the key id and what is wrong."""
import json
import os

import pytest

import gpg_keys
from gpg_keys import signed_list
from conftest import run_play

MANIFEST = {"format": 1, "product": "TopsRider", "version": "2.5.140",
            "files": [{"file": "tops-sdk_2.5.140-1_amd64.deb", "sha256": "a" * 64, "size": 4}]}


@pytest.fixture
def release(tmp_path, keys):
    d = tmp_path / "2.5.140"
    d.mkdir()
    (d / "manifest.json").write_text(json.dumps(MANIFEST))
    keys["ops"].sign(str(d / "manifest.json"))
    ring = keys["ops"].export(str(tmp_path / "trusted.gpg"))
    return str(d / "manifest.json"), ring


def trust(**args):
    return {"gcu.topsrider.topsrider_release_trust": args}


def test_a_signed_release_passes_and_the_list_is_recorded_once(tmp_path, release, keys):
    manifest, ring = release
    rev = signed_list(str(tmp_path / "revocations.json"), keys["ops"], 3)
    seen = str(tmp_path / "cache" / "seen.json")
    args = dict(manifest=manifest, keyring=ring, revocations=rev, seen=seen)
    tasks = [
        dict(trust(**args), register="predicted", check_mode=True),
        {"ansible.builtin.stat": {"path": seen}, "register": "after_check"},
        dict(trust(**args), register="first"),
        dict(trust(**args), register="second"),
        {"ansible.builtin.assert": {"that": [
            "predicted.changed", "not after_check.stat.exists",
            "first.changed", "first.signed", "first.key_id == '%s'" % keys["ops"].key_id,
            "first.revocations_serial == 3", "first.problem is none",
            "not second.changed"]}},
    ]
    rc, out = run_play(tmp_path, tasks)
    assert rc == 0, out
    with open(seen) as f:
        assert json.load(f)["serial"] == 3


def test_no_keyring_checks_nothing_and_says_so(tmp_path, release):
    manifest, dummy = release
    os.remove(manifest + ".sig")
    checks = ["not r.signed", "not r.changed", "r.msg is search('not checked')"]
    rc, out = run_play(tmp_path, [dict(trust(manifest=manifest), register="r"),
                                  {"ansible.builtin.assert": {"that": checks}}])
    assert rc == 0, out


def test_each_refusal_names_the_file_the_key_and_what_is_wrong(tmp_path, release, keys):
    manifest, ring = release
    other_ring = keys["other"].export(str(tmp_path / "other.gpg"))
    seen = str(tmp_path / "seen.json")
    rev = signed_list(str(tmp_path / "revocations.json"), keys["ops"], 5,
                      [{"version": "2.5.140", "reason": "ECCL all-reduce hangs (advisory 7)"}])
    old = signed_list(str(tmp_path / "old.json"), keys["ops"], 4)
    cases = {
        "unknown key": dict(manifest=manifest, keyring=other_ring, seen=seen),
        "revoked": dict(manifest=manifest, keyring=ring, revocations=rev, seen=seen),
        "older list": dict(manifest=manifest, keyring=ring, revocations=old, seen=seen),
        "require without keyring": dict(manifest=manifest, require=True, seen=seen),
        "list without keyring": dict(manifest=manifest, revocations=rev, seen=seen),
    }
    tasks = [{"ansible.builtin.set_fact": {"said": {}}}]
    for name, args in cases.items():
        tasks.append({"block": [trust(**args)], "rescue": [{"ansible.builtin.set_fact": {
            "said": "{{ said | combine({%s: ansible_failed_result.msg}) }}" % json.dumps(name)}}]})
    tasks.append({"ansible.builtin.copy": {"content": "{{ said | to_json }}", "dest": str(tmp_path / "said.json")}})
    rc, out = run_play(tmp_path, tasks)
    assert rc == 0, out
    with open(str(tmp_path / "said.json")) as f:
        said = json.load(f)
    assert sorted(said) == sorted(cases), said
    assert manifest in said["unknown key"] and keys["ops"].key_id in said["unknown key"]
    assert "not in the keyring" in said["unknown key"]
    assert rev in said["revoked"] and "ECCL all-reduce hangs (advisory 7)" in said["revoked"]
    assert "is revoked" in said["revoked"] and keys["ops"].key_id in said["revoked"]
    assert old in said["older list"] and "serial 4 is older than serial 5" in said["older list"]
    assert "topsrider_keyring is not set" in said["require without keyring"]
    assert "topsrider_keyring is not" in said["list without keyring"]


def test_drift_and_rollback_read_the_list_without_refusing(tmp_path, release, keys):
    """refuse_revoked=false (drift) returns a revoked release with its entry; no manifest (rollback) checks the list alone."""
    manifest, ring = release
    seen = str(tmp_path / "seen.json")
    rev = signed_list(str(tmp_path / "revocations.json"), keys["ops"], 2,
                      [{"version": "2.5.140", "reason": "ECCL all-reduce hangs (advisory 7)"}])
    tasks = [
        dict(trust(manifest=manifest, keyring=ring, revocations=rev, seen=seen, refuse_revoked=False), register="drift"),
        dict(trust(keyring=ring, revocations=rev, seen=seen), register="rollback"),
        {"ansible.builtin.assert": {"that": [
            "drift.revoked.reason == 'ECCL all-reduce hangs (advisory 7)'", "drift.msg is search('REVOKED')",
            "drift.revoked_releases | length == 1", "drift.problem is none",
            "rollback.revoked_releases[0].version == '2.5.140'", "rollback.revocations_serial == 2",
            "not rollback.changed"]}},
    ]
    rc, out = run_play(tmp_path, tasks)
    assert rc == 0, out


def test_every_tampered_release_or_list_is_refused_as_a_deploy_refuses_it(tmp_path, keys):
    """molecule/signing's tampered releases and lists (its files/make-releases.sh), each on the path
    playbooks/tasks/inputs.yml takes on the controller: topsrider_release_trust's check (failed_when false), then
    topsrider_inputs' release check, whose sentence fails every host: each names what is wrong with the words the
    scenario looked for, and says nothing was sent to any node. The scenario keeps three of these cases end to end
    (a changed manifest, an unsigned list, and a swapped deb, which the rollout refuses)."""
    retired = gpg_keys.Key(str(tmp_path / "retired"), "Retired Ops <retired@example.org>")
    rel, lists = tmp_path / "rel", tmp_path / "trust"
    rel.mkdir()
    lists.mkdir()

    def release(name, version, signer=None, faked_time=None):
        d = rel / name
        d.mkdir()
        (d / "manifest.json").write_text(json.dumps(dict(MANIFEST, version=version)))
        if signer:
            signer.sign(str(d / "manifest.json"), faked_time=faked_time)
        return d

    try:
        release("2.5.136", "2.5.136", keys["ops"])
        release("unsigned", "2.5.140")
        release("other-key", "2.5.140", keys["other"])
        (release("changed", "2.5.136", keys["ops"]) / "manifest.json").open("a").write(" \n")
        (release("another", "2.5.140") / "manifest.json.sig").write_bytes((rel / "2.5.136" / "manifest.json.sig").read_bytes())
        sig = release("truncated", "2.5.136", keys["ops"]) / "manifest.json.sig"
        sig.write_bytes(sig.read_bytes()[:40])
        release("expired-key", "2.5.140", keys["expired"], faked_time=gpg_keys.PAST_LATER)
        release("revoked-key", "2.5.140", retired)
        retired.revoke()
        # The keyring as the scenario's: ops's key, the old key that expired and the retired one with its revocation.
        ring = lists / "trusted.gpg"
        ring.write_bytes(b"".join(open(k.export(str(tmp_path / (n + ".gpg"))), "rb").read()
                                  for n, k in (("ops", keys["ops"]), ("old", keys["expired"]), ("retired", retired))))
        gpg_keys.write_list(str(lists / "unsigned-list.json"), 3)
        signed_list(str(lists / "other-list.json"), keys["other"], 3)
    finally:
        retired.close()
    cases = {
        "unsigned": ("unsigned", "", "manifest.json is not signed: "),
        "other_key": ("other-key", "", "which is not in the keyring"),
        "changed": ("changed", "", "BAD signature by key"),
        "another": ("another", "", "BAD signature by key"),
        "truncated": ("truncated", "", "is not an OpenPGP signature"),
        "expired_key": ("expired-key", "", "has expired"),
        "revoked_key": ("revoked-key", "", "has been revoked"),
        "unsigned_list": ("2.5.136", "unsigned-list.json", "unsigned-list.json is not signed"),
        "other_list": ("2.5.136", "other-list.json", "which is not in the keyring"),
    }
    tasks = [{"ansible.builtin.set_fact": {"said": {}}}]
    for name, (bundle, listed, dummy) in cases.items():
        bundle_dir = str(rel / bundle)
        tasks.append({"name": "Case " + name, "block": [
            dict(trust(manifest=bundle_dir + "/manifest.json", keyring=str(ring),
                       revocations=str(lists / listed) if listed else "", seen=str(lists / "seen.json")),
                 register="release_trust", failed_when=False),
            {"gcu.topsrider.topsrider_inputs": {"checks": ["release"], "release": {
                "bundle": bundle_dir, "installer": None, "trust": "{{ release_trust }}"}}},
            {"ansible.builtin.set_fact": {"said": "{{ said | combine({%s: 'NOT REFUSED'}) }}" % json.dumps(name)}}],
            "rescue": [{"ansible.builtin.set_fact": {
                "said": "{{ said | combine({%s: ansible_failed_result.msg}) }}" % json.dumps(name)}}]})
    tasks.append({"ansible.builtin.copy": {"content": "{{ said | to_json }}", "dest": str(tmp_path / "said.json")}})
    rc, out = run_play(tmp_path, tasks)
    assert rc == 0, out
    said = json.loads((tmp_path / "said.json").read_text())
    assert sorted(said) == sorted(cases), said
    for name, (dummy, dummy2, words) in cases.items():
        assert words in said[name] and "Nothing was sent to any node" in said[name], (name, said[name])
    assert not os.path.exists(str(lists / "seen.json")), "a refused list was recorded as seen"
