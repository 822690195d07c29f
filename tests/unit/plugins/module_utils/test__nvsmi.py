# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia-smi CSV parsing: real H100 samples and labelled synthesized ones."""
import os

import pytest

from ansible_collections.gcu.topsrider.plugins.module_utils import _card_checks, _efsmi
from ansible_collections.gcu.topsrider.plugins.module_utils._nvsmi import (
    COMPUTE_APPS_FIELDS, NVIDIA_EXTRA_KEYS, QUERY_GPU_FIELDS, NvsmiParseError, attach_processes,
    is_placeholder, parse_compute_apps, parse_device_id, parse_query_gpu,
)
from ansible_collections.gcu.topsrider.plugins.module_utils._vendors import vendor_spec

from conftest import FIXTURES

FIX = os.path.join(FIXTURES, "nvidia-smi")
# The field order of the real captures (fixtures/nvidia-smi/README.md).
CAPTURE_FIELDS = (
    "index", "name", "pci.bus_id", "serial", "uuid", "memory.total", "memory.used", "memory.free",
    "temperature.gpu", "power.draw", "power.limit", "utilization.gpu", "utilization.memory", "driver_version",
    "vbios_version", "ecc.errors.uncorrected.volatile.total", "ecc.mode.current", "mig.mode.current", "pstate",
    "clocks.sm", "clocks.max.sm", "pcie.link.gen.current", "pcie.link.width.current", "pcie.link.width.max",
    "persistence_mode", "compute_mode", "display_mode", "fan.speed", "count",
)
CAPTURE_APPS_FIELDS = ("pid", "process_name", "gpu_uuid", "gpu_bus_id", "used_memory")
H100_UUID = "GPU-5a1e0c9d-1111-4e2f-9a3b-0c0ffee00001"


def fixture(name):
    with open(os.path.join(FIX, name), "rb") as f:
        return f.read().decode("utf-8")


def test_schema_is_efsmi_plus_nvidia_keys():
    cards = parse_query_gpu(fixture("h100-query-idle-noheader-nounits.csv"), CAPTURE_FIELDS)["cards"]
    assert set(cards[0]) == set(_efsmi.CARD_KEYS) | set(NVIDIA_EXTRA_KEYS)
    assert set(_efsmi.CARD_KEYS) - set(cards[0]) == set()


H100_BUSY = {
    "index": 0, "model": "NVIDIA H100 80GB HBM3", "bus_id": "0000:00:06.0", "serial": "1652500000017",
    "uuid": H100_UUID, "firmware": "96.00.DA.00.0C", "device_id": None, "memory_total_mib": 81559,
    "memory_used_mib": 2051, "temperature_c": 60, "power_w": 698.44, "power_cap_w": 700.0,
    "utilization_pct": 100.0, "dpm": "P0", "ecc": "Enabled", "health": True, "ecc_errors_uncorrected": 0,
    "mig_mode": "Disabled", "persistence_mode": "Enabled", "compute_mode": "Default", "processes": None,
}

# (id, file, fields, count, driver, {index: {key: value}})
QUERIES = [
    ("real-h100-busy", "h100-query-busy-noheader-nounits.csv", CAPTURE_FIELDS, 1, "580.159.04", {0: H100_BUSY}),
    ("real-h100-idle", "h100-query-idle-noheader-nounits.csv", CAPTURE_FIELDS, 1, "580.159.04",
     {0: {"memory_used_mib": 0, "temperature_c": 37, "power_w": 123.78, "utilization_pct": 0.0, "health": True}}),
    ("synth-hgx8-one-busy", "synth-hgx8-query-one-busy.csv", QUERY_GPU_FIELDS, 8, "550.127.08",
     {0: {"utilization_pct": 100.0, "bus_id": "0000:18:00.0", "device_id": "2330", "memory_used_mib": 30211},
      1: {"utilization_pct": 0.0, "bus_id": "0000:2a:00.0", "power_w": 69.11},
      7: {"utilization_pct": 0.0, "bus_id": "0000:db:00.0", "temperature_c": 38}}),
    ("synth-a100-mig", "synth-a100x2-query-mig.csv", QUERY_GPU_FIELDS, 2, "550.127.08",
     {0: {"mig_mode": "Disabled", "utilization_pct": 42.0, "device_id": "20b2"},
      1: {"mig_mode": "Enabled", "utilization_pct": None, "memory_used_mib": 13, "health": True}}),
    ("synth-rtx-placeholders", "synth-rtx-query-not-supported.csv", QUERY_GPU_FIELDS, 1, "550.127.08",
     {0: {"serial": None, "temperature_c": None, "power_w": None, "power_cap_w": None, "ecc": None,
          "ecc_errors_uncorrected": None, "health": None, "mig_mode": None, "dpm": "P8", "device_id": "2684",
          "utilization_pct": 3.0, "memory_total_mib": 24564, "persistence_mode": "Disabled"}}),
    ("synth-ecc-error", "synth-h100x4-query-ecc-error.csv", QUERY_GPU_FIELDS, 4, "550.127.08",
     {0: {"health": True}, 1: {"health": True}, 2: {"health": False, "ecc_errors_uncorrected": 3},
      3: {"health": False, "ecc_errors_uncorrected": None, "utilization_pct": None, "temperature_c": None,
          "dpm": None, "memory_used_mib": None}}),
]


@pytest.mark.parametrize("name,fname,fields,count,driver,expect", QUERIES, ids=[q[0] for q in QUERIES])
def test_parse_query_gpu(name, fname, fields, count, driver, expect):
    parsed = parse_query_gpu(fixture(fname), fields)
    assert parsed["format"] == "query-gpu"
    assert parsed["driver_version"] == driver
    assert len(parsed["cards"]) == count
    assert [c["index"] for c in parsed["cards"]] == list(range(count))
    for index, want in expect.items():
        card = parsed["cards"][index]
        for key, value in want.items():
            assert card[key] == value, (key, card[key], value)
            assert type(card[key]) is type(value), (key, card[key], value)


def test_types_match_efsmi():
    """Numbers the same types as _efsmi gives them (ints for MiB, floats for W and %)."""
    card = parse_query_gpu(fixture("synth-hgx8-query-all-busy.csv"))["cards"][3]
    assert isinstance(card["memory_total_mib"], int) and isinstance(card["memory_used_mib"], int)
    assert isinstance(card["power_w"], float) and isinstance(card["power_cap_w"], float)
    assert isinstance(card["utilization_pct"], float) and isinstance(card["temperature_c"], int)


def test_crlf_and_blank_lines():
    text = "\r\n" + fixture("synth-hgx8-query-one-busy.csv").replace("\n", "\r\n") + "\r\n"
    assert len(parse_query_gpu(text)["cards"]) == 8


def test_rows_out_of_order_are_sorted():
    lines = fixture("synth-hgx8-query-one-busy.csv").splitlines()
    parsed = parse_query_gpu("\n".join(reversed(lines)))
    assert [c["index"] for c in parsed["cards"]] == list(range(8))


@pytest.mark.parametrize("value", [
    "[N/A]", "[Not Supported]", "[Requested functionality has been deprecated]", "[Unknown Error]",
    "[Insufficient Permissions]", "N/A", " [N/A] ", "", "[GPU requires reset]",
])
def test_placeholders_read_as_none(value):
    assert is_placeholder(value)
    line = fixture("synth-hgx8-query-one-busy.csv").splitlines()[0].split(", ")
    for at in range(len(QUERY_GPU_FIELDS)):
        if QUERY_GPU_FIELDS[at] in ("index", "count"):
            continue
        cols = list(line)
        cols[at] = value
        cols[-1] = "1"  # count: this one line is the only GPU
        card = parse_query_gpu(", ".join(cols))["cards"][0]
        key = {"temperature.gpu": "temperature_c", "utilization.gpu": "utilization_pct", "name": "model",
               "power.draw": "power_w", "memory.used": "memory_used_mib", "pci.bus_id": "bus_id"}
        if QUERY_GPU_FIELDS[at] in key:
            assert card[key[QUERY_GPU_FIELDS[at]]] is None


@pytest.mark.parametrize("value,expected", [("0x233010DE", "2330"), ("0x20B210DE", "20b2"), ("[N/A]", None)])
def test_device_id(value, expected):
    assert parse_device_id(value) == expected


ONE = fixture("h100-query-busy-noheader-nounits.csv")
BAD = [
    ("header", fixture("h100-query-idle.csv"), CAPTURE_FIELDS, "header line where none was asked for"),
    ("wrong-column-count", ONE, QUERY_GPU_FIELDS, "expected 21 comma-separated values"),
    ("units", ONE.replace(", 81559,", ", 81559 MiB,"), CAPTURE_FIELDS, "not a number (units?"),
    ("empty", "", QUERY_GPU_FIELDS, "printed no GPU"),
    ("no-gpu-message", "No devices were found\n", QUERY_GPU_FIELDS, "expected 21 comma-separated values"),
    ("device-handle-error", "Unable to determine the device handle for GPU0000:18:00.0: Unknown Error\n",
     QUERY_GPU_FIELDS, "Unable to determine the device handle"),
    ("index-twice", ONE + ONE, CAPTURE_FIELDS, "GPU index 0 twice"),
    ("count-disagrees", ONE.replace(", [N/A], 1", ", [N/A], 2"), CAPTURE_FIELDS, "its count field says 2"),
    ("index-placeholder", "[N/A]" + ONE[1:], CAPTURE_FIELDS, "is not a GPU index"),
    ("bad-bus-id", ONE.replace("00000000:00:06.0", "pci-6"), CAPTURE_FIELDS, "unrecognised PCI bus id"),
    ("two-drivers", "\n".join(fixture("synth-hgx8-query-one-busy.csv").splitlines()[:7] + [
        fixture("synth-hgx8-query-one-busy.csv").splitlines()[7].replace("550.127.08", "550.90.07")]),
     QUERY_GPU_FIELDS, "several driver versions"),
]


@pytest.mark.parametrize("name,text,fields,needle", BAD, ids=[b[0] for b in BAD])
def test_refuses_what_it_does_not_understand(name, text, fields, needle):
    with pytest.raises(NvsmiParseError) as exc:
        parse_query_gpu(text, fields)
    assert needle in str(exc.value)
    if text.strip():
        # the first lines are quoted, as _efsmi does
        assert "First lines:\n" + text.strip().splitlines()[0][:100] in str(exc.value)


# (id, file, fields, expected apps)
APPS = [
    ("real-h100", "h100-compute-apps-busy.csv", CAPTURE_APPS_FIELDS, None),
    ("one-busy", "synth-hgx8-apps-one-busy.csv", COMPUTE_APPS_FIELDS,
     [{"pid": 4711, "gpu_uuid": "GPU-0d5c7a1e-2222-4b3c-8d4e-0c0ffee00000", "used_memory_mib": 30202,
       "process_name": "/opt/conda/bin/python3"}]),
    ("comma-in-name", "synth-hgx8-apps-all-on-gpu0.csv", COMPUTE_APPS_FIELDS, 8),
    ("insufficient-permissions", "synth-rtx-apps-insufficient-permissions.csv", COMPUTE_APPS_FIELDS,
     [{"pid": 2201, "gpu_uuid": "GPU-0d5c7a1e-2222-4b3c-8d4e-0c0ffee00000", "used_memory_mib": None,
       "process_name": None}]),
]


@pytest.mark.parametrize("name,fname,fields,expected", APPS, ids=[a[0] for a in APPS])
def test_parse_compute_apps(name, fname, fields, expected):
    if name == "real-h100":
        # the capture has a header and units: the parser refuses it ...
        with pytest.raises(NvsmiParseError, match="header line"):
            parse_compute_apps(fixture(fname), fields)
        # ... and reads the same rows once they are what was asked for
        body = fixture(fname).splitlines()[1].replace(" MiB", "")
        assert parse_compute_apps(body, fields) == [
            {"pid": 453, "gpu_uuid": H100_UUID, "used_memory_mib": 2042, "process_name": "/opt/torch/.venv/bin/python3"}]
        return
    apps = parse_compute_apps(fixture(fname), fields)
    if isinstance(expected, int):
        assert len(apps) == expected
        assert all(a["process_name"] == "/srv/jobs/run,v2/python3" for a in apps)
    else:
        assert apps == expected


@pytest.mark.parametrize("text", ["", "\n", "No running processes found\n", "No running compute processes found"])
def test_no_processes(text):
    assert parse_compute_apps(text) == []


@pytest.mark.parametrize("text,needle", [
    ("453, GPU-x\n", "expected 4 comma-separated values"),
    ("pid, gpu_uuid, used_gpu_memory [MiB], process_name\n", "header line"),
    ("[N/A], GPU-x, 1, python\n", "not a process id"),
    ("453, GPU-x, 2042 MiB, python\n", "not a number"),
])
def test_compute_apps_refused(text, needle):
    with pytest.raises(NvsmiParseError, match=r"(?s)%s.*First lines:" % needle.replace("[", r"\[").replace("(", r"\(")):
        parse_compute_apps(text)


def test_attach_processes_by_uuid():
    cards = parse_query_gpu(fixture("synth-hgx8-query-one-busy.csv"))["cards"]
    apps = parse_compute_apps(fixture("synth-hgx8-apps-one-busy.csv")) + [
        {"pid": 9, "gpu_uuid": "MIG-unknown", "used_memory_mib": 1, "process_name": "x"}]
    out, unmatched = attach_processes(cards, apps)
    assert out[0]["processes"] == [{"pid": 4711, "used_memory_mib": 30202, "process_name": "/opt/conda/bin/python3"}]
    assert all(c["processes"] == [] for c in out[1:])
    assert [a["pid"] for a in unmatched] == [9]
    assert cards[0]["processes"] is None  # the input is not changed
    out, unmatched = attach_processes(cards, None)
    assert all(c["processes"] is None for c in out) and unmatched == []


# check_expectations words NVIDIA GPUs as GPUs and keeps the GCU wording for Enflame.
def test_expectations_say_gpu_for_nvidia():
    cards = parse_query_gpu(fixture("synth-hgx8-query-one-busy.csv"))["cards"]
    problems, notes = _card_checks.check_expectations(cards, {"count": 8, "bus_ids": [c["bus_id"] for c in cards]},
                                                      min_utilization=10, vendor="nvidia")
    assert problems == ["7 of 8 GPUs not busy (utilization <= 10%): cards 1-7 sleeping, only card(s) 0 working; was "
                        "the job started as one process? Launch one process per card (e.g. torchrun "
                        "--nproc_per_node=8) and check CUDA_VISIBLE_DEVICES"]
    assert notes == []


def test_expectations_unhealthy_and_mig():
    cards = parse_query_gpu(fixture("synth-h100x4-query-ecc-error.csv"))["cards"]
    problems, _notes = _card_checks.check_expectations(cards, None, require_healthy=True, vendor="nvidia")
    assert problems[0].startswith("unhealthy GPU(s): GPU 2 (0000:3a:00.0, serial 1652500000102), GPU 3 (")
    assert "nvidia-smi -q -d ECC" in problems[0] and "efsmi" not in problems[0]
    mig = parse_query_gpu(fixture("synth-a100x2-query-mig.csv"))["cards"]
    problems, _notes = _card_checks.check_expectations(mig, None, min_utilization=10, vendor="nvidia")
    assert "1 of 2 GPUs not busy" in problems[0] and "MIG is enabled on GPU(s) 1" in problems[0]


def test_nvidia_pci_view_counts_gpus_only():
    entries = [("0000:18:00.0", "0x10de", "0x2330", "0x030200"), ("0000:05:00.0", "0x10de", "0x22a3", "0x068000"),
               ("0000:01:00.1", "0x10de", "0x22ba", "0x040300"), ("0000:00:1f.0", "0x8086", "0x1234", "0x060100"),
               ("0000:2a:00.0", "0x10de", "0x2330", "0x030200\n")]
    nv = vendor_spec("nvidia")
    view = _efsmi.pci_view(entries, vendor_id=nv["pci_vendor_id"], class_prefix=nv["pci_class_prefix"])
    assert view == {"count": 2, "device_ids": ["2330", "2330"], "bus_ids": ["0000:18:00.0", "0000:2a:00.0"]}
