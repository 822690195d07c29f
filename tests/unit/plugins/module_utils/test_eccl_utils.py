"""plugins/module_utils/_eccl.py, _eccl_library.py and _torch_rule.py: library search, report parsing,
classification of every problem code, the torch requirement (the rule's table: test__torch_rule.py)."""
import os
import subprocess
import sys

import pytest

import json

from ansible_collections.gcu.topsrider.plugins.module_utils import (
    _collective_rank, _eccl, _eccl_children, _eccl_library, _torch_rule,
)
from ansible_collections.gcu.topsrider.plugins.module_utils._vendors import collective_spec

import eccl_fakes

# The backends' rows of the vendor table, as the module hands them to the code under test.
ECCL = collective_spec("eccl")
NCCL = collective_spec("nccl")

# Codes only the module itself produces (tested in tests/unit/plugins/modules/test_eccl_probe.py).
MODULE_CODES = {"PYTHON_MISSING", "PROBE_FAILED", "WORLD_SIZE_TOO_LARGE"}
SEEN = set()


def codes(problems):
    found = [p["code"] for p in problems]
    SEEN.update(found)
    for p in problems:
        assert p["message"] and p["hint"], p
    return found


def test_problem_table_is_complete():
    for code, (meaning, hint) in _eccl.PROBLEMS.items():
        assert code == code.upper() and " " not in code
        assert meaning and hint
    assert _eccl.problem("NO_DEVICES")["hint"] == _eccl.PROBLEMS["NO_DEVICES"][1]
    assert _eccl.problem("NO_DEVICES", "m", "h") == {"code": "NO_DEVICES", "message": "m", "hint": "h"}
    with pytest.raises(KeyError):
        _eccl.problem("NOT_A_CODE")


def test_read_ld_so_conf_follows_includes(tmp_path):
    d = tmp_path / "ld.so.conf.d"
    d.mkdir()
    (tmp_path / "ld.so.conf").write_text("# comment\ninclude ld.so.conf.d/*.conf\n/usr/local/lib\n")
    (d / "a.conf").write_text("/usr/local/tops/lib  # TopsRider\n\n")
    (d / "b.conf").write_text("/opt/tops/lib:/usr/local/lib\ninclude ../ld.so.conf\n")
    (d / "c.txt").write_text("/not/included\n")
    dirs = _eccl_library.read_ld_so_conf(str(tmp_path / "ld.so.conf"))
    assert dirs == ["/usr/local/tops/lib", "/opt/tops/lib", "/usr/local/lib"]
    assert _eccl_library.read_ld_so_conf(str(tmp_path / "missing.conf")) == []


def test_search_dirs_orders_and_merges_sources():
    got = _eccl_library.search_dirs(["/x/lib", "/usr/local/tops/lib/"], ["/usr/local/tops/lib"], "/y:/x/lib",
                                    defaults=["/usr/lib", "/y"])
    assert got == [
        ("/x/lib", ["library_dirs", "LD_LIBRARY_PATH"]),
        ("/usr/local/tops/lib", ["library_dirs", "ld.so.conf"]),
        ("/y", ["LD_LIBRARY_PATH", "default"]),
        ("/usr/lib", ["default"]),
    ]


def test_find_copies_counts_links_once(tmp_path):
    a = tmp_path / "a"
    b = tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "libeccl.so.2.5.136").write_bytes(b"one")
    os.symlink("libeccl.so.2.5.136", str(a / "libeccl.so"))
    os.link(str(a / "libeccl.so.2.5.136"), str(b / "libeccl.so.2"))
    (b / "libeccl.so").write_bytes(b"two")
    (b / "libecclx.so").write_bytes(b"other library")
    copies = _eccl_library.find_copies([(str(a), ["default"]), (str(b), ["library_dirs"])],
                                       [str(a / "libeccl.so")], ECCL["library"]["name"])
    assert [c["path"] for c in copies] == [str(a / "libeccl.so"), str(b / "libeccl.so")]
    first = copies[0]
    assert first["realpath"] == str(a / "libeccl.so.2.5.136")
    assert set(first["found_in"]) == {"default", "library_dirs", "ldconfig cache"}
    assert first["in_loader_cache"] is True and copies[1]["in_loader_cache"] is False
    assert str(b / "libeccl.so.2") in first["links"]


@pytest.mark.parametrize("number,expected", [(2005136, "2.5.136"), (1010000, "1.10.0"), (None, None)])
def test_format_eccl_version(number, expected):
    assert _collective_rank.format_version(ECCL["library"], number) == expected


@pytest.mark.parametrize("requires,spec", [
    (["torch==2.13.0"], "==2.13.0"),
    (["numpy", "torch (==1.10.0)"], "==1.10.0"),
    (["torchvision==0.1", "torch>=2.0,<3; python_version >= '3.8'"], ">=2.0,<3"),
    (["torchvision==0.1"], None),
    ([], None),
])
def test_torch_requirement(requires, spec):
    assert _torch_rule.torch_requirement(requires) == spec


@pytest.mark.parametrize("stdout,expected", [
    ("noise\n%s{\"a\": 1}\n" % _eccl.REPORT_MARKER, {"a": 1}),
    ("%s{broken\n" % _eccl.REPORT_MARKER, None),
    ("%s[1]\n" % _eccl.REPORT_MARKER, None),
    ("nothing here", None),
])
def test_parse_report(stdout, expected):
    assert _eccl.parse_report(stdout) == expected


def test_last_stage():
    out = "%s import torch\nx\n%s all_reduce 4096\n" % (_eccl.STAGE_MARKER, _eccl.STAGE_MARKER)
    assert _eccl.last_stage(out) == "all_reduce 4096"
    assert _eccl.last_stage("") is None


# ---------------------------------------------------------------- library

def _copy(path, real=None):
    return {"path": path, "realpath": real or path, "found_in": ["default"], "links": [],
            "in_loader_cache": False, "size": 10}


OK_LOAD = {"loadable": True, "error": None, "version_number": 2005136, "version_string": "2.5.136"}


@pytest.mark.parametrize("copies,report,expected_codes,path,version", [
    ([_copy("/usr/local/tops/lib/libeccl.so")],
     {"by_soname": dict(OK_LOAD, path="/usr/local/tops/lib/libeccl.so"),
      "copies": [dict(OK_LOAD, path="/usr/local/tops/lib/libeccl.so")]},
     [], "/usr/local/tops/lib/libeccl.so", "2.5.136"),
    ([], {"by_soname": {"loadable": False, "error": "libeccl.so: cannot open shared object file"}, "copies": []},
     ["LIBRARY_MISSING"], None, None),
    ([_copy("/usr/local/tops/lib/libeccl.so")],
     {"by_soname": {"loadable": False, "error": "libeccl.so: cannot open shared object file"},
      "copies": [dict(OK_LOAD, path="/usr/local/tops/lib/libeccl.so")]},
     ["LIBRARY_NOT_ON_LOADER_PATH"], None, None),
    ([_copy("/usr/local/tops/lib/libeccl.so")],
     {"by_soname": {"loadable": False, "error": "invalid ELF header"},
      "copies": [{"path": "/usr/local/tops/lib/libeccl.so", "loadable": False,
                  "error": "/usr/local/tops/lib/libeccl.so: invalid ELF header"}]},
     ["LIBRARY_UNLOADABLE"], None, None),
    ([_copy("/usr/local/tops/lib/libeccl.so"), _copy("/usr/lib/libeccl.so")],
     {"by_soname": dict(OK_LOAD, path="/usr/lib/libeccl.so"),
      "copies": [dict(OK_LOAD, path="/usr/local/tops/lib/libeccl.so"),
                 dict(OK_LOAD, path="/usr/lib/libeccl.so", version_number=2005140)]},
     ["LIBRARY_DUPLICATE"], "/usr/lib/libeccl.so", "2.5.136"),
    # Loads (e.g. from LD_LIBRARY_PATH set by the caller) without a version symbol: healthy, version unknown.
    ([_copy("/x/libeccl.so")],
     {"by_soname": {"loadable": True, "error": None, "path": "/x/libeccl.so",
                    "version_number": None, "version_string": None},
      "copies": [{"path": "/x/libeccl.so", "loadable": True, "error": None,
                  "version_number": None, "version_string": None}]},
     [], "/x/libeccl.so", None),
])
def test_classify_library(copies, report, expected_codes, path, version):
    result, problems = _eccl_library.classify_library(copies, report, ECCL["library"])
    assert codes(problems) == expected_codes
    assert result["path"] == path
    assert result["version"] == version
    assert len(result["copies"]) == len(copies)


def test_classify_library_without_report_concludes_nothing():
    result, problems = _eccl_library.classify_library([_copy("/usr/local/tops/lib/libeccl.so")], None,
                                                      ECCL["library"])
    assert problems == []
    assert result["loadable"] is None and result["copies"][0]["loadable"] is None


def test_duplicate_message_names_versions_and_pick():
    copies = [_copy("/usr/local/tops/lib/libeccl.so"), _copy("/usr/lib/libeccl.so")]
    report = {"by_soname": dict(OK_LOAD, path="/usr/lib/libeccl.so"),
              "copies": [dict(OK_LOAD, path="/usr/local/tops/lib/libeccl.so"),
                         dict(OK_LOAD, path="/usr/lib/libeccl.so", version_number=2005140)]}
    _result, problems = _eccl_library.classify_library(copies, report, ECCL["library"])
    msg = problems[0]["message"]
    assert "2.5.136" in msg and "2.5.140" in msg and "loader picks /usr/lib/libeccl.so" in msg


# ---------------------------------------------------------------- framework

BASE = {"python": "/opt/venvs/train/bin/python", "python_version": "3.11.2", "torch_version": "2.13.0+cpu",
        "torch_gcu_installed": True, "torch_gcu_missing": False, "torch_gcu_error": None,
        "torch_gcu_version": "2.13.0+2.5.136", "torch_gcu_requires": ["torch==2.13.0"],
        "api_generation": "2.x", "is_available": True, "device_count": 8,
        "distributed_available": True, "backend_registered": True, "backend_error": None}


def _fw(**changes):
    r = dict(BASE)
    r.update(changes)
    return r


@pytest.mark.parametrize("report,backend,expected_codes", [
    (BASE, "eccl", []),
    (_fw(api_generation="1.x", torch_gcu_version="1.10.0+2.5.136", torch_version="1.10.0",
         torch_gcu_requires=["torch==1.10.0"]), "eccl", []),
    (_fw(torch_version=None, torch_error="ModuleNotFoundError: No module named 'torch'", torch_gcu_installed=False,
         torch_gcu_version=None, api_generation=None, device_count=None, backend_registered=None,
         distributed_available=None), "eccl", ["TORCH_MISSING", "TORCH_GCU_MISSING"]),
    (_fw(torch_version=None, torch_error="ModuleNotFoundError: No module named 'torch'", torch_gcu_installed=True,
         torch_gcu_version=None, api_generation=None, device_count=None, backend_registered=None,
         distributed_available=None), "eccl", ["TORCH_MISSING"]),
    (_fw(torch_gcu_installed=False, torch_gcu_missing=True, torch_gcu_version=None, api_generation=None,
         device_count=None, backend_registered=False, backend_error="Invalid backend: 'eccl'"),
     "eccl", ["TORCH_GCU_MISSING", "BACKEND_NOT_REGISTERED"]),
    # The backend decides what is checked: gloo and nccl never raise torch_gcu problems.
    (_fw(torch_gcu_missing=True, torch_gcu_version=None, api_generation=None, device_count=None),
     "gloo", []),
    (_fw(torch_gcu_missing=True, torch_gcu_version=None, api_generation="cuda", device_count=1,
         loaded_library={"name": "libnccl", "path": "/v/site-packages/nvidia/nccl/lib/libnccl.so.2",
                         "version": "2.28.9"}), "nccl", []),
    (_fw(torch_gcu_missing=True, torch_gcu_version=None, api_generation="cuda", device_count=0, is_available=False,
         backend_registered=False, backend_error="backend 'nccl' is not available"), "nccl",
     ["NO_DEVICES", "BACKEND_NOT_REGISTERED"]),
    # libeccl of another release than the torch_gcu wheel's stack
    (_fw(loaded_library={"name": "libeccl", "path": "/usr/local/tops/lib/libeccl.so", "version": "2.5.140"}),
     "eccl", ["LIBRARY_VERSION_MISMATCH"]),
    (_fw(loaded_library={"name": "libeccl", "path": "/usr/local/tops/lib/libeccl.so", "version": "2.5.136"}),
     "eccl", []),
    (_fw(torch_gcu_error="ImportError: libeccl.so: cannot open shared object file", torch_gcu_version=None,
         api_generation=None, device_count=None, backend_registered=False,
         backend_error="Invalid backend: 'eccl'"), "eccl", ["TORCH_GCU_IMPORT_FAILED", "BACKEND_NOT_REGISTERED"]),
    (_fw(torch_gcu_requires=["torch==2.3.0"], torch_gcu_version="2.3.0+2.5.136"), "eccl",
     ["TORCH_VERSION_MISMATCH"]),
    (_fw(api_generation=None, device_count=None), "eccl", ["TORCH_GCU_API_UNKNOWN"]),
    (_fw(device_count=0, is_available=False), "eccl", ["NO_DEVICES"]),
    (_fw(backend_registered=False, backend_error="Invalid backend: 'eccl'"), "eccl", ["BACKEND_NOT_REGISTERED"]),
    (_fw(distributed_available=False, backend_registered=False), "eccl", ["BACKEND_NOT_REGISTERED"]),
    (_fw(torch_gcu_requires=[]), "eccl", []),
])
def test_classify_framework(report, backend, expected_codes):
    result, problems = _eccl.classify_framework(report, backend)
    assert codes(problems) == expected_codes
    assert result["backend"] == backend


def test_classify_framework_fields():
    result, _problems = _eccl.classify_framework(_fw(torch_gcu_requires=["torch==2.3.0"]), "eccl")
    assert result["torch_required"] == "2.3.0" and result["torch_matches"] is False
    result, problems = _eccl.classify_framework(BASE, "eccl")
    assert result["torch_required"] == "2.13.0" and result["torch_matches"] is True
    assert result["api_generation"] == "2.x" and result["device_count"] == 8
    _result, problems = _eccl.classify_framework(_fw(torch_gcu_requires=["torch==2.3.0"]), "eccl")
    assert "torch==2.3.0" in problems[0]["hint"]


# ---------------------------------------------------------------- collective

def _rank(rank, world=4, correct=True, seconds=0.001, killed=None, rc=0, report=True, stderr="", stage="report"):
    res = [{"size_bytes": 4096, "seconds": seconds, "correct": correct, "expected": world * (world + 1) / 2.0,
            "got": world * (world + 1) / 2.0 + (0 if correct else 1)}]
    return {"rank": rank, "pid": 1000 + rank, "rc": rc, "killed": killed, "stderr": stderr, "last_stage": stage,
            "report": {"rank": rank, "results": res} if report else None}


@pytest.mark.parametrize("outcomes,timed_out,expected_codes,reported", [
    ([_rank(r) for r in range(4)], False, [], 4),
    ([_rank(r, correct=(r != 2)) for r in range(4)], False, ["WRONG_RESULT"], 4),
    ([_rank(r) for r in range(3)] + [_rank(3, killed="timeout", rc=-9, report=False, stage="all_reduce 4096")],
     True, ["RANK_TIMEOUT"], 3),
    ([_rank(r, killed="timeout", rc=-9, report=False, stage="all_reduce 4096") for r in range(4)],
     True, ["RANK_TIMEOUT"], 0),
    ([_rank(0, rc=1, report=False, stage="init_process_group",
            stderr="Traceback\nRuntimeError: fake ECCL error: device lost")]
     + [_rank(r, killed="aborted", rc=-9, report=False) for r in range(1, 4)], False, ["RANK_FAILED"], 0),
    ([_rank(r, rc=1, report=False, stderr="ValueError: Invalid backend: 'eccl'") for r in range(4)],
     False, ["BACKEND_NOT_REGISTERED"] * 4, 0),
    ([_rank(0, rc=1, report=False, stderr="RuntimeError: The server socket has failed to listen on any local "
            "network address. port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use")]
     + [_rank(r) for r in range(1, 4)], False, ["MASTER_PORT_IN_USE"], 3),
    ([_rank(0, rc=0, report=False, stage="all_reduce 4096")] + [_rank(r) for r in range(1, 4)], False,
     ["RANK_FAILED"], 3),
    ([_rank(r, rc=1, report=False, stage="init_process_group",
            stderr="RuntimeError: ECCL error [simulated]: libeccl.so version 2.5.140 does not match TopsRider "
                   "2.5.136, the stack this torch_gcu (2.13.0+2.5.136) was built for") for r in range(4)],
     False, ["LIBRARY_VERSION_MISMATCH"] * 4, 0),
])
def test_classify_collective(outcomes, timed_out, expected_codes, reported):
    fields, problems = _eccl.classify_collective(outcomes, 4, timed_out, 30)
    assert codes(problems) == expected_codes
    assert fields["ranks_reported"] == reported
    assert fields["timed_out"] is timed_out
    assert len(fields["ranks"]) == len(outcomes)


def test_collective_numbers():
    outcomes = [_rank(r, seconds=0.001 * (r + 1)) for r in range(4)]
    fields, problems = _eccl.classify_collective(outcomes, 4, False, 30)
    assert problems == []
    (res,) = fields["results"]
    # Slowest rank (4 ms) defines the latency; busbw = algbw * 2(n-1)/n.
    assert res["latency_us"] == 4000.0
    assert res["algbw_gbps"] == round(4096 / 0.004 / 1e9, 6)
    assert res["busbw_gbps"] == round(4096 / 0.004 / 1e9 * 1.5, 6)
    assert res["correct"] is True and res["ranks"] == 4


def test_timeout_message_names_stage_and_aborted_ranks():
    outcomes = [_rank(0, killed="timeout", rc=-9, report=False, stage="all_reduce 4096"),
                _rank(1, killed="timeout", rc=-9, report=False, stage="init_process_group")]
    _result, problems = _eccl.classify_collective(outcomes, 2, True, 7)
    assert "2 of 2 ranks did not report within 7s" in problems[0]["message"]
    assert "rank 0 in all_reduce 4096" in problems[0]["message"]
    assert "rank 1 in init_process_group" in problems[0]["message"]
    outcomes = [_rank(0, rc=1, report=False, stderr="boom"), _rank(1, killed="aborted", rc=-9, report=False)]
    _result, problems = _eccl.classify_collective(outcomes, 2, False, 7)
    assert "ranks 1 were killed after that" in problems[0]["message"]


# ------------------------------------------------- probe scripts run by real interpreters

def _run(python, script, args, env_extra):
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.update(env_extra)
    proc = subprocess.run([python, "-c", script] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=env, universal_newlines=True, timeout=60, check=False)
    report = _eccl.parse_report(proc.stdout)
    assert report is not None, proc.stderr
    return report


@pytest.mark.parametrize("python", eccl_fakes.interpreters())
@pytest.mark.parametrize("site_kwargs,env,expected_codes,api", [
    ({"gcu": "2.x"}, {}, [], "2.x"),
    ({"gcu": "1.x", "requires": "1.10.0"}, {"FAKE_TORCH_VERSION": "1.10.0"}, [], "1.x"),
    ({"gcu": None}, {}, ["TORCH_GCU_MISSING", "BACKEND_NOT_REGISTERED"], None),
    ({"gcu": None, "torch": False}, {}, ["TORCH_MISSING", "TORCH_GCU_MISSING"], None),
    ({"gcu": "2.x"}, {"FAKE_GCU_IMPORT_ERROR": "1"}, ["TORCH_GCU_IMPORT_FAILED", "BACKEND_NOT_REGISTERED"], None),
    ({"gcu": "2.x", "requires": "2.3.0"}, {}, ["TORCH_VERSION_MISMATCH"], "2.x"),
    ({"gcu": "1.x", "requires": "1.10.0"}, {}, ["TORCH_VERSION_MISMATCH"], "1.x"),
    ({"gcu": "2.x"}, {"FAKE_GCU_DEVICES": "0"}, ["NO_DEVICES"], "2.x"),
    ({"gcu": "1.x", "requires": "2.13.0"}, {"FAKE_GCU_NO_REGISTER": "1"}, ["BACKEND_NOT_REGISTERED"], "1.x"),
    ({"gcu": "noapi"}, {}, ["TORCH_GCU_API_UNKNOWN", "BACKEND_NOT_REGISTERED"], None),
])
def test_framework_script_on_fake_packages(tmp_path, python, site_kwargs, env, expected_codes, api):
    site = eccl_fakes.make_site(tmp_path, **site_kwargs)
    env = dict(env, PYTHONPATH=site)
    report = _run(python, _eccl_children.FRAMEWORK_SCRIPT, [json.dumps(ECCL)], env)
    result, problems = _eccl.classify_framework(report, "eccl")
    assert codes(problems) == expected_codes, problems
    assert result["api_generation"] == api
    assert result["python"]
    if api:
        assert result["device_count"] == int(env.get("FAKE_GCU_DEVICES", "8"))
        assert result["torch_gcu_location"] == os.path.join(site, "torch_gcu")


@pytest.fixture(scope="module")
def libdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("eccl-lib")
    eccl_fakes.build_libeccl(d)
    return str(d)


@pytest.mark.parametrize("python", eccl_fakes.interpreters())
def test_library_script_loads_and_reads_version(tmp_path, libdir, python):
    junk = tmp_path / "libeccl.so"
    junk.write_text("not an ELF file\n" * 200)
    lib = os.path.join(libdir, "libeccl.so")
    report = _run(python, _eccl_children.LIBRARY_SCRIPT, [json.dumps(ECCL["library"]), lib, str(junk)],
                  {"LD_LIBRARY_PATH": libdir})
    assert report["by_soname"]["loadable"] is True
    assert report["by_soname"]["path"] == lib
    assert report["by_soname"]["version_number"] == 2005136
    assert report["by_soname"]["version_string"] == "2.5.136"
    assert report["copies"][0]["loadable"] is True
    assert report["copies"][1]["loadable"] is False and "ELF" in report["copies"][1]["error"]
    # Without the loader path the soname does not resolve, though the file loads by path.
    report = _run(python, _eccl_children.LIBRARY_SCRIPT, [json.dumps(ECCL["library"]), lib], {})
    assert report["by_soname"]["loadable"] is False
    assert "libeccl.so" in report["by_soname"]["error"]
    assert report["copies"][0]["loadable"] is True


def test_library_script_reads_an_nccl_version(tmp_path):
    # A system NCCL exports ncclGetVersion (M*10000 + m*100 + p since 2.9).
    src = tmp_path / "nccl.c"
    src.write_text("int ncclGetVersion(int *v) { *v = 22809; return 0; }\n")
    lib = tmp_path / "libnccl.so.2"
    subprocess.check_call(["gcc", "-shared", "-fPIC", "-Wl,-soname,libnccl.so.2", "-o", str(lib), str(src)])
    report = _run(sys.executable, _eccl_children.LIBRARY_SCRIPT, [json.dumps(NCCL["library"]), str(lib)],
                  {"LD_LIBRARY_PATH": str(tmp_path)})
    assert report["by_soname"]["path"] == str(lib)
    assert report["by_soname"]["version_string"] == "2.28.9" and report["by_soname"]["version_number"] is None
    copy = {"path": str(lib), "realpath": str(lib), "found_in": ["x"], "links": [], "in_loader_cache": False, "size": 1}
    result, problems = _eccl_library.classify_library([copy], report, NCCL["library"])
    assert problems == [] and result["version"] == "2.28.9" and result["name"] == "libnccl.so"


def test_every_problem_code_has_a_case():
    # Runs last in this file: the tables above must have produced every code but the module's own.
    assert SEEN | MODULE_CODES == set(_eccl.PROBLEMS), set(_eccl.PROBLEMS) - SEEN - MODULE_CODES
