# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""deb_bundle's node I/O: the dpkg locks (a second process holds them for
real) and the deb files a rollback may reinstall."""
import os
import subprocess
import sys

import pytest

from ansible_collections.gcu.topsrider.plugins.module_utils import _dpkg_io
from fake_clock import Clock

# apt and dpkg hold fcntl locks; a script wrapped in flock(1) holds a flock one.
HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o640)
fcntl.lockf(fd, fcntl.LOCK_EX) if sys.argv[2] == "fcntl" else fcntl.flock(fd, fcntl.LOCK_EX)
sys.stdout.write("held\\n")
sys.stdout.flush()
sys.stdin.read()
"""


@pytest.fixture
def locks(tmp_path):
    return str(tmp_path / "lock-frontend"), str(tmp_path / "lock")


def hold(path, kind="fcntl"):
    """A child process holding a lock of `kind` (fcntl or flock) on path until its stdin closes."""
    p = subprocess.Popen([sys.executable, "-c", HOLDER, path, kind], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         universal_newlines=True)
    assert p.stdout.readline() == "held\n"
    return p


def test_free_locks_are_taken_and_given_back(locks):
    fd, busy = _dpkg_io.acquire_dpkg_lock(5, frontend=locks[0], database=locks[1])
    assert busy is None and fd is not None
    assert os.path.exists(locks[0]) and os.path.exists(locks[1])
    _dpkg_io.release_dpkg_lock(fd)
    with pytest.raises(OSError):
        os.fstat(fd)  # closed
    _dpkg_io.release_dpkg_lock(None)  # nothing held: nothing to do
    fd, busy = _dpkg_io.acquire_dpkg_lock(0, frontend=locks[0], database=locks[1])
    assert busy is None
    _dpkg_io.release_dpkg_lock(fd)


@pytest.mark.parametrize("kind", ["fcntl", "flock"])
@pytest.mark.parametrize("which", [0, 1])
def test_a_busy_lock_times_out_and_names_the_lock(locks, which, kind):
    holder = hold(locks[which], kind)
    clock = Clock()
    try:
        fd, busy = _dpkg_io.acquire_dpkg_lock(2, frontend=locks[0], database=locks[1], sleep=clock.sleep, clock=clock)
    finally:
        holder.communicate("")
    assert fd is None and busy == locks[which]
    assert clock.slept == [0.5] * 4
    # once the other process is gone the lock is ours
    fd, busy = _dpkg_io.acquire_dpkg_lock(0, frontend=locks[0], database=locks[1])
    assert busy is None
    _dpkg_io.release_dpkg_lock(fd)


def _touch(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("deb")
    return path


def test_find_cached_deb(tmp_path):
    top = str(tmp_path / "cache")
    a = _touch(os.path.join(top, "2.5.136", "tops-sdk_2.5.136-1_amd64.deb"))
    b = _touch(os.path.join(top, "old", "tops-sdk_2.5.136-1_all.deb"))
    _touch(os.path.join(top, "x", "tops-sdk_2.5.136-1_arm64.deb"))
    _touch(os.path.join(top, "x", "tops-sdk_2.5.140-1_amd64.deb"))
    _touch(os.path.join(top, "x", "tops-sdk-dev_2.5.136-1_amd64.deb"))
    _touch(os.path.join(top, "a", "b", "c", "d", "e", "tops-sdk_2.5.136-1_amd64.deb"))  # too deep
    assert _dpkg_io.find_cached_deb([top, str(tmp_path / "missing")], "tops-sdk", "1:2.5.136-1", "amd64") == [a, b]
    assert len(_dpkg_io.find_cached_deb([top], "tops-sdk", "2.5.136-1")) == 3
    assert _dpkg_io.find_cached_deb([top], "tops-sdk", "2.5.136-1", "amd64", max_depth=0) == []  # top level only


def test_deb_candidates_best_first_once_and_existing(tmp_path):
    top = str(tmp_path / "cache")
    cached = _touch(os.path.join(top, "tops-sdk_2.5.136-1_amd64.deb"))
    recorded = _touch(str(tmp_path / "journal" / "tops-sdk_2.5.136-1_amd64.deb"))
    got = _dpkg_io.deb_candidates([top], "tops-sdk", "2.5.136-1", "amd64",
                                  recorded={"path": recorded, "sha256": "aa"},
                                  indexed={"path": cached, "sha256": "bb"})
    assert got == [(recorded, "aa"), (cached, "bb")]
    got = _dpkg_io.deb_candidates([top], "tops-sdk", "2.5.136-1", "amd64",
                                  recorded={"path": str(tmp_path / "gone.deb"), "sha256": "aa"}, indexed=None)
    assert got == [(cached, None)]
    assert _dpkg_io.deb_candidates([], "tops-sdk", "2.5.136-1", "amd64") == []


@pytest.mark.parametrize("kind", ["fcntl", "flock"])
def test_lock_busy_answers_without_waiting(locks, kind):
    assert _dpkg_io.dpkg_lock_busy(*locks) is None
    # Free again afterwards: the reader gave both back.
    assert _dpkg_io.dpkg_lock_busy(*locks) is None
    for held in locks:
        p = hold(held, kind)
        try:
            assert _dpkg_io.dpkg_lock_busy(*locks) == held
        finally:
            p.stdin.close()
            p.wait()
    assert _dpkg_io.dpkg_lock_busy(*locks) is None
