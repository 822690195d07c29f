# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/bundle_stage with bundle_stage_keyring, run on localhost (local
connection, the cache and the trust directory under tmp): the manifest's
signature lands beside the staged manifest, the keyring and the signed list
in the trust directory, all root-only, and bundle_stage_trust names them for
deb_bundle; a second run changes nothing. (molecule/signing runs it on nodes.)"""
import json
import os
import stat
import subprocess
import sys

import pytest

from conftest import TOP, run_play

TOOL = os.path.join(TOP, "scripts", "topsrider-manifest")


@pytest.fixture
def stage(tmp_path):
    """A release with a (stand-in) signature, keyring and list: the role copies bytes, gpg is not needed."""
    rel = tmp_path / "rel"
    rel.mkdir()
    (rel / "notes.txt").write_text(u"release 2.5.140\n")
    subprocess.run([sys.executable, TOOL, "create", str(rel), "--version", "2.5.140"], check=True,
                   stdout=subprocess.DEVNULL)
    (rel / "manifest.json.sig").write_bytes(b"sig")
    (tmp_path / "trusted.gpg").write_bytes(b"keyring")
    (tmp_path / "revocations.json").write_text(u"{}\n")
    (tmp_path / "revocations.json.sig").write_bytes(b"list sig")
    return {"bundle_stage_dir": str(rel), "bundle_stage_cache_root": str(tmp_path / "cache"),
            "bundle_stage_trust_dir": str(tmp_path / "trust"), "bundle_stage_transfer": "controller",
            "bundle_stage_keyring": str(tmp_path / "trusted.gpg"),
            "bundle_stage_revocations": str(tmp_path / "revocations.json")}


def play(tmp_path, extra_vars, check=False):
    return run_play(tmp_path, [
        {"ansible.builtin.include_role": {"name": "gcu.topsrider.bundle_stage"}},
        {"ansible.builtin.copy": {"content": "{{ bundle_stage_trust | to_json }}", "dest": str(tmp_path / "trust.json"),
                                  "mode": "0644"}, "check_mode": False}], extra_vars, args=["--check"] if check else [])


def test_the_signature_keyring_and_list_are_sent_root_only(tmp_path, stage):
    # Check mode on a node that has nothing yet: nothing made, and nothing the node could check yet.
    rc, out = play(tmp_path, stage, check=True)
    assert rc == 0, out
    assert json.loads((tmp_path / "trust.json").read_text())["checkable"] is False
    assert not os.path.exists(str(tmp_path / "trust")) and not os.path.exists(str(tmp_path / "cache"))
    rc, out = play(tmp_path, stage)
    assert rc == 0, out
    trust = json.loads((tmp_path / "trust.json").read_text())
    assert trust == {"keyring": str(tmp_path / "trust" / "keyring.gpg"),
                     "revocations": str(tmp_path / "trust" / "revocations.json"), "checkable": True}
    sent = {str(tmp_path / "cache" / "2.5.140" / "manifest.json.sig"): b"sig",
            str(tmp_path / "trust" / "keyring.gpg"): b"keyring",
            str(tmp_path / "trust" / "revocations.json"): b"{}\n",
            str(tmp_path / "trust" / "revocations.json.sig"): b"list sig"}
    for path, data in sent.items():
        with open(path, "rb") as f:
            assert f.read() == data, path
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path
    assert stat.S_IMODE(os.stat(str(tmp_path / "trust")).st_mode) == 0o700
    rc, out = play(tmp_path, stage)
    assert rc == 0 and "changed=0 " in out, out
