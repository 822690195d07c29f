# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""contrib/prometheus/topsrider-cards.yml, the alert rules over the card
exporter's metrics: valid (promtool check rules), firing and not firing as
topsrider-cards.test.yml says (promtool test rules), each test a real one (a
changed rule breaks it), and reading only metrics the exporter exports."""
import os
import shutil

import pytest
import yaml

from promtool import promtool as run_promtool, rule_list
from promql_names import PROMETHEUS_OWN, card_metrics, exported_names, metric_names

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RULES_DIR = os.path.join(TOP, "contrib", "prometheus")
RULES = os.path.join(RULES_DIR, "topsrider-cards.yml")
TESTS = "topsrider-cards.test.yml"

ALERTS = ["TopsRiderCardUnhealthy", "TopsRiderCardTemperatureHigh", "TopsRiderCardTemperatureCritical",
          "TopsRiderCardEccUncorrectedErrors", "TopsRiderCardPCIeWidthBelowMax", "TopsRiderCardPCIeSpeedBelowMax",
          "TopsRiderCardReadingStale", "TopsRiderCardExporterDown", "TopsRiderCardExporterNoCards",
          "TopsRiderCardExporterTargetsMissing",
          "TopsRiderCardIdleInBusyJob"]


def promtool(*args, cwd=RULES_DIR):
    return run_promtool(*args, cwd=cwd)


def rules():
    return rule_list(RULES)


def test_promtool_check_rules():
    r = promtool("check", "rules", RULES)
    assert r.returncode == 0 and "SUCCESS: %d rules found" % len(ALERTS) in r.stdout, r.stdout


def test_promtool_test_rules():
    r = promtool("test", "rules", TESTS)
    assert r.returncode == 0 and "SUCCESS" in r.stdout, r.stdout


def test_every_alert_is_tested_firing_and_not_firing():
    assert [r["alert"] for r in rules()] == ALERTS
    with open(os.path.join(RULES_DIR, TESTS)) as f:
        cases = [c for t in yaml.safe_load(f)["tests"] for c in t["alert_rule_test"]]
    for name in ALERTS:
        mine = [c for c in cases if c["alertname"] == name]
        assert any(c["exp_alerts"] for c in mine), "%s: no case where it fires" % name
        assert any(not c["exp_alerts"] for c in mine), "%s: no case where it stays quiet" % name


def test_every_alert_has_severity_summary_and_description_naming_the_card_or_node():
    for rule in rules():
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]
        if rule["alert"] == "TopsRiderCardExporterTargetsMissing":  # no target: no node to name
            continue
        assert "$labels.instance" in rule["annotations"]["summary"], rule["alert"]
        if rule["alert"] not in ("TopsRiderCardExporterDown", "TopsRiderCardExporterNoCards"):  # a node's
            assert "$labels.card" in rule["annotations"]["description"], rule["alert"]


# Each change below must break the rule tests: the rule it changes names what the cases prove.
MUTATIONS = [
    ("TopsRiderCardTemperatureHigh", "topsrider_card_temperature_celsius > 85", "topsrider_card_temperature_celsius > 95"),
    ("TopsRiderCardEccUncorrectedErrors", "increase(topsrider_card_ecc_uncorrected_errors_total[10m]) > 0",
     "topsrider_card_ecc_uncorrected_errors_total > 0"),
    ("TopsRiderCardPCIeWidthBelowMax", "topsrider_card_pcie_link_width < topsrider_card_pcie_link_width_max",
     "topsrider_card_pcie_link_width < 16"),
    ("TopsRiderCardPCIeSpeedBelowMax", "and on(instance, job, card, bus_id) topsrider_card_utilization_ratio > 0.5",
     "and on(instance, job, card, bus_id) topsrider_card_utilization_ratio >= 0"),
    ("TopsRiderCardReadingStale", "group_left 3 * topsrider_exporter_interval_seconds",
     "group_left 6 * topsrider_exporter_interval_seconds"),
    ("TopsRiderCardExporterNoCards", 'up{job="topsrider-cards"} == 1\n', 'up{job="topsrider-cards"} >= 0\n'),
    ("TopsRiderCardIdleInBusyJob", "and on(instance, job, slurm_job)", "and on(instance, job)"),
    ("TopsRiderCardIdleInBusyJob", "(max_over_time(topsrider_card_utilization_ratio[5m]) > 0.5)",
     "(topsrider_card_utilization_ratio > 0.5)"),
]


@pytest.mark.parametrize("alert,old,new", MUTATIONS, ids=["%s-%d" % (m[0], i) for i, m in enumerate(MUTATIONS)])
def test_promtool_test_rules_can_fail(tmp_path, alert, old, new):
    shutil.copy(os.path.join(RULES_DIR, TESTS), str(tmp_path))
    with open(RULES) as f:
        text = f.read()
    assert text.count(old) == 1, old
    (tmp_path / "topsrider-cards.yml").write_text(text.replace(old, new))
    r = promtool("test", "rules", TESTS, cwd=str(tmp_path))
    assert r.returncode != 0 and "alertname: %s," % alert in r.stdout, r.stdout


def test_metric_names_are_parsed_from_the_rules():
    used = set(n for r in rules() for n in metric_names(r["expr"]))
    assert {"up", "topsrider_card_healthy", "topsrider_card_ecc_uncorrected_errors_total",
            "topsrider_card_holder_info", "topsrider_exporter_interval_seconds"} <= used
    assert not used & {"increase", "max_over_time", "absent", "on", "group_left", "slurm_job", "instance"}


def test_rules_read_only_metrics_the_exporter_exports():
    """Fails until plugins/module_utils/_card_metrics.py (the exporter) is in the tree."""
    used = set(n for r in rules() for n in metric_names(r["expr"]))
    assert used - exported_names(card_metrics()) - PROMETHEUS_OWN == set()
