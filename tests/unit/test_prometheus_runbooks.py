# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every alert of contrib/prometheus has a runbook_url that points at its own
section of docs/monitoring.md (the anchor a Markdown renderer gives the
section's heading, the alert's name), under the one base docs/monitoring.md
tells operators to replace."""
import glob
import os
import re

import yaml

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOC = os.path.join(TOP, "docs", "monitoring.md")
BASE = "https://example.invalid/gcu/topsrider/docs/monitoring.md#"
RULE_FILES = sorted(f for f in glob.glob(os.path.join(TOP, "contrib", "prometheus", "*.yml"))
                    if not f.endswith(".test.yml"))


def anchor(heading):
    """GitHub's (and GitLab's, Gitea's) anchor for a heading: lower case, punctuation dropped, spaces as '-'."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors():
    with open(DOC) as f:
        text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
    return [anchor(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, flags=re.M)]


def alerts():
    for path in RULE_FILES:
        with open(path) as f:
            for group in yaml.safe_load(f)["groups"]:
                for rule in group["rules"]:
                    if "alert" in rule:
                        yield os.path.basename(path), rule


def test_the_rule_files():
    assert [os.path.basename(f) for f in RULE_FILES] == ["topsrider-alerts.yml", "topsrider-cards.yml",
                                                         "topsrider-fabric.yml"]
    assert len(list(alerts())) == 5 + 11 + 4


def test_anchor():
    assert anchor("TopsRiderCardUnhealthy") == "topsridercardunhealthy"
    assert anchor("Scrape targets from the inventory") == "scrape-targets-from-the-inventory"
    assert anchor("`TopsRiderDriftFound`") == "topsriderdriftfound"


def test_every_alert_points_at_its_own_section():
    known = anchors()
    assert len(known) == len(set(known)), "two sections of docs/monitoring.md share an anchor"
    for path, rule in alerts():
        url = rule.get("annotations", {}).get("runbook_url")
        assert url == BASE + rule["alert"].lower(), "%s: %s has runbook_url %r" % (path, rule["alert"], url)
        assert rule["alert"].lower() in known, "%s: docs/monitoring.md has no section %s" % (path, rule["alert"])


def test_every_alert_section_names_an_alert_that_exists():
    names = set(rule["alert"].lower() for dummy, rule in alerts())
    sections = [a for a in anchors() if a.startswith("topsrider") and not a.startswith("topsrider-")]
    assert set(sections) == names
