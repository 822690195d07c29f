"""plugins/module_utils/_torch_rule.py and _pep440.py: the torch rule is
packaging's, on a table of cases (versions x specifiers: pre-releases, local
labels, post-releases, epochs, ===, ~=, wildcards, !=), on the controller's
packaging and on a Python at the node floor (3.8) through pip's vendored
copy, installed or read from the pip wheel ensurepip brings; a Python with
none says why."""
import json
import os
import subprocess

import pytest
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from ansible_collections.gcu.topsrider.plugins.module_utils import _pep440, _torch_rule

from conftest import TOP
from test_node_python_floor import find_python

# (installed torch, the requirement, does it satisfy). The last three are unknowns (None).
CASES = [
    # (installed, spec, expected)
    ("2.13.0+cpu", "==2.13.0", True),
    ("2.13.0", "==2.13", True),
    ("2.13.0+cpu", "==2.3.0", False),
    ("1.10.0", "==1.10.*", True),
    ("1.11.0", "==1.10.*", False),
    ("2.13.0", ">=2.0,<3", True),
    ("3.0.0", ">=2.0,<3", False),
    ("2.13.1", "~=2.13.0", True),
    ("2.14.0", "~=2.13.0", False),
    ("2.14.0", "~=2.13", True),
    ("3.0", "~=2.13", False),
    ("2.13.0", "!=2.13.0", False),
    ("2.13.0", "!=2.3.0", True),
    ("1.7.0a0", "==1.7.0a0", True),
    ("1.7.0a0", "==1.7.0", False),
    ("1.7.0", "==1.7.0a0", False),
    ("1.7.0a0", "!=1.7.0", True),
    ("2.13.0rc1", ">=2.13.0", False),
    ("2.13.0rc1", "<2.13.0", False),
    ("2.13.0rc1", ">=2.13.0rc1", True),
    ("2.14.0rc1", ">=2.13.0", True),
    ("2.14.0.dev20260101", ">=2.13,<2.15", True),
    ("2.13.0+cu121", "==2.13.0+cpu", False),
    ("2.13.0+cpu", "==2.13.0+cpu", True),
    ("2.13.0", "==2.13.0+cpu", False),
    ("2.13.0+cu121", "!=2.13.0+cpu", True),
    ("2.13.0+cu121", "!=2.13.0", False),
    ("2.13.0+cu121", "==2.13.*", True),
    ("2.13.0+cu121", ">=2.13.0", True),
    ("2.13.0+cu121", ">2.13.0", False),
    ("2.13.0.post1", "<=2.13.0", False),
    ("2.13.0.post1", ">2.13.0", False),
    ("2.13.0.post1", ">=2.13.0", True),
    ("2.13.0.post1", "==2.13.0", False),
    ("2.13.0.post1", "==2.13.0.post1", True),
    ("2.13.0.post1", "~=2.13.0", True),
    ("1!1.0", ">=2.13.0", True),
    ("1!1.0", "==1.0", False),
    ("1!2.13.0", "==1!2.13.*", True),
    ("2.13.0", "==0!2.13.0", True),
    ("2.13.0", "===2.13.0", True),
    ("2.13.0+cpu", "===2.13.0", False),
    ("2.13", "===2.13.0", False),
    ("2.13.0", "==2.13.*,!=2.13.0", False),
    ("2.13.1", "==2.13.*,!=2.13.0", True),
    ("2.13.0", ">=2.13.0, <2.14", True),
    ("2.13.0", "<2.13.0", False),
    ("2.12.9", "<2.13.0", True),
    ("not-a-version", "==2.13.0", False),
    (None, "==2.13.0", None),
    ("2.13.0", None, None),
    ("", "==2.13.0", None),
]
KNOWN = [c for c in CASES if c[2] is not None]
NODE_FLOOR = "3.8"
RULE_DIR = os.path.join(TOP, "plugins", "module_utils")
# Runs on the floor Python with only the standard library: imports _pep440 (the rule's judge) from its
# file and prints its answers and where packaging came from (or the NoPackagingError it raised).
FLOOR_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
if sys.argv[3] == "none":
    sys.modules["ensurepip"] = None
import _pep440
if sys.argv[3] == "none":
    _pep440.PIP_WHEEL_DIRS = ()
try:
    out = {"answers": [_pep440.satisfies(v, s) for v, s in json.loads(sys.argv[2])],
           "source": _pep440.packaging_source()[2]}
except _pep440.NoPackagingError as e:
    out = {"error": str(e)}
print(json.dumps(out))
"""


def test_the_table_is_big_enough():
    assert len(KNOWN) >= 30


@pytest.mark.parametrize("installed,spec,expected", CASES)
def test_torch_matches(installed, spec, expected):
    assert _torch_rule.torch_matches(installed, spec) is expected


@pytest.mark.parametrize("installed,spec,expected", KNOWN)
def test_the_rule_is_packagings(installed, spec, expected):
    # pip check's question of an installed distribution: the range decides, pre-release or not.
    assert SpecifierSet(spec).contains(installed, prereleases=True) is expected
    assert _torch_rule.torch_matches(installed, spec) is expected


def test_a_spec_packaging_refuses_is_not_satisfied():
    with pytest.raises(InvalidSpecifier):
        SpecifierSet("=>2.13.0")
    assert _torch_rule.torch_matches("2.13.0", "=>2.13.0") is False


def test_the_controller_uses_packaging():
    assert _pep440.packaging_source()[2] == "packaging"


def _on_the_floor(mode, flags=()):
    python = find_python(NODE_FLOOR)
    argv = [python] + list(flags) + ["-c", FLOOR_SCRIPT, RULE_DIR, json.dumps([[v, s] for v, s, _e in KNOWN]), mode]
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    return python, json.loads(proc.stdout)


def test_the_floor_python_with_pip_uses_pips_vendored_packaging():
    python, out = _on_the_floor("site")
    assert out["source"] == "pip._vendor.packaging", (python, out)
    assert out["answers"] == [e for _v, _s, e in KNOWN]


def test_the_floor_python_without_pip_reads_the_pip_wheel_ensurepip_brings():
    # -S: no site-packages, so neither packaging nor pip can be imported; ensurepip's wheel is still there.
    python, out = _on_the_floor("wheel", ["-S"])
    assert out["source"].startswith("pip._vendor.packaging from "), (python, out)
    assert os.path.basename(out["source"]).startswith("pip-") and out["source"].endswith(".whl"), out
    assert out["answers"] == [e for _v, _s, e in KNOWN]


def test_a_python_with_no_packaging_at_all_says_why():
    python, out = _on_the_floor("none", ["-S"])
    assert "error" in out, out
    assert out["error"].startswith("the version rules need PEP 440's packaging library, and the node's "
                                   "Python %s (3.8." % python), out
    assert "no packaging module, no pip module (pip._vendor.packaging) and no pip wheel" in out["error"]
    assert "nothing was changed" in out["error"]
