"""module_utils/_collective_rank: the pure parts (the rank itself runs in molecule/eccl_probe and on a GPU)."""
import pytest

from ansible_collections.gcu.topsrider.plugins.module_utils import _collective_rank as rank
from ansible_collections.gcu.topsrider.plugins.module_utils._vendors import collective_spec

MAPS = """7f0000000000-7f0000001000 r-xp 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libc.so.6
7f0000002000-7f0000003000 r-xp 00000000 08:01 2 /opt/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
7f0000004000-7f0000005000 r-xp 00000000 08:01 3 /usr/local/tops/lib/libeccl.so
7f0000006000-7f0000007000 rw-p 00000000 00:00 0
"""


@pytest.mark.parametrize("backend,number,text", [
    ("eccl", 2005136, "2.5.136"),
    ("nccl", 22809, "2.28.9"),     # NCCL >= 2.9: M*10000 + m*100 + p
    ("nccl", 2708, "2.7.8"),       # NCCL < 2.9: M*1000 + m*100 + p
    ("eccl", None, None),
])
def test_format_version(backend, number, text):
    assert rank.format_version(collective_spec(backend)["library"], number) == text


def test_mapped_library_reads_the_process_maps(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text(MAPS)
    assert rank.mapped_library("libnccl", str(maps)).endswith("/nvidia/nccl/lib/libnccl.so.2")
    assert rank.mapped_library("libeccl", str(maps)) == "/usr/local/tops/lib/libeccl.so"
    assert rank.mapped_library("libfoo", str(maps)) is None
    assert rank.mapped_library("libeccl", str(tmp_path / "missing")) is None


def test_loaded_library_per_backend(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text(MAPS.replace("/usr/local/tops/lib/libeccl.so", str(tmp_path / "gone.so")).replace(
        "libnccl.so.2", "libnccl-missing.so.2"))
    assert rank.loaded_library(collective_spec("gloo"), str(maps)) is None
    # Mapped but not loadable here: the path is reported, the version stays unknown.
    lib = rank.loaded_library(collective_spec("nccl"), str(maps))
    assert lib["name"] == "libnccl" and lib["path"].endswith("libnccl-missing.so.2") and lib["version"] is None


def test_importing_needs_no_torch():
    assert rank.BUSBW_FORMULA.startswith("nccl-tests")
    assert "torch" not in rank.__dict__
