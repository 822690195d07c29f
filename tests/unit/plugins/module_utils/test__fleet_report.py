# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report of deploy, verify and rollback as plain text (printed,
never wrapped) and as JUnit XML (valid against the JUnit schema; a host the
run never reached is <skipped>)."""
import copy
import json
import functools
import os

import pytest
import xmlschema
import yaml

from ansible_collections.gcu.topsrider.plugins.module_utils import _fleet_report

HERE = os.path.dirname(os.path.abspath(__file__))
XSD = os.path.abspath(os.path.join(HERE, "..", "..", "fixtures", "junit.xsd"))
LONG = "8 cards healthy, ECCL ok at level collective" + ", and a long tail" * 12

# The shape tasks/finish.yml writes (an upgrade halted on node4: restored, failed).
REPORT = {
    "kind": "deploy", "id": "20261123T101500Z-ab12", "check_mode": False, "written": "2026-11-23T10:16:02Z",
    "summary": {"ok": 2, "failed": 1, "unreachable": 1, "pending": 0, "not_started": 1, "changed": 2},
    "unreachable_hosts": ["t20-node-3"],
    "hosts": [
        {"host": "t20-node-1", "result": "ok", "version": "2.5.140", "changed": True, "duration_s": 41.23,
         "detail": LONG},
        {"host": "t20-node-2", "result": "ok", "version": "2.5.140", "changed": True, "duration_s": 40.0,
         "detail": "upgraded from 2.5.136"},
        {"host": "t20-node-3", "result": "unreachable", "version": None, "changed": False, "duration_s": None,
         "detail": "unreachable: the run lost this host"},
        {"host": "t20-node-4", "result": "failed", "version": "2.5.136", "changed": False, "duration_s": 12.5,
         "detail": "restored to the state before the deploy (proven); tops-eccl postinst:\nexit 1\t| see log"},
        {"host": "t20-node-5", "result": "not started", "version": None, "changed": False, "duration_s": None,
         "detail": "not started: the rollout has not reached this host (a later batch, or it stopped)"},
    ],
}


def test_junit_validates_and_marks_what_did_not_run_as_skipped():
    xml = _fleet_report.to_junit(REPORT)
    schema = xmlschema.XMLSchema(XSD)
    schema.validate(xml)
    doc = schema.to_dict(xml)
    (suite,) = doc["testsuite"]
    cases = dict((c["@name"], c) for c in suite["testcase"])
    assert list(cases) == ["t20-node-1", "t20-node-2", "t20-node-3", "t20-node-4", "t20-node-5"]
    assert set(cases["t20-node-1"]) & {"failure", "error", "skipped"} == set()
    assert cases["t20-node-3"]["error"]["@type"] == "unreachable"
    assert cases["t20-node-4"]["failure"]["@message"].startswith("restored to the state before the deploy")
    assert "\n" not in cases["t20-node-4"]["failure"]["@message"]
    assert (suite["@tests"], suite["@failures"], suite["@errors"], suite["@skipped"]) == (5, 1, 1, 1)
    assert (doc["@tests"], doc["@failures"], doc["@errors"]) == (5, 1, 1)
    assert suite["@timestamp"] == "2026-11-23T10:16:02" and suite["@package"] == "topsrider-deploy"
    assert float(cases["t20-node-1"]["@time"]) == pytest.approx(41.2)
    assert float(suite["@time"]) == pytest.approx(41.2)  # the longest host: they overlap
    assert cases["t20-node-5"]["skipped"]["@message"] == REPORT["hosts"][4]["detail"]  # not said twice


@pytest.mark.parametrize("kind", ["deploy", "verify", "rollback"])
def test_junit_of_every_kind_and_of_a_clean_run_validates(kind):
    report = copy.deepcopy(REPORT)
    report["kind"] = kind
    report["hosts"] = report["hosts"][:2]
    xml = _fleet_report.to_junit(report)
    xmlschema.XMLSchema(XSD).validate(xml)
    assert 'failures="0"' in xml and 'errors="0"' in xml and 'skipped="0"' in xml
    assert 'name="topsrider-%s"' % kind in xml


@pytest.mark.parametrize("bad,message", [
    ({"hosts": None}, "no list of hosts"),
    ({"hosts": [{"host": "n1", "result": "fine"}]}, "n1: unknown result 'fine'"),
    ({"hosts": [{"result": "ok"}]}, "a host line without a host"),
    ({"written": "yesterday"}, "written: want YYYY-MM-DDTHH:MM:SSZ"),
])
def test_bad_reports_are_refused(bad, message):
    report = dict(REPORT, **bad)
    with pytest.raises(_fleet_report.FleetReportError, match=message):
        _fleet_report.to_junit(report)


def test_text_is_one_aligned_line_per_host_and_nothing_is_cut():
    text = _fleet_report.to_text(REPORT)
    lines = text.rstrip("\n").split("\n")
    assert lines[0] == "TopsRider deploy 20261123T101500Z-ab12"
    assert lines[2] == "2 ok, 1 failed, 1 unreachable, 2 changed, 1 not started."
    assert lines[3] == "Unreachable: t20-node-3."
    table = lines[5:]
    assert len(table) == 6 and table[0].split() == ["host", "result", "version", "changed", "seconds", "detail"]
    assert table[1].endswith(LONG) and table[1].split()[:5] == ["t20-node-1", "ok", "2.5.140", "yes", "41.2"]
    assert table[4].split()[:5] == ["t20-node-4", "failed", "2.5.136", "no", "12.5"]
    assert "tops-eccl postinst: exit 1 | see log" in table[4]
    assert table[3].split()[:5] == ["t20-node-3", "unreachable", "-", "no", "-"]
    assert len(set(line.index(line.split()[1]) for line in table)) == 1  # the result column lines up
    assert all(line == line.rstrip() and "\t" not in line for line in lines)


def test_text_check_mode_heading():
    assert _fleet_report.to_text(dict(REPORT, check_mode=True)).startswith(
        "TopsRider deploy 20261123T101500Z-ab12 (check mode)\n")


def test_text_prints_unwrapped_in_ansibles_yaml_output():
    """The callback's YAML (callback_result_format = yaml) dumps a multi-line
    string as a literal block: every line comes out whole, however long."""
    from ansible.plugins.callback import _AnsibleCallbackDumper  # the callback's own dumper, as it calls it
    text = _fleet_report.to_text(REPORT)
    out = yaml.dump({"msg": text}, Dumper=functools.partial(_AnsibleCallbackDumper, lossy=True),
                    default_flow_style=False, allow_unicode=True)
    assert out.startswith("msg: |")
    shown = [line[2:] for line in out.split("\n")[1:] if line]
    assert shown == [line for line in text.rstrip("\n").split("\n") if line]


REAL = os.path.abspath(os.path.join(HERE, "..", "..", "fixtures", "reports"))


@pytest.mark.parametrize("name", sorted(os.listdir(REAL)))
def test_real_reports(name):
    """Reports as tasks/finish.yml wrote them in molecule's fleet scenario
    (deploy-mid-rollout.json: the upgrade after its third batch, node4 not reached
    yet; deploy-failed-upgrade.json: node4 failed, restored, a multi-line detail)."""
    with open(os.path.join(REAL, name)) as f:
        report = json.load(f)
    xml = _fleet_report.to_junit(report)
    schema = xmlschema.XMLSchema(XSD)
    schema.validate(xml)
    (suite,) = schema.to_dict(xml)["testsuite"]
    outcome = dict((c["@name"], (set(c) & {"failure", "error", "skipped"} or {"passed"}).pop())
                   for c in suite["testcase"])
    want = {"ok": "passed", "failed": "failure", "unreachable": "error", "not started": "skipped",
            "pending": "skipped"}
    assert outcome == dict((h["host"], want[h["result"]]) for h in report["hosts"])
    text = _fleet_report.to_text(report)
    for h in report["hosts"]:
        (line,) = [t for t in text.split("\n") if t.startswith(h["host"] + " ")]
        assert line.split()[1] == h["result"].split()[0] and line.endswith(" ".join(h["detail"].split()))
