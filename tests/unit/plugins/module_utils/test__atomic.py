# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugins/module_utils/_atomic.py: the collection's one atomic file writer
(the journal on the node, the report files and the bench on the controller)."""
import os
import stat

import pytest

from ansible_collections.gcu.topsrider.plugins.module_utils import _atomic


@pytest.mark.parametrize("mode", [0o600, 0o644])
def test_writes_the_text_with_the_mode_and_replaces_the_old_file(tmp_path, mode):
    path = tmp_path / "a.json"
    path.write_text("old, longer than the new text")
    os.chmod(str(path), 0o640)
    _atomic.write_atomic(str(path), "new ü\n", mode)
    assert path.read_bytes() == "new ü\n".encode("utf-8")
    assert stat.S_IMODE(os.stat(str(path)).st_mode) == mode
    assert os.listdir(str(tmp_path)) == ["a.json"]


def test_a_missing_directory_raises(tmp_path):
    with pytest.raises(OSError):
        _atomic.write_atomic(str(tmp_path / "nodir" / "a"), "x", 0o644)
    assert os.listdir(str(tmp_path)) == []


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tmp_path, monkeypatch):
    path = tmp_path / "a.json"
    path.write_text("old")

    def broken_fsync(fd):
        raise OSError("disk gone")
    monkeypatch.setattr(_atomic.os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="disk gone"):
        _atomic.write_atomic(str(path), "new", 0o644, prefix=".x-")
    assert path.read_text() == "old" and os.listdir(str(tmp_path)) == ["a.json"]


def test_a_relative_path_is_written_in_its_own_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(str(tmp_path))
    _atomic.write_atomic("r.md", "# r\n", 0o644)
    assert (tmp_path / "r.md").read_text() == "# r\n"
