# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""contrib/grafana/topsrider-cards.json, the card dashboard: valid JSON in
Grafana's dashboard model (schemaVersion 39, a Prometheus datasource variable,
the node variable from topsrider_card_info), panels that fit the 24-column grid
without overlapping, every panel with a datasource and queries, variables
defined before use, every query valid PromQL (promtool check rules parses it)
and reading only metrics the card exporter exports."""
import copy
import json
import os
import re
import shutil
import subprocess

import yaml

from promql_names import PROMETHEUS_OWN, card_metrics, exported_names, metric_names

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DASHBOARD = os.path.join(TOP, "contrib", "grafana", "topsrider-cards.json")
# Grafana's own variables (https://grafana.com/docs/grafana/latest/dashboards/variables/add-template-variables/)
BUILTIN = {"__interval", "__interval_ms", "__rate_interval", "__range", "__range_s", "__range_ms", "__dashboard",
           "__from", "__to", "__name", "__org", "__user", "timeFilter", "__timeFilter"}
VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]")
LABEL_VALUES = re.compile(r"^\s*label_values\((?:(.*),)?\s*(\w+)\s*\)\s*$")


def load():
    with open(DASHBOARD) as f:
        return json.load(f)


def all_panels(dashboard):
    """Every panel, those inside collapsed rows too."""
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def queries(dashboard):
    """(where, PromQL) of every panel target and every query variable."""
    for panel in all_panels(dashboard):
        for t in panel.get("targets", []):
            yield "panel %s %s" % (panel["id"], t.get("refId")), t.get("expr", "")
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            q = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
            m = LABEL_VALUES.match(q)
            yield "variable %s" % var["name"], (m.group(1) or "") if m else q


def used_variables(value):
    return set(a or b or c for a, b, c in VARIABLE.findall(json.dumps(value)))


def unexported(dashboard, exported):
    return {where: sorted(metric_names(expr) - exported - PROMETHEUS_OWN)
            for where, expr in queries(dashboard) if metric_names(expr) - exported - PROMETHEUS_OWN}


def test_is_a_dashboard_grafana_imports():
    d = load()
    # docs/monitoring.md names the schema
    assert d["schemaVersion"] == 39 and d["title"] and d["uid"]
    variables = {v["name"]: v for v in d["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    node = variables["instance"]
    assert node["type"] == "query" and node["multi"] is True and node["includeAll"] is True
    assert node["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
    assert node["query"]["query"] == node["definition"] == "label_values(topsrider_card_info, instance)"


def test_panel_ids_are_unique_and_panels_fit_the_grid_without_overlapping():
    panels = list(all_panels(load()))
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)), ids
    boxes = []
    for p in panels:
        g = p["gridPos"]
        assert g["x"] >= 0 and g["y"] >= 0 and g["w"] >= 1 and g["h"] >= 1 and g["x"] + g["w"] <= 24, (p["id"], g)
        boxes.append((p["id"], g["x"], g["y"], g["x"] + g["w"], g["y"] + g["h"]))
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert a[3] <= b[1] or b[3] <= a[1] or a[4] <= b[2] or b[4] <= a[2], "panels %s and %s overlap" % (a[0], b[0])


def test_every_panel_has_the_datasource_and_queries():
    for p in all_panels(load()):
        if p["type"] == "row":
            assert not p.get("targets")
            continue
        assert p["title"] and p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["id"]
        assert p["targets"], p["id"]
        refs = [t["refId"] for t in p["targets"]]
        assert len(refs) == len(set(refs)), p["id"]
        for t in p["targets"]:
            assert t["expr"].strip() and t["datasource"] == p["datasource"], (p["id"], t["refId"])


def test_variables_are_defined_before_use():
    d = load()
    defined = set(BUILTIN)
    for var in d["templating"]["list"]:
        assert used_variables({k: v for k, v in var.items() if k != "current"}) <= defined, var["name"]
        defined.add(var["name"])
    assert used_variables(d["panels"]) <= defined


def test_fleet_overview_then_one_row_per_node():
    d = load()
    rows = [p for p in d["panels"] if p["type"] == "row"]
    assert [r["title"] for r in rows] == ["Fleet", "Node $instance"] and rows[1]["repeat"] == "instance"
    fleet = [p for p in d["panels"] if p["type"] != "row" and p["gridPos"]["y"] < rows[1]["gridPos"]["y"]]
    titles = [p["title"] for p in fleet]
    for word in ("unhealthy", "Hottest", "Stale", "ECC", "below max", "Idle cards", "Exporters down"):
        assert [t for t in titles if word in t], word
    node = [p for p in d["panels"] if p["type"] != "row" and p["gridPos"]["y"] > rows[1]["gridPos"]["y"]]
    assert all('instance=~"$instance"' in t["expr"] for p in node for t in p["targets"])


def test_every_query_is_valid_promql(tmp_path):
    """promtool parses each query as a recording rule (Grafana's variables
    replaced by values of their kind)."""
    exprs = [expr.replace("$__rate_interval", "1m").replace("$instance", "n1:9494")
             for expr in (q[1] for q in queries(load()))]
    rules = {"groups": [{"name": "dashboard", "rules": [{"record": "dashboard:q%d" % i, "expr": e}
                                                        for i, e in enumerate(exprs)]}]}
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rules))
    r = subprocess.run([shutil.which("promtool") or "promtool", "check", "rules", str(tmp_path / "rules.yml")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert r.returncode == 0 and "SUCCESS: %d rules found" % len(exprs) in r.stdout, r.stdout


def test_a_metric_the_exporter_does_not_export_is_caught():
    d = copy.deepcopy(load())
    exported = set(n for q in queries(d) for n in metric_names(q[1]))
    assert unexported(d, exported) == {}
    d["panels"][-1]["targets"][0]["expr"] = 'rate(topsrider_card_temprature_celsius{instance=~"$instance"}[5m])'
    assert list(unexported(d, exported).values()) == [["topsrider_card_temprature_celsius"]]


def test_queries_read_only_metrics_the_exporter_exports():
    """Fails until plugins/module_utils/_card_metrics.py (the exporter) is in the tree."""
    assert unexported(load(), exported_names(card_metrics())) == {}


def test_the_node_row_shows_every_card_metric_the_exporter_exports():
    d = load()
    row_y = [p for p in d["panels"] if p.get("repeat") == "instance"][0]["gridPos"]["y"]
    shown = set(n for p in d["panels"] if p["gridPos"]["y"] > row_y for t in p["targets"] for n in metric_names(t["expr"]))
    cards = set(n for n in exported_names(card_metrics()) if n.startswith("topsrider_card_"))
    assert cards - shown == set()


# The fleet row's figures on one node (n1): card 0 healthy, cool, fresh, clean, at full width, busy under
# Slurm job 5; card 1 unhealthy, at 91 C, stale, 3 new uncorrected errors, at x8, held idle by job 5; and
# one more exporter (n2) that does not answer. A node with no cards (n9) gives zeros.
FLEET_SERIES = [
    ('topsrider_card_healthy{%s,card="0"}', '1x30'), ('topsrider_card_healthy{%s,card="1"}', '0x30'),
    ('topsrider_card_temperature_celsius{%s,card="0"}', '60x30'),
    ('topsrider_card_temperature_celsius{%s,card="1"}', '91x30'),
    ('topsrider_exporter_interval_seconds{%s}', '15x30'),
    ('topsrider_card_reading_age_seconds{%s,card="0"}', '5x30'),
    ('topsrider_card_reading_age_seconds{%s,card="1"}', '100x30'),
    ('topsrider_card_ecc_uncorrected_errors_total{%s,card="0"}', '0x30'),
    ('topsrider_card_ecc_uncorrected_errors_total{%s,card="1"}', '0 0 0 1x10 3x16'),
    ('topsrider_card_pcie_link_width{%s,card="0"}', '16x30'), ('topsrider_card_pcie_link_width_max{%s,card="0"}', '16x30'),
    ('topsrider_card_pcie_link_width{%s,card="1"}', '8x30'), ('topsrider_card_pcie_link_width_max{%s,card="1"}', '16x30'),
    ('topsrider_card_utilization_ratio{%s,card="0"}', '0.9x30'),
    ('topsrider_card_utilization_ratio{%s,card="1"}', '0x30'),
    ('topsrider_card_holder_info{%s,card="0",slurm_job="5",user="u"}', '1x30'),
    ('topsrider_card_holder_info{%s,card="1",slurm_job="5",user="u"}', '1x30'),
    ('up{%s}', '1x30'),
    ('up{instance="n2:9494",job="topsrider-cards"}', '0x30'),
]
FLEET_N1 = {"Cards unhealthy": 1, "Hottest card": 91, "Stale readings": 1, "Uncorrected ECC (24 h)": 3,
            "PCIe links below max width": 1, "Idle cards under a busy job": 1, "Exporters down": 1}
FLEET_N9 = dict(FLEET_N1, **{"Cards unhealthy": 0, "Hottest card": None, "Stale readings": 0,
                             "Uncorrected ECC (24 h)": 0, "PCIe links below max width": 0,
                             "Idle cards under a busy job": 0})


def test_the_fleet_row_counts_what_its_titles_say(tmp_path):
    """Each fleet figure evaluated by promtool on known series, for a node
    with every fault and for a node that has none."""
    d = load()
    row_y = [p for p in d["panels"] if p.get("repeat") == "instance"][0]["gridPos"]["y"]
    fleet = {p["title"]: p["targets"][0]["expr"] for p in d["panels"] if p["type"] == "stat" and p["gridPos"]["y"] < row_y}
    assert sorted(fleet) == sorted(FLEET_N1)
    target = 'instance="n1:9494",job="topsrider-cards"'
    series = [{"series": s % target if "%s" in s else s, "values": v} for s, v in FLEET_SERIES]
    cases = []
    for node, expected in (("n1:9494", FLEET_N1), ("n9:9494", FLEET_N9)):
        for title, expr in sorted(fleet.items()):
            value = expected[title]
            cases.append({"expr": expr.replace("$instance", node), "eval_time": "29m",
                          "exp_samples": [] if value is None else [{"labels": "{}", "value": value}]})
    test = {"rule_files": [], "evaluation_interval": "1m",
            "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": cases}]}
    (tmp_path / "fleet.test.yml").write_text(yaml.safe_dump(test))
    r = subprocess.run([shutil.which("promtool") or "promtool", "test", "rules", "fleet.test.yml"], cwd=str(tmp_path),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert r.returncode == 0 and "SUCCESS" in r.stdout, r.stdout
