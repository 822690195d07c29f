# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gcu.topsrider.gcu_devices on NVIDIA nodes (and vendor selection), with mocked nvidia-smi runs."""
import os

import pytest

from ansible.module_utils import basic
from ansible_collections.gcu.topsrider.plugins.module_utils._nvsmi import COMPUTE_APPS_FIELDS, QUERY_GPU_FIELDS
from ansible_collections.gcu.topsrider.plugins.module_utils import _cards
from ansible_collections.gcu.topsrider.plugins.module_utils._vendors import vendor_spec
from ansible_collections.gcu.topsrider.plugins.modules import gcu_devices

from conftest import FIXTURES
from utils import AnsibleExitJson, AnsibleFailJson, exit_json, fail_json, set_module_args

NVSMI = "/usr/bin/nvidia-smi"
EFSMI = "/usr/sbin/efsmi"
QUERY = ("--query-gpu=" + ",".join(QUERY_GPU_FIELDS), "--format=csv,noheader,nounits")
APPS = ("--query-compute-apps=" + ",".join(COMPUTE_APPS_FIELDS), "--format=csv,noheader,nounits")
HGX_BUS = ["0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
           "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0"]


def fixture(sub, name):
    with open(os.path.join(FIXTURES, sub, name), "rb") as f:
        return f.read().decode("utf-8")


def nv(name):
    return fixture("nvidia-smi", name)


def ok(text):
    return (0, text, "")


@pytest.fixture
def env(monkeypatch, tmp_path):
    """Patched module; a PCI tree with eight H100s, four NVSwitches and a host bridge; no driver in sysfs."""
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)
    warned = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, w: warned.append(w))
    pci = tmp_path / "pci"
    pci.mkdir()
    devices = [(b, "0x10de", "0x2330", "0x030200") for b in HGX_BUS]
    devices += [("0000:%02x:00.0" % (5 + i), "0x10de", "0x22a3", "0x068000") for i in range(4)]
    devices += [("0000:00:00.0", "0x8086", "0x09a2", "0x060000")]
    for name, vendor, device, cls in devices:
        d = pci / name
        d.mkdir()
        (d / "vendor").write_text(u"%s\n" % vendor)
        (d / "device").write_text(u"%s\n" % device)
        (d / "class").write_text(u"%s\n" % cls)
    monkeypatch.setattr(_cards, "PCI_ROOT", str(pci))
    monkeypatch.setattr(_cards, "SYS_MODULE_ROOT", str(tmp_path / "no-sys-module"))
    monkeypatch.setattr(_cards, "DEV_ROOT", str(tmp_path / "dev"))

    def run(args, table, tools=None):
        """tools: tool name -> path get_bin_path finds (default: nvidia-smi only)."""
        tools = {"nvidia-smi": NVSMI} if tools is None else tools
        calls = []
        lookups = []

        def run_command(self, argv, **kwargs):
            assert isinstance(argv, list), "argv list, never a shell string"
            assert kwargs.get("environ_update") == {"LC_ALL": "C", "LANG": "C"}
            calls.append(argv)
            key = tuple(argv[1:])
            if key not in table:
                raise AssertionError("unexpected command %r" % (argv,))
            return table[key]

        def get_bin_path(self, name, required=False, opt_dirs=None):
            assert required is False
            lookups.append((name, tuple(opt_dirs or ())))
            return tools.get(name)

        monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
        monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", get_bin_path)
        del warned[:]
        with set_module_args(args):
            with pytest.raises((AnsibleExitJson, AnsibleFailJson)) as exc:
                gcu_devices.main()
        result = exc.value.args[0]
        result["_calls"] = calls
        result["_lookups"] = lookups
        result["_warnings"] = list(warned)
        return result

    run.tmp_path = tmp_path
    return run


ONE_BUSY = {QUERY: ok(nv("synth-hgx8-query-one-busy.csv")), APPS: ok(nv("synth-hgx8-apps-one-busy.csv"))}
ALL_BUSY = {QUERY: ok(nv("synth-hgx8-query-all-busy.csv")), APPS: ok(nv("synth-hgx8-apps-all-busy.csv"))}
HGX_PCI = {"count": 8, "device_ids": ["2330"] * 8, "bus_ids": HGX_BUS}

# (id, args, get_bin_path finds, nvidia-smi table, failed, expected)
READS = [
    ("auto-finds-nvidia-smi", {}, None, ALL_BUSY, False, {"count": 8, "busy": list(range(8))}),
    ("vendor-nvidia", {"vendor": "nvidia", "expected_count": 8, "require_healthy": True, "min_utilization": 50},
     None, ALL_BUSY, False, {"count": 8}),
    ("vendor-nvidia-ignores-efsmi", {"vendor": "nvidia"}, {"efsmi": EFSMI, "nvidia-smi": NVSMI}, ONE_BUSY, False,
     {"count": 8, "busy": [0]}),
    ("apps-query-fails-warns", {}, None, {QUERY: ok(nv("synth-hgx8-query-one-busy.csv")), APPS: (6, "", "boom\n")},
     False, {"count": 8, "processes": None, "warning": "processes per GPU are unknown"}),
    ("apps-unparseable-warns", {}, None, {QUERY: ok(nv("synth-hgx8-query-one-busy.csv")), APPS: ok("what?\n")},
     False, {"count": 8, "processes": None, "warning": "expected 4 comma-separated values"}),
    ("no-processes", {}, None, {QUERY: ok(nv("synth-hgx8-query-one-busy.csv")), APPS: ok("")}, False,
     {"count": 8, "processes": []}),
    ("mig-without-busy-check", {"require_healthy": True}, None,
     {QUERY: ok(nv("synth-a100x2-query-mig.csv")), APPS: ok("")}, False, {"count": 2, "pci_note": True}),
    ("placeholders", {"max_temperature": 80, "require_healthy": True}, None,
     {QUERY: ok(nv("synth-rtx-query-not-supported.csv")), APPS: ok(nv("synth-rtx-apps-insufficient-permissions.csv"))},
     False, {"count": 1, "pci_note": True, "warning": "health not reported for GPU(s) 0 (ECC is off"}),
]


@pytest.mark.parametrize("name,args,tools,table,failed,expect", READS, ids=[r[0] for r in READS])
def test_nvidia_reads(env, name, args, tools, table, failed, expect):
    res = env(dict(args), table, tools)
    assert res.get("failed", False) is failed, res.get("msg")
    assert res["changed"] is False
    assert [tuple(c) for c in res["_calls"]] == [(NVSMI,) + QUERY, (NVSMI,) + APPS]
    facts = res["ansible_facts"]
    assert facts["gcu_vendor"] == "nvidia"
    assert facts["gcu_device_count"] == expect["count"] == len(facts["gcu_devices"])
    assert facts["gcu_driver_version"] == "550.127.08"
    assert facts["gcu_efsmi_version"] is None
    assert res["source"] == "query-gpu" and res["nvidia_smi"] == NVSMI and "efsmi" not in res
    if expect.get("pci_note"):
        assert any("PCI sees 8 NVIDIA device(s), the driver sees %d" % expect["count"] in w
                   for w in res["_warnings"]), res["_warnings"]
    else:
        assert facts["gcu_pci_devices"] == HGX_PCI  # the NVSwitches are not GPUs
        assert not any("PCI sees" in w for w in res["_warnings"])
    if "busy" in expect:
        assert [c["index"] for c in facts["gcu_devices"] if c["processes"]] == expect["busy"]
    if "processes" in expect:
        assert all(c["processes"] == expect["processes"] for c in facts["gcu_devices"])
    if "warning" in expect:
        assert any(expect["warning"] in w for w in res["_warnings"]), res["_warnings"]
    assert res["problems"] == []


def test_processes_map_to_gpus(env):
    res = env({}, ALL_BUSY)
    devs = res["ansible_facts"]["gcu_devices"]
    assert [[p["pid"] for p in d["processes"]] for d in devs] == [[5100 + i] for i in range(8)]
    assert devs[0]["processes"][0] == {"pid": 5100, "used_memory_mib": 30202, "process_name": "/opt/conda/bin/python3"}


def test_real_h100_sample_through_the_module(env, monkeypatch):
    """The real capture, with the module's query asked for the capture's fields."""
    from ansible_collections.gcu.topsrider.plugins.module_utils import _nvsmi
    readme = " ".join(nv("README.md").split())
    at = readme.index("Field order of the query files: ") + len("Field order of the query files: ")
    CAPTURE_FIELDS = tuple(f.strip() for f in readme[at:readme.index(".", readme.index(" count", at))].split(","))
    assert len(CAPTURE_FIELDS) == 29 and CAPTURE_FIELDS[-1] == "count"
    monkeypatch.setattr(_cards, "QUERY_GPU_FIELDS", CAPTURE_FIELDS)
    query = ("--query-gpu=" + ",".join(CAPTURE_FIELDS), "--format=csv,noheader,nounits")
    apps = "453, GPU-5a1e0c9d-1111-4e2f-9a3b-0c0ffee00001, 2042, /opt/torch/.venv/bin/python3\n"
    res = env({"expected_count": 1, "min_utilization": 90, "require_healthy": True},
              {query: ok(nv("h100-query-busy-noheader-nounits.csv")), APPS: ok(apps)})
    assert "failed" not in res, res.get("msg")
    dev = res["ansible_facts"]["gcu_devices"][0]
    assert dev["bus_id"] == "0000:00:06.0" and dev["utilization_pct"] == 100.0 and dev["health"] is True
    assert dev["processes"] == [{"pid": 453, "used_memory_mib": 2042, "process_name": "/opt/torch/.venv/bin/python3"}]
    assert res["ansible_facts"]["gcu_driver_version"] == "580.159.04"
    assert _nvsmi.QUERY_GPU_FIELDS != CAPTURE_FIELDS  # only the module's copy was patched


FAILURES = [
    ("one-busy", {"min_utilization": 10}, ONE_BUSY,
     ["7 of 8 GPUs not busy", "cards 1-7 sleeping", "only card(s) 0 working", "CUDA_VISIBLE_DEVICES"]),
    ("ecc-error", {"require_healthy": True},
     {QUERY: ok(nv("synth-h100x4-query-ecc-error.csv")), APPS: ok("")},
     ["unhealthy GPU(s): GPU 2 (0000:3a:00.0, serial 1652500000102), GPU 3", "nvidia-smi -q -d ECC"]),
    ("count", {"expected_count": 8}, {QUERY: ok(nv("synth-h100x4-query-ecc-error.csv")), APPS: ok("")},
     ["expected 8 GPUs, the driver sees 4", "PCI sees 8 NVIDIA device(s), the driver sees 4",
      "not seen by the driver: 0000:9a:00.0, 0000:ab:00.0, 0000:ba:00.0, 0000:db:00.0", "dmesg | grep -i -e NVRM -e Xid"]),
    ("mig-busy-check", {"min_utilization": 10}, {QUERY: ok(nv("synth-a100x2-query-mig.csv")), APPS: ok("")},
     ["1 of 2 GPUs not busy", "MIG is enabled on GPU(s) 1"]),
    ("too-hot", {"max_temperature": 60}, ONE_BUSY, ["GPU(s) above 60 C: GPU 0 (0000:18:00.0, serial 1652500000100) at 63 C"]),
]


@pytest.mark.parametrize("name,args,table,needles", FAILURES, ids=[f[0] for f in FAILURES])
def test_nvidia_expectation_failures(env, name, args, table, needles):
    res = env(args, table)
    assert res["failed"] is True and res["changed"] is False and len(res["problems"]) == 1
    for needle in needles:
        assert needle in res["msg"] and needle in res["problems"][0], res["msg"]
    assert "GCU" not in res["msg"] and "efsmi" not in res["msg"]
    assert res["ansible_facts"]["gcu_vendor"] == "nvidia"


ERRORS = [
    ("driver-not-loaded", {QUERY: (9, "", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                                   "driver. Make sure that the latest NVIDIA driver is installed and running.\n")},
     ["failed (rc=9)", "couldn't communicate with the NVIDIA driver", "modprobe nvidia", "/dev/nvidiactl is missing",
      "nvidia kernel module is not loaded"], 9),
    ("unknown-field", {QUERY: (2, "", 'Field "pci.device_id" is not a valid field to query.\n')},
     ['"pci.device_id" is not a valid field'], 2),
    ("header", {QUERY: ok(nv("h100-query-idle.csv"))}, ["header line where none was asked for", "index, name"], 0),
    ("garbage", {QUERY: ok("No devices were found\n")}, ["expected 21 comma-separated values", "No devices were found"], 0),
]


@pytest.mark.parametrize("name,table,needles,rc", ERRORS, ids=[e[0] for e in ERRORS])
def test_nvidia_smi_errors(env, name, table, needles, rc):
    res = env({}, table)
    assert res["failed"] is True and res["rc"] == rc and "ansible_facts" not in res
    assert res["cmd"].startswith(NVSMI + " --query-gpu=index,name,pci.bus_id")
    for needle in needles:
        assert needle in res["msg"], res["msg"]
    assert [tuple(c) for c in res["_calls"]] == [(NVSMI,) + QUERY]


def test_auto_prefers_efsmi(env):
    res = env({"source": "summary"}, {(): ok(fixture("efsmi", "t20-summary-8card-idle.txt"))},
              {"efsmi": EFSMI, "nvidia-smi": NVSMI})
    assert res["ansible_facts"]["gcu_vendor"] == "enflame" and res["efsmi"] == EFSMI
    assert res["_lookups"][0][0] == "efsmi" and len(res["_lookups"]) == 1
    assert res["ansible_facts"]["gcu_pci_devices"]["count"] == 0  # no Enflame device on this PCI tree


def test_lookup_dirs(env):
    env({}, ALL_BUSY)
    res = env({"vendor": "nvidia"}, ALL_BUSY)
    assert res["_lookups"] == [("nvidia-smi", tuple(vendor_spec("nvidia")["tool_dirs"]))]
    assert "/usr/local/nvidia/bin" in vendor_spec("nvidia")["tool_dirs"] and "/usr/bin" in vendor_spec("nvidia")["tool_dirs"]


MISSING = [
    ("auto-neither", {}, ["neither efsmi nor nvidia-smi found", "efsmi not found", "efsmi_path",
                          "nvidia-smi not found", "nvidia_smi_path", "modprobe enflame"]),
    ("nvidia", {"vendor": "nvidia"}, ["nvidia-smi not found in PATH or /usr/bin, /usr/local/nvidia/bin",
                                      "modprobe nvidia"]),
    ("enflame", {"vendor": "enflame"}, ["efsmi not found", "modprobe enflame"]),
]


@pytest.mark.parametrize("name,args,needles", MISSING, ids=[m[0] for m in MISSING])
def test_tools_missing(env, name, args, needles):
    res = env(args, {}, {})
    assert res["failed"] is True and res["_calls"] == []
    for needle in needles:
        assert needle in res["msg"], res["msg"]
    if name == "enflame":
        assert "nvidia" not in res["msg"] and [n for n, _dirs in res["_lookups"]] == ["efsmi"]


def test_nvidia_smi_path(env):
    exe = env.tmp_path / "nvidia-smi"
    exe.write_text(u"#!/bin/sh\n")
    exe.chmod(0o755)
    table = {QUERY: ok(nv("synth-hgx8-query-all-busy.csv")), APPS: ok("")}
    res = env({"nvidia_smi_path": str(exe)}, table, {"efsmi": EFSMI})
    assert res["ansible_facts"]["gcu_vendor"] == "nvidia" and res["nvidia_smi"] == str(exe)
    assert res["_lookups"] == [] and res["_calls"][0][0] == str(exe)


@pytest.mark.parametrize("args,needle", [
    ({"vendor": "cuda"}, "value of vendor must be one of"),
    ({"vendor": "nvidia", "source": "query"}, "source=query reads efsmi output"),
    ({"efsmi_path": "/x", "nvidia_smi_path": "/y"}, "mutually exclusive"),
    ({"vendor": "nvidia", "efsmi_path": "/x"}, "vendor=nvidia does not go with efsmi_path"),
    ({"vendor": "enflame", "nvidia_smi_path": "/y"}, "vendor=enflame does not go with nvidia_smi_path"),
    ({"nvidia_smi_path": "/nope"}, "nvidia_smi_path /nope is not an executable file"),
])
def test_bad_arguments(env, args, needle):
    res = env(args, ALL_BUSY)
    assert res["failed"] is True and needle in res["msg"] and res["_calls"] == []


def test_check_mode_is_the_same_read(env):
    res = env({"_ansible_check_mode": True}, ALL_BUSY)
    assert res["changed"] is False and res["ansible_facts"]["gcu_device_count"] == 8
    assert len(res["_calls"]) == 2
