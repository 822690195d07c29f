# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugins/modules/topsrider_revocations_seen.py: the node's read-only check
of the run's revocation list against the newest it accepted (deb_bundle's
record, read by _signature.read_seen): older refused naming both serials,
the same or newer passes, never changed, the record untouched."""
import json

import pytest

from ansible.module_utils import basic
from ansible_collections.gcu.topsrider.plugins.module_utils import _signature as sig
from ansible_collections.gcu.topsrider.plugins.modules import topsrider_revocations_seen
from utils import AnsibleExitJson, AnsibleFailJson, exit_json, fail_json, set_module_args


def record(serial, revoked=()):
    raw = json.dumps({"serial": serial, "issued": "2026-11-26T12:00:00Z", "revoked": list(revoked)}).encode()
    return sig.seen_record(sig.parse_revocations(raw), raw)


def run(monkeypatch, **args):
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)
    with set_module_args(args):
        with pytest.raises((AnsibleExitJson, AnsibleFailJson)) as e:
            topsrider_revocations_seen.main()
    return e.value.args[0]


@pytest.fixture
def seen(tmp_path):
    path = str(tmp_path / "revocations-seen.json")
    sig.write_seen(path, record(5))
    with open(path) as f:
        text = f.read()
    yield path
    with open(path) as f:
        assert f.read() == text


@pytest.mark.parametrize("check", [False, True])
def test_an_older_list_is_refused_naming_both_serials(monkeypatch, seen, check):
    out = run(monkeypatch, path=seen, name="/srv/revocations.json", _ansible_check_mode=check, **record(4))
    assert out["failed"] and not out.get("changed") and out["seen"] == record(5)
    assert out["msg"] == ("refused on the node, nothing was changed: /srv/revocations.json: serial 4 is older than serial 5 "
                          "already seen here; refusing an older revocation list (a replay) (the node's record: %s)" % seen)


@pytest.mark.parametrize("serial", [5, 6])
def test_the_same_or_a_newer_list_passes_unchanged(monkeypatch, seen, serial):
    out = run(monkeypatch, path=seen, **record(serial))
    assert not out.get("failed") and out["changed"] is False and out["seen"] == record(5), out


def test_no_list_where_the_node_accepted_one_is_refused(monkeypatch, seen, tmp_path):
    out = run(monkeypatch, path=seen)
    assert out["failed"] and "has accepted revocation list serial 5" in out["msg"], out
    out = run(monkeypatch, path=str(tmp_path / "nothing-seen.json"))
    assert out["changed"] is False and out["seen"] is None and not out.get("failed"), out


def test_a_serial_without_its_sha256_is_refused_by_the_spec(monkeypatch, seen):
    out = run(monkeypatch, path=seen, serial=5)
    assert out["failed"] and "parameters are required together: serial, sha256" in out["msg"], out
