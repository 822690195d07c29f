# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/tasks/inputs.yml's release check with topsrider_keyring and
topsrider_revocations (deploy.yml runs it before any node is contacted), on
real keys made here: a signed release passes; an unsigned one, a revoked one
and contradictory settings are refused with the check's own sentence."""
import json
import os

import pytest

from conftest import TOP, run_play

MANIFEST = {"format": 1, "product": "TopsRider", "version": "2.5.140",
            "files": [{"file": "tops-sdk_2.5.140-1_amd64.deb", "sha256": "a" * 64, "size": 4}]}
INPUTS = os.path.join(TOP, "playbooks", "tasks", "inputs.yml")


@pytest.fixture
def release(tmp_path, keys):
    d = tmp_path / "2.5.140"
    d.mkdir()
    (d / "manifest.json").write_text(json.dumps(MANIFEST))
    keys["ops"].sign(str(d / "manifest.json"))
    rev = tmp_path / "revocations.json"
    rev.write_text(json.dumps({"serial": 1, "issued": "2026-11-26T12:00:00Z", "revoked": []}))
    keys["ops"].sign(str(rev))
    return {"desired_bundle_dir": str(d), "topsrider_keyring": keys["ops"].export(str(tmp_path / "trusted.gpg")),
            "topsrider_revocations": str(rev), "topsrider_revocations_seen": str(tmp_path / "seen.json"),
            "inputs_checks": ["release"]}


def inputs(tmp_path, extra_vars):
    return run_play(tmp_path, [{"ansible.builtin.import_tasks": INPUTS}], extra_vars)


def test_a_signed_release_passes(tmp_path, release):
    rc, out = inputs(tmp_path, release)
    assert rc == 0, out
    assert json.loads((tmp_path / "seen.json").read_text())["serial"] == 1


def test_no_keyring_deploys_unsigned_as_before(tmp_path, release):
    os.remove(release["desired_bundle_dir"] + "/manifest.json.sig")
    rc, out = inputs(tmp_path, {"desired_bundle_dir": release["desired_bundle_dir"], "inputs_checks": ["release"]})
    assert rc == 0, out


def test_an_unsigned_release_is_refused_when_a_keyring_is_set(tmp_path, release):
    os.remove(release["desired_bundle_dir"] + "/manifest.json.sig")
    rc, out = inputs(tmp_path, release)
    assert rc != 0
    assert "manifest.json is not signed: %s/manifest.json.sig does not exist" % release["desired_bundle_dir"] in out, out
    assert "Nothing was sent to any node." in out, out


def test_a_revoked_release_is_refused_with_the_lists_reason(tmp_path, release, keys):
    rev = release["topsrider_revocations"]
    with open(rev, "w") as f:
        json.dump({"serial": 2, "issued": "2026-11-27T12:00:00Z",
                   "revoked": [{"version": "2.5.140", "reason": "security advisory SA-2026-3"}]}, f)
    keys["ops"].sign(rev)
    rc, out = inputs(tmp_path, release)
    assert rc != 0
    assert "is revoked by %s (serial 2): security advisory SA-2026-3" % rev in out, out


def test_require_signature_without_a_keyring_is_refused(tmp_path, release):
    rc, out = inputs(tmp_path, {"desired_bundle_dir": release["desired_bundle_dir"], "inputs_checks": ["release"],
                                "topsrider_require_signature": True})
    assert rc != 0
    assert "topsrider_require_signature is true but topsrider_keyring is not set" in out, out
