# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The three drift rounds of side_effect, read from their reports in all four
formats: JSON loads, JUnit XML validates against the schema, the Prometheus
textfile parses with prometheus_client; each tampered node is named with
exactly its category and the untouched nodes are clean."""
import json
import os

import pytest
import xmlschema
from prometheus_client.parser import text_string_to_metric_families

EPH = os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]
XSD = os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], "tests", "unit", "fixtures", "junit.xsd")
NODES = ["topsrider_state-drift-node%d" % i for i in range(1, 7)]
ROUNDS = {
    # round: (status, exit code, {node: categories})
    "clean": ("clean", 0, {}),
    "drift": ("drift", 3, {NODES[1]: ["package"], NODES[2]: ["env"], NODES[3]: ["integrity", "wheel"],
                           NODES[4]: ["health"], NODES[5]: ["device"]}),
    "failed": ("failed", 4, {NODES[1]: ["package"], NODES[2]: ["env"], NODES[3]: ["integrity", "wheel"],
                             NODES[4]: ["library"], NODES[5]: ["unreachable"]}),
}


def read(round_name, name):
    with open(os.path.join(EPH, "round-" + round_name, name)) as f:
        return f.read()


def report(round_name):
    return json.loads(read(round_name, "drift-latest.json"))


@pytest.mark.parametrize("round_name", sorted(ROUNDS))
def test_wrapper_exit_status(round_name):
    assert read(round_name, "run.log").startswith("rc=%d\n" % ROUNDS[round_name][1])


@pytest.mark.parametrize("round_name", sorted(ROUNDS))
def test_json_names_exactly_the_tampered_nodes_and_categories(round_name):
    status, code, tampered = ROUNDS[round_name]
    doc = report(round_name)
    assert (doc["status"], doc["exit_code"]) == (status, code)
    got = dict((n["node"], n["categories"]) for n in doc["nodes"])
    assert sorted(got) == NODES
    assert dict((n, c) for n, c in got.items() if c) == tampered
    for f in doc["findings"]:
        assert set(f) >= {"node", "category", "check", "expected", "actual"}


def test_findings_say_what_moved():
    doc = report("failed")
    by = dict(((f["node"], f["check"]), f) for f in doc["findings"])
    assert (by[(NODES[1], "tops-eccl version")]["expected"], by[(NODES[1], "tops-eccl version")]["actual"]) == \
        ("2.5.136-1", "2.5.140-1")
    assert "+export ECCL_DEBUG=INFO" in by[(NODES[2], "/etc/profile.d/topsrider.sh")]["detail"]
    assert by[(NODES[3], "torch_gcu version")]["actual"] is None
    # The stray copy (/usr/lib/x86_64-linux-gnu, seen by ldconfig through the /lib merge) next to the packaged one.
    resolved = by[(NODES[4], "libeccl.so resolves")]["actual"]
    assert "/usr/local/tops/lib/libeccl.so" in resolved and len(resolved) == 2
    assert [p for p in resolved if p.endswith("x86_64-linux-gnu/libeccl.so")]
    drift = dict(((f["node"], f["check"]), f) for f in report("drift")["findings"])
    assert (drift[(NODES[5], "card count")]["expected"], drift[(NODES[5], "card count")]["actual"]) == (8, 7)
    assert drift[(NODES[4], "gcu3 health")]["actual"] == "unhealthy"


@pytest.mark.parametrize("round_name", ["drift", "failed"])
def test_a_library_rewritten_in_place_is_named_by_file(round_name):
    """Same size, same time, same package version: dpkg's md5 (dpkg --verify) still tells, and the
    finding names the file, what differs and how to put it back, in every format."""
    doc = report(round_name)
    (found,) = [f for f in doc["findings"] if f["category"] == "integrity"]
    assert found["node"] == NODES[3] and found["check"] == "tops-eccl /usr/local/tops/lib/libeccl.so"
    assert (found["expected"], found["actual"]) == ("as dpkg installed it", "changed")
    assert found["detail"] == ("tops-eccl: /usr/local/tops/lib/libeccl.so changed (md5 differs from what dpkg "
                               "installed); reinstall tops-eccl 2.5.136-1 from the release's deb (dpkg -i; a deploy "
                               "at the same version does not reinstall it)")
    # node2's packages moved to 2.5.140 with dpkg: other versions, but every file as dpkg installed it
    assert not [f for f in doc["findings"] if f["category"] == "integrity" and f["node"] == NODES[1]]
    assert "| %s | integrity | tops-eccl /usr/local/tops/lib/libeccl.so |" % NODES[3] in read(round_name, "drift-latest.md")
    families = dict((f.name, f) for f in text_string_to_metric_families(read(round_name, "drift-latest.prom")))
    per_category = dict(((s.labels["node"], s.labels["category"]), s.value)
                        for s in families["topsrider_drift_category_findings"].samples)
    assert per_category[(NODES[3], "integrity")] == 1 and per_category[(NODES[0], "integrity")] == 0


@pytest.mark.parametrize("round_name", sorted(ROUNDS))
def test_junit_validates(round_name):
    xml = read(round_name, "drift-latest.xml")
    schema = xmlschema.XMLSchema(XSD)
    schema.validate(xml)
    doc = schema.to_dict(xml)
    tampered = ROUNDS[round_name][2]
    assert [s["@name"] for s in doc["testsuite"]] == NODES
    for suite in doc["testsuite"]:
        bad = sorted(c["@name"] for c in suite["testcase"] if "failure" in c)
        want = [c for c in tampered.get(suite["@name"], []) if c != "unreachable"]
        assert bad == sorted(want)
        assert len(suite["testcase"]) == 10


@pytest.mark.parametrize("round_name", sorted(ROUNDS))
def test_prometheus_textfile_parses(round_name):
    families = dict((f.name, f) for f in text_string_to_metric_families(read(round_name, "drift-latest.prom")))
    healthy = dict((s.labels["node"], s.value) for s in families["topsrider_drift_healthy"].samples)
    tampered = ROUNDS[round_name][2]
    assert healthy == dict((n, 0 if n in tampered else 1) for n in NODES)
    stamps = [s.value for s in families["topsrider_drift_last_check_timestamp_seconds"].samples]
    assert len(stamps) == 6 and min(stamps) > 1.7e9


@pytest.mark.parametrize("round_name", sorted(ROUNDS))
def test_markdown_summary(round_name):
    md = read(round_name, "drift-latest.md")
    assert "Status: **%s** (exit %d)" % ROUNDS[round_name][:2] in md
    for node in NODES:
        assert "| %s |" % node in md
