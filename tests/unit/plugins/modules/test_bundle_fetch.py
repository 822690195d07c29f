# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gcu.topsrider.bundle_fetch: check mode compares only, bad input is refused
before anything is written, a node that holds everything changes nothing."""
import hashlib

import pytest

from ansible.module_utils import basic
from ansible_collections.gcu.topsrider.plugins.modules import bundle_fetch

from utils import AnsibleExitJson, AnsibleFailJson, exit_json, fail_json, set_module_args


def entry(name, data):
    return {"file": name, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


@pytest.fixture
def run(monkeypatch):
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)

    def boom(*args, **kwargs):
        raise AssertionError("no URL may be opened here")
    monkeypatch.setattr(bundle_fetch, "open_url", boom)

    def go(args):
        with set_module_args(args):
            try:
                bundle_fetch.main()
            except (AnsibleExitJson, AnsibleFailJson) as e:
                return e.args[0]
        raise AssertionError("the module neither exited nor failed")
    return go


def test_check_mode_names_what_is_missing_and_writes_nothing(run, tmp_path):
    (tmp_path / "held.deb").write_bytes(b"held")
    (tmp_path / "wrong.deb").write_bytes(b"WRONG")
    files = [entry("held.deb", b"held"), entry("wrong.deb", b"right"), entry("absent.deb", b"x")]
    res = run({"files": files, "dest": str(tmp_path), "partial_dir": str(tmp_path / ".partial"),
               "url": "http://127.0.0.1:9", "_ansible_check_mode": True})
    assert res["changed"] is True and res["missing"] == ["wrong.deb", "absent.deb"]
    assert (tmp_path / "wrong.deb").read_bytes() == b"WRONG" and not (tmp_path / ".partial").exists()


def test_check_mode_before_the_cache_exists_says_everything_is_missing(run, tmp_path):
    res = run({"files": [entry("a.deb", b"x")], "dest": str(tmp_path / "nowhere"),
               "partial_dir": str(tmp_path / ".partial"), "_ansible_check_mode": True})
    assert res["missing"] == ["a.deb"]


def test_a_node_that_holds_everything_changes_nothing(run, tmp_path):
    (tmp_path / "a.deb").write_bytes(b"x")
    res = run({"files": [entry("a.deb", b"x")], "dest": str(tmp_path), "partial_dir": str(tmp_path / ".partial")})
    assert res["changed"] is False and res["missing"] == []


@pytest.mark.parametrize("url", [None, "file:///etc/passwd", "ftp://node1/"])
def test_a_fetch_needs_an_http_url(run, tmp_path, url):
    res = run({"files": [entry("a.deb", b"x")], "dest": str(tmp_path), "partial_dir": str(tmp_path / ".partial"),
               "url": url})
    assert res["failed"] and "url must be an http:// or https:// URL to fetch a.deb" in res["msg"]


def test_bad_file_lists_are_refused_before_anything_is_read(run, tmp_path):
    res = run({"files": [{"file": "../../etc/shadow", "sha256": "0" * 64, "size": 1}], "dest": str(tmp_path),
               "partial_dir": str(tmp_path / ".partial"), "url": "http://127.0.0.1:9"})
    assert res["failed"] and "is not a plain name" in res["msg"]


def test_compare_only_makes_the_root_only_directories_and_fetches_nothing(run, tmp_path):
    dest = tmp_path / "cache" / "2.5.136"
    files = [entry("a.deb", b"a")]
    result = run({"files": files, "dest": str(dest), "partial_dir": str(tmp_path / "cache" / ".partial"),
                  "fetch": False})
    assert result["changed"] is True and result["missing"] == ["a.deb"]
    assert result["made"] == [str(tmp_path / "cache"), str(dest)]
    for d in (tmp_path / "cache", dest):
        assert (d.stat().st_mode & 0o7777) == 0o700
    assert list(dest.iterdir()) == [] and not (tmp_path / "cache" / ".partial").exists()
    # again: nothing to make, nothing changed
    again = run({"files": files, "dest": str(dest), "partial_dir": str(tmp_path / "p"), "fetch": False})
    assert again["changed"] is False and again["made"] == [] and again["missing"] == ["a.deb"]
    # a loosened mode is set back
    dest.chmod(0o755)
    fixed = run({"files": files, "dest": str(dest), "partial_dir": str(tmp_path / "p"), "fetch": False})
    assert fixed["changed"] is True and fixed["made"] == [str(dest)] and (dest.stat().st_mode & 0o7777) == 0o700


def test_compare_only_in_check_mode_predicts_the_directories_and_makes_nothing(run, tmp_path):
    dest = tmp_path / "cache" / "2.5.136"
    result = run({"files": [entry("a.deb", b"a")], "dest": str(dest), "partial_dir": str(tmp_path / "p"),
                  "fetch": False, "_ansible_check_mode": True})
    assert result["changed"] is True and result["made"] == [str(tmp_path / "cache"), str(dest)]
    assert result["missing"] == ["a.deb"] and not (tmp_path / "cache").exists()


def test_a_dest_that_cannot_be_made_fails_naming_it(run, tmp_path):
    (tmp_path / "cache").write_text(u"a file, not a directory")
    result = run({"files": [entry("a.deb", b"a")], "dest": str(tmp_path / "cache" / "2.5.136"),
                  "partial_dir": str(tmp_path / "p"), "fetch": False})
    assert result.get("failed") and "cannot make %s" % (tmp_path / "cache" / "2.5.136") in result["msg"]
