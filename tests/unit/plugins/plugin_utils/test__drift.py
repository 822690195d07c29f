# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drift comparison and the four report forms, on a clean node state and one
tamper per category; the XML is validated against a JUnit schema and the
Prometheus text parsed by prometheus_client's own parser."""
import copy
import hashlib
import json
import os

import pytest
import xmlschema
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gcu.topsrider.plugins.module_utils import _compare
from ansible_collections.gcu.topsrider.plugins.plugin_utils import _drift

HERE = os.path.dirname(os.path.abspath(__file__))
XSD = os.path.abspath(os.path.join(HERE, "..", "..", "fixtures", "junit.xsd"))
ENV = "/etc/profile.d/topsrider.sh"
LD = "/etc/ld.so.conf.d/topsrider.conf"
ENV_TEXT = "# Managed\nexport ECCL_DEBUG=WARN\nexport ENFLAME_VISIBLE_DEVICES=all\n"
LD_TEXT = "/usr/local/tops/lib\n"
LIB = "/usr/local/tops/lib/libeccl.so"
MANIFEST = {"version": "2.5.136", "files": [
    {"type": "deb", "package": "tops-sdk", "version": "2.5.136-1"},
    {"type": "deb", "package": "tops-eccl", "version": "2.5.136-1"},
    {"type": "wheel", "package": "torch_gcu", "python": "3.11", "version": "2.13.0+2.5.136", "requires_torch": "2.13.0"},
    {"type": "wheel", "package": "torch_gcu", "python": "3.10", "version": "2.13.0+2.5.136", "requires_torch": "2.13.0"},
]}
DESIRED = {
    "manifest": MANIFEST, "hold": True, "python": "/opt/venvs/train/bin/python", "expected_count": 8,
    "require_healthy": True, "library": {"name": "libeccl.so", "package": "tops-eccl"},
    "files": {ENV: {"content": ENV_TEXT, "mode": "0644", "owner": "root", "group": "root"},
              LD: {"content": LD_TEXT, "mode": "0644", "owner": "root", "group": "root"}},
}


def sha(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def fileinfo(text):
    return {"exists": True, "type": "file", "mode": "0644", "owner": "root", "group": "root",
            "size": len(text), "sha256": sha(text), "content": text}


CLEAN = {
    "packages": {n: {"version": "2.5.136-1", "status": "installed", "want": "hold", "held": True}
                 for n in ("tops-sdk", "tops-eccl")},
    "files": {ENV: fileinfo(ENV_TEXT), LD: fileinfo(LD_TEXT)},
    "python": {"path": "/opt/venvs/train/bin/python", "python": "3.11", "torch": "2.13.0+cpu",
               "torch_gcu": "2.13.0+2.5.136", "error": None},
    "library": {"name": "libeccl.so", "package": "tops-eccl", "error": None,
                "resolved": [{"path": LIB, "realpath": LIB}], "owned": [{"path": LIB, "realpath": LIB}]},
    "devices": {"count": 8, "pci_count": 8, "source": "query", "error": None,
                "cards": [{"index": i, "bus_id": "b%d" % i, "serial": "s%d" % i, "health": True} for i in range(8)]},
}


def tampered(path, value):
    state = copy.deepcopy(CLEAN)
    target = state
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return state


def with_env(text):
    return tampered(("files", ENV), fileinfo(text))


STRAY = "/usr/lib/x86_64-linux-gnu/libeccl.so"
TAMPERS = [
    # (name, actual, [(category, check, expected, actual)])
    ("package version", tampered(("packages", "tops-eccl", "version"), "2.5.140-1"),
     [("package", "tops-eccl version", "2.5.136-1", "2.5.140-1")]),
    ("package removed", tampered(("packages", "tops-sdk"), {"version": None, "status": "config-files",
                                                            "want": "deinstall", "held": False}),
     [("package", "tops-sdk version", "2.5.136-1", None)]),
    ("package unheld", tampered(("packages", "tops-sdk"), {"version": "2.5.136-1", "status": "installed",
                                                           "want": "install", "held": False}),
     [("package", "tops-sdk hold", "hold", "install")]),
    ("package half-configured", tampered(("packages", "tops-sdk", "status"), "half-configured"),
     [("package", "tops-sdk version", "2.5.136-1", "2.5.136-1 (half-configured)")]),
    ("env edited", with_env(ENV_TEXT.replace("WARN", "INFO")),
     [("env", ENV, "sha256:" + sha(ENV_TEXT), "sha256:" + sha(ENV_TEXT.replace("WARN", "INFO")))]),
    ("env missing", tampered(("files", LD), {"exists": False}),
     [("env", LD, "sha256:" + sha(LD_TEXT), "missing")]),
    ("env mode", tampered(("files", ENV, "mode"), "0666"), [("env", ENV + " mode", "0644", "0666")]),
    ("wheel removed", tampered(("python", "torch_gcu"), None),
     [("wheel", "torch_gcu version", "2.13.0+2.5.136", None)]),
    ("torch moved", tampered(("python", "torch"), "2.14.0"), [("wheel", "torch version", "2.13.0", "2.14.0")]),
    # the one torch rule (_torch_rule.torch_matches): a pre-release is not its release
    ("torch pre-release", tampered(("python", "torch"), "2.13.0a0"), [("wheel", "torch version", "2.13.0", "2.13.0a0")]),
    ("no torch", tampered(("python", "torch"), None), [("wheel", "torch version", "2.13.0", None)]),
    ("python gone", tampered(("python", "error"), "/opt/venvs/train/bin/python does not exist"),
     [("wheel", "training python", "/opt/venvs/train/bin/python", None)]),
    ("no wheel for python", tampered(("python", "python"), "3.12"),
     [("wheel", "torch_gcu wheel for python 3.12", "a wheel in the bundle", None)]),
    ("stray libeccl", tampered(("library", "resolved"), [{"path": STRAY, "realpath": STRAY},
                                                         {"path": LIB, "realpath": LIB}]),
     [("library", "libeccl.so resolves", [LIB], [STRAY, LIB])]),
    ("libeccl not resolved", tampered(("library", "resolved"), []),
     [("library", "libeccl.so resolves", [LIB], [])]),
    ("card missing", tampered(("devices", "count"), 7), [("device", "card count", 8, 7)]),
    ("efsmi broken", tampered(("devices", "error"), "`efsmi -q` rc=1: driver not loaded"),
     [("device", "cards visible", 8, None)]),
    ("card unhealthy", tampered(("devices", "cards", 3, "health"), False),
     [("health", "gcu3 health", "healthy", "unhealthy")]),
]


def test_clean_node_has_no_findings():
    assert _compare.node_findings("n1", DESIRED, CLEAN) == []


@pytest.mark.parametrize("name,actual,want", TAMPERS, ids=[t[0] for t in TAMPERS])
def test_each_tamper_is_one_finding_of_its_category(name, actual, want):
    found = _compare.node_findings("n2", DESIRED, actual)
    assert [(f["category"], f["check"], f["expected"], f["actual"]) for f in found] == want
    assert all(f["node"] == "n2" for f in found)


def test_env_finding_carries_a_diff():
    found = _compare.node_findings("n", DESIRED, with_env(ENV_TEXT.replace("WARN", "INFO")))
    assert "-export ECCL_DEBUG=WARN" in found[0]["detail"] and "+export ECCL_DEBUG=INFO" in found[0]["detail"]


def test_hold_not_checked_when_not_wanted():
    desired = dict(DESIRED, hold=False)
    assert _compare.node_findings("n", desired, tampered(("packages", "tops-sdk", "held"), False)) == []


def test_count_falls_back_to_pci_when_not_expected():
    desired = dict(DESIRED, expected_count=None)
    actual = tampered(("devices", "count"), 7)
    assert [(f["expected"], f["actual"]) for f in _compare.node_findings("n", desired, actual)] == [(8, 7)]


@pytest.mark.parametrize("given", [8, "8"])
def test_expected_count_given_as_text_compares_as_a_number(given):
    # -e topsrider_expected_count=8 on the command line arrives as a string.
    desired = dict(DESIRED, expected_count=given)
    assert _compare.node_findings("n", desired, CLEAN) == []
    found = _compare.node_findings("n", desired, tampered(("devices", "count"), 7))
    assert [(f["check"], f["expected"], f["actual"]) for f in found] == [("card count", 8, 7)]


def test_probe_problems_become_findings():
    actual = dict(CLEAN, probe={"healthy": False, "problems": [
        {"code": "TORCH_GCU_MISSING", "message": "torch_gcu missing", "hint": "install it"},
        {"code": "LIBRARY_DUPLICATE", "message": "two copies", "hint": "remove one"}]})
    found = _compare.node_findings("n", DESIRED, actual)
    assert [(f["category"], f["check"]) for f in found] == [
        ("wheel", "eccl_probe TORCH_GCU_MISSING"), ("library", "eccl_probe LIBRARY_DUPLICATE")]


def test_several_tampers_sorted_by_category():
    actual = tampered(("devices", "cards", 1, "health"), False)
    actual["packages"]["tops-eccl"]["version"] = "2.5.140-1"
    assert [f["category"] for f in _compare.node_findings("n", DESIRED, actual)] == ["package", "health"]


def fleet(results, hosts=("n1", "n2", "n3")):
    return _drift.build_report(list(hosts), results, "20250101T000000Z", now=1735689600.0,
                               meta={"version": "2.5.136"})


DRIFT_N2 = _compare.node_findings("n2", DESIRED, tampered(("devices", "cards", 3, "health"), False))
OK = {"checked_at": 1735689601.5, "error": None, "findings": []}


@pytest.mark.parametrize("results,status,code", [
    ({"n1": OK, "n2": OK, "n3": OK}, "clean", 0),
    ({"n1": OK, "n2": dict(OK, findings=DRIFT_N2), "n3": OK}, "drift", 3),
    ({"n1": OK, "n2": dict(OK, findings=DRIFT_N2)}, "failed", 4),
    ({"n1": OK, "n2": OK, "n3": dict(OK, error="Read the node's state in one pass: boom")}, "failed", 4),
])
def test_fleet_status_and_exit_code(results, status, code):
    report = fleet(results)
    assert (report["status"], report["exit_code"]) == (status, code)
    assert json.loads(json.dumps(report)) == report


def test_unreachable_node_is_a_finding_of_its_own():
    report = fleet({"n1": OK, "n2": OK})
    assert [(n["node"], n["status"], n["categories"]) for n in report["nodes"]] == [
        ("n1", "clean", []), ("n2", "clean", []), ("n3", "unreachable", ["unreachable"])]
    assert [(f["node"], f["category"]) for f in report["findings"]] == [("n3", "unreachable")]
    assert report["summary"]["by_category"]["unreachable"] == 1


SAMPLE = fleet({"n1": OK, "n2": dict(OK, findings=DRIFT_N2 + _compare.node_findings(
    "n2", DESIRED, with_env(ENV_TEXT + 'export X="a|b"\n')))})


def test_markdown_names_nodes_and_findings():
    md = _drift.to_markdown(SAMPLE)
    assert "Status: **failed** (exit 4)" in md
    assert "| n2 | drift | 2 | env, health |" in md
    assert "| n3 | unreachable | 1 | unreachable |" in md
    assert "| n2 | health | gcu3 health | healthy | unhealthy |" in md
    assert "+export X=\"a|b\"" in md  # the diff, in a code block


def test_junit_validates_and_has_a_case_per_node_and_check():
    xml = _drift.to_junit(SAMPLE)
    schema = xmlschema.XMLSchema(XSD)
    schema.validate(xml)
    doc = schema.to_dict(xml)
    suites = doc["testsuite"]
    assert [s["@name"] for s in suites] == ["n1", "n2", "n3"]
    for s in suites:
        assert [c["@name"] for c in s["testcase"]] == ["reachable"] + list(_drift.CHECKS)
    n2 = dict((c["@name"], c) for c in suites[1]["testcase"])
    assert sorted(k for k, c in n2.items() if "failure" in c) == ["env", "health"]
    assert "gcu3 health: expected healthy, actual unhealthy" in n2["health"]["failure"]["@message"]
    assert (suites[1]["@failures"], suites[1]["@errors"], suites[2]["@errors"]) == (2, 0, 1)
    assert (doc["@tests"], doc["@failures"], doc["@errors"]) == (3 * (1 + len(_drift.CHECKS)), 2, 1)
    # The unreachable node: one error (reachable), its nine checks did not run.
    n3 = dict((c["@name"], c) for c in suites[2]["testcase"])
    assert "error" in n3["reachable"] and suites[2]["@skipped"] == len(_drift.CHECKS) == 9
    assert all(set(n3[c]) & {"error", "failure", "skipped"} == {"skipped"} for c in _drift.CHECKS)
    assert n3["health"]["skipped"]["@message"] == "not checked: the node was unreachable"
    assert [s["@skipped"] for s in suites] == [0, 0, 9]


def test_junit_schema_rejects_what_is_not_junit():
    with pytest.raises(xmlschema.XMLSchemaValidationError):
        xmlschema.XMLSchema(XSD).validate("<testsuites><testcase name='x'/></testsuites>")


def test_prometheus_text_parses():
    families = dict((f.name, f) for f in text_string_to_metric_families(_drift.to_prometheus(SAMPLE)))
    assert set(families) == {"topsrider_drift_findings", "topsrider_drift_category_findings",
                             "topsrider_drift_last_check_timestamp_seconds", "topsrider_drift_healthy",
                             "topsrider_drift_up", "topsrider_drift_last_success_timestamp_seconds",
                             "topsrider_drift_check_duration_seconds"}

    def by_node(name):
        return dict((s.labels["node"], s.value) for s in families[name].samples)

    assert by_node("topsrider_drift_findings") == {"n1": 0, "n2": 2, "n3": 1}
    assert by_node("topsrider_drift_healthy") == {"n1": 1, "n2": 0, "n3": 0}
    assert by_node("topsrider_drift_up") == {"n1": 1, "n2": 1, "n3": 0}
    assert by_node("topsrider_drift_last_check_timestamp_seconds") == {
        "n1": 1735689601.5, "n2": 1735689601.5, "n3": 1735689600.0}
    # n2 has drift, but its check completed: a success. n3 never answered: 0 (never).
    assert by_node("topsrider_drift_last_success_timestamp_seconds") == {
        "n1": 1735689601.5, "n2": 1735689601.5, "n3": 0}
    assert by_node("topsrider_drift_check_duration_seconds") == {"n1": 1.5, "n2": 1.5}
    cats = dict(((s.labels["node"], s.labels["category"]), s.value)
                for s in families["topsrider_drift_category_findings"].samples)
    assert len(cats) == 3 * len(_drift.CATEGORIES)
    assert [k for k, v in sorted(cats.items()) if v] == [("n2", "env"), ("n2", "health"), ("n3", "unreachable")]


def test_last_success_survives_a_run_that_cannot_check_the_node():
    first = fleet({"n1": OK, "n2": OK, "n3": OK})
    second = _drift.build_report(["n1", "n2", "n3"], {"n1": dict(OK, checked_at=1735776001.0),
                                                      "n2": dict(OK, error="boom", checked_at=1735776001.0)},
                                 "drift-2", now=1735776000.0, previous=json.loads(json.dumps(first)))
    nodes = dict((n["node"], n) for n in second["nodes"])
    assert nodes["n1"]["last_success"] == 1735776001.0
    assert nodes["n2"]["last_success"] == nodes["n3"]["last_success"] == 1735689601.5
    assert (nodes["n2"]["duration_s"], nodes["n3"]["duration_s"]) == (1.0, None)
    families = dict((f.name, f) for f in text_string_to_metric_families(_drift.to_prometheus(second)))
    assert dict((s.labels["node"], s.value) for s in families["topsrider_drift_last_success_timestamp_seconds"].samples) \
        == {"n1": 1735776001.0, "n2": 1735689601.5, "n3": 1735689601.5}
    # No previous report, or one from before last_success existed: never.
    for previous in (None, {"nodes": [{"node": "n3", "status": "clean"}]}):
        third = _drift.build_report(["n3"], {}, "drift-3", now=1735776000.0, previous=previous)
        assert third["nodes"][0]["last_success"] is None


def test_prometheus_label_escaping():
    report = fleet({'we"ird\\node': OK}, hosts=['we"ird\\node'])
    samples = [s for f in text_string_to_metric_families(_drift.to_prometheus(report)) for s in f.samples]
    assert set(s.labels["node"] for s in samples) == {'we"ird\\node'}


def test_unknown_category_is_refused():
    with pytest.raises(_compare.DriftError):
        _compare.finding("n", "mood", "c", 1, 2)


# ------------------------------------------------- deploy's fast path --

FACTS = "/etc/ansible/facts.d/topsrider.fact"
STAGE = "/var/cache/topsrider/2.5.136"
PENDING_MANIFEST = {"version": "2.5.136", "files": [
    {"file": "tops-sdk_2.5.136-1_amd64.deb", "sha256": "11" * 32},
    {"file": "torch_gcu-2.13.0+2.5.136-cp311-cp311-linux_x86_64.whl", "sha256": "22" * 32}]}
MANIFEST_SHA = "33" * 32


def _staged(sha=None, mode="0600", owner="root"):
    return {"exists": True, "sha256": sha, "mode": mode, "owner": owner, "group": "root"}


def _converged_files():
    files = {FACTS: {"exists": True, "content": json.dumps({"version": "2.5.136", "manifest_sha256": MANIFEST_SHA})},
             STAGE + "/manifest.json": _staged(MANIFEST_SHA)}
    for f in PENDING_MANIFEST["files"]:
        files[STAGE + "/" + f["file"]] = _staged(f["sha256"])
    return files


def _pending(findings=(), files=None):
    return _compare.deploy_pending_reasons(list(findings), _converged_files() if files is None else files,
                                           PENDING_MANIFEST, MANIFEST_SHA, STAGE, FACTS)


def test_pending_nothing_when_everything_is_in_place():
    assert _pending() == []


def test_pending_every_drift_finding_is_a_reason():
    reasons = _pending([_compare.finding("n1", "env", "/etc/profile.d/topsrider.sh", "sha256:" + "a" * 64, "missing")])
    assert len(reasons) == 1 and reasons[0].startswith("env /etc/profile.d/topsrider.sh: expected sha256:aaa")


@pytest.mark.parametrize("facts, why", [
    (None, "do not record this manifest"),
    ({"exists": True, "content": "{not json"}, "do not record this manifest"),
    ({"exists": True, "content": json.dumps({"manifest_sha256": "44" * 32})}, "do not record this manifest"),
    ({"exists": True, "content": None}, "do not record this manifest"),
    ({"exists": True, "content": "[1, 2]"}, "do not record this manifest"),
])
def test_pending_when_the_local_facts_name_another_release(facts, why):
    files = _converged_files()
    if facts is None:
        del files[FACTS]
    else:
        files[FACTS] = facts
    reasons = _pending(files=files)
    assert len(reasons) == 1 and why in reasons[0]


@pytest.mark.parametrize("change, why", [
    (lambda f: f.pop(STAGE + "/manifest.json"), "manifest.json is missing"),
    (lambda f: f.update({STAGE + "/manifest.json": _staged("55" * 32)}), "manifest.json differs"),
    (lambda f: f.update({STAGE + "/tops-sdk_2.5.136-1_amd64.deb": _staged("00" * 32)}), "amd64.deb differs"),
    (lambda f: f.update({STAGE + "/tops-sdk_2.5.136-1_amd64.deb": _staged("11" * 32, mode="0644")}),
     "is 0644 root:root, not 0600"),
    (lambda f: f.update({STAGE + "/tops-sdk_2.5.136-1_amd64.deb": _staged("11" * 32, owner="nobody")}),
     "is 0600 nobody:root"),
])
def test_pending_when_the_staged_bundle_is_not_complete(change, why):
    files = _converged_files()
    change(files)
    reasons = _pending(files=files)
    assert len(reasons) == 1 and why in reasons[0], reasons


# ---- revoked: the release a node runs on the signed revocation list (docs/signing.md)

REVOKED = [{"version": "2.5.136", "manifest_sha256": "a" * 64, "reason": "ECCL hangs (advisory 7)"},
           {"version": "2.5.120", "reason": "security advisory SA-2026-3"}]


@pytest.mark.parametrize("deployed, reason", [
    ({"version": "2.5.136", "manifest_sha256": "a" * 64}, "ECCL hangs (advisory 7)"),
    # No manifest_sha256 in the entry: every build of the version.
    ({"version": "2.5.120", "manifest_sha256": "c" * 64}, "security advisory SA-2026-3"),
])
def test_a_node_running_a_revoked_release_is_a_finding_of_its_own_with_the_reason(deployed, reason):
    found = _drift.revoked_findings(deployed, "n1", REVOKED, "/srv/revocations.json", 7)
    assert [(f["node"], f["category"], f["check"], f["actual"]) for f in found] == [
        ("n1", "revoked", "release " + deployed["version"], "revoked: " + reason)]
    assert "/srv/revocations.json (serial 7)" in found[0]["detail"] and reason in found[0]["detail"]
    report = _drift.build_report(["n1"], {"n1": {"checked_at": 1.0, "error": None, "findings": found}}, "r1", now=0.0)
    assert report["status"] == "drift" and report["summary"]["by_category"]["revoked"] == 1


@pytest.mark.parametrize("deployed, revoked", [
    ({"version": "2.5.136", "manifest_sha256": "b" * 64}, REVOKED),  # another build of 2.5.136
    ({"version": "2.5.140", "manifest_sha256": "a" * 64 + "x"}, REVOKED),
    ({}, REVOKED),  # nothing deployed
    (None, REVOKED),
    ({"version": "2.5.136", "manifest_sha256": "a" * 64}, []),  # no list
])
def test_no_revoked_finding(deployed, revoked):
    assert _drift.revoked_findings(deployed, "n1", revoked, "/srv/revocations.json") == []
