# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""contrib/prometheus/topsrider-fabric.yml, the rules over the fabric check's
textfile: valid (promtool check rules), firing and not firing as
topsrider-fabric.test.yml and topsrider-fabric-stale.test.yml (the days-long
case, evaluated hourly) say (promtool test rules), each test a real one (a
changed rule breaks it), and reading only metrics the fabric report's
Prometheus text has (parsed with prometheus_client's own parser)."""
import os
import shutil

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gcu.topsrider.plugins.plugin_utils import _fabric
from promtool import promtool as run_promtool, rule_list
from promql_names import metric_names

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RULES_DIR = os.path.join(TOP, "contrib", "prometheus")
RULES = os.path.join(RULES_DIR, "topsrider-fabric.yml")
# the minute-scale cases, and the staleness case over days with the rules evaluated hourly
TESTS = ["topsrider-fabric.test.yml", "topsrider-fabric-stale.test.yml"]
ALERTS = ["TopsRiderFabricPairFailed", "TopsRiderFabricPairSlow", "TopsRiderFabricCheckStale",
          "TopsRiderFabricMetricsMissing"]
RECORDS = ["topsrider_fabric:pair_busbw_over_median:ratio"]


def promtool(*args, cwd=RULES_DIR):
    return run_promtool(*args, cwd=cwd)


def rules():
    return rule_list(RULES)


def test_promtool_check_rules():
    r = promtool("check", "rules", RULES)
    assert r.returncode == 0 and "SUCCESS: %d rules found" % (len(ALERTS) + len(RECORDS)) in r.stdout, r.stdout


def test_promtool_test_rules():
    r = promtool("test", "rules", *TESTS)
    assert r.returncode == 0 and r.stdout.count("SUCCESS") == len(TESTS), r.stdout


def test_every_alert_is_tested_firing_and_not_firing():
    assert [r.get("alert") or r.get("record") for r in rules()] == RECORDS + ALERTS
    tests = []
    for name in TESTS:
        with open(os.path.join(RULES_DIR, name)) as f:
            tests += yaml.safe_load(f)["tests"]
    cases = [c for t in tests for c in t.get("alert_rule_test", [])]
    for name in ALERTS:
        mine = [c for c in cases if c["alertname"] == name]
        assert any(c["exp_alerts"] for c in mine), "%s: no case where it fires" % name
        assert any(not c["exp_alerts"] for c in mine), "%s: no case where it stays quiet" % name
    assert [c["expr"] for t in tests for c in t.get("promql_expr_test", [])] == RECORDS


MUTATIONS = [
    ("TopsRiderFabricPairFailed", "topsrider_fabric_pair_ok == 0", "topsrider_fabric_pair_ok < 2"),
    ("TopsRiderFabricPairSlow", "topsrider_fabric_pair_slow == 1", "topsrider_fabric_pair_slow >= 0"),
    ("TopsRiderFabricCheckStale", "> 8 * 86400", "> 10 * 86400"),
    ("TopsRiderFabricMetricsMissing", "absent(topsrider_fabric_last_check_timestamp_seconds)",
     "absent(topsrider_fabric_pair_ok)"),
]


@pytest.mark.parametrize("alert,old,new", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_promtool_test_rules_can_fail(tmp_path, alert, old, new):
    for name in TESTS:
        shutil.copy(os.path.join(RULES_DIR, name), str(tmp_path))
    with open(RULES) as f:
        text = f.read()
    assert text.count(old) == 1, old
    (tmp_path / "topsrider-fabric.yml").write_text(text.replace(old, new))
    r = promtool("test", "rules", *TESTS, cwd=str(tmp_path))
    assert r.returncode != 0 and "alertname: %s," % alert in r.stdout, r.stdout


def test_the_recording_rule_test_can_fail(tmp_path):
    for name in TESTS:
        shutil.copy(os.path.join(RULES_DIR, name), str(tmp_path))
    with open(RULES) as f:
        text = f.read()
    old = "group_left () topsrider_fabric_median_busbw_bytes_per_second"
    assert text.count(old) == 1
    (tmp_path / "topsrider-fabric.yml").write_text(text.replace(old, "group_left () (2 * topsrider_fabric_median_busbw_bytes_per_second)"))
    r = promtool("test", "rules", *TESTS, cwd=str(tmp_path))
    assert r.returncode != 0 and "pair_busbw_over_median" in r.stdout, r.stdout


def fabric_text():
    """A real report's Prometheus text: one pair slow, one failed (the writer's own units run the check)."""
    pairs = [{"a": "n1", "b": "n2", "ok": True, "slow": False, "busbw_gbps": 10.0},
             {"a": "n2", "b": "n3", "ok": True, "slow": True, "busbw_gbps": 5.0},
             {"a": "n3", "b": "n1", "ok": False, "slow": None, "busbw_gbps": None}]
    report = {"nodes": [{"node": n, "verdict": "ok"} for n in ("n1", "n2", "n3")], "pairs": pairs,
              "median_busbw_gbps": 10.0, "threshold_gbps": 8.0, "exit_code": 3, "timestamp": 1735689600.0}
    return _fabric.to_prometheus(report)


def test_rules_read_only_metrics_the_fabric_textfile_has():
    written = set(f.name for f in text_string_to_metric_families(fabric_text()))
    used = set(n for r in rules() for n in metric_names(r["expr"])) - set(RECORDS)
    assert used and used <= written, used - written
    assert {"topsrider_fabric_pair_ok", "topsrider_fabric_pair_slow", "topsrider_fabric_pair_busbw_bytes_per_second",
            "topsrider_fabric_last_check_timestamp_seconds"} <= used
