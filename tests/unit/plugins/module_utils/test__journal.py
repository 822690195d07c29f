"""_journal: atomic root-only files, snapshot merging, latest, ids, deb index."""
import datetime
import os
import stat

import pytest

from ansible_collections.gcu.topsrider.plugins.module_utils import _journal as j


def _rec(before, after, held=False):
    return {"before": before, "before_held": held, "before_deb": None, "after": after, "after_held": True}


def test_save_and_load_snapshot_modes(tmp_path):
    jd = str(tmp_path / "journal")
    snap = j.merge_snapshot(None, "s1", "2025-01-01T00:00:00Z", "present",
                            {"tops-sdk": _rec(None, "2.5.136-1")})
    j.save_snapshot(jd, snap)
    assert stat.S_IMODE(os.stat(jd).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(j.snapshots_dir(jd)).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(j.snapshot_path(jd, "s1")).st_mode) == 0o600
    assert j.load_snapshot(jd, "s1") == snap
    assert j.load_snapshot(jd, "nope") is None
    assert os.listdir(j.snapshots_dir(jd)) == ["s1.json"]  # no temp files left


def test_merge_keeps_first_previous_state():
    first = j.merge_snapshot(None, "d", "t0", "present", {"tops-sdk": _rec("2.5.130-1", "2.5.136-1")})
    second = j.merge_snapshot(first, "d", "t1", "present", {
        "tops-sdk": _rec("2.5.136-1", "2.5.140-1"), "tops-eccl": _rec(None, "2.5.140-1")})
    assert second["packages"]["tops-sdk"]["before"] == "2.5.130-1"
    assert second["packages"]["tops-sdk"]["after"] == "2.5.140-1"
    assert second["packages"]["tops-eccl"]["before"] is None
    assert second["time"] == "t0"
    assert first["packages"].keys() == {"tops-sdk"}  # pure
    assert j.restore_targets(second) == {"tops-sdk": {"version": "2.5.130-1", "held": False},
                                         "tops-eccl": {"version": None, "held": False}}
    assert j.restore_targets(second, ["tops-eccl"]) == {"tops-eccl": {"version": None, "held": False}}


def test_latest_restorable_skips_failed(tmp_path):
    jd = str(tmp_path)
    for sid, t, status in (("a", "2025-01-01T00:00:00Z", "applied"), ("b", "2025-01-02T00:00:00Z", "applied"),
                           ("c", "2025-01-03T00:00:00Z", "failed-restored")):
        s = j.merge_snapshot(None, sid, t, "present", {})
        s["status"] = status
        j.save_snapshot(jd, s)
    assert [s["id"] for s in j.list_snapshots(jd)] == ["a", "b", "c"]
    assert j.latest_restorable(j.list_snapshots(jd))["id"] == "b"
    assert j.latest_restorable([]) is None


def test_new_snapshot_id():
    now = datetime.datetime(2025, 1, 2, 3, 4, 5)
    assert j.new_snapshot_id(now, set()) == "20250102T030405Z"
    assert j.new_snapshot_id(now, {"20250102T030405Z", "20250102T030405Z-2"}) == "20250102T030405Z-3"


@pytest.mark.parametrize("bad", ["", "../x", "a/b", ".hidden", "x" * 200, "a b"])
def test_snapshot_id_validated(bad):
    with pytest.raises(j.JournalError):
        j.snapshot_path("/j", bad)


def test_index(tmp_path):
    jd = str(tmp_path)
    assert j.load_index(jd) == {}
    idx = j.record_debs({}, [{"package": "p", "version": "1", "path": "/c/p_1_all.deb", "sha256": "ab"}])
    j.save_index(jd, idx)
    assert stat.S_IMODE(os.stat(j.index_path(jd)).st_mode) == 0o600
    assert j.indexed_deb(j.load_index(jd), "p", "1") == {"path": "/c/p_1_all.deb", "sha256": "ab"}
    assert j.indexed_deb(idx, "p", "2") is None
    (tmp_path / "snapshots").mkdir(exist_ok=True)
    (tmp_path / "snapshots" / "broken.json").write_text("{")
    with pytest.raises(j.JournalError):
        j.list_snapshots(jd)


def test_events_are_appended_purely():
    s = j.merge_snapshot(None, "x", "t", "present", {})
    s2 = j.add_event(s, "t2", "applied", {"a": 1})
    assert s["events"] == [] and s2["events"] == [{"time": "t2", "event": "applied", "detail": {"a": 1}}]
