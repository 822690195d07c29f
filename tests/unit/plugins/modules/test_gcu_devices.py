# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for gcu.topsrider.gcu_devices with mocked efsmi runs."""
import os

import pytest

from ansible.module_utils import basic
from ansible_collections.gcu.topsrider.plugins.module_utils import _cards
from ansible_collections.gcu.topsrider.plugins.modules import gcu_devices

from utils import AnsibleExitJson, AnsibleFailJson, exit_json, fail_json, set_module_args

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.abspath(os.path.join(HERE, "..", "..", "fixtures", "efsmi"))
EFSMI = "/usr/sbin/efsmi"
T20_BUS = ["0000:3d:00.0", "0000:3e:00.0", "0000:40:00.0", "0000:41:00.0",
           "0000:b1:00.0", "0000:b2:00.0", "0000:b4:00.0", "0000:b5:00.0"]
NOT_LOADED = "Error: open /dev/gcuctl failed: No such file or directory\n"


def fixture(name):
    with open(os.path.join(FIX, name), "rb") as f:
        return f.read().decode("utf-8")


class Runner(object):
    """Stands in for AnsibleModule.run_command: argv tuple -> (rc, out, err)."""

    def __init__(self, table):
        self.table = table
        self.calls = []

    def __call__(self, module, args, **kwargs):
        assert isinstance(args, list), "argv list, never a shell string"
        assert kwargs.get("environ_update") == {"LC_ALL": "C", "LANG": "C"}
        self.calls.append(args)
        key = tuple(args[1:])
        if key not in self.table:
            raise AssertionError("unexpected command %r" % (args,))
        return self.table[key]


@pytest.fixture
def env(monkeypatch, tmp_path):
    """Patched module, a fake PCI tree with the eight T20 cards, no /sys/module/enflame."""
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)
    pci = tmp_path / "pci"
    pci.mkdir()
    for name in T20_BUS + ["0000:00:1f.0"]:
        d = pci / name
        d.mkdir()
        (d / "vendor").write_text(u"0x8086\n" if name.startswith("0000:00") else u"0x1e36\n")
        (d / "device").write_text(u"0x0021\n")
    monkeypatch.setattr(_cards, "PCI_ROOT", str(pci))
    monkeypatch.setattr(_cards, "SYS_MODULE_ROOT", str(tmp_path / "no-sys-module"))
    monkeypatch.setattr(_cards, "DEV_ROOT", str(tmp_path / "dev"))

    def run(args, table, bin_path=EFSMI):
        runner = Runner(table)

        # a plain function, so that it binds as a method of the module
        def run_command(self, args, **kwargs):
            return runner(self, args, **kwargs)

        monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
        monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, required=False, opt_dirs=None: bin_path)
        with set_module_args(args):
            with pytest.raises((AnsibleExitJson, AnsibleFailJson)) as exc:
                gcu_devices.main()
        result = exc.value.args[0]
        result["_calls"] = runner.calls
        return result

    run.tmp_path = tmp_path
    return run


def ok(text):
    return (0, text, "")


Q7 = "t20-query-7card-old-keys-unhealthy.txt"
IDLE = "t20-summary-8card-idle.txt"

# (id, args, efsmi table, expected calls, failed, expectations on the result)
CASES = [
    ("auto-query-plus-table", {}, {("-q",): ok(fixture("s60-query-2card.txt")), (): ok(fixture("s60-summary-2card.txt"))},
     [("-q",), ()], False, {"source": "query", "count": 2, "efsmi_version": "1.2.0.301", "driver": "1.4.3.4"}),
    ("auto-falls-back-when-q-fails", {}, {("-q",): (2, "", "efsmi: unknown option -q\n"), (): ok(fixture(IDLE))},
     [("-q",), ()], False, {"source": "summary", "count": 8, "efsmi_version": "1.20.0", "driver": "2.4.20230829"}),
    ("auto-falls-back-when-q-unparseable", {}, {("-q",): ok("usage: efsmi [options]\n"), (): ok(fixture(IDLE))},
     [("-q",), ()], False, {"source": "summary", "count": 8}),
    ("auto-table-unparseable-is-ignored", {}, {("-q",): ok(fixture(Q7)), (): ok("garbage\n")},
     [("-q",), ()], False, {"source": "query", "count": 7, "efsmi_version": None}),
    ("query-only", {"source": "query"}, {("-q",): ok(fixture(Q7))}, [("-q",)], False, {"source": "query", "count": 7}),
    ("summary-only", {"source": "summary"}, {(): ok(fixture("t20-summary-16card-three-busy.txt"))}, [()], False,
     {"source": "summary", "count": 16}),
    ("crlf", {"source": "summary"}, {(): ok(fixture(IDLE).replace("\n", "\r\n"))}, [()], False, {"count": 8}),
    ("expected-count-ok", {"expected_count": 8, "min_utilization": 50},
     {("-q",): (1, "", "bad"), (): ok(fixture("t20-summary-8card-all-busy.txt"))},
     [("-q",), ()], False, {"count": 8}),
]


@pytest.mark.parametrize("name,args,table,calls,failed,expect", CASES, ids=[c[0] for c in CASES])
def test_reads(env, name, args, table, calls, failed, expect):
    res = env(args, table)
    assert [tuple(c[1:]) for c in res["_calls"]] == calls
    assert [c[0] for c in res["_calls"]] == [EFSMI] * len(calls)
    assert res.get("failed", False) is failed, res.get("msg")
    assert res["changed"] is False
    facts = res["ansible_facts"]
    assert facts["gcu_vendor"] == "enflame" and res["efsmi"] == EFSMI and "nvidia_smi" not in res
    assert facts["gcu_device_count"] == expect["count"] == len(facts["gcu_devices"])
    assert [c["index"] for c in facts["gcu_devices"]] == sorted(c["index"] for c in facts["gcu_devices"])
    if "source" in expect:
        assert res["source"] == expect["source"]
    if "efsmi_version" in expect:
        assert facts["gcu_efsmi_version"] == expect["efsmi_version"]
    if "driver" in expect:
        assert facts["gcu_driver_version"] == expect["driver"]
    assert facts["gcu_pci_devices"] == {"count": 8, "device_ids": ["0021"] * 8, "bus_ids": T20_BUS}
    assert res["problems"] == []


def test_firmware_merged_from_table_when_cards_match(env):
    q = fixture("s60-query-2card.txt").replace("Bus                     : 17", "Bus                     : 01") \
        .replace("Bus                     : 18", "Bus                     : 09")
    res = env({}, {("-q",): ok(q), (): ok(fixture("s60-summary-2card.txt"))})
    assert [c["firmware"] for c in res["ansible_facts"]["gcu_devices"]] == ["33.6.2", "33.6.5"]
    assert [c["health"] for c in res["ansible_facts"]["gcu_devices"]] == [True, True]


def test_driver_version_from_sysfs_wins(env, monkeypatch):
    (env.tmp_path / "sys-module" / "enflame").mkdir(parents=True)
    (env.tmp_path / "sys-module" / "enflame" / "version").write_text(u"2.5.0\n")
    monkeypatch.setattr(_cards, "SYS_MODULE_ROOT", str(env.tmp_path / "sys-module"))
    res = env({"source": "summary"}, {(): ok(fixture(IDLE))})
    assert res["ansible_facts"]["gcu_driver_version"] == "2.5.0"


def test_check_mode_is_the_same_read(env):
    res = env({"_ansible_check_mode": True, "expected_count": 8}, {("-q",): (1, "", "x"), (): ok(fixture(IDLE))})
    assert res["changed"] is False and res["ansible_facts"]["gcu_device_count"] == 8


FAILURES = [
    ("unhealthy", {"require_healthy": True, "source": "query"}, {("-q",): ok(fixture(Q7))},
     ["unhealthy GCU(s): GCU 3 (0000:41:00.0, serial W28001180500)", "RMA"]),
    ("one-busy", {"min_utilization": 50}, {("-q",): (1, "", ""), (): ok(fixture("t20-summary-8card-one-busy.txt"))},
     ["7 of 8 GCUs not busy", "cards 1-7 sleeping", "only card(s) 0 working", "one process per card"]),
    ("count-pci-8-driver-7", {"expected_count": 8, "source": "query"}, {("-q",): ok(fixture(Q7))},
     ["expected 8 GCUs, the driver sees 7", "PCI sees 8 Enflame device(s), the driver sees 7",
      "not seen by the driver: 0000:b5:00.0"]),
    ("too-hot", {"max_temperature": 45, "source": "summary"}, {(): ok(fixture("t20-summary-8card-one-busy.txt"))},
     ["GCU(s) above 45 C", "GCU 0 (0000:3d:00.0, serial W28001150301) at 52 C"]),
]


@pytest.mark.parametrize("name,args,table,needles", FAILURES, ids=[f[0] for f in FAILURES])
def test_expectation_failures(env, name, args, table, needles):
    res = env(args, table)
    assert res["failed"] is True and res["changed"] is False
    assert len(res["problems"]) == 1
    for needle in needles:
        assert needle in res["msg"] and needle in res["problems"][0]
    assert res["ansible_facts"]["gcu_device_count"] in (7, 8)


def test_removed_card_without_expectation_only_warns(env, monkeypatch):
    warned = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, w: warned.append(w))
    res = env({"source": "query"}, {("-q",): ok(fixture(Q7))})
    assert "failed" not in res
    assert res["ansible_facts"]["gcu_pci_devices"]["count"] == 8 and res["ansible_facts"]["gcu_device_count"] == 7
    assert any("PCI sees 8 Enflame device(s), the driver sees 7" in w for w in warned)


ERRORS = [
    ("driver-not-loaded-auto", {}, {("-q",): (1, "", NOT_LOADED), (): (1, "", NOT_LOADED)},
     ["`/usr/sbin/efsmi` failed (rc=1)", "open /dev/gcuctl failed", "modprobe enflame", "/dev/gcuctl is missing",
      "not loaded", "`/usr/sbin/efsmi -q` before it: rc=1"], 1),
    ("driver-not-loaded-query", {"source": "query"}, {("-q",): (1, "", NOT_LOADED)},
     ["`/usr/sbin/efsmi -q` failed (rc=1)", "modprobe enflame", "no /dev/gcu[0-9]*"], 1),
    ("exit-nonzero-summary", {"source": "summary"}, {(): (255, "partial", "")},
     ["`/usr/sbin/efsmi` failed (rc=255): partial", "Hint:"], 255),
    ("garbage-summary", {"source": "summary"}, {(): ok(fixture("garbage.txt"))},
     ["not an efsmi summary table", "Segmentation fault (core dumped)"], 0),
    ("garbage-query", {"source": "query"}, {("-q",): ok(fixture("garbage.txt"))},
     ["no 'DEV ID n' block", "Segmentation fault (core dumped)"], 0),
    ("garbage-both", {}, {("-q",): ok(fixture("garbage.txt")), (): ok(fixture("garbage.txt"))},
     ["not an efsmi summary table", "`/usr/sbin/efsmi -q` before it", "Segmentation fault"], 0),
]


@pytest.mark.parametrize("name,args,table,needles,rc", ERRORS, ids=[e[0] for e in ERRORS])
def test_efsmi_errors(env, name, args, table, needles, rc):
    res = env(args, table)
    assert res["failed"] is True
    assert res["rc"] == rc and "stderr" in res and "stdout" in res and res["cmd"].startswith(EFSMI)
    for needle in needles:
        assert needle in res["msg"], res["msg"]
    assert "ansible_facts" not in res


def test_efsmi_missing(env):
    res = env({}, {}, bin_path=None)
    assert res["failed"] is True and res["_calls"] == []
    assert "efsmi not found" in res["msg"] and "modprobe enflame" in res["msg"] and "efsmi_path" in res["msg"]


def test_efsmi_path_not_executable(env):
    res = env({"efsmi_path": str(env.tmp_path / "nope")}, {})
    assert res["failed"] is True and "is not an executable file" in res["msg"]


def test_efsmi_path_used(env):
    exe = env.tmp_path / "efsmi"
    exe.write_text(u"#!/bin/sh\n")
    exe.chmod(0o755)
    res = env({"efsmi_path": str(exe), "source": "summary"}, {(): ok(fixture(IDLE))})
    assert res["efsmi"] == str(exe) and res["_calls"] == [[str(exe)]]


def test_hint_sees_device_nodes(env):
    dev = env.tmp_path / "dev"
    dev.mkdir()
    for n in ("gcuctl", "gcu0", "gcu1"):
        (dev / n).write_text(u"")
    res = env({"source": "query"}, {("-q",): (1, "", NOT_LOADED)})
    assert "/dev/gcuctl is missing" not in res["msg"]
    assert "gcu0" in res["msg"] and "gcu1" in res["msg"]


@pytest.mark.parametrize("args,needle", [
    ({"source": "xml"}, "value of source must be one of"),
    ({"expected_count": -1}, "expected_count must be 0 or more"),
    ({"min_utilization": 100}, "min_utilization is a percentage"),
    ({"bogus": 1}, "Unsupported parameters"),
])
def test_bad_arguments(env, args, needle):
    res = env(args, {})
    assert res["failed"] is True and needle in res["msg"] and res["_calls"] == []


def test_pci_unreadable(env, monkeypatch):
    monkeypatch.setattr(_cards, "PCI_ROOT", str(env.tmp_path / "missing"))
    res = env({"source": "summary", "expected_count": 8}, {(): ok(fixture(IDLE))})
    assert res["ansible_facts"]["gcu_pci_devices"] == {"count": None, "device_ids": [], "bus_ids": []}
    assert "failed" not in res
