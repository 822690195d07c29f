# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The torch_gcu role's read-only probe, run by a real interpreter against
fake installed distributions (dist-info directories on PYTHONPATH)."""
import json
import os
import subprocess
import sys

import pytest

from conftest import TOP

PROBE = os.path.join(TOP, "roles", "torch_gcu", "files", "torch_gcu_probe.py")


def _dist(root, dirname, name, version):
    d = root / dirname
    d.mkdir()
    (d / "METADATA").write_text("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version))


def _probe(tmp_path, dists):
    for dirname, name, version in dists:
        _dist(tmp_path, dirname, name, version)
    env = dict(os.environ, PYTHONPATH=str(tmp_path), LC_ALL="C")
    # -S: no site-packages of the interpreter running the tests, only PYTHONPATH
    out = subprocess.run([sys.executable, "-S", PROBE], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env, cwd=str(tmp_path), universal_newlines=True, check=True)
    lines = out.stdout.splitlines()
    assert len(lines) == 1, out.stdout
    return json.loads(lines[0])


@pytest.mark.parametrize("dists, torch, torch_gcu", [
    ([], None, None),
    ([("torch-2.13.0+cpu.dist-info", "torch", "2.13.0+cpu")], "2.13.0+cpu", None),
    ([("torch-2.13.0+cpu.dist-info", "torch", "2.13.0+cpu"),
      ("torch_gcu-2.13.0+2.5.136.dist-info", "torch_gcu", "2.13.0+2.5.136")], "2.13.0+cpu", "2.13.0+2.5.136"),
    # the distribution spelled with a dash in its metadata
    ([("torch_gcu-1.10.0+2.5.136.dist-info", "torch-gcu", "1.10.0+2.5.136")], None, "1.10.0+2.5.136"),
], ids=["nothing", "torch-only", "both", "dash-name"])
def test_probe_reports_installed_versions(tmp_path, dists, torch, torch_gcu):
    got = _probe(tmp_path, dists)
    assert got["torch"] == torch
    assert got["torch_gcu"] == torch_gcu
    assert got["python"] == "%d.%d" % sys.version_info[:2]
    assert got["executable"] == sys.executable


def test_probe_imports_neither_torch_nor_torch_gcu(tmp_path):
    # A torch_gcu package that fails on import: the probe must not import it
    # (it reads metadata only), so a broken install is still probed.
    pkg = tmp_path / "torch_gcu"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("raise ImportError('libeccl.so: cannot open shared object file')\n")
    got = _probe(tmp_path, [("torch_gcu-2.13.0+2.5.140.dist-info", "torch_gcu", "2.13.0+2.5.140")])
    assert got["torch_gcu"] == "2.13.0+2.5.140"


def test_probe_runs_on_python_3_6():
    vermin = os.path.join(os.path.dirname(sys.executable), "vermin")
    proc = subprocess.run([vermin, "--target=3.6-", "--violations", "--no-tips", PROBE],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout
