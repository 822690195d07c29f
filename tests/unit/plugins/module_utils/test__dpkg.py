"""_dpkg: version comparison (against the host's real dpkg), parsing, dependencies, planning."""
import subprocess

import pytest

from ansible_collections.gcu.topsrider.plugins.module_utils import _dpkg as d

VERSION_PAIRS = [
    ("1.0", "1.0"), ("1.0", "1.1"), ("1.0-1", "1.0-2"), ("1.0", "1.0-0"), ("1.0~rc1", "1.0"),
    ("1.0~rc1", "1.0~rc2"), ("1.0~~", "1.0~"), ("1.0~", "1.0"), ("1.0+b1", "1.0"),
    ("1:0.9", "2.0"), ("0:1.0", "1.0"), ("2.5.136-1", "2.5.140-1"), ("2.5.140-1", "2.5.136-1"),
    ("2.5.9-1", "2.5.10-1"), ("1.0a", "1.0"), ("1.0a", "1.0+"), ("1.0.", "1.0"),
    ("1.001", "1.1"), ("1.0-1ubuntu1", "1.0-1"), ("1.0-1.1", "1.0-1+deb12u1"),
    ("5.2.15-2+b13", "5.2.15-2+b2"), ("2.36-9+deb12u4", "2.36-9+deb12u10"),
    ("1.2-3-4", "1.2-3-5"), ("1.2-3-4", "1.2-4"), ("a", "b"), ("1.0-a", "1.0-A"),
    ("1.0~beta", "1.0~alpha"), ("7.6p2-4", "7.6-0"), ("1.0.0", "1.0"), ("10", "9"),
    ("2.13.0+2.5.136", "2.13.0+2.5.140"), ("1:1.0-1", "1.0-1"), ("3.0", "3.0.0~"),
]


@pytest.mark.parametrize("a,b", VERSION_PAIRS)
def test_compare_versions_agrees_with_real_dpkg(a, b):
    # The host is Debian bookworm: its dpkg is the reference.
    def dpkg_says(op):
        return subprocess.call(["dpkg", "--compare-versions", a, op, b]) == 0
    expected = -1 if dpkg_says("lt") else (1 if dpkg_says("gt") else 0)
    assert dpkg_says("eq") == (expected == 0)
    assert d.compare_versions(a, b) == expected
    swapped = d.compare_versions(b, a)  # antisymmetric  # pylint: disable=arguments-out-of-order
    assert swapped == -expected


@pytest.mark.parametrize("bad", ["", " ", "1.0 1", "x:1.0", "1.0-", "1.0-a_b"])
def test_invalid_versions_are_refused(bad):
    with pytest.raises(d.DpkgError):
        d.parse_version(bad)


@pytest.mark.parametrize("version,op,wanted,ok", [
    ("2.5.136-1", "=", "2.5.136-1", True), ("2.5.140-1", "=", "2.5.136-1", False),
    ("2.36-9", ">=", "2.34", True), ("2.33", ">=", "2.34", False), ("1.0", "<<", "1.1", True),
    ("1.1", "<<", "1.1", False), ("1.1", "<=", "1.1", True), ("1.2", ">>", "1.1", True),
    ("1.0", None, None, True),
])
def test_version_satisfies(version, op, wanted, ok):
    assert d.version_satisfies(version, op, wanted) is ok


CONTROL = """Package: tops-eccl
Version: 2.5.136-1
Architecture: amd64
Depends: tops-sdk (= 2.5.136-1), libc6 (>= 2.34) | libc6-compat
Description: ECCL (simulated stand-in, gcu.topsrider sim)
 SIMULATOR: second line
 .
 third
"""


def test_deb_info_reads_control_fields():
    info = d.deb_info(CONTROL)
    assert info == {"package": "tops-eccl", "version": "2.5.136-1", "architecture": "amd64",
                    "depends": "tops-sdk (= 2.5.136-1), libc6 (>= 2.34) | libc6-compat",
                    "pre_depends": "", "provides": "", "installed_size": None}
    assert d.parse_control(CONTROL)["Description"].endswith("\nthird")
    # Installed-Size is in KiB; the bundle records bytes.
    assert d.deb_info(CONTROL.replace("Architecture: amd64\n", "Architecture: amd64\nInstalled-Size: 12\n"))[
        "installed_size"] == 12 * 1024


@pytest.mark.parametrize("text", ["Package: x\nArchitecture: all\n", "garbage line\n",
                                  " continuation first\n", "Package: x\nVersion: bad version\nArchitecture: all\n"])
def test_deb_info_refuses_bad_control(text):
    with pytest.raises(d.DpkgError):
        d.deb_info(text)


QUERY = (
    "libc6\tamd64\t2.36-9+deb12u10\tii \t\tlibgcc-s1\t\n"
    "libc6\ti386\t2.36-9+deb12u10\tun \t\t\t\n"
    "tops-sdk\tamd64\t2.5.136-1\thi \t\tlibc6 (>= 2.34)\t\n"
    "tops-eccl\tamd64\t2.5.136-1\tiF \t\ttops-sdk (= 2.5.136-1)\t\n"
    "old-tool\tamd64\t1.0\trc \t\t\t\n"
    "mawk\tamd64\t1.3.4\tii \tawk\tlibc6 (>= 2.34)\t\n"
    "gone\t\t\tun \t\t\t\n"
)


def test_parse_dpkg_query():
    q = d.parse_dpkg_query(QUERY)
    assert q["libc6"]["architecture"] == "amd64" and q["libc6"]["status"] == "installed"
    assert q["tops-sdk"]["want"] == "hold" and d.is_held(q["tops-sdk"])
    assert q["tops-eccl"]["status"] == "half-configured"
    assert d.installed_version(q["tops-eccl"]) == "2.5.136-1"
    assert d.installed_version(q["old-tool"]) is None
    assert d.installed_version(q["gone"]) is None
    assert d.installed_version(None) is None
    assert q["mawk"]["provides"] == "awk"


def test_query_format_matches_parser():
    assert d.QUERY_FORMAT.count("\t") == len(d.QUERY_FIELDS) - 1


def test_parse_relations():
    rel = d.parse_relations("tops-sdk (= 2.5.136-1), libc6 (>= 2.34) | libc6-compat, python3:any, x (> 1)")
    assert rel == [[("tops-sdk", None, "=", "2.5.136-1")],
                   [("libc6", None, ">=", "2.34"), ("libc6-compat", None, None, None)],
                   [("python3", "any", None, None)], [("x", None, ">=", "1")]]
    assert d.format_relation(rel[1]) == "libc6 (>= 2.34) | libc6-compat"
    with pytest.raises(d.DpkgError):
        d.parse_relations("Bad Name")


def _deb(name, version, depends=""):
    return {"package": name, "version": version, "architecture": "amd64", "depends": depends,
            "pre_depends": "", "provides": "", "path": "/b/%s_%s_amd64.deb" % (name, version)}


BASE = d.parse_dpkg_query("libc6\tamd64\t2.36-9\tii \t\t\t\nmawk\tamd64\t1.3.4\tii \tawk\t\t\n")
SDK136 = "tops-sdk\tamd64\t2.5.136-1\tii \t\tlibc6 (>= 2.34)\t\n"
ECCL136 = "tops-eccl\tamd64\t2.5.136-1\tii \t\ttops-sdk (= 2.5.136-1)\t\n"
FACTOR136 = "topsfactor\tamd64\t2.5.136-1\tii \t\ttops-sdk (= 2.5.136-1)\t\n"


@pytest.mark.parametrize("installed,changes,unmet", [
    # whole bundle over nothing: satisfied inside the bundle
    ("", {"tops-sdk": _deb("tops-sdk", "2.5.140-1", "libc6 (>= 2.34)"),
          "tops-eccl": _deb("tops-eccl", "2.5.140-1", "tops-sdk (= 2.5.140-1)")}, []),
    # eccl alone without the sdk
    ("", {"tops-eccl": _deb("tops-eccl", "2.5.140-1", "tops-sdk (= 2.5.140-1)")},
     [("tops-eccl", "tops-sdk (= 2.5.140-1)")]),
    # eccl 140 over sdk 136
    (SDK136, {"tops-eccl": _deb("tops-eccl", "2.5.140-1", "tops-sdk (= 2.5.140-1)")},
     [("tops-eccl", "tops-sdk (= 2.5.140-1)")]),
    # sdk 140 alone breaks installed eccl/topsfactor 136 (reverse dependencies)
    (SDK136 + ECCL136 + FACTOR136, {"tops-sdk": _deb("tops-sdk", "2.5.140-1")},
     [("tops-eccl", "tops-sdk (= 2.5.136-1)"), ("topsfactor", "tops-sdk (= 2.5.136-1)")]),
    # removing the sdk breaks its dependents
    (SDK136 + ECCL136, {"tops-sdk": None}, [("tops-eccl", "tops-sdk (= 2.5.136-1)")]),
    # removing everything together is fine
    (SDK136 + ECCL136, {"tops-sdk": None, "tops-eccl": None}, []),
    # virtual package through Provides; missing libc
    ("", {"x": _deb("x", "1", "awk, libfoo (>= 1)")}, [("x", "libfoo (>= 1)")]),
])
def test_check_transaction(installed, changes, unmet):
    inst = dict(BASE)
    inst.update(d.parse_dpkg_query(installed))
    got = d.check_transaction(inst, changes)
    assert [(u["package"], u["requires"]) for u in got] == unmet


BUNDLE140 = [_deb("tops-sdk", "2.5.140-1"), _deb("tops-eccl", "2.5.140-1")]


@pytest.mark.parametrize("installed,debs,hold,expected", [
    ("", BUNDLE140, False,
     [("tops-eccl", "install", None, "2.5.140-1"), ("tops-sdk", "install", None, "2.5.140-1")]),
    (SDK136 + ECCL136, BUNDLE140, True,
     [("tops-eccl", "upgrade", "2.5.136-1", "2.5.140-1"), ("tops-eccl", "hold", "2.5.140-1", "2.5.140-1"),
      ("tops-sdk", "upgrade", "2.5.136-1", "2.5.140-1"), ("tops-sdk", "hold", "2.5.140-1", "2.5.140-1")]),
    (SDK136.replace("ii ", "hi ") + ECCL136.replace("ii ", "hi "),
     [_deb("tops-sdk", "2.5.136-1"), _deb("tops-eccl", "2.5.136-1")], True, []),
    (SDK136.replace("ii ", "hi "), [_deb("tops-sdk", "2.5.136-1")], False,
     [("tops-sdk", "unhold", "2.5.136-1", "2.5.136-1")]),
    (SDK136.replace("2.5.136-1", "2.5.150-1"), [_deb("tops-sdk", "2.5.140-1")], False,
     [("tops-sdk", "downgrade", "2.5.150-1", "2.5.140-1")]),
    (SDK136.replace("ii ", "iU "), [_deb("tops-sdk", "2.5.136-1")], False,
     [("tops-sdk", "reinstall", "2.5.136-1", "2.5.136-1")]),
    ("tops-sdk\tamd64\t2.5.130-1\trc \t\t\t\n", [_deb("tops-sdk", "2.5.136-1")], False,
     [("tops-sdk", "install", None, "2.5.136-1")]),
])
def test_plan_present(installed, debs, hold, expected):
    plan = d.plan_present(debs, d.parse_dpkg_query(installed), hold)
    assert [(p["package"], p["action"], p["before"], p["after"]) for p in plan] == expected


def test_plan_absent_and_restore():
    inst = d.parse_dpkg_query(SDK136.replace("ii ", "hi ") + ECCL136)
    assert d.plan_absent(["tops-eccl", "tops-sdk", "topsfactor"], inst) == [
        {"package": "tops-eccl", "action": "remove", "before": "2.5.136-1", "after": None},
        {"package": "tops-sdk", "action": "remove", "before": "2.5.136-1", "after": None}]
    targets = {"tops-sdk": {"version": "2.5.130-1", "held": False},
               "tops-eccl": {"version": None, "held": False},
               "topsfactor": {"version": "2.5.130-1", "held": True}}
    plan = d.plan_restore(targets, inst)
    assert [(p["package"], p["action"], p["before"], p["after"]) for p in plan] == [
        ("tops-eccl", "remove", "2.5.136-1", None),
        ("tops-sdk", "downgrade", "2.5.136-1", "2.5.130-1"),
        ("tops-sdk", "unhold", "2.5.130-1", "2.5.130-1"),
        ("topsfactor", "install", None, "2.5.130-1"),
        ("topsfactor", "hold", "2.5.130-1", "2.5.130-1")]
    assert d.split_plan(plan) == (["tops-sdk", "topsfactor"], ["tops-eccl"], ["topsfactor"], ["tops-sdk"])
    # already there: nothing to do
    assert d.plan_restore({"tops-sdk": {"version": "2.5.136-1", "held": True}}, inst) == []


@pytest.mark.parametrize("arch,ok", [("amd64", True), ("all", True), ("i386", True), ("arm64", False)])
def test_architecture_ok(arch, ok):
    assert d.architecture_ok(arch, "amd64", ["i386"]) is ok


def test_strip_epoch_and_audit():
    assert d.strip_epoch("1:2.0-1") == "2.0-1" and d.strip_epoch("2.0-1") == "2.0-1"
    assert d.audit_problems("\n") == ""
    assert "not yet configured" in d.audit_problems(" not yet configured\n")
