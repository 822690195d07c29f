"""_manifest: validation, sha256 verification, wheel metadata; and scripts/topsrider-manifest."""
import copy
import hashlib
import json
import os
import subprocess
import sys

import pytest

from conftest import TOP
from ansible_collections.gcu.topsrider.plugins.module_utils import _manifest as m

DEB = b"not really a deb, but bytes with a known sha256"
WHEEL = b"wheel bytes"


def _entry(name, data, **kw):
    e = {"file": name, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    e.update(kw)
    return e


def _manifest():
    return {"format": 1, "product": "TopsRider", "version": "2.5.136", "files": [
        _entry("tops-sdk_2.5.136-1_amd64.deb", DEB, type="deb", package="tops-sdk",
               version="2.5.136-1", architecture="amd64"),
        _entry("torch_gcu-2.13.0+2.5.136-py311-none-any.whl", WHEEL, type="wheel",
               package="torch_gcu", version="2.13.0+2.5.136", python="3.11", requires_torch="2.13.0")]}


@pytest.fixture
def bundle(tmp_path):
    (tmp_path / "tops-sdk_2.5.136-1_amd64.deb").write_bytes(DEB)
    (tmp_path / "torch_gcu-2.13.0+2.5.136-py311-none-any.whl").write_bytes(WHEEL)
    (tmp_path / "manifest.json").write_text(json.dumps(_manifest()))
    return tmp_path


def test_load_valid(bundle):
    data = m.load(str(bundle / "manifest.json"))
    assert [e["file"] for e in m.entries(data, "deb")] == ["tops-sdk_2.5.136-1_amd64.deb"]
    assert m.verify(str(bundle), data) == []


def _break(path, value):
    def f(data):
        target = data
        for key in path[:-1]:
            target = target[key]
        if value is KeyError:
            del target[path[-1]]
        else:
            target[path[-1]] = value
        return data
    return f


@pytest.mark.parametrize("mutate,needle", [
    (_break(["format"], 2), "format must be 1"),
    (_break(["version"], ""), "version must be"),
    (_break(["files"], []), "files must be a non-empty list"),
    (_break(["files", 0, "file"], "../x.deb"), "is not a plain name"),
    (_break(["files", 0, "file"], "x.deb\n"), "has a newline"),
    (_break(["files", 0, "file"], ".hidden.deb"), "is not a plain name"),
    (_break(["files", 0, "sha256"], "ABC"), "sha256 must be"),
    # A trailing newline is refused (the pattern ends in \Z, not $).
    (_break(["files", 0, "sha256"], "0" * 64 + "\n"), "sha256 must be"),
    (_break(["files", 0, "size"], -1), "size must be"),
    (_break(["files", 0, "size"], True), "size must be"),
    (_break(["files", 0, "installed_size"], -1), "installed_size must be"),
    (_break(["files", 0, "installed_size"], "12"), "installed_size must be"),
    (_break(["files", 0, "type"], "rpm"), "type must be one of"),
    (_break(["files", 0, "package"], KeyError), "deb entries need a non-empty package"),
    (_break(["files", 1, "requires_torch"], KeyError), "wheel entries need a non-empty requires_torch"),
    (_break(["files", 1, "python"], "311"), "python must look like"),
    (lambda d: d["files"].append(copy.deepcopy(d["files"][0])) or d, "listed twice"),
])
def test_validate_refuses(mutate, needle):
    with pytest.raises(m.ManifestError) as e:
        m.validate(mutate(_manifest()))
    assert needle in str(e.value)


def test_load_errors(tmp_path):
    with pytest.raises(m.ManifestError, match="cannot read"):
        m.load(str(tmp_path / "nope.json"))
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(m.ManifestError, match="not valid JSON"):
        m.load(str(tmp_path / "bad.json"))


def test_verify_lists_every_problem(bundle):
    data = _manifest()
    data["files"].append(_entry("topsfactor_2.5.136-1_amd64.deb", b"x", type="deb",
                                package="topsfactor", version="2.5.136-1", architecture="amd64"))
    (bundle / "tops-sdk_2.5.136-1_amd64.deb").write_bytes(DEB[:-1] + b"X")  # same size
    (bundle / "torch_gcu-2.13.0+2.5.136-py311-none-any.whl").write_bytes(WHEEL + b"!")
    problems = m.verify(str(bundle), data)
    assert [(p["file"], p["problem"]) for p in problems] == [
        ("tops-sdk_2.5.136-1_amd64.deb", "sha256 mismatch"),
        ("torch_gcu-2.13.0+2.5.136-py311-none-any.whl", "size mismatch"),
        ("topsfactor_2.5.136-1_amd64.deb", "missing")]
    lines = m.describe_problems(problems)
    assert lines[2] == "topsfactor_2.5.136-1_amd64.deb: missing"
    assert m.verify(str(bundle), data, names={"topsfactor_2.5.136-1_amd64.deb"})[0]["problem"] == "missing"


META = """Metadata-Version: 2.1
Name: torch_gcu
Version: 2.13.0+2.5.136
Requires-Python: ==3.11.*
Requires-Dist: numpy
Requires-Dist: torch==2.13.0

Requires-Dist: not-a-header
"""


def test_wheel_metadata():
    meta = m.parse_wheel_metadata(META)
    assert meta["name"] == "torch_gcu" and meta["version"] == "2.13.0+2.5.136"
    assert meta["requires_dist"] == ["numpy", "torch==2.13.0"]
    assert m.requires_torch(meta["requires_dist"]) == "2.13.0"
    assert m.requires_torch(["torch (==1.10.0)"]) == "1.10.0"
    assert m.requires_torch(["torch>=1"]) is None
    assert m.requires_torch(["torch==2.13.*"]) is None and m.requires_torch(["torchvision==0.1"]) is None
    assert m.requires_torch(["torch == 2.13.0+cpu ; python_version >= '3.8'"]) == "2.13.0+cpu"


@pytest.mark.parametrize("name,req,python", [
    ("torch_gcu-2.13.0+2.5.136-py311-none-any.whl", "==3.11.*", "3.11"),
    ("torch_gcu-2.13.0+2.5.136-py311-none-any.whl", None, "3.11"),
    ("torch_gcu-1.10.0+2.5.136-py3.10-none-any.whl", None, "3.10"),
    ("x-1-cp38-cp38-linux_x86_64.whl", None, "3.8"),
    ("x-1-py3-none-any.whl", ">=3.8,<3.9", "3.8"),
    ("x-1-py3-none-any.whl", ">=3.8", None),
    ("x-1-py3-none-any.whl", "~=3.11.0", "3.11"),
    ("x-1-py3-none-any.whl", ">=3.11.4,<3.12", "3.11"),
    ("x-1-py3-none-any.whl", "~=3.11", None),          # 3.11 and every later 3.x
    ("torch_gcu-2.13.0+2.5.136-py311-none-any.whl", "~=3.11", "3.11"),   # then the tag decides
    ("x-1-py3-none-any.whl", "not a specifier", None),
])
def test_python_from_wheel(name, req, python):
    assert m.python_from_wheel(name, req) == python


TOOL = os.path.join(TOP, "scripts", "topsrider-manifest")


def _tool(*args):
    return subprocess.run([sys.executable, TOOL] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)


def test_tool_create_and_check_real_deb_and_wheel(tmp_path):
    # a real deb built with dpkg-deb and a real wheel (zip with METADATA)
    root = tmp_path / "root"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(
        "Package: tops-sdk\nVersion: 2.5.136-1\nArchitecture: amd64\nMaintainer: t <t@example.invalid>\n"
        "Description: test (simulated stand-in, gcu.topsrider sim)\n")
    out = tmp_path / "bundle"
    out.mkdir()
    subprocess.run(["dpkg-deb", "--root-owner-group", "--build", str(root),
                    str(out / "tops-sdk_2.5.136-1_amd64.deb")], check=True, stdout=subprocess.PIPE)
    import zipfile
    with zipfile.ZipFile(str(out / "torch_gcu-2.13.0+2.5.136-py311-none-any.whl"), "w") as z:
        z.writestr("torch_gcu-2.13.0+2.5.136.dist-info/METADATA", META)
    r = _tool("create", str(out), "--version", "2.5.136")
    assert r.returncode == 0, r.stderr
    data = m.load(str(out / "manifest.json"))
    by_type = dict((e["type"], e) for e in data["files"])
    assert by_type["deb"]["package"] == "tops-sdk" and by_type["deb"]["version"] == "2.5.136-1"
    assert by_type["wheel"]["python"] == "3.11" and by_type["wheel"]["requires_torch"] == "2.13.0"
    r = _tool("check", str(out))
    assert r.returncode == 0, r.stderr
    with open(str(out / "tops-sdk_2.5.136-1_amd64.deb"), "ab") as f:
        f.write(b"x")
    r = _tool("check", str(out))
    assert r.returncode == 1
    assert "tops-sdk_2.5.136-1_amd64.deb: size mismatch" in r.stderr
    (out / "manifest.json").write_text("{}")
    assert _tool("check", str(out)).returncode == 2
