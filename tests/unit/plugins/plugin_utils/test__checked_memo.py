# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils/_checked_memo.py: a full check remembered by the files' stat,
trusted only while the subject and every entry of its bundle keep device,
inode, size, mtime and ctime (scripts/topsrider-manifest extract uses it; its
tests show the .run side)."""

import os
import stat
import time

from ansible_collections.gcu.topsrider.plugins.plugin_utils import _checked_memo as memo


def _setup(tmp_path):
    subject = tmp_path / "x.run"
    subject.write_bytes(b"payload")
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "a.deb").write_bytes(b"a")
    (bundle / "manifest.json").write_text("{}")
    path = memo.memo_path(str(tmp_path / "cache"), str(subject))
    return str(subject), str(bundle), path


def test_written_then_trusted_while_nothing_changes(tmp_path):
    subject, bundle, path = _setup(tmp_path)
    assert memo.save(path, subject, memo.stat_key(subject), bundle, {"origin": {"sha256": "ab"}}, time.time_ns(), 0)
    assert memo.still_checked(memo.load(path), subject, bundle) == {"origin": {"sha256": "ab"}}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    assert os.listdir(os.path.dirname(path)) == [os.path.basename(path)]    # no temporary file left


def test_any_change_of_the_subject_or_the_bundle_ends_the_trust(tmp_path):
    subject, bundle, path = _setup(tmp_path)
    memo.save(path, subject, memo.stat_key(subject), bundle, {}, time.time_ns(), 0)
    known = memo.load(path)
    assert memo.still_checked(known, subject, bundle) == {}
    assert memo.still_checked(known, subject, bundle + "-other") is None
    extra = os.path.join(bundle, "extra")
    open(extra, "w").close()                                        # an entry more
    assert memo.still_checked(known, subject, bundle) is None
    os.remove(extra)
    assert memo.still_checked(known, subject, bundle) == {}        # the same entries, unchanged
    deb = os.path.join(bundle, "a.deb")
    before = os.stat(deb)
    time.sleep(0.05)                                                 # a kernel tick or more later
    with open(deb, "wb") as f:                                       # the same size, written again,
        f.write(b"b")
    os.utime(deb, ns=(before.st_atime_ns, before.st_mtime_ns))      # its mtime put back: the ctime moved
    assert memo.still_checked(known, subject, bundle) is None
    os.utime(subject, ns=(1, 2))
    assert memo.still_checked(known, subject, bundle) is None
    os.remove(deb)
    assert memo.still_checked(known, subject, bundle) is None


def test_a_bundle_file_replaced_by_a_link_to_itself_is_a_change(tmp_path):
    subject, bundle, path = _setup(tmp_path)
    memo.save(path, subject, memo.stat_key(subject), bundle, {}, time.time_ns(), 0)
    known = memo.load(path)
    deb = os.path.join(bundle, "a.deb")
    moved = str(tmp_path / "elsewhere.deb")
    os.link(deb, moved)                                              # the same inode, same times
    os.remove(deb)
    os.symlink(moved, deb)
    assert memo.still_checked(known, subject, bundle) is None


def test_a_subject_that_changed_while_it_was_read_is_not_remembered(tmp_path):
    subject, bundle, path = _setup(tmp_path)
    key = memo.stat_key(subject)
    with open(subject, "ab") as f:
        f.write(b"more")
    assert memo.save(path, subject, key, bundle, {}, time.time_ns(), 0) is False
    assert not os.path.exists(path)
    assert memo.save(path, subject, None, bundle, {}, time.time_ns(), 0) is False


def test_files_changed_within_the_settle_time_are_not_remembered(tmp_path):
    subject, bundle, path = _setup(tmp_path)
    started = time.time_ns()
    assert memo.save(path, subject, memo.stat_key(subject), bundle, {}, started) is False   # 2 s by default
    assert memo.save(path, subject, memo.stat_key(subject), bundle, {}, started + memo.SETTLE_NS) is True
    os.utime(os.path.join(bundle, "a.deb"))                          # changed after the check began
    assert memo.save(path, subject, memo.stat_key(subject), bundle, {}, started, 0) is False


def test_an_unwritable_cache_only_means_no_memo(tmp_path):
    subject, bundle = _setup(tmp_path)[:2]
    blocker = tmp_path / "cache-is-a-file"
    blocker.write_text("")
    path = memo.memo_path(str(blocker), subject)
    assert memo.save(path, subject, memo.stat_key(subject), bundle, {}, time.time_ns(), 0) is False
    assert memo.load(path) is None


def test_memos_that_are_not_ours_are_none(tmp_path):
    for text in ("", "nope", "[1]", '{"format": 0}'):
        p = tmp_path / "m.json"
        p.write_text(text)
        assert memo.load(str(p)) is None
    assert memo.load(str(tmp_path / "absent.json")) is None
