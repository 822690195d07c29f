"""plugins/action/bundle_progress.py: its lines, its failure message and how it reads the async results."""
import pytest

from ansible.errors import AnsibleActionFail

from ansible_collections.gcu.topsrider.plugins.action.bundle_progress import (
    failure_message, human_bytes, poll_delay, progress_line, started_jobs)


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


def test_started_jobs_from_registered_results_skipped_items_ignored():
    results = [{"ansible_job_id": "j1", "item": {"file": "a.deb", "size": 10, "sha256": "x"}},
               {"skipped": True, "item": {"file": "b.deb", "size": 5}}]
    assert started_jobs(results) == {"j1": {"file": "a.deb", "size": 10}}


def test_started_jobs_without_a_size_is_an_error():
    with pytest.raises(AnsibleActionFail, match="no item with file and size"):
        started_jobs([{"ansible_job_id": "j1", "item": "a.deb"}])


def test_polls_start_fast_and_settle_at_the_interval():
    assert [poll_delay(n, 10) for n in range(7)] == [0.5, 1, 2, 4, 8, 10, 10]
    assert poll_delay(1000, 10) == 10
