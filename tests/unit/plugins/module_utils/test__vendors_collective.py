"""The collective backends in the vendor table (plugins/module_utils/_vendors.py, a row's `collective`):
the lookups by backend and by vendor, an unknown name an error (never another backend's values), and
the code that reads the rows (the probe's classification, the rank code, the child scripts) taking a
third vendor's row with no change of its own."""
import json
import os
import subprocess
import sys
import types

import pytest

from ansible_collections.gcu.topsrider.plugins.module_utils import _collective_rank as rank
from ansible_collections.gcu.topsrider.plugins.module_utils import _eccl, _eccl_children, _vendors
from ansible_collections.gcu.topsrider.plugins.module_utils._vendors import (
    BACKENDS, COLLECTIVE_FIELDS, CPU_COLLECTIVE, VENDORS, VendorError, collective_spec, node_collectives,
)

# A third vendor's collective, as its row would give it (docs/architecture.md, "Adding a vendor").
HCCL = dict(CPU_COLLECTIVE, backend="hccl", torch_module="torch_npu", device_type="npu", api="npu",
            loaded_version_call=None, no_library=None, default_world_size=None,
            library={"name": "libhccl.so", "soname": "libhccl.so", "mapped": "libhccl", "required": True,
                     "dirs": ["/usr/local/Ascend/ascend-toolkit/latest/lib64"], "version_call": "hcclGetVersion",
                     "version_units": [[0, 10000, 100]], "version_string_call": None},
            blocking=["TORCH_GCU_MISSING", "NO_DEVICES", "BACKEND_NOT_REGISTERED"],
            no_devices="torch_npu sees {count} NPU{plural}{error}", hints={})


def test_every_backend_has_one_row_with_every_field():
    assert BACKENDS == ("eccl", "nccl", "gloo")
    for backend in BACKENDS:
        row = collective_spec(backend)
        assert set(row) == set(COLLECTIVE_FIELDS), backend
        assert row["backend"] == backend
        assert (row["library"] is None) != (row["no_library"] is None), backend
        if row["library"]:
            assert set(row["library"]) == {"name", "soname", "mapped", "required", "dirs", "version_call",
                                           "version_units", "version_string_call"}


def test_a_vendor_row_names_its_backend_once():
    for vendor in VENDORS:
        assert "backend" not in vendor["collective"]
        assert collective_spec(vendor["backend"])["device_type"] == vendor["collective"]["device_type"]


@pytest.mark.parametrize("backend,expected", [
    ("eccl", {"torch_module": "torch_gcu", "device_type": "gcu", "api": "2.x", "runtime": None}),
    ("nccl", {"torch_module": None, "device_type": "cuda", "api": "cuda", "runtime": "CUDA"}),
    ("gloo", {"torch_module": None, "device_type": "cpu", "api": "cpu", "library": None, "default_world_size": 2}),
])
def test_collective_spec_by_backend(backend, expected):
    row = collective_spec(backend)
    assert dict((k, row[k]) for k in expected) == expected


def test_the_library_each_backend_looks_for():
    eccl, nccl = collective_spec("eccl")["library"], collective_spec("nccl")["library"]
    assert (eccl["name"], eccl["soname"], eccl["required"]) == ("libeccl.so", "libeccl.so", True)
    assert (nccl["name"], nccl["soname"], nccl["required"]) == ("libnccl.so", "libnccl.so.2", False)
    assert eccl["dirs"][0] == "/usr/local/tops/lib" and "/usr/local/cuda/lib64" in nccl["dirs"]


@pytest.mark.parametrize("name", ["hccl", "", None, "ECCL"])
def test_unknown_backend_is_an_error_never_another_row(name):
    with pytest.raises(VendorError, match=r"unknown collective backend .*: the collection knows eccl, nccl, gloo"):
        collective_spec(name)


def test_a_collective_row_is_a_copy():
    row = collective_spec("nccl")
    row["library"]["dirs"].append("/tmp")
    row["hints"]["NO_DEVICES"] = "x"
    assert "/tmp" not in collective_spec("nccl")["library"]["dirs"]
    assert collective_spec("nccl")["hints"]["NO_DEVICES"] != "x"


def test_node_collectives_by_vendor():
    assert [c["backend"] for c in node_collectives("enflame")] == ["eccl", "gloo"]
    assert [c["backend"] for c in node_collectives("nvidia")] == ["nccl", "gloo"]
    assert node_collectives("nvidia")[0] == collective_spec("nccl")
    with pytest.raises(VendorError, match="unknown vendor 'ascend'"):
        node_collectives("ascend")


def test_classify_framework_refuses_an_unknown_backend():
    with pytest.raises(VendorError, match="unknown collective backend 'hccl'"):
        _eccl.classify_framework({"python": "/p", "torch_version": "2.1.0"}, "hccl")


# ------------------------------------------------ a third vendor: its row, nothing else

@pytest.fixture
def third_vendor(monkeypatch):
    row = dict(_vendors.vendor_spec("nvidia"), name="ascend", backend="hccl",
               collective=dict((k, v) for k, v in HCCL.items() if k != "backend"))
    monkeypatch.setattr(_vendors, "VENDORS", VENDORS + (row,))
    monkeypatch.setattr(_vendors, "BACKENDS", BACKENDS + ("hccl",))
    return row


def test_a_third_backend_is_classified_by_its_row(third_vendor):
    assert collective_spec("hccl")["device_type"] == "npu"
    report = {"python": "/p", "torch_version": "2.1.0", "torch_gcu_missing": True, "backend_registered": False,
              "distributed_available": True, "backend_error": "backend 'hccl' is not available"}
    _result, problems = _eccl.classify_framework(report, "hccl")
    assert [p["code"] for p in problems] == ["TORCH_GCU_MISSING", "BACKEND_NOT_REGISTERED"]
    assert problems[0]["message"] == "torch_npu is not installed for /p (torch 2.1.0 is)"
    _result, problems = _eccl.classify_framework(
        {"python": "/p", "torch_version": "2.1.0", "torch_gcu_version": "2.1.0", "api_generation": "npu",
         "device_count": 0, "backend_registered": True}, "hccl")
    assert [(p["code"], p["message"]) for p in problems] == [("NO_DEVICES", "torch_npu sees 0 NPUs")]
    assert "CUDA" not in json.dumps(problems)


def test_the_library_script_reads_a_third_library_by_its_row(tmp_path):
    src = tmp_path / "hccl.c"
    src.write_text("int hcclGetVersion(int *v) { *v = 80103; return 0; }\n")
    lib = tmp_path / "libhccl.so"
    subprocess.check_call(["gcc", "-shared", "-fPIC", "-Wl,-soname,libhccl.so", "-o", str(lib), str(src)])
    env = dict(os.environ, LD_LIBRARY_PATH=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", _eccl_children.LIBRARY_SCRIPT, json.dumps(HCCL["library"]), str(lib)],
                         stdout=subprocess.PIPE, env=env, universal_newlines=True, check=True).stdout
    report = _eccl.parse_report(out)
    assert report["by_soname"]["loadable"] and report["by_soname"]["version_string"] == "8.1.3"
    assert rank.format_version(HCCL["library"], 80103) == "8.1.3"


# ------------------------------------------------ the rank code places by the row it is given

class FakeDeviceModule(object):
    def __init__(self, available=True):
        self.calls = []
        self.available = available

    def is_available(self):
        return self.available

    def set_device(self, index):
        self.calls.append(("set_device", index))

    def synchronize(self, *args):
        self.calls.append(("synchronize",) + args)


def fake_torch(monkeypatch, **devices):
    torch = types.ModuleType("torch")
    torch.device = lambda kind, index=None: types.SimpleNamespace(type=kind, index=index)
    for kind, module in devices.items():
        setattr(torch, kind, module)
    parallel = types.ModuleType("torch.nn.parallel")
    parallel.DistributedDataParallel = lambda model, **kw: ("ddp", model, kw)
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch.nn", types.ModuleType("torch.nn"))
    monkeypatch.setitem(sys.modules, "torch.nn.parallel", parallel)
    return torch


def test_place_nccl_on_the_rank_s_gpu(monkeypatch):
    cuda = FakeDeviceModule()
    fake_torch(monkeypatch, cuda=cuda)
    placement = rank.place(collective_spec("nccl"), "1")
    assert (placement.device.type, placement.device.index, placement.api) == ("cuda", 1, "cuda")
    placement.synchronize()
    assert cuda.calls == [("set_device", 1), ("synchronize", placement.device)]
    assert placement.ddp("m") == ("ddp", "m", {"device_ids": [1]})


def test_place_nccl_without_cuda_names_it(monkeypatch):
    fake_torch(monkeypatch, cuda=FakeDeviceModule(available=False))
    with pytest.raises(RuntimeError, match=r"backend nccl needs CUDA, but torch.cuda.is_available\(\) is False"):
        rank.place(collective_spec("nccl"), 0)


def test_place_eccl_2x_and_1x(monkeypatch):
    gcu = FakeDeviceModule()
    fake_torch(monkeypatch, gcu=gcu)
    monkeypatch.setitem(sys.modules, "torch_gcu", types.ModuleType("torch_gcu"))
    placement = rank.place(collective_spec("eccl"), 2)
    placement.synchronize()
    assert (placement.device.type, placement.api, gcu.calls) == ("gcu", "2.x", [("set_device", 2), ("synchronize",)])
    assert placement.ddp("m") == ("ddp", "m", {})
    # torch_gcu 1.x: no torch.gcu, the plugin's own device and DDP
    fake_torch(monkeypatch)
    old = types.ModuleType("torch_gcu")
    old.gcu_device = lambda index: "xla:%d" % index
    old.nn = types.SimpleNamespace(parallel=types.SimpleNamespace(DistributedDataParallel=lambda m: ("gcu-ddp", m)))
    monkeypatch.setitem(sys.modules, "torch_gcu", old)
    placement = rank.place(collective_spec("eccl"), 3)
    assert (placement.device, placement.api, placement.ddp("m")) == ("xla:3", "1.x", ("gcu-ddp", "m"))
    del old.gcu_device
    with pytest.raises(RuntimeError, match=r"torch_gcu offers neither torch.gcu.set_device \(2.x\) nor "
                                           r"torch_gcu.gcu_device \(1.x\)"):
        rank.place(collective_spec("eccl"), 0)


def test_place_a_third_backend_by_its_row(monkeypatch):
    npu = FakeDeviceModule()
    fake_torch(monkeypatch, npu=npu)
    monkeypatch.setitem(sys.modules, "torch_npu", types.ModuleType("torch_npu"))
    placement = rank.place(HCCL, 5)
    assert (placement.device.type, placement.device.index, placement.api) == ("npu", 5, "npu")
    assert npu.calls == [("set_device", 5)]


def test_place_gloo_on_the_cpu(monkeypatch):
    fake_torch(monkeypatch)
    placement = rank.place(collective_spec("gloo"), 0)
    assert (placement.device.type, placement.api) == ("cpu", "cpu")


def test_installed_collective_reads_the_rows_beside_it(tmp_path):
    (tmp_path / rank.INSTALLED_COLLECTIVES).write_text(json.dumps(node_collectives("nvidia")))
    assert rank.installed_collective("gloo", str(tmp_path)) == collective_spec("gloo")
    assert rank.installed_collective("", str(tmp_path)) == collective_spec("nccl")  # the vendor's own
    assert rank.installed_collective(None, str(tmp_path)) == collective_spec("nccl")
    with pytest.raises(RuntimeError, match=r"backend 'eccl': .* has rows for nccl, gloo only"):
        rank.installed_collective("eccl", str(tmp_path))
