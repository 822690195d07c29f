# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one comparison's entry points: what a desired state makes
topsrider_state read, what makes a desired state unusable, and compare()
(findings always, pending only for a deploy's desired state). The findings
themselves are tested in tests/unit/plugins/plugin_utils/test__drift.py."""
import copy
import hashlib
import json

import pytest

from ansible_collections.gcu.topsrider.plugins.module_utils import _compare

MANIFEST = {"version": "2.5.136", "files": [
    {"type": "deb", "package": "tops-sdk", "version": "2.5.136-1", "file": "tops-sdk_2.5.136-1_amd64.deb",
     "sha256": "11" * 32},
    {"type": "wheel", "package": "torch_gcu", "python": "3.11", "version": "2.13.0+2.5.136",
     "file": "torch_gcu-2.13.0+2.5.136-cp311-cp311-linux_x86_64.whl", "sha256": "22" * 32}]}
ENV = "/etc/profile.d/topsrider.sh"
DRIFT = {"node": "n1", "manifest": MANIFEST, "hold": True, "python": "/usr/bin/python3",
         "library": {"name": "libeccl.so", "package": "tops-eccl"}, "expected_count": None,
         "require_healthy": True, "files": {ENV: {"content": "x\n", "mode": "0644", "owner": "root",
                                                  "group": "root"}}}
STAGE = "/var/cache/topsrider/2.5.136"
FACTS = "/etc/ansible/facts.d/topsrider.fact"
DEPLOY = dict(DRIFT, stage_path=STAGE, manifest_sha256="33" * 32, facts_file=FACTS)


def test_drift_reads_the_debs_files_python_library_and_cards():
    assert _compare.desired_reads(DRIFT) == {
        "packages": ["tops-sdk"], "package_files": [], "files": [ENV], "python": "/usr/bin/python3",
        "library": "libeccl.so", "library_package": "tops-eccl", "devices": True, "services": []}
    # The drift check's package_files: every deb's files are verified too.
    assert _compare.desired_reads(dict(DRIFT, package_files=True))["package_files"] == ["tops-sdk"]


def test_a_deploy_also_reads_the_local_facts_and_every_staged_file():
    files = _compare.desired_reads(DEPLOY)["files"]
    assert files == [ENV, FACTS, STAGE + "/tops-sdk_2.5.136-1_amd64.deb",
                     STAGE + "/torch_gcu-2.13.0+2.5.136-cp311-cp311-linux_x86_64.whl", STAGE + "/manifest.json"]


@pytest.mark.parametrize("change, words", [
    ({"manifest": None}, "bundle manifest"),
    ({"manifest": {"files": "no"}}, "bundle manifest"),
    ({"files": {"relative/x": {}}}, "not an absolute path"),
    ({"files": ["/etc/x"]}, "maps absolute paths"),
    ({"library": {"name": "/usr/lib/libeccl.so"}}, "file name"),
    ({"python": "python3"}, "absolute path"),
    ({"services": "topsrider-card-exporter.service"}, "systemd unit names"),
    ({"services": ["../x.service"]}, "systemd unit names"),
    ({"services": ["topsrider-card-exporter"]}, "systemd unit names"),
    ({"package_files": "yes"}, "package_files is true or false"),
    ({"stage_path": STAGE}, "go together"),
    ({"stage_path": "stage", "manifest_sha256": "33", "facts_file": FACTS}, "stage_path is an absolute path"),
    ({"stage_path": STAGE, "manifest_sha256": "33", "facts_file": "/etc/x\n/evil"}, "facts_file"),
])
def test_an_unusable_desired_state_is_named(change, words):
    desired = dict(DRIFT, **change)
    problems = _compare.desired_problems(desired)
    assert problems and any(words in p for p in problems), problems


def test_a_usable_desired_state_has_no_problem():
    assert _compare.desired_problems(DRIFT) == [] and _compare.desired_problems(DEPLOY) == []
    assert _compare.desired_problems("desired") == [
        "desired is a mapping (playbooks/vars/desired_state.yml's desired_state), got str"]


def _sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


def _converged():
    staged = dict((STAGE + "/" + f["file"],
                   {"exists": True, "sha256": f["sha256"], "mode": "0600", "owner": "root", "group": "root"})
                  for f in MANIFEST["files"])
    staged[STAGE + "/manifest.json"] = {"exists": True, "sha256": "33" * 32, "mode": "0600", "owner": "root",
                                        "group": "root"}
    staged[ENV] = {"exists": True, "type": "file", "sha256": _sha("x\n"), "content": "x\n", "mode": "0644",
                   "owner": "root", "group": "root"}
    staged[FACTS] = {"exists": True, "content": json.dumps({"manifest_sha256": "33" * 32})}
    return {"packages": {"tops-sdk": {"version": "2.5.136-1", "status": "installed", "held": True}},
            "files": staged, "python": None, "library": None, "devices": None}


def test_compare_a_node_at_the_release():
    assert _compare.compare(DEPLOY, _converged()) == {"findings": [], "pending": []}
    # a drift check's desired state has no pending
    assert _compare.compare(DRIFT, _converged()) == {"findings": [], "pending": None}


def test_compare_names_each_difference_once_as_a_finding_and_as_a_reason():
    state = copy.deepcopy(_converged())
    state["files"][ENV].update(mode="0666")
    state["files"][STAGE + "/manifest.json"].update(sha256="44" * 32)
    out = _compare.compare(DEPLOY, state)
    assert [(f["node"], f["category"], f["check"]) for f in out["findings"]] == [("n1", "env", ENV + " mode")]
    assert out["pending"] == ["env %s mode: expected 0644, found 0666" % ENV,
                              "staged bundle: %s/manifest.json differs from the manifest" % STAGE]


LIB = "/usr/local/tops/lib/libtopsrt.so.2.5.136"


def _verified(changed):
    state = _converged()
    state["package_files"] = {"error": None, "packages": {"tops-sdk": changed}}
    return state


def test_a_file_that_differs_from_what_dpkg_installed_is_an_integrity_finding_naming_it():
    desired = dict(DRIFT, package_files=True)
    assert _compare.compare(desired, _verified([]))["findings"] == []
    out = _compare.compare(desired, _verified([
        {"path": LIB, "problem": "changed", "conffile": False, "attrs": "??5??????"},
        {"path": "/etc/tops.conf", "problem": "missing", "conffile": True, "attrs": "missing"}]))["findings"]
    assert [(f["category"], f["check"], f["expected"], f["actual"]) for f in out] == [
        ("integrity", "tops-sdk /etc/tops.conf", "as dpkg installed it", "missing"),
        ("integrity", "tops-sdk " + LIB, "as dpkg installed it", "changed")]
    assert out[1]["detail"].startswith("tops-sdk: %s changed (md5 differs from what dpkg installed); "
                                       "reinstall tops-sdk 2.5.136-1 from the release's deb" % LIB)
    assert out[0]["detail"].startswith("tops-sdk: /etc/tops.conf (conffile) missing (dpkg installed it)")
    # Not asked for (a deploy's desired state): not judged, whatever was read.
    assert _compare.compare(DRIFT, _verified([{"path": LIB, "problem": "changed", "attrs": "??5??????"}]))[
        "findings"] == []


def test_integrity_names_twenty_files_of_a_package_then_counts_the_rest():
    changed = [{"path": "/usr/local/tops/f%02d" % i, "problem": "changed", "attrs": "??5??????"} for i in range(25)]
    out = _compare.compare(dict(DRIFT, package_files=True), _verified(changed))["findings"]
    assert len(out) == 21
    assert [f for f in out if f["check"] == "tops-sdk more files"][0]["actual"] == "5 more changed or missing"


def test_integrity_that_could_not_be_read_is_one_finding():
    state = _converged()
    state["package_files"] = {"error": "`dpkg --verify` failed (rc=2): boom", "packages": {}}
    out = _compare.compare(dict(DRIFT, package_files=True), state)["findings"]
    assert [(f["category"], f["check"], f["detail"]) for f in out] == [
        ("integrity", "package files", "`dpkg --verify` failed (rc=2): boom")]


def test_the_drift_check_reads_the_services_it_names():
    assert _compare.desired_reads(dict(DRIFT, services=["topsrider-card-exporter.service"]))["services"] == [
        "topsrider-card-exporter.service"]


@pytest.mark.parametrize("svc, found", [
    ({"deployed": False, "active": None, "error": None}, []),
    ({"deployed": True, "active": "active", "error": None}, []),
    ({"deployed": True, "active": "inactive", "error": None}, [("active", "inactive")]),
    ({"deployed": True, "active": "failed", "error": None}, [("active", "failed")]),
    ({"deployed": True, "active": None, "error": "System has not been booted with systemd"}, [("active", "unknown")]),
])
def test_a_deployed_service_that_is_not_active_is_a_service_finding(svc, found):
    state = {"services": {"topsrider-card-exporter.service": svc}}
    got = _compare.service_findings("n1", state)
    assert [(f["expected"], f["actual"]) for f in got] == found
    assert all(f["category"] == "service" and f["check"] == "topsrider-card-exporter.service running"
               and "topsrider-card-exporter.service is" in f["detail"] for f in got)
    if svc["error"]:
        assert svc["error"] in got[0]["detail"]
    # and through the one comparison
    assert [f for f in _compare.compare(DRIFT, state)["findings"] if f["category"] == "service"] == got


def test_service_is_a_category_and_a_check_of_its_own():
    assert "service" in _compare.CATEGORIES and "service" in _compare.CHECKS
