# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gcu.topsrider.topsrider_release_trust as a play runs it on the controller,
on real keys and signatures made here: a signed release passes and records
the revocation list once (check mode predicts and writes nothing); each
refusal fails the task with the file, the key id and what is wrong."""
import json
import os

import pytest

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
