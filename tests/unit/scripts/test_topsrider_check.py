# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/topsrider_check.py, the shared body of topsrider-drift and topsrider-fabric."""
import os

import pytest

from conftest import TOP, load_script

check = load_script("scripts/topsrider_check.py", "topsrider_check")


def test_the_playbook_is_the_checkout_file_or_the_fqcn():
    assert check.default_playbook("drift") == os.path.join(TOP, "playbooks", "drift.yml")
    assert check.default_playbook("fabric_check") == os.path.join(TOP, "playbooks", "fabric_check.yml")
    assert check.default_playbook("not_here") == "gcu.topsrider.not_here"


@pytest.mark.parametrize("kind", ["drift", "fabric"])
def test_the_kind_names_the_playbook_variable_and_the_report(tmp_path, monkeypatch, capsys, kind):
    seen = {}

    def fake_call(cmd):
        seen["cmd"] = cmd
        (tmp_path / ("%s-%s.json" % (kind, cmd[3].split('"')[3]))).write_text('{"status": "x", "summary": {"n": 1}}')
        return 7

    monkeypatch.setattr(check.subprocess, "call", fake_call)
    monkeypatch.setenv("TOPSRIDER_%s_PLAYBOOK" % kind.upper(), "/p/%s.yml" % kind)
    monkeypatch.delenv("ANSIBLE_PLAYBOOK", raising=False)
    got = check.main(kind, "unused", "d", lambda rc, report: (rc, report["status"]),
                     lambda report, s, path, status: "%s %s" % (s["n"], status),
                     ["--reports-dir", str(tmp_path), "-l", "x"])
    assert got == (7, "x")
    assert seen["cmd"][:3] == ["ansible-playbook", "/p/%s.yml" % kind, "-e"] and seen["cmd"][-2:] == ["-l", "x"]
    assert '"topsrider_%s_id": ' % kind in seen["cmd"][3] and str(tmp_path) in seen["cmd"][3]
    assert capsys.readouterr().out == "topsrider-%s: 1 (7, 'x')\n" % kind
