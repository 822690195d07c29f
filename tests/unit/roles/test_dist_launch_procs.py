# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/files/launch_procs.py (the launch check's verdict): finding the
training processes among what the one busy reader (module_utils/_holders.py,
which gcu_devices runs) read from a /proc tree, and the verdict against the cards."""
import importlib.util
import json
import os
import re

import pytest

from ansible_collections.gcu.topsrider.plugins.module_utils._holders import read_processes

PATH = os.path.join(os.path.dirname(__file__), "..", "..", "..", "playbooks", "files", "launch_procs.py")
SPEC = importlib.util.spec_from_file_location("launch_procs", PATH)
lp = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(lp)


def fake_proc(root, pid, ppid, argv, env=None, comm="python3"):
    d = root / str(pid)
    d.mkdir()
    (d / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + (b"\0" if argv else b""))
    (d / "stat").write_text("%d (%s) S %d 1 1 0 -1\n" % (pid, comm, ppid))
    (d / "status").write_text("Name:\t%s\nUid:\t0\t0\t0\t0\n" % comm)
    (d / "environ").write_bytes(b"\0".join(("%s=%s" % kv).encode() for kv in sorted((env or {}).items())))


def rank_env(local, rank=None):
    return {"LOCAL_RANK": str(local), "RANK": str(local if rank is None else rank), "WORLD_SIZE": "8",
            "PATH": "/usr/bin"}


@pytest.fixture
def torchrun_job(tmp_path):
    """A shell, the torchrun agent, 8 ranks, a dataloader worker of rank 3, an unrelated process."""
    fake_proc(tmp_path, 100, 1, ["bash", "/opt/topsrider/launch/launch-single.sh", "train.py"])
    fake_proc(tmp_path, 101, 100, ["/opt/venvs/train/bin/python", "-m", "torch.distributed.run",
                                   "--nproc_per_node=8", "train.py"], {"PATH": "/usr/bin"})
    for i in range(8):
        fake_proc(tmp_path, 110 + i, 101, ["/opt/venvs/train/bin/python", "-u", "train.py"], rank_env(i))
    fake_proc(tmp_path, 200, 113, ["/opt/venvs/train/bin/python", "-u", "train.py"], rank_env(3))
    fake_proc(tmp_path, 300, 1, ["sleep", "100"], {"PATH": "/usr/bin"})
    fake_proc(tmp_path, 301, 2, [], {}, comm="kworker/0:1")  # kernel thread: no cmdline
    return tmp_path


def test_finds_the_ranks_not_the_launchers_or_workers(torchrun_job):
    ranks = lp.training_processes(read_processes(str(torchrun_job)))
    assert [r["pid"] for r in ranks] == list(range(110, 118))
    assert [r["local_rank"] for r in ranks] == list(range(8))
    assert ranks[0]["cmdline"] == "/opt/venvs/train/bin/python -u train.py"


def test_torchrun_script_and_plain_python_with_match(tmp_path):
    fake_proc(tmp_path, 10, 1, ["/opt/venvs/train/bin/python", "/opt/venvs/train/bin/torchrun", "train.py"])
    fake_proc(tmp_path, 11, 1, ["python3", "train.py", "--epochs", "3"], {"PATH": "/bin"})
    fake_proc(tmp_path, 12, 1, ["python3", "other.py"], {"PATH": "/bin"})
    assert lp.training_processes(read_processes(str(tmp_path))) == []
    procs = read_processes(str(tmp_path), re.compile(r"train\.py"))
    assert [r["pid"] for r in lp.training_processes(procs, r"train\.py")] == [11]


def test_unreadable_environ_is_reported(tmp_path):
    fake_proc(tmp_path, 10, 1, ["python3", "train.py"])
    os.remove(str(tmp_path / "10" / "environ"))
    (procs,) = read_processes(str(tmp_path), re.compile("train"))
    assert procs["environ_readable"] is False and procs["env"] == {}


def processes_file(root, tmp_path, match=None):
    """What gcu_devices (processes: true) returns for the fake /proc, as the playbook hands it over."""
    path = tmp_path / "processes.json"
    path.write_text(json.dumps(read_processes(str(root), re.compile(match) if match else None)))
    return str(path)


@pytest.mark.parametrize("text, expected", [
    ("0=85.0,1=0,2=N/A", {0: 85.0, 1: 0.0, 2: None}),
    ("", {}),
    ("3=12.5", {3: 12.5}),
])
def test_parse_util(text, expected):
    assert lp.parse_util(text) == expected


@pytest.mark.parametrize("text", ["0:85", "x=1", "=5"])
def test_parse_util_refuses(text):
    with pytest.raises(ValueError):
        lp.parse_util(text)


@pytest.mark.parametrize("span_in, span_out", [([0, 1, 2, 3, 5, 7], "0-3, 5, 7"), ([4], "4"), ([], "")])
def test_span(span_in, span_out):
    assert lp.span(span_in) == span_out


def ranks(n):
    return [{"pid": 100 + i, "local_rank": i} for i in range(n)]


ALL_BUSY = dict((i, 85.0) for i in range(8))
ONE_BUSY = dict((i, 85.0 if i == 0 else 0.0) for i in range(8))
CASES = [
    # ranks, util, cards, ok, case, phrases in the message
    (ranks(8), ALL_BUSY, None, True, "ok", ["8 training processes for 8 cards, every card busy"]),
    (ranks(1), ONE_BUSY, None, False, "one_busy_rest_asleep",
     ["one busy, the rest asleep", "1 training process(es) for 8 cards", "busy card(s): 0", "asleep: 1-7",
      "--nproc_per_node=8"]),
    # one process while the cards report busy: still the one-process launch
    (ranks(1), ALL_BUSY, None, False, "one_busy_rest_asleep", ["one busy, the rest asleep"]),
    # eight processes but one busy card: all ranks bound to card 0
    (ranks(8), ONE_BUSY, None, False, "one_busy_rest_asleep", ["8 training process(es) for 8 cards"]),
    (ranks(0), ALL_BUSY, None, False, "no_job", ["no training process runs on this node"]),
    (ranks(4), ALL_BUSY, None, False, "process_count_mismatch", ["4 training processes for 8 cards"]),
    (ranks(16), ALL_BUSY, None, False, "process_count_mismatch", ["16 training processes for 8 cards"]),
    (ranks(8), dict(list(ALL_BUSY.items()) + [(6, 2.0), (7, None)]), None, False, "cards_asleep",
     ["card(s) 6-7 report less than 10.0% utilization"]),
    (ranks(1), {0: 90.0}, None, True, "ok", ["1 training processes for 1 cards"]),
    (ranks(4), dict((i, 50.0) for i in range(4)), 4, True, "ok", []),
]


@pytest.mark.parametrize("found, util, cards, ok, case, phrases", CASES)
def test_verdict(found, util, cards, ok, case, phrases):
    out = lp.verdict(found, util, 10.0, cards)
    assert (out["ok"], out["case"]) == (ok, case), out["message"]
    for phrase in phrases:
        assert phrase in out["message"]
    json.dumps(out)


def test_main_prints_json(torchrun_job, tmp_path_factory, capsys):
    procs = processes_file(torchrun_job, tmp_path_factory.mktemp("json"))
    assert lp.main(["--util", ",".join("%d=85" % i for i in range(8)), "--processes", procs]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] and out["processes"] == 8 and out["cards"] == 8


def test_main_refuses_bad_util(tmp_path, capsys):
    (tmp_path / "p.json").write_text("[]")
    with pytest.raises(SystemExit) as exc:
        lp.main(["--util", "0:85", "--processes", str(tmp_path / "p.json")])
    assert exc.value.code == 2 and "INDEX=PERCENT" in capsys.readouterr().err


# NVIDIA: where nvidia-smi says the ranks are (--gpu-pids) only adds to the message.
ON_OWN_GPU = dict((i, [100 + i]) for i in range(8))
ALL_ON_0 = dict([(0, list(range(100, 108)))] + [(i, []) for i in range(1, 8)])
GPU_CASES = [
    # ranks, util, gpu pids, ok, case, phrases in the message, ranks_on_gpus of the first rank
    (ranks(8), ALL_BUSY, ON_OWN_GPU, True, "ok", [], [0]),
    (ranks(8), ONE_BUSY, ALL_ON_0, False, "one_busy_rest_asleep",
     ["nvidia-smi: ranks 100-107 all on GPU 0", "set_device(LOCAL_RANK)"], [0]),
    (ranks(8), dict(list(ALL_BUSY.items()) + [(7, 0.0)]),
     dict(list(ON_OWN_GPU.items()) + [(6, [106, 107]), (7, [])]), False, "cards_asleep",
     ["nvidia-smi: ranks on GPU 0: 100; ", "GPU 6: 106-107; GPU(s) 7 without a rank"], [0]),
    (ranks(8), ALL_BUSY, dict((i, []) for i in range(8)), True, "ok", [], []),
    (ranks(4), ALL_BUSY, dict((i, []) for i in range(8)), False, "process_count_mismatch",
     ["nvidia-smi lists no process on any GPU"], []),
    (ranks(4), ALL_BUSY, dict((i, [9000 + i]) for i in range(8)), False, "process_count_mismatch",
     ["nvidia-smi lists none of the ranks on a GPU (it lists pids 9000-9007"], []),
    (ranks(4), ALL_BUSY, {0: [100], 1: [101]}, False, "process_count_mismatch",
     ["nvidia-smi: ranks on GPU 0: 100; GPU 1: 101; rank(s) 102-103 on no GPU"], [0]),
]


@pytest.mark.parametrize("found, util, gpu_pids, ok, case, phrases, first_on", GPU_CASES)
def test_verdict_with_gpu_pids(found, util, gpu_pids, ok, case, phrases, first_on):
    out = lp.verdict(found, util, 10.0, None, None, gpu_pids)
    assert (out["ok"], out["case"]) == (ok, case), out["message"]
    for phrase in phrases:
        assert phrase in out["message"], out["message"]
    if ok:
        assert "nvidia-smi" not in out["message"]
    assert out["ranks_on_gpus"]["100"] == first_on
    assert out["gpu_processes"] == dict((str(i), p) for i, p in gpu_pids.items())
    json.dumps(out)


def test_verdict_without_gpu_pids_has_no_gpu_keys():
    out = lp.verdict(ranks(8), ALL_BUSY, 10.0)
    assert "gpu_processes" not in out and "ranks_on_gpus" not in out


@pytest.mark.parametrize("text, expected", [
    ("0=110+111,1=,2=112", {0: [110, 111], 1: [], 2: [112]}), ("", {}), ("3=7", {3: [7]})])
def test_parse_gpu_pids(text, expected):
    assert lp.parse_gpu_pids(text) == expected


def test_main_refuses_processes_that_are_not_a_list(tmp_path, capsys):
    (tmp_path / "p.json").write_text('{"pid": 1}')
    with pytest.raises(SystemExit) as exc:
        lp.main(["--util", "0=85", "--processes", str(tmp_path / "p.json")])
    assert exc.value.code == 2 and "a JSON list of processes" in capsys.readouterr().err


def test_main_with_gpu_pids(torchrun_job, tmp_path_factory, capsys):
    procs = processes_file(torchrun_job, tmp_path_factory.mktemp("json"))
    pids = ",".join(["0=" + "+".join(str(110 + i) for i in range(8))] + ["%d=" % i for i in range(1, 8)])
    util = ",".join("%d=%s" % (i, 99 if i == 0 else 0) for i in range(8))
    assert lp.main(["--util", util, "--gpu-pids", pids, "--processes", procs]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["case"] == "one_busy_rest_asleep" and "ranks 110-117 all on GPU 0" in out["message"]
    with pytest.raises(SystemExit) as exc:
        lp.main(["--util", util, "--gpu-pids", "0=x", "--processes", procs])
    assert exc.value.code == 2 and "pids must be numbers" in capsys.readouterr().err
