# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every run of side_effect wrote the four report formats, and they agree with
the JSON: the named nodes first in the Markdown, a JUnit error for the broken
node, the Prometheus verdicts; the down run found node3 by bisection. (A slow
node named in every format is a unit: test__fabric.py's
test_the_fabric_scenario_s_slow_node_named_in_every_format.) The number of clean runs is side_effect's
(TOPSRIDER_FABRIC_CLEAN_RUNS). (The shared verifier is testinfra: these were the
asserts of a verify.yml that never ran.)"""
import json
import os
import re

import pytest

RUNS = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "fabric")
# molecule.yml: four one-card nodes; side_effect.yml: this many clean runs.
NODES = 4
CLEAN_RUNS = ["clean%d" % n for n in range(1, int(os.environ.get("TOPSRIDER_FABRIC_CLEAN_RUNS", "1")) + 1)]


def read(run, ext):
    with open(os.path.join(RUNS, run, "fabric-latest." + ext)) as f:
        return f.read()


def report(run):
    return json.loads(read(run, "json"))


@pytest.mark.parametrize("run", CLEAN_RUNS)
def test_clean_runs_say_clean_in_every_format(run):
    data, md, xml, prom = report(run), read(run, "md"), read(run, "xml"), read(run, "prom")
    assert data["status"] == "clean" and data["summary"]["ok"] == NODES and data["summary"]["pairs"] == NODES
    assert data["fleet"]["ok"] and data["fleet"]["world"] == NODES
    assert data["median_busbw_gbps"] > 0
    assert "Status: **clean** (exit 0)" in md and "## Named nodes\n\nNone." in md
    assert 'errors="0"' in xml and 'failures="0"' in xml
    assert "topsrider_fabric_status 0" in prom


def test_the_down_run_failed_the_fleet_job_and_bisection_named_node3():
    data, md, prom = report("down"), read("down", "md"), read("down", "prom")
    assert data["status"] == "broken" and not data["fleet"]["ok"]
    assert data["nodes"][0]["node"] == "fabric-node3" and data["nodes"][0]["verdict"] == "broken"
    assert re.search("^bisection", data["nodes"][0]["evidence"][0])
    # one broken node among N is found in at most ceil(log2 N) rounds
    assert len([r for r in data["rounds"] if r.get("phase") == "bisect"]) <= 2
    assert "| fabric-node3 | **broken** |" in md
    assert 'topsrider_fabric_node_verdict{node="fabric-node3",verdict="broken"} 1' in prom
    assert "topsrider_fabric_status 4" in prom
