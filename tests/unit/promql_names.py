# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The metric names a PromQL expression reads, and the names the card exporter
exports (plugins/module_utils/_card_metrics.py's METRICS table): the alert
rules (contrib/prometheus/topsrider-cards.yml) and the dashboard
(contrib/grafana/topsrider-cards.json) may read only those, and Prometheus's own
`up`."""
import re

# Series Prometheus itself writes for every target.
PROMETHEUS_OWN = frozenset(["up"])

KEYWORDS = frozenset(["and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right",
                      "offset", "bool", "inf", "nan", "atan2"])
STRING = re.compile(r'"(?:[^"\\]|\\.)*"' + r"|'(?:[^'\\]|\\.)*'|`[^`]*`")
MATCHERS = re.compile(r"\{[^}]*\}")
RANGES = re.compile(r"\[[^\]]*\]")
LABEL_LISTS = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
GRAFANA_VARIABLE = re.compile(r"\$\{[^}]*\}|\$\w+|\[\[\w+\]\]")
IDENTIFIER = re.compile(r"(?<![\w.:$])([A-Za-z_:][\w:]*)(\s*\()?")


def metric_names(expr):
    """Metric names in a PromQL expression (Grafana's $variables allowed):
    identifiers that are not functions, aggregations, keywords, label names
    (in matchers, by/without/on/ignoring/group_* lists) or durations."""
    text = GRAFANA_VARIABLE.sub(" 1 ", expr)
    text = STRING.sub(" ", text)
    text = MATCHERS.sub(" ", text)
    text = RANGES.sub(" ", text)
    text = LABEL_LISTS.sub(" ", text)
    return set(m.group(1) for m in IDENTIFIER.finditer(text)
               if not m.group(2) and m.group(1).lower() not in KEYWORDS)


def exported_names(metrics):
    """The series names METRICS gives Prometheus: a counter's is its _total name."""
    names = set()
    for metric in metrics:
        name = metric["name"]
        if metric["type"] == "counter" and not name.endswith("_total"):
            name += "_total"
        names.add(name)
    return names


def card_metrics():
    """The exporter's METRICS table (imported when a test needs it, so that the
    other tests of a module run without it)."""
    from ansible_collections.gcu.topsrider.plugins.module_utils._card_metrics import METRICS
    return METRICS
