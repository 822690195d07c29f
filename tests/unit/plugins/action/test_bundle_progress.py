"""plugins/action/bundle_progress.py: its lines, its failure message and how it reads the async results."""
import pytest

from ansible.errors import AnsibleActionFail

from ansible_collections.gcu.topsrider.plugins.action.bundle_progress import (
    bytes_in_place, failure_message, human_bytes, job_files, poll_delay, progress_line)


def test_progress_line_has_bytes_percent_and_source():
    line = progress_line("node3", "2.5.136", "node1 (http://10.0.0.1:8080)", 512 * 1024 ** 2, 1024 ** 3)
    assert line == "node3: 2.5.136 from node1 (http://10.0.0.1:8080): 512.0 MiB of 1.0 GiB (50%)"


def test_progress_never_claims_more_than_the_total():
    # A partial file can be a little over while it is being moved into place.
    assert progress_line("n", "v", "s", 2000, 1000).endswith("(100%)")


@pytest.mark.parametrize("n, text", [(0, "0 B"), (1023, "1023 B"), (1536, "1.5 KiB"), (3 * 1024 ** 3, "3.0 GiB")])
def test_human_bytes(n, text):
    assert human_bytes(n) == text


def test_failure_names_the_source_and_each_file():
    msg = failure_message("node3", "2.5.136", "node1 (http://127.0.0.1:4242)",
                          [{"file": "a.deb", "msg": "Request failed: <urlopen error [Errno 111] Connection refused>"}])
    assert "node3: could not stage 2.5.136 from node1 (http://127.0.0.1:4242)" in msg
    assert "a.deb: Request failed" in msg and "Connection refused" in msg
    assert "the next run fetches what is still missing" in msg


def test_job_files_need_a_name_and_a_size():
    assert job_files([{"file": "a.deb", "size": 10, "sha256": "x"}]) == {"a.deb": 10}
    with pytest.raises(AnsibleActionFail, match="needs file and size"):
        job_files([{"file": "a.deb"}])


def test_bytes_in_place_counts_the_jobs_files_in_dest_and_partial_once_each():
    sizes = {"a.deb": 100, "b.deb": 50}
    found = [{"path": "/c/2.5.136/a.deb", "size": 100},     # fetched and moved into place
             {"path": "/c/.partial/b.deb", "size": 20},     # still arriving
             {"path": "/c/2.5.136/b.deb", "size": 0},       # not there yet (never counted twice)
             {"path": "/c/2.5.136/other.deb", "size": 999}]  # not the job's
    assert bytes_in_place(found, sizes) == 120
    assert bytes_in_place([{"path": "/c/.partial/b.deb", "size": 70}], sizes) == 50


def test_polls_start_fast_and_settle_at_the_interval():
    assert [poll_delay(n, 10) for n in range(10)] == [0.5, 0.5, 1, 1, 2, 2, 4, 4, 8, 8]
    assert poll_delay(10, 10) == 10 and poll_delay(1000, 10) == 10
