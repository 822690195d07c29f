# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/_holders.py, the one busy reader: who holds a card's device
file, read from a /proc tree (here a fake one with real fd links), with user,
command, cards and Slurm job; the launch check's ranks from the same scan;
nvidia-smi's compute processes merged in."""
import os
import re

from ansible_collections.gcu.topsrider.plugins.module_utils import _holders


def fake_proc(root, pid, ppid, argv, env=None, fds=(), uid=0):
    d = root / str(pid)
    (d / "fd").mkdir(parents=True)
    (d / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + (b"\0" if argv else b""))
    (d / "stat").write_text("%d (%s) S %d 1 1 0 -1\n" % (pid, os.path.basename(argv[0]) if argv else "kthread", ppid))
    (d / "status").write_text("Name:\tx\nUmask:\t0022\nUid:\t%d\t%d\t%d\t%d\n" % (uid, uid, uid, uid))
    (d / "environ").write_bytes(b"\0".join(("%s=%s" % kv).encode() for kv in sorted((env or {}).items())))
    for i, target in enumerate(fds):
        os.symlink(target, str(d / "fd" / str(i)))


def job_node(root):
    """A Slurm job's two ranks on gcu0/gcu1, a process outside Slurm on gcu3,
    an efsmi that holds /dev/gcuctl only, a shell, a kernel thread."""
    fake_proc(root, 100, 1, ["/bin/bash", "slurm_script"], {"SLURM_JOB_ID": "17"})
    for rank in range(2):
        fake_proc(root, 110 + rank, 100, ["/opt/venvs/train/bin/python", "-u", "train.py"],
                  {"SLURM_JOB_ID": "17", "LOCAL_RANK": str(rank), "RANK": str(rank), "WORLD_SIZE": "2"},
                  ["/dev/null", "/dev/gcu%d" % rank, "socket:[1234]", "/dev/gcu%d" % rank])
    fake_proc(root, 200, 1, ["python3", "-c", "import torch_gcu"], {"HOME": "/root"}, ["/dev/gcu3"], uid=65534)
    fake_proc(root, 300, 1, ["/usr/sbin/efsmi", "-q"], {}, ["/dev/gcuctl"])
    fake_proc(root, 400, 1, ["sleep", "100"], {}, ["/dev/pts/0"])
    fake_proc(root, 2, 0, [], {})


def test_holders_of_a_busy_node(tmp_path):
    job_node(tmp_path)
    holders = _holders.card_holders(_holders.read_processes(str(tmp_path)))
    assert [(h["pid"], h["devices"], h["cards"], h["slurm_job_id"]) for h in holders] == [
        (110, ["gcu0"], [0], "17"), (111, ["gcu1"], [1], "17"), (200, ["gcu3"], [3], None)]
    assert holders[0]["user"] == "root" and holders[0]["command"] == "/opt/venvs/train/bin/python -u train.py"
    assert holders[2]["user"] == "nobody"
    assert _holders.describe(holders[0]) == "pid 110 (root: /opt/venvs/train/bin/python -u train.py) holds gcu0 (Slurm job 17)"
    assert _holders.describe_all(holders, 2).endswith("; and 1 more")


def test_the_same_scan_finds_the_ranks_and_matches(tmp_path):
    job_node(tmp_path)
    procs = _holders.read_processes(str(tmp_path), re.compile(r"^sleep "))
    assert [p["pid"] for p in procs] == [110, 111, 200, 400]
    assert procs[0]["env"]["LOCAL_RANK"] == "0" and procs[0]["ppid"] == 100 and procs[0]["environ_readable"]


def test_an_idle_node_and_an_unreadable_proc(tmp_path):
    fake_proc(tmp_path, 10, 1, ["sleep", "1"])
    assert _holders.holders_state(str(tmp_path)) == {"processes": [], "error": None}
    state = _holders.holders_state(str(tmp_path / "missing"))
    # never "nobody uses the node" when it could not be read
    assert state["processes"] == [] and "cannot read %s" % (tmp_path / "missing") in state["error"]


def test_unreadable_fds_and_environ_are_said(tmp_path):
    fake_proc(tmp_path, 10, 1, ["python3", "train.py"], {"LOCAL_RANK": "0"})
    os.rmdir(str(tmp_path / "10" / "fd"))
    os.remove(str(tmp_path / "10" / "environ"))
    (proc,) = _holders.read_processes(str(tmp_path), re.compile("train"))
    assert proc["fds_readable"] is False and proc["environ_readable"] is False and proc["cards"] == []


def test_long_commands_are_cut():
    holder = {"pid": 1, "user": "u", "command": "x" * 10, "devices": ["gcu0"], "cards": [0]}
    assert _holders.describe(holder) == "pid 1 (u: xxxxxxxxxx) holds gcu0"


def test_nvidia_smi_processes_merge_in(tmp_path):
    # a CUDA process opens every /dev/nvidia<N>; nvidia-smi knows the one it uses
    fake_proc(tmp_path, 50, 1, ["python", "train.py"], {}, ["/dev/nvidia%d" % i for i in range(4)] + ["/dev/nvidiactl"])
    holders = _holders.card_holders(_holders.read_processes(str(tmp_path)))
    assert holders[0]["cards"] == [0, 1, 2, 3]
    merged = _holders.merge_listed(holders, [(50, 2, "python"), (9999, 5, "/usr/bin/other")], "nvidia")
    assert [(h["pid"], h["cards"], h["devices"], h["command"]) for h in merged] == [
        (50, [2], ["nvidia2"], "python train.py"), (9999, [5], ["nvidia5"], "/usr/bin/other")]


def test_brief_groups_by_job_for_a_progress_line(tmp_path):
    job_node(tmp_path)
    holders = _holders.card_holders(_holders.read_processes(str(tmp_path)))
    assert _holders.brief(holders) == "Slurm job 17: pids 110-111 on gcu0-1; no Slurm job: pid 200 on gcu3"
    assert _holders.brief([]) == ""
