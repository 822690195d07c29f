"""plugins/action/bundle_push.py: how far a file is read, seen from /proc (a real process reading a real
file), the progress lines, and the file list it refuses."""
import os
import subprocess
import sys
import time

import pytest

from ansible.errors import AnsibleActionFail

from ansible_collections.gcu.topsrider.plugins.action.bundle_push import (
    Watcher, bytes_read, descendants, file_sizes, progress_line, reading)

READER = """
import sys, time
f = open(sys.argv[1], "rb")
f.read(int(sys.argv[2]))
print("read", flush=True)
time.sleep(60)
"""


@pytest.fixture(name="reader")
def fixture_reader(tmp_path):
    """A child of this process with 3 MiB of a 5 MiB file read and the file still open (a transfer under way)."""
    path = tmp_path / "tops-sdk_2.5.140-1_amd64.deb"
    path.write_bytes(b"x" * (5 * 1024 * 1024))
    proc = subprocess.Popen([sys.executable, "-c", READER, str(path), str(3 * 1024 * 1024)], stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"read"
    yield path, proc
    proc.kill()
    proc.wait()


def test_the_offset_a_child_has_read_to_is_seen(reader):
    path, proc = reader
    assert proc.pid in descendants(os.getpid())
    assert bytes_read(str(path), descendants(os.getpid())) == {proc.pid: 3 * 1024 * 1024}
    assert reading(str(path), os.getpid()) == ("sending", 3 * 1024 * 1024)  # a child reads it: the transfer


def test_a_file_nobody_has_open_is_none(reader, tmp_path):
    other = tmp_path / "other.deb"
    other.write_bytes(b"y")
    assert bytes_read(str(other), descendants(os.getpid())) == {}
    assert reading(str(other), os.getpid()) == (None, None)
    with open(str(other), "rb") as f:
        f.read()
        assert reading(str(other), os.getpid()) == ("checking", 1)  # only this process: copy's own checksum


def test_another_process_tree_is_not_looked_at(reader):
    path, proc = reader
    assert bytes_read(str(path), descendants(proc.pid)) == {proc.pid: 3 * 1024 * 1024}
    assert bytes_read(str(path), [os.getppid()]) == {}


def test_the_watcher_prints_what_it_sees(reader):
    path, dummy = reader
    shown = []

    def line(state, done, seconds):
        return progress_line("t20-node-1", "2.5.140", path.name, 2, 3, state, done, 5 * 1024 * 1024, 1024,
                             6 * 1024 * 1024 + 1024, seconds)

    with Watcher(line, str(path), 0.05, show=shown.append):
        deadline = time.time() + 10
        while not shown and time.time() < deadline:
            time.sleep(0.05)
    assert shown[0] == ("t20-node-1: 2.5.140 from the controller: file 2 of 3, tops-sdk_2.5.140-1_amd64.deb, "
                        "sent 3.0 MiB of 5.0 MiB; 3.0 MiB of 6.0 MiB in all (50%)")


def test_a_line_while_nothing_reads_the_file_says_how_long():
    assert progress_line("n1", "2.5.140", "a.deb", 1, 1, None, None, 100, 0, 100, 31.5) == (
        "n1: 2.5.140 from the controller: file 1 of 1, a.deb, 31 s in (nothing reads it now: the node's checksum, "
        "or the copy's other steps); 0 B of 100 B in all (0%)")
    assert progress_line("n1", "2.5.140", "a.deb", 1, 1, None, 90, 100, 0, 100, 40) == (
        "n1: 2.5.140 from the controller: file 1 of 1, a.deb, sent 90 B of 100 B, 40 s in (nothing reads it now: "
        "the node's checksum, or the copy's other steps); 90 B of 100 B in all (90%)")
    assert progress_line("n1", "2.5.140", "a.deb", 1, 2, "checking", 60, 100, 0, 200, 3) == (
        "n1: 2.5.140 from the controller: file 1 of 2, a.deb, checksum, read 60 B of 100 B; 0 B of 200 B in all (0%)")


def test_files_need_a_plain_name_and_a_size():
    assert file_sizes([{"file": "a.deb", "size": 10, "sha256": "x"}]) == [("a.deb", 10)]
    for bad in ([{"file": "a.deb"}], [{"file": "../a.deb", "size": 1}], [{"file": "", "size": 1}]):
        with pytest.raises(AnsibleActionFail):
            file_sizes(bad)
