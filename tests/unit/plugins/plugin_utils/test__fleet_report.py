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

from ansible_collections.gcu.topsrider.plugins.plugin_utils import _fleet_report

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


def test_text_is_one_aligned_line_per_host_that_fits_a_terminal():
    text = _fleet_report.to_text(REPORT)
    lines = text.rstrip("\n").split("\n")
    assert max(len(line) for line in lines) <= _fleet_report.TEXT_WIDTH
    assert lines[0] == "TopsRider deploy 20261123T101500Z-ab12"
    assert lines[2] == "2 ok, 1 failed, 1 unreachable, 2 changed, 1 not started."
    assert lines[3] == "Unreachable: t20-node-3."
    table = lines[5:11]
    assert lines[11:] == ["", "(A line with ' ... ' is cut to fit a terminal: the JSON and Markdown reports have all of it.)"]
    assert len(table) == 6 and table[0].split() == ["host", "result", "version", "changed", "seconds", "detail"]
    assert len(table[1]) <= _fleet_report.TEXT_WIDTH and in_order(table[1][table[1].index("8 cards"):], LONG)
    assert table[1].split()[:5] == ["t20-node-1", "ok", "2.5.140", "yes", "41.2"]
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


def in_order(cut, detail):
    """Whether each piece of a cut detail (between '...') is whole words of the detail, in its order."""
    words, at = detail.split(" "), 0
    for piece in [p for p in cut.split("...") if p.strip()]:
        piece = piece.strip().split(" ")
        while at + len(piece) <= len(words) and words[at:at + len(piece)] != piece:
            at += 1
        if at + len(piece) > len(words):
            return False
        at += len(piece)
    return True


REVOKED_ROLLBACK = ("back from 2.5.140 to 2.5.136 (snapshot 20261127T101500Z-ab12); packages, holds, env and loader files,"
                    " torch_gcu wheel and facts proven; REVOKED release (2.5.136), gone back to with"
                    " topsrider_rollback_allow_revoked=true")
UNHEALTHY_DEPLOY = ("restored to the state before the deploy (proven); Prove the cards are there and healthy: gcu_devices:"
                    " 1 problem(s): unhealthy GCU(s): GCU 3 (0000:03:00.0, serial S3) (health gcu3 reported bad by efsmi);"
                    " check dmesg, reload the enflame driver, reseat or RMA the card")
with open(os.path.join(HERE, "..", "..", "fixtures", "reports", "deploy-failed-upgrade.json")) as _f:
    DPKG_FAILED = json.load(_f)["hosts"][3]["detail"]


@pytest.mark.parametrize("detail, width, kept, want", [
    # The issue's rollback with the revocation override: REVOKED and the override stay, and what went back where.
    (REVOKED_ROLLBACK, 103, ["back from 2.5.140 to 2.5.136", "REVOKED", "topsrider_rollback_allow_revoked=true"],
     "back from 2.5.140 to 2.5.136 (snapshot ... REVOKED ... to with topsrider_rollback_allow_revoked=true"),
    # The issue's failed deploy: the card that failed, its health, and what the run did.
    (UNHEALTHY_DEPLOY, 103, ["restored to the state before the", "unhealthy GCU(s): GCU 3", "health gcu3"], None),
    # dpkg's failure: the outcome, the verdict and the vendor's words; the paths go.
    (DPKG_FAILED, 103, ["restored to the state before the deploy (proven);", "failed (rc=1):", "SIMULATED postinst"],
     "restored to the state before the deploy (proven); ... failed (rc=1): tops-eccl: SIMULATED postinst ..."),
    # A deferral: what happened and who holds which card (the end of a long command line goes).
    ("deferred, nothing was changed: in use: pid 846 (root: /opt/venvs/train/bin/python -c import time, torch,"
     " torch_gcu; torch.gcu.set_device(0); time.sleep(100000); print('x' * 80)) holds gcu0", 103,
     ["deferred, nothing was changed: in use: pid 846", "holds gcu0"], None),
    # A refusal keeps its first word where it was.
    ("refused, nothing was changed: topsrider_env: ECCL_ALGO: the value 'x' is not one of ring, tree (the release's"
     " env file lists them); fix the inventory and run again; the node keeps its env file as it is at 2.5.136", 103,
     ["refused, nothing was changed: topsrider_env: ECCL_ALGO"], None),
    # Narrow: the decisive words alone.
    (REVOKED_ROLLBACK, 60, ["REVOKED", "topsrider_rollback_allow_revoked=true"], None),
    # A refusal whose verdict is at the end, after a long clause of detail.
    ("refused, nothing was changed: " + "the node's list is newer than this one " * 4 + "and gcu7 is MISSING", 80,
     ["refused,", "gcu7", "MISSING"], None),
    # Fits: as it is.
    ("deployed 2.5.140", 103, ["deployed 2.5.140"], "deployed 2.5.140"),
    # Nothing decides: its head, and the rest elided from the middle.
    ("a b c d e f g h i j k l m n o p q r s t u v w x y z " * 4, 41, ["a b c d e f g h i j k l m n o p q r s"],
     "a b c d e f g h i j k l m n o p q r s ..."),
    ("a b c d e f g h i j k l m n o p q r s t u v w x y z " * 4, 75, ["a b c d e f g h i j k l m n o p q r s t u v w x y"],
     "a b c d e f g h i j k l m n o p q r s t u v w x y z a b c d e ... v w x y z"),
])
def test_a_cut_detail_keeps_the_words_that_decide(detail, width, kept, want):
    cut = _fleet_report.cut_detail(detail, width)
    assert len(cut) <= width and in_order(cut, " ".join(detail.split()))
    for words in kept:
        assert words in cut, (words, cut)
    assert "... ..." not in cut
    if want is not None:
        assert cut == want


def test_a_cut_never_splits_a_word_but_a_decisive_one_too_long_for_the_line():
    assert _fleet_report.cut_detail("x" * 50 + " REVOKED", 30) == "... REVOKED"
    assert _fleet_report.cut_detail("REVOKED topsrider_x=" + "y" * 50, 30) == "REVOKED ..."
    cut = _fleet_report.cut_detail("topsrider_x=" + "y" * 50, 30)
    assert len(cut) == 30 and cut.startswith("topsrider_x=y") and cut.endswith("y ...")
    assert _fleet_report.cut_detail("pad " * 40 + "REVOKED", 30).endswith("REVOKED")


def test_the_issues_rollback_line_keeps_revoked_in_the_printed_table():
    report = {"kind": "rollback", "id": "20261127T101500Z-ab12", "hosts": [
        {"host": "topsrider-fleet-node1", "result": "ok", "version": "2.5.136", "changed": True, "duration_s": 52.3,
         "detail": REVOKED_ROLLBACK}]}
    (line,) = [t for t in _fleet_report.to_text(report).split("\n") if t.startswith("topsrider-fleet-node1")]
    assert len(line) <= _fleet_report.TEXT_WIDTH and "REVOKED" in line
    assert line.endswith("topsrider_rollback_allow_revoked=true")


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
        detail = " ".join(h["detail"].split())
        assert line.split()[1] == h["result"].split()[0] and len(line) <= _fleet_report.TEXT_WIDTH
        if " ... " in line and not line.endswith(detail):
            assert in_order(line[line.index(detail[:20]):], detail)
        else:
            assert line.endswith(detail)


# ---------------------------------------------------------------- issue 28: deferred nodes, the run's status, Slurm
def rows(*results):
    return [{"host": "n%d" % i, "result": r, "changed": r == "ok"} for i, r in enumerate(results)]


@pytest.mark.parametrize("results, status", [
    (("ok", "ok"), "ok"),
    (("ok", "deferred"), "deferred"),
    (("deferred", "failed"), "failed"),
    (("ok", "unreachable", "deferred"), "failed"),
    (("ok", "not started"), "in progress"),
    (("deferred", "pending"), "in progress"),
    ((), "ok"),
])
def test_the_runs_status(results, status):
    summary = _fleet_report.summarize(rows(*results))
    assert summary["status"] == status
    assert summary["deferred"] == results.count("deferred") and summary["ok"] == results.count("ok")
    assert summary["slurm"] is None


DRAIN = {"drained": True, "owner": None, "before": {"state": "allocated", "drain": False, "reason": ""},
         "after": {"state": "draining", "drain": True, "reason": "gcu.topsrider deploy X: upgrade"}}
WAIT = {"free": True, "waited_s": 61.2, "two_releases": [],
        "jobs_seen": [{"id": "17", "name": "train", "user": "alice", "left": True, "end_state": "COMPLETED",
                       "exit_code": "0:0", "restarts_before": 0, "restarts": 0, "stopped_from_outside": False}]}
BACK = {"resumed": True, "owner": "run", "after": {"state": "idle", "drain": False, "reason": "",
                                                   "features": ["tops_2.5.140"]},
        "cluster": {"two_releases": []}}


def test_a_slurm_line_of_a_node_drained_waited_for_and_resumed():
    line = _fleet_report.slurm_line({"node": "n1", "drain": DRAIN, "wait": WAIT, "back": BACK})
    assert line["drained_by_run"] and line["resumed"] and line["other_drain"] is None
    assert line["state_after"] == "idle" and line["features_after"] == ["tops_2.5.140"]
    assert [j["id"] for j in line["jobs_waited"]] == ["17"] and line["waited_s"] == 61.2


def test_drains_by_others_before_and_during_the_run_are_counted_and_kept():
    admin = {"drained": False, "owner": "other", "before": {"state": "drained", "drain": True, "reason": "admin: bios"},
             "after": {"state": "drained", "drain": True, "reason": "admin: bios"}}
    admin_back = {"resumed": False, "owner": "other", "after": {"state": "drained", "drain": True,
                                                                "reason": "admin: bios", "features": ["tops_2.5.140"]}}
    during_back = {"resumed": False, "owner": "other", "after": {"state": "drained", "drain": True,
                                                                 "reason": "admin: swap cable", "features": []}}
    lines = [
        {"host": "n1", "result": "ok", "changed": True,
         "slurm": _fleet_report.slurm_line({"node": "n1", "drain": admin, "wait": WAIT, "back": admin_back})},
        {"host": "n2", "result": "ok", "changed": True,
         "slurm": _fleet_report.slurm_line({"node": "n2", "drain": DRAIN, "wait": {}, "back": during_back})},
        {"host": "n3", "result": "ok", "changed": True,
         "slurm": _fleet_report.slurm_line({"node": "n3", "drain": DRAIN, "wait": WAIT, "back": BACK})},
    ]
    assert lines[0]["slurm"]["other_drain"] == "before" and lines[0]["slurm"]["reason_before"] == "admin: bios"
    assert lines[1]["slurm"]["other_drain"] == "during"
    totals = _fleet_report.summarize(lines)["slurm"]
    assert totals == {"drained": 2, "resumed": 1, "jobs_waited_for": 1, "jobs_killed_or_requeued": 0,
                      "jobs_on_two_releases": 0, "other_drains": 2, "other_drains_kept": 2}


def test_a_resumed_or_changed_drain_by_others_is_not_counted_as_kept():
    admin = dict(DRAIN, drained=False, owner="other", before={"state": "drained", "drain": True, "reason": "admin: a"})
    changed = {"resumed": False, "owner": "other", "after": {"state": "drained", "drain": True, "reason": "admin: b"}}
    line = _fleet_report.slurm_line({"node": "n1", "drain": admin, "wait": {}, "back": changed})
    assert line["other_drain"] == "before" and line["other_drain_kept"] is False


def test_killed_requeued_and_two_release_jobs_are_counted():
    wait = dict(WAIT, jobs_seen=WAIT["jobs_seen"] + [
        {"id": "18", "name": "x", "user": "bob", "left": True, "end_state": "CANCELLED", "stopped_from_outside": True}],
        two_releases=[{"id": "21", "nodes": ["n1", "n2"], "releases": ["2.5.136", "2.5.140"]}])
    back = dict(BACK, cluster={"two_releases": [{"id": "22", "nodes": ["n1", "n3"], "releases": ["a", "b"]}]})
    line = {"host": "n1", "result": "ok", "changed": True,
            "slurm": _fleet_report.slurm_line({"node": "n1", "drain": DRAIN, "wait": wait, "back": back})}
    totals = _fleet_report.summarize([line])["slurm"]
    assert totals["jobs_killed_or_requeued"] == 1 and totals["jobs_on_two_releases"] == 2


def test_text_names_deferred_nodes_the_status_and_what_slurm_saw():
    lines = [{"host": "n1", "result": "deferred", "version": "2.5.136", "changed": False, "duration_s": 3.0,
              "detail": "deferred, nothing was changed: in use: pid 4242 (root: python train.py) holds gcu0"},
             {"host": "n2", "result": "ok", "version": "2.5.140", "changed": True, "duration_s": 40.0,
              "detail": "deployed 2.5.140",
              "slurm": _fleet_report.slurm_line({"node": "n2", "drain": DRAIN, "wait": WAIT, "back": BACK})}]
    summary = _fleet_report.summarize(lines)
    report = dict(REPORT, hosts=lines, summary=summary, status=summary["status"], unreachable_hosts=[])
    text = _fleet_report.to_text(report)
    assert "1 ok, 0 failed, 0 unreachable, 1 changed, 1 deferred." in text
    assert "Status: deferred (not done yet" in text
    assert ("Slurm: 1 node(s) drained by this run, 1 resumed; 1 job(s) waited for, 0 killed or requeued while "
            "their node was held; 0 job(s) seen on two releases; 0 of 0 drain(s) by others left as they were.") in text
    assert "n1    deferred  2.5.136" in text and "holds gcu0" in text
    xml = _fleet_report.to_junit(report)
    xmlschema.XMLSchema(XSD).validate(xml)
    assert 'skipped message="deferred, nothing was changed' in xml


def test_an_unknown_status_is_refused():
    with pytest.raises(_fleet_report.FleetReportError, match="unknown status"):
        _fleet_report.to_text(dict(REPORT, status="maybe"))


# ------------------------------------------------------------ build, markdown --

LINES = [
    {"host": "n1", "result": "ok", "version": "2.5.136", "changed": True, "duration_s": 12.3,
     "detail": "deployed | proven\nnext"},
    # deploy.yml's _current.json: the hosts already at the release, a list
    [{"host": "n2", "result": "ok", "version": "2.5.136", "changed": False, "duration_s": 1.0,
      "detail": "already at 2.5.136"},
     {"host": "n1", "result": "ok", "version": "2.5.136", "changed": False, "duration_s": 0.1,
      "detail": "already at 2.5.136"}],
]


def test_build_one_row_per_target_a_hosts_own_line_first():
    report = _fleet_report.build(LINES, "deploy", "r1", ["n1", "n2", "n3", "n4"], lost=["n4"],
                                 missing_as="not started", check_mode=False, now=0)
    assert [(r["host"], r["result"]) for r in report["hosts"]] == [
        ("n1", "ok"), ("n2", "ok"), ("n3", "not started"), ("n4", "unreachable")]
    assert report["hosts"][0]["detail"].startswith("deployed")
    assert report["hosts"][2]["detail"].startswith("not started: the rollout has not reached this host")
    assert report["hosts"][3]["detail"] == "unreachable: the run lost this host"
    assert report["status"] == "failed" and report["summary"]["changed"] == 1
    assert report["unreachable_hosts"] == ["n4"]
    assert report["written"] == "1970-01-01T00:00:00Z" and report["check_mode"] is False


@pytest.mark.parametrize("missing_as, result, words", [
    ("unreachable", "unreachable", "no result: unreachable, or the run stopped before this host"),
    ("pending", "pending", "no result yet: a later batch"),
])
def test_build_a_target_without_a_line(missing_as, result, words):
    report = _fleet_report.build([], "verify", "r1", ["n1"], missing_as=missing_as)
    assert report["hosts"] == [{"host": "n1", "result": result, "version": None, "changed": False,
                                "duration_s": None, "detail": words}]


@pytest.mark.parametrize("args, message", [
    (([{"result": "ok"}], "deploy", "r1", ["n1"]), "without a host"),
    (([{"host": "n1", "result": "great"}], "deploy", "r1", ["n1"]), "unknown result"),
    ((["text"], "deploy", "r1", ["n1"]), "not a line"),
    (([], "deploy", "r1", ["n1"], (), "later"), "missing_as"),
])
def test_build_refuses_what_is_not_a_run_s_lines(args, message):
    with pytest.raises(_fleet_report.FleetReportError, match=message):
        _fleet_report.build(*args)


def test_build_refuses_a_run_id_that_is_not_a_file_name():
    with pytest.raises(ValueError):
        _fleet_report.build([], "deploy", "../evil", ["n1"])


def test_markdown_of_a_run():
    report = _fleet_report.build(LINES, "deploy", "r1", ["n1", "n2", "n3"], missing_as="not started",
                                 check_mode=True, now=0)
    assert _fleet_report.to_markdown(report) == (
        "# TopsRider deploy r1 (check mode)\n"
        "\n"
        "2 ok, 0 failed, 0 unreachable, 1 changed, 1 not started.\n"
        "\n"
        "Status: **in progress**\n"
        "\n"
        "| host | result | version | changed | seconds | detail |\n"
        "|---|---|---|---|---|---|\n"
        "| n1 | ok | 2.5.136 | yes | 12.3 | deployed / proven next |\n"
        "| n2 | ok | 2.5.136 | no | 1.0 | already at 2.5.136 |\n"
        "| n3 | not started | - | no | - | not started: the rollout has not reached this host "
        "(a later batch, or it stopped) |\n")


def test_markdown_slurm_unreachable_and_a_long_detail():
    slurm = {"node": "n1", "drained_by_run": True, "resumed": True, "jobs_waited": [{"id": "7"}],
             "two_releases": [], "other_drain": None}
    lines = [{"host": "n1", "result": "deferred", "version": None, "changed": False, "duration_s": 3,
              "detail": "x" * 300, "slurm": slurm}]
    text = _fleet_report.to_markdown(_fleet_report.build(lines, "deploy", "r1", ["n1", "n2"], lost=["n2"]))
    assert "\n\nSlurm: 1 node(s) drained by this run, 1 resumed; 1 job(s) waited for" in text
    assert "\nUnreachable: n2.\n" in text
    assert "| n1 | deferred | - | no | 3 | %s |\n" % ("x" * 300) in text  # the whole detail: the file is for details


# ---- issue 31: a report from every run ------------------------------------

def test_a_batch_that_starts_is_in_progress_and_the_run_too():
    lines = _fleet_report.in_progress_lines(["n1", "n2"], now=1795683600)
    assert [(l["host"], l["result"]) for l in lines] == [("n1", "in progress"), ("n2", "in progress")]
    assert lines[0]["detail"].startswith("in progress (started 2026-11-26T")
    report = _fleet_report.build([lines[0]], "deploy", "r1", ["n0", "n1", "n3"], (), "not started")
    assert [r["result"] for r in report["hosts"]] == ["not started", "in progress", "not started"]
    assert report["status"] == "in progress" and report["summary"]["in_progress"] == 1
    text = _fleet_report.to_text(report)
    assert "0 ok, 0 failed, 0 unreachable, 0 changed, 2 not started, 1 in progress." in text
    # In JUnit a host still in progress has no result: <skipped>, its message saying so.
    assert 'message="in progress (started ' in _fleet_report.to_junit(report)


def test_an_interrupted_host_fails_the_run_and_is_a_junit_error():
    report = _fleet_report.build([{"host": "n1", "result": "interrupted", "detail": "interrupted at 10:00, completed"}],
                                 "deploy", "r1", ["n1"])
    assert report["status"] == "failed"
    assert '<error message="interrupted at 10:00, completed" type="interrupted">' in _fleet_report.to_junit(report)


def test_a_lost_host_replaces_its_row_and_the_others_stay():
    report = _fleet_report.build([_fleet_report.in_progress_lines(["n1"], now=0)[0],
                                  {"host": "n0", "result": "ok", "version": "2.5.140", "changed": True, "detail": "deployed"}],
                                 "deploy", "r1", ["n0", "n1", "n2"], (), "not started")
    line = _fleet_report.lost_line("n1", "Restore | Read", "Failed to create temporary directory",
                                   "Install the bundle", "MODULE FAILURE rc=137", started=100, now=130.04)
    again = _fleet_report.with_lost_hosts(report, {"n1": line, "elsewhere": line})
    assert [(r["host"], r["result"]) for r in again["hosts"]] == [("n0", "ok"), ("n1", "unreachable"), ("n2", "not started")]
    assert again["unreachable_hosts"] == ["n1"] and again["status"] == "failed"
    assert again["hosts"][1]["duration_s"] == 30.0
    assert again["hosts"][1]["detail"] == (
        "unreachable: the node stopped answering during 'Restore | Read' (Failed to create temporary directory), "
        "after 'Install the bundle' failed (MODULE FAILURE rc=137); what it holds now is unknown: when it is back, "
        "run the same command again (it finishes the job or names the one remedy)")


def test_the_report_files_are_five_and_the_json_is_the_report():
    files = _fleet_report.report_files(REPORT, "/r/")
    assert [f[0] for f in files] == ["/r/deploy-20261123T101500Z-ab12.json", "/r/deploy-20261123T101500Z-ab12.md",
                                     "/r/deploy-20261123T101500Z-ab12.xml", "/r/deploy-latest.json", "/r/deploy-latest.xml"]
    assert json.loads(files[0][1]) == REPORT and files[3][1] == files[0][1]
    assert files[1][1] == _fleet_report.to_markdown(REPORT) and files[2][1] == _fleet_report.to_junit(REPORT)
