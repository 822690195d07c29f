# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""_makeself: the vendor's .run read without running it, on archives made by
Debian's real makeself (tests/unit/makeself_fakes.py)."""
import hashlib
import os
import subprocess
import tarfile

import pytest

from ansible_collections.gcu.topsrider.plugins.plugin_utils import _makeself as m
import makeself_fakes as fakes


@pytest.fixture
def tree(tmp_path):
    return fakes.release_tree(str(tmp_path))


def _run(tmp_path, tree, *options):
    return fakes.make_run(tree, str(tmp_path / "TopsRider_t2x_2.5.136_deb_amd64.run"), *options)


def _nothing_left(parent, dest):
    """No destination and no temporary directory next to it."""
    assert not os.path.lexists(dest)
    assert [n for n in os.listdir(parent) if n.startswith(".")] == []


@pytest.mark.parametrize("options,compression,checked", [
    ((), "gz", ["md5"]),                                  # makeself's default: gzip, MD5 (+ CRC)
    (("--xz", "--sha256"), "xz", ["md5", "sha256"]),
    (("--bzip2", "--nomd5", "--sha256"), "bz2", ["sha256"]),
    (("--nocomp",), "", ["md5"]),
])
def test_good_archive_is_checked_and_extracted_without_running_it(tmp_path, tree, options, compression, checked):
    run = _run(tmp_path, tree, *options)
    header = m.read_header(run)
    assert header["label"] == "ENFLAME TOPSRIDER PACKAGE"
    assert header["script"] == "./install.sh"
    assert header["compression"] == compression
    assert header["version"] == "2.4.5" or header["version"].startswith("2.")
    with open(run, "rb") as f:
        data = f.read()
    assert header["offset"] + header["totalsize"] == len(data)
    out = tmp_path / "out"
    out.mkdir()
    dest = str(out / "tree")
    result = m.extract(run, dest)
    assert result == {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "checked": checked}
    assert sorted(os.listdir(dest)) == ["framework", "install.sh", "sdk"]
    assert sorted(os.listdir(os.path.join(dest, "sdk"))) == sorted(os.listdir(os.path.join(tree, "sdk")))
    with open(os.path.join(dest, "sdk", "tops-sdk_2.5.136-1_amd64.deb"), "rb") as a, \
            open(os.path.join(tree, "sdk", "tops-sdk_2.5.136-1_amd64.deb"), "rb") as b:
        assert a.read() == b.read()
    assert not (tmp_path / fakes.RAN_MARKER).exists(), "the archive's install.sh was executed"
    assert [n for n in os.listdir(str(out)) if n.startswith(".")] == []


def test_the_install_script_really_would_leave_its_marker(tmp_path, tree):
    """The marker proves something: running the archive's script does leave it."""
    proc = subprocess.run(["sh", os.path.join(tree, "install.sh")], stderr=subprocess.PIPE, check=False)
    assert proc.returncode == 1
    assert (tmp_path / fakes.RAN_MARKER).exists()


def _refused(run, dest, needle):
    parent = os.path.dirname(dest)
    with pytest.raises(m.MakeselfError) as e:
        m.extract(run, dest)
    assert needle in str(e.value)
    _nothing_left(parent, dest)
    return str(e.value)


def test_corrupt_payload_is_refused_by_its_own_checksums(tmp_path, tree):
    run = _run(tmp_path, tree, "--xz", "--sha256")
    fakes.flip_payload_byte(run)
    (tmp_path / "out").mkdir()
    msg = _refused(run, str(tmp_path / "out" / "t"), "SHA256 checksum of payload part 1 does not match")
    assert "corrupt" in msg


def test_corrupt_payload_with_md5_only(tmp_path, tree):
    run = _run(tmp_path, tree)
    fakes.flip_payload_byte(run)
    (tmp_path / "out").mkdir()
    _refused(run, str(tmp_path / "out" / "t"), "MD5 checksum of payload part 1 does not match")


def test_truncated_file(tmp_path, tree):
    run = _run(tmp_path, tree)
    fakes.truncate(run)
    (tmp_path / "out").mkdir()
    _refused(run, str(tmp_path / "out" / "t"), "truncated")


def test_trailing_bytes(tmp_path, tree):
    run = _run(tmp_path, tree)
    with open(run, "ab") as f:
        f.write(b"extra")
    (tmp_path / "out").mkdir()
    _refused(run, str(tmp_path / "out" / "t"), "trailing bytes")


@pytest.mark.parametrize("content", [b"#!/bin/sh\necho hello\n", b"\x7fELF\x02\x01\x01" + b"\0" * 100, b""])
def test_not_a_makeself_file(tmp_path, content):
    path = tmp_path / "x.run"
    path.write_bytes(content)
    (tmp_path / "out").mkdir()
    _refused(str(path), str(tmp_path / "out" / "t"), "is not a makeself archive")


def test_archive_without_any_checksum_is_refused(tmp_path, tree):
    run = _run(tmp_path, tree, "--nomd5")
    (tmp_path / "out").mkdir()
    _refused(run, str(tmp_path / "out" / "t"), "neither an MD5 nor a SHA256")


def test_unsupported_compression(tmp_path, tree):
    run = _run(tmp_path, tree, "--base64")
    with pytest.raises(m.MakeselfError, match="payload compressed with 'base64"):
        m.read_header(run)


def test_existing_destination_is_not_overwritten(tmp_path, tree):
    run = _run(tmp_path, tree)
    (tmp_path / "t").mkdir()
    with pytest.raises(m.MakeselfError, match="already exists"):
        m.extract(run, str(tmp_path / "t"))


@pytest.fixture(params=["data_filter", "hand"])
def member_filter(request, monkeypatch):
    """Each member check both ways: tarfile's data filter (this Python has it), and the hand check of a
    Python without it (Debian bookworm's 3.11.2)."""
    if request.param == "hand":
        monkeypatch.setattr(m, "DATA_FILTER", None)
    return request.param


def test_the_data_filter_decides_where_the_python_has_it():
    assert tarfile.data_filter is not None and m.DATA_FILTER is tarfile.data_filter


def _regular(name, data=b"x"):
    return (fakes.member(name), data)


@pytest.mark.parametrize("members,needle", [
    ([_regular("./sdk/a.deb"), _regular("../evil")], "'..' out of the archive"),
    ([_regular("sdk/../../evil")], "'..'"),
    ([_regular("/etc/evil")], "absolute path"),
    ([(fakes.member("ln", tarfile.SYMTYPE, "/etc/passwd"), None)], "symlink to the absolute path"),
    ([(fakes.member("ln", tarfile.SYMTYPE, "../../etc"), None)], "points out of the archive"),
    ([(fakes.member("d", tarfile.SYMTYPE, ".."), None), _regular("d/evil")], "points out of the archive"),
    # a dangling link that only leads out once a later member exists
    ([(fakes.member("y", tarfile.SYMTYPE, "d/../z"), None), (fakes.member("d", tarfile.SYMTYPE, "."), None)],
     "symlink points out of the archive"),
    ([(fakes.member("hl", tarfile.LNKTYPE, "../outside"), None)], "hard link"),
    ([(fakes.member("null", tarfile.CHRTYPE), None)], "device or fifo"),
    ([(fakes.member("fifo", tarfile.FIFOTYPE), None)], "device or fifo"),
    ([_regular("a"), _regular("a", b"other")], "listed twice"),
    ([(fakes.member("disk", tarfile.BLKTYPE), None)], "device or fifo"),
    ([(fakes.member("hl", tarfile.LNKTYPE, "/etc/passwd"), None)], "hard link"),
    ([(fakes.member("hl", tarfile.LNKTYPE, "sdk"), None)], "hard link to 'sdk', not a file of the archive"),
    ([(fakes.member("sub", tarfile.DIRTYPE, mode=0o755), None),
      (fakes.member("sub/ln", tarfile.SYMTYPE, "../../etc"), None)], "symlink '../../etc' points out of the archive"),
    ([(fakes.member("up", tarfile.SYMTYPE, "sdk/../.."), None)], "points out of the archive"),
])
def test_unsafe_members_are_refused_and_nothing_is_left(tmp_path, tree, members, needle, member_filter):
    run = fakes.repack(_run(tmp_path, tree), members)
    assert m.verify(run)["checked"] == ["md5", "sha256"]   # makeself's own checks pass
    (tmp_path / "out").mkdir()
    _refused(run, str(tmp_path / "out" / "t"), needle)
    assert not (tmp_path / "evil").exists()


def test_links_inside_the_tree_are_kept(tmp_path, tree, member_filter):
    run = fakes.repack(_run(tmp_path, tree), [
        (fakes.member("lib", tarfile.DIRTYPE, mode=0o755), None),
        _regular("lib/libx.so.2"),
        (fakes.member("lib/libx.so", tarfile.SYMTYPE, "libx.so.2"), None),
        (fakes.member("hard", tarfile.LNKTYPE, "lib/libx.so.2"), None),
        (fakes.member("setuid", mode=0o4777), b"s"),
    ])
    dest = str(tmp_path / "t")
    m.extract(run, dest)
    assert os.readlink(os.path.join(dest, "lib", "libx.so")) == "libx.so.2"
    assert os.stat(os.path.join(dest, "hard")).st_ino == os.stat(os.path.join(dest, "lib", "libx.so.2")).st_ino
    assert os.stat(os.path.join(dest, "setuid")).st_mode & 0o7777 == 0o755


def test_damaged_tar_stream_with_matching_checksums(tmp_path, tree):
    run = fakes.set_payload(_run(tmp_path, tree), b"not gzip at all")
    (tmp_path / "out").mkdir()
    _refused(run, str(tmp_path / "out" / "t"), "cannot unpack the payload")


# ---------------------------------------------------------------------------
# find_release_files
# ---------------------------------------------------------------------------

def _touch(root, rel, data=b"x"):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def test_finds_debs_and_wheels_at_any_depth(tmp_path):
    root = str(tmp_path)
    _touch(root, "sdk/tops-sdk_2.5.136-1_amd64.deb")
    _touch(root, "a/b/c/tops-eccl_2.5.136-1_amd64.deb")
    _touch(root, "framework/torch_gcu-2.13.0+2.5.136-py311-none-any.whl")
    _touch(root, "framework/py310/torch_gcu-2.13.0+2.5.136-cp310-cp310-linux_x86_64.whl")
    _touch(root, "again/tops-sdk_2.5.136-1_amd64.deb")      # same name, same bytes: once
    _touch(root, "install.sh")
    found = m.find_release_files(root)
    assert [(d["file"], d["package"], d["version"], d["architecture"]) for d in found["debs"]] == [
        ("tops-eccl_2.5.136-1_amd64.deb", "tops-eccl", "2.5.136-1", "amd64"),
        ("tops-sdk_2.5.136-1_amd64.deb", "tops-sdk", "2.5.136-1", "amd64")]
    assert [(w["package"], w["python"]) for w in found["wheels"]] == [("torch_gcu", "3.10"), ("torch_gcu", "3.11")]
    assert found["debs"][1]["path"] == os.path.join(root, "again", "tops-sdk_2.5.136-1_amd64.deb")


@pytest.mark.parametrize("files,needle", [
    ({"framework/torch_gcu-2.13.0+2.5.136-py311-none-any.whl": b"w"}, "no .deb in the archive (found 1 wheel(s))"),
    ({"sdk/tops-sdk_2.5.136-1_amd64.deb": b"a", "old/tops-sdk_2.5.130-1_amd64.deb": b"b"},
     "package tops-sdk comes in two versions"),
    ({"sdk/tops-sdk_2.5.136-1_amd64.deb": b"a", "x/torch_gcu-2.13.0+2.5.136-py311-none-any.whl": b"w",
      "y/torch_gcu-2.13.0+2.5.130-py311-none-any.whl": b"v"}, "wheel torch_gcu for Python 3.11 comes in two versions"),
    ({"a/tops-sdk_2.5.136-1_amd64.deb": b"a", "b/tops-sdk_2.5.136-1_amd64.deb": b"b"}, "two different files named"),
    ({"sdk/tops-sdk.deb": b"a"}, "not a package_version_architecture.deb"),
    ({"sdk/tops-sdk_2.5.136-1_amd64.deb": b"a", "w/torch_gcu-1.0-py3-none-any.whl": b"w"},
     "not a wheel file name for one Python minor"),
])
def test_release_files_refused(tmp_path, files, needle):
    for rel, data in files.items():
        _touch(str(tmp_path), rel, data)
    with pytest.raises(m.MakeselfError) as e:
        m.find_release_files(str(tmp_path))
    assert needle in str(e.value)
