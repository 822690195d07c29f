# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/bench/exporter_cost.py (issue 33's cost goals) with tiny settings:
it starts the exporter against a simulated node, measures both phases, writes
its JSON and its exit status follows the goals (the goals themselves are
measured by make bench-exporter, docs/performance.md)."""
import json
import os
import subprocess
import sys

from conftest import TOP

BENCH = os.path.join(TOP, "scripts", "bench", "exporter_cost.py")
TINY = ("--cards", "2", "--scrapes", "30", "--busy-interval", "0.1", "--interval", "0.3", "--window", "1",
        "--scrape-every", "0.2", "--memory-window", "2", "--memory-interval", "0.3")


# the least a run can measure: one scrape, a third of a second per phase (the missed-goal run)
LEAST = ("--cards", "1", "--scrapes", "1", "--busy-interval", "0.1", "--interval", "0.3", "--window", "0.3",
         "--scrape-every", "0.1", "--memory-window", "0.3", "--memory-interval", "1")


def bench(*args, settings=TINY):
    return subprocess.run([sys.executable, BENCH] + list(settings) + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False, timeout=120)


def test_exporter_cost_measures_and_judges(tmp_path):
    out = tmp_path / "cost.json"
    proc = bench("--max-p99-ms", "10000", "--max-cpu-pct", "1000", "--json", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(out.read_text())
    assert result["pass"] is True and result["cards"] == 2
    lat, use = result["latency"], result["cpu"]
    assert lat["scrapes"] == 30 and 0 < lat["p50_ms"] <= lat["p99_ms"] <= lat["max_ms"]
    assert lat["reads_during"] >= 0 and lat["bytes"] > 1000
    assert use["reads"] >= 2 and use["window_s"] >= 1 and use["cpu_s"] > 0  # efsmi's runs are counted
    # the share of the rounded figures (cpu_s and window_s are rounded to 1 ms)
    assert abs(use["cpu_pct"] - 100.0 * use["cpu_s"] / use["window_s"]) < 0.06
    # the memory phases ran in one exporter process, the hostile outputs cut as too large
    mem = result["memory"]
    assert mem["same_process"] is True and mem["idle_rss_mb"] > 0
    assert mem["endless"]["too_large"] >= 1 and mem["50mb"]["too_large"] >= 1
    assert "goals (p99 <= 10000.0 ms, cpu <= 1000.0 %, peak RSS over idle <= 64.0 MB): met" in proc.stdout
    # a goal no run can meet (the others met): exit 1
    proc = bench("--max-p99-ms", "0.0001", "--max-cpu-pct", "1000", settings=LEAST)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "goals (p99 <= 0.0001 ms, cpu <= 1000.0 %, peak RSS over idle <= 64.0 MB): MISSED" in proc.stdout, proc.stdout
