# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/bench/verify_cost.py (issue 32's cost goal) on a small bundle made
here: it signs a linked copy (the bundle itself is left as it was), times
all three commands each round, and its exit status follows --limit."""
import json
import os
import subprocess
import sys

from conftest import TOP

BENCH = os.path.join(TOP, "scripts", "bench", "verify_cost.py")
MANIFEST = os.path.join(TOP, "scripts", "topsrider-manifest")


def bench(*args):
    return subprocess.run([sys.executable, BENCH] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False, timeout=300)


def test_verify_cost_measures_a_signed_copy_and_judges_the_ratio(tmp_path):
    d = tmp_path / "2.5.140"
    d.mkdir()
    (d / "tops-sdk_2.5.140-1_amd64.bin").write_bytes(os.urandom(1 << 20))
    assert subprocess.run([sys.executable, MANIFEST, "create", str(d), "--version", "2.5.140"], check=False).returncode == 0
    before = sorted(os.listdir(d))
    out = tmp_path / "cost.json"
    proc = bench("--dir", str(d), "--rounds", "2", "--limit", "1000", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert (result["files"], result["bytes"], result["rounds"]) == (1, 1 << 20, 2)
    assert {k: len(v) for k, v in result["times_s"].items()} == {"openssl": 2, "sha256sum": 2, "verify": 2}
    assert result["reference"] in ("openssl", "sha256sum")
    assert result["ratio"] == result["median_s"]["verify"] / result["median_s"][result["reference"]]
    assert "verify/%s = " % result["reference"] in proc.stdout
    assert sorted(os.listdir(d)) == before  # no signature left in the bundle measured
    assert [p for p in os.listdir(tmp_path) if p.startswith("verify-cost.")] == []
    # Far below any real ratio: the same run fails.
    assert bench("--dir", str(d), "--rounds", "1", "--limit", "0.001").returncode == 1


def test_verify_cost_refuses_a_directory_without_a_manifest(tmp_path):
    proc = bench("--dir", str(tmp_path), "--rounds", "1")
    assert proc.returncode == 2 and "verify_cost:" in proc.stderr, proc.stderr
