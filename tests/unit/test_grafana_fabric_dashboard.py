# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""contrib/grafana/topsrider-fabric.json, the fabric check's dashboard: the
same structure as the card dashboard's (a Prometheus datasource variable,
panels on the grid without overlap, every panel with the datasource and
queries), every query valid PromQL, reading only what the fabric textfile
has and the recording rule of contrib/prometheus/topsrider-fabric.yml, and
its figures evaluated by promtool on known series."""
import json
import os

import yaml
from prometheus_client.parser import text_string_to_metric_families

from promql_names import metric_names
from promtool import promtool
from test_prometheus_fabric_rules import RECORDS, fabric_text, rules

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DASHBOARD = os.path.join(TOP, "contrib", "grafana", "topsrider-fabric.json")
DS = {"type": "prometheus", "uid": "${datasource}"}


def load():
    with open(DASHBOARD) as f:
        return json.load(f)


def exprs():
    return [(p["title"], t["expr"]) for p in load()["panels"] for t in p["targets"]]


def test_structure():
    d = load()
    assert d["schemaVersion"] == 39 and d["uid"] == "topsrider-fabric" and d["title"]
    assert [v["name"] for v in d["templating"]["list"]] == ["datasource"]
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))
    boxes = []
    for p in d["panels"]:
        assert p["datasource"] == DS and p["targets"] and p["title"], p["id"]
        assert all(t["datasource"] == DS and t["expr"].strip() for t in p["targets"]), p["id"]
        g = p["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24, p["id"]
        boxes.append((p["id"], g["x"], g["y"], g["x"] + g["w"], g["y"] + g["h"]))
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert a[3] <= b[1] or b[3] <= a[1] or a[4] <= b[2] or b[4] <= a[2], (a[0], b[0])
    # the bandwidth in Grafana's bytes-per-second unit, as the metric is
    assert [p["fieldConfig"]["defaults"]["unit"] for p in d["panels"] if p["title"] == "Pair bus bandwidth"] == ["Bps"]


def test_every_query_is_valid_promql(tmp_path):
    rule_file = {"groups": [{"name": "dashboard", "rules": [{"record": "dashboard:q%d" % i, "expr": e}
                                                            for i, (dummy, e) in enumerate(exprs())]}]}
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rule_file))
    r = promtool("check", "rules", str(tmp_path / "rules.yml"))
    assert r.returncode == 0 and "SUCCESS: %d rules found" % len(exprs()) in r.stdout, r.stdout


def test_queries_read_only_the_fabric_textfile_and_its_recording_rule():
    written = set(f.name for f in text_string_to_metric_families(fabric_text()))
    assert set(RECORDS) <= set(r.get("record") for r in rules())
    used = set(n for dummy, e in exprs() for n in metric_names(e))
    assert used - written - set(RECORDS) == set()
    assert "topsrider_fabric_pair_busbw_bytes_per_second" in used and set(RECORDS) <= used


def test_the_figures_count_what_their_titles_say(tmp_path):
    stats = dict((p["title"], p["targets"][0]["expr"]) for p in load()["panels"] if p["type"] == "stat")
    assert sorted(stats) == ["Failed pairs", "Last check", "Median pair bus bandwidth", "Slow pairs"]
    series = [{"series": "%s{%s}" % (s.name, ",".join('%s="%s"' % kv for kv in sorted(s.labels.items()))),
               "values": "%s+0x10" % repr(s.value)}
              for f in text_string_to_metric_families(fabric_text()) for s in f.samples
              if f.name != "topsrider_fabric_last_check_timestamp_seconds"]
    series.append({"series": "topsrider_fabric_last_check_timestamp_seconds", "values": "0x10"})
    expected = {"Failed pairs": 1, "Slow pairs": 1, "Median pair bus bandwidth": 1e10, "Last check": 600}
    cases = [{"expr": stats[t], "eval_time": "10m", "exp_samples": [{"labels": "{}", "value": v}]}
             for t, v in sorted(expected.items())]
    test = {"rule_files": [], "evaluation_interval": "1m",
            "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": cases}]}
    (tmp_path / "fabric.test.yml").write_text(yaml.safe_dump(test))
    r = promtool("test", "rules", "fabric.test.yml", cwd=str(tmp_path))
    assert r.returncode == 0 and "SUCCESS" in r.stdout, r.stdout
