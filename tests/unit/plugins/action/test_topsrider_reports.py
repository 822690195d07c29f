# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gcu.topsrider.topsrider_reports: a run's report files, written whole in the
controller's own process; directly, and as a play runs it."""
import json
import os
import stat

import pytest

from ansible_collections.gcu.topsrider.plugins.action import topsrider_reports

from conftest import run_play


def test_writes_every_file_whole_with_mode_0644(tmp_path):
    old = tmp_path / "drift-latest.json"
    old.write_text(u"old")
    files = [[str(tmp_path / "drift-1.json"), "{}\n"], [str(old), "new\n"], [str(tmp_path / "d.md"), u"# \u00fc\n"]]
    assert topsrider_reports.write_reports(files) == [f[0] for f in files]
    for path, content in files:
        with open(path, encoding="utf-8") as f:
            assert f.read() == content
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert sorted(os.listdir(str(tmp_path))) == ["d.md", "drift-1.json", "drift-latest.json"]


@pytest.mark.parametrize("files", [
    [["a.json", {"not": "text"}]],
    [["a.json"]],
    ["a.json"],
    [["", "x"]],
    [["ok.json", "x"], [None, "x"]],
])
def test_refuses_what_is_not_a_list_of_path_and_text_before_writing(tmp_path, monkeypatch, files):
    monkeypatch.chdir(str(tmp_path))
    with pytest.raises(ValueError, match=r"want \[\[path, text\]"):
        topsrider_reports.write_reports(files)
    assert os.listdir(str(tmp_path)) == []


def test_a_missing_directory_is_made_and_a_relative_path_is_from_the_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(str(tmp_path))
    assert topsrider_reports.write_reports([["deploy-1.d/node1.json", "x"]]) == ["deploy-1.d/node1.json"]
    assert (tmp_path / "deploy-1.d" / "node1.json").read_text() == "x\n"
    assert stat.S_IMODE(os.stat(str(tmp_path / "deploy-1.d")).st_mode) == 0o755


def test_a_directory_that_cannot_be_made_fails_and_leaves_nothing(tmp_path):
    (tmp_path / "file").write_text(u"not a directory")
    with pytest.raises(OSError):
        topsrider_reports.write_reports([[str(tmp_path / "file" / "a.json"), "x"]])
    assert os.listdir(str(tmp_path)) == ["file"]


def test_every_file_ends_with_one_newline(tmp_path):
    # tasks/finish.yml passes to_nice_json output, which has no final newline.
    topsrider_reports.write_reports([[str(tmp_path / "a.json"), '{\n    "a": 1\n}'], [str(tmp_path / "b.json"), "{}\n"]])
    assert json.loads((tmp_path / "a.json").read_text()) == {"a": 1}
    assert (tmp_path / "a.json").read_text().endswith("}\n")
    assert (tmp_path / "b.json").read_text() == "{}\n"


def test_as_a_play_runs_it_unchanged_and_nothing_in_check_mode(tmp_path):
    out = tmp_path / "reports"
    task = {"gcu.topsrider.topsrider_reports": {"files": [[str(out / "r.d" / "h.json"), '{"host": "h"}'],
                                                          [str(out / "r.md"), "# r"]]},
            "register": "written"}
    check = dict(task, check_mode=True, register="checked")
    rc, output = run_play(tmp_path, [check, {"ansible.builtin.assert": {"that": ["checked.written == []",
                                                                                 "checked is not changed"]}},
                                     task, {"ansible.builtin.assert": {"that": ["written is not changed",
                                                                                "written.written | length == 2"]}}])
    assert rc == 0, output
    assert json.loads((out / "r.d" / "h.json").read_text()) == {"host": "h"}
    assert (out / "r.md").read_text() == "# r\n"


def test_as_a_play_runs_it_a_bad_pair_fails_the_task_and_writes_nothing(tmp_path):
    rc, output = run_play(tmp_path, [{"gcu.topsrider.topsrider_reports": {
        "files": [[str(tmp_path / "a.json"), "x"], [str(tmp_path / "b.json"), {"not": "text"}]]}}])
    assert rc != 0 and "want [[path, text], ...]" in output and "nothing was written" in output
    assert not (tmp_path / "a.json").exists()


@pytest.mark.parametrize("stock", [True, False])
def test_show_prints_plain_lines_under_the_stock_and_the_project_settings(tmp_path, stock):
    """Ansible's stock callback prints a debug message as one JSON string
    (\\n escapes, quotes); the report shown by the action reads as it is,
    with an empty ansible.cfg as with the project's."""
    config = None
    if stock:
        config = str(tmp_path / "stock.cfg")
        (tmp_path / "stock.cfg").write_text(u"")
    text = "TopsRider deploy r1\n\n1 ok, 1 failed, 0 unreachable, 0 changed.\nnode1  ok      2.5.136  \"quoted\""
    rc, output = run_play(tmp_path, [{"gcu.topsrider.topsrider_reports": {
        "files": [[str(tmp_path / "r.md"), "# r"]], "show": text}, "check_mode": True}], config=config)
    assert rc == 0, output
    lines = output.splitlines()
    for line in text.splitlines():
        if line:
            assert line in lines, output
    assert "\\n" not in output and not (tmp_path / "r.md").exists()


def test_a_full_file_system_is_named_and_the_old_report_stays(tmp_path, monkeypatch):
    import errno
    from ansible_collections.gcu.topsrider.plugins.module_utils import _atomic
    old = tmp_path / "deploy-latest.json"
    old.write_text(u"old\n")
    real = _atomic.os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(_atomic.os, "fsync", full)
    with pytest.raises(topsrider_reports.ReportWriteError) as e:
        topsrider_reports.write_reports([[str(old), "new\n"]])
    monkeypatch.setattr(_atomic.os, "fsync", real)
    assert str(e.value) == ("the file system of %s is full (No space left on device): %s was not written and is as it was; "
                            "free space there and run again" % (tmp_path, old))
    assert old.read_text() == u"old\n" and sorted(os.listdir(str(tmp_path))) == ["deploy-latest.json"]


def test_a_full_file_system_leaves_no_empty_directory_behind(tmp_path, monkeypatch):
    """The run's deploy-<id>.d made by this write is removed again when the disk is full."""
    import errno
    from ansible_collections.gcu.topsrider.plugins.module_utils import _atomic

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(_atomic.os, "fsync", full)
    target = tmp_path / "deploy-20261126T120000Z.d" / "t20-node-1.json"
    with pytest.raises(topsrider_reports.ReportWriteError):
        topsrider_reports.write_reports([[str(target), "{}\n"]])
    assert os.listdir(str(tmp_path)) == []
    # A directory that was there before stays, with what it held.
    kept = tmp_path / "deploy-20261126T120001Z.d"
    kept.mkdir()
    (kept / "t20-node-2.json").write_text(u"{}\n")
    with pytest.raises(topsrider_reports.ReportWriteError):
        topsrider_reports.write_reports([[str(kept / "t20-node-1.json"), "{}\n"]])
    assert sorted(os.listdir(str(kept))) == ["t20-node-2.json"]
