# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drift filters as Ansible loads them: names, plain data, errors as AnsibleFilterError."""
import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.gcu.topsrider.plugins.filter import drift

FILTERS = drift.FilterModule().filters()


def test_filters_are_registered():
    assert sorted(drift.FilterModule().filters()) == [
        "topsrider_deploy_pending", "topsrider_drift_findings", "topsrider_drift_junit",
        "topsrider_drift_markdown", "topsrider_drift_prometheus", "topsrider_drift_report",
        "topsrider_probe_findings", "topsrider_revoked_findings"]


def test_report_pipeline():
    findings = FILTERS["topsrider_drift_findings"](
        {"packages": {"tops-eccl": {"version": "2.5.140-1", "status": "installed", "held": True}}},
        "n1", {"manifest": {"files": [{"type": "deb", "package": "tops-eccl", "version": "2.5.136-1"}]}})
    assert [(f["category"], f["actual"]) for f in findings] == [("package", "2.5.140-1")]
    results = {"n1": {"checked_at": 1.0, "error": None, "findings": findings}}
    report = FILTERS["topsrider_drift_report"](results, ["n1"], "run-1", {"version": "2.5.136"}, 0)
    assert report["status"] == "drift" and report["exit_code"] == 3
    assert "tops-eccl version" in FILTERS["topsrider_drift_markdown"](report)
    assert "<failure" in FILTERS["topsrider_drift_junit"](report)
    assert 'topsrider_drift_findings{node="n1"} 1' in FILTERS["topsrider_drift_prometheus"](report)


@pytest.mark.parametrize("call", [
    lambda: FILTERS["topsrider_drift_report"]({}, ["n1"], "../evil"),
    lambda: FILTERS["topsrider_drift_findings"]("not a dict", "n1", {}),
    lambda: FILTERS["topsrider_probe_findings"]({"not": "a list"}, "n1", {}),
])
def test_errors_are_filter_errors(call):
    with pytest.raises(AnsibleFilterError):
        call()


def test_deploy_pending_reads_the_files_of_the_state():
    manifest = {"files": [{"file": "a.deb", "sha256": "aa"}]}
    state = {"files": {
        "/etc/ansible/facts.d/topsrider.fact": {"exists": True, "content": '{"manifest_sha256": "mm"}'},
        "/c/2/a.deb": {"exists": True, "sha256": "aa", "mode": "0600", "owner": "root", "group": "root"},
        "/c/2/manifest.json": {"exists": True, "sha256": "mm", "mode": "0600", "owner": "root", "group": "root"}}}
    pending = FILTERS["topsrider_deploy_pending"]
    assert pending([], state, manifest, "mm", "/c/2", "/etc/ansible/facts.d/topsrider.fact") == []
    assert pending([], {}, manifest, "mm", "/c/2", "/f") != []


def test_probe_findings_join_the_read_in_report_order():
    read = [{"node": "n1", "category": "health", "check": "gcu3 health", "expected": "healthy",
             "actual": "unhealthy", "detail": None}]
    probe = {"problems": [{"code": "LIBRARY_MISMATCH", "message": "two libeccl.so", "hint": "ldconfig"}]}
    joined = FILTERS["topsrider_probe_findings"](read, "n1", probe)
    assert [f["category"] for f in joined] == ["library", "health"]
    assert joined[0]["check"] == "eccl_probe LIBRARY_MISMATCH" and joined[0]["node"] == "n1"
    # a skipped probe (topsrider_drift_probe off) adds nothing
    assert FILTERS["topsrider_probe_findings"](read, "n1", {"skipped": True, "changed": False}) == read
