# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""_card_jobs: the job files the Slurm prolog writes -> which job has which card."""
import json

import pytest

from ansible_collections.gcu.topsrider.plugins.module_utils import _card_jobs as J


def write(d, name, content):
    d.mkdir(exist_ok=True)
    (d / name).write_text(content if isinstance(content, str) else json.dumps(content))


def test_no_directory_is_no_job(tmp_path):
    assert J.read_jobs(str(tmp_path / "absent")) == ([], [])


def test_jobs_sorted_by_number_and_bad_files_named(tmp_path):
    d = tmp_path / "jobs"
    write(d, "100.json", {"job_id": "100", "user": "bob", "cards": [3, 1, 1]})
    write(d, "9.json", {"job_id": "9", "user": "alice", "cards": [0]})
    write(d, "9_2.json", {"job_id": "9_2", "user": "alice", "cards": []})
    write(d, ".11.json.tmp", "half a fil")       # the prolog's temporary file: not a job yet
    write(d, "12.json", "{not json")
    write(d, "13.json", {"job_id": "14", "user": "x", "cards": [0]})
    write(d, "15.json", {"job_id": "15", "user": "x", "cards": ["0"]})
    write(d, "16.json", {"job_id": "16", "user": "x", "cards": [True]})
    write(d, "17.json", {"job_id": "17", "user": None, "cards": [0]})
    write(d, "18.json", ["not", "an", "object"])
    write(d, "19.json", "x" * (J.MAX_FILE_BYTES + 1))
    jobs, problems = J.read_jobs(str(d))
    assert [j["job_id"] for j in jobs] == ["9", "9_2", "100"]
    assert jobs[2] == {"job_id": "100", "user": "bob", "cards": [1, 3]}
    assert [p.split(":")[0] for p in problems] == [
        "12.json", "13.json", "15.json", "16.json", "17.json", "18.json", "19.json"]
    assert "names job 14" in problems[1] and "more than 65536 bytes" in problems[6]


@pytest.mark.parametrize("job_id, ok", [("4242", True), ("4242_7", True), ("4242+1", True), ("../x", False),
                                        ("", False), ("42a", False), (42, False)])
def test_job_ids(job_id, ok):
    text = json.dumps({"job_id": job_id, "user": "u", "cards": [0]})
    if ok:
        assert J.parse_job_file("%s.json" % job_id, text)["job_id"] == job_id
    else:
        with pytest.raises(J.JobFileError, match="job_id must be a Slurm job id"):
            J.parse_job_file("x.json", text)


def test_card_jobs_joins_jobs_and_users():
    jobs = [{"job_id": "7", "user": "alice", "cards": [0, 1]}, {"job_id": "8", "user": "alice", "cards": [1]},
            {"job_id": "9", "user": "bob", "cards": [1]}]
    assert J.card_jobs(jobs, 0) == {"slurm_job": "7", "user": "alice"}
    assert J.card_jobs(jobs, 1) == {"slurm_job": "7,8,9", "user": "alice,bob"}
    assert J.card_jobs(jobs, 2) == {"slurm_job": "", "user": ""}


def test_an_unreadable_directory_is_an_error(tmp_path):
    (tmp_path / "jobs").write_text("a file, not the directory")
    with pytest.raises(OSError):
        J.read_jobs(str(tmp_path / "jobs"))
