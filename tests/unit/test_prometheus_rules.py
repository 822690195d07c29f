# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""contrib/prometheus/: the alert rules are valid (promtool check rules), fire
as their tests say (promtool test rules), and only use metrics that the drift
textfile really has (parsed with prometheus_client's own parser). promtool
comes from Debian's prometheus package (make setup: scripts/ensure-docker.sh)."""
import os
import re
import shutil
import subprocess

import yaml
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gcu.topsrider.plugins.plugin_utils import _drift
from conftest import load_script

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RULES_DIR = os.path.join(TOP, "contrib", "prometheus")
RULES = os.path.join(RULES_DIR, "topsrider-alerts.yml")


def promtool():
    path = shutil.which("promtool")
    assert path, "promtool not found: make setup installs Debian's prometheus package (scripts/ensure-docker.sh)"
    return path


def run(*args):
    return subprocess.run([promtool()] + list(args), cwd=RULES_DIR, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, check=False)


def test_promtool_check_rules():
    r = run("check", "rules", RULES)
    assert r.returncode == 0 and "SUCCESS: 5 rules found" in r.stdout, r.stdout


def test_promtool_test_rules():
    r = run("test", "rules", "topsrider-alerts.test.yml")
    assert r.returncode == 0 and "SUCCESS" in r.stdout, r.stdout


def test_promtool_test_rules_can_fail(tmp_path):
    """The rule tests are not vacuous: a stale threshold of 28 hours breaks them."""
    shutil.copy(os.path.join(RULES_DIR, "topsrider-alerts.test.yml"), str(tmp_path))
    with open(RULES) as f:
        text = f.read()
    assert "> 26 * 3600" in text
    (tmp_path / "topsrider-alerts.yml").write_text(text.replace("> 26 * 3600", "> 28 * 3600"))
    r = subprocess.run([promtool(), "test", "rules", "topsrider-alerts.test.yml"], cwd=str(tmp_path),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert r.returncode != 0 and "TopsRiderDriftCheckStale" in r.stdout, r.stdout


def test_rules_use_only_metrics_the_drift_textfiles_have(tmp_path):
    """The playbook's textfile (per node) and the wrapper's (the run itself)."""
    report = _drift.build_report(["n1", "n2"], {"n1": {"checked_at": 1735689601.5, "findings": [], "error": None}},
                                 "20250101T000000Z", now=1735689600.0)
    written = set(f.name for f in text_string_to_metric_families(_drift.to_prometheus(report)))
    load_script("scripts/topsrider_check.py", "topsrider_check").write_run_metric(
        str(tmp_path), "drift", False, 4, 1735689600.0)
    written |= set(f.name for f in text_string_to_metric_families((tmp_path / "topsrider_drift_run.prom").read_text()))
    with open(RULES) as f:
        rules = [r for g in yaml.safe_load(f)["groups"] for r in g["rules"]]
    used = set(m for r in rules for m in re.findall(r"\btopsrider_[a-z_]+\b", r["expr"]))
    assert used and used <= written, used - written
    assert {"topsrider_drift_last_success_timestamp_seconds", "topsrider_drift_up",
            "topsrider_drift_healthy", "topsrider_drift_run_ok"} <= used
