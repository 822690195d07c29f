"""plugins/action/topsrider_lock.py: this controller and the run's ansible-playbook process, as the node
lock's holder names them."""
import os

from ansible_collections.gcu.topsrider.plugins.action.topsrider_lock import identity, is_playbook, playbook_process


def proc_tree(tmp_path, procs):
    """procs: {pid: (ppid, argv, start)} as a fake /proc."""
    for pid, (ppid, argv, start) in procs.items():
        d = tmp_path / str(pid)
        d.mkdir()
        fields = ["S", str(ppid)] + ["0"] * 17 + [str(start), "0"]
        (d / "stat").write_text("%d (%s) %s\n" % (pid, os.path.basename(argv[0])[:15], " ".join(fields)))
        (d / "cmdline").write_bytes(("\0".join(argv) + "\0").encode())
    (tmp_path / "sys" / "kernel" / "random").mkdir(parents=True)
    (tmp_path / "sys" / "kernel" / "random" / "boot_id").write_text("b00t-1d\n")
    (tmp_path / "self" / "ns").mkdir(parents=True)
    os.symlink("pid:[4026531836]", str(tmp_path / "self" / "ns" / "pid"))
    return str(tmp_path)


SHELL = ["/bin/bash"]
PLAYBOOK = ["/usr/bin/python3", "/venv/bin/ansible-playbook", "-i", "inv", "deploy.yml"]


def test_a_forked_worker_names_its_ansible_playbook(tmp_path):
    """The worker's command line is ansible-playbook's too (fork): the topmost of the line is the run."""
    proc = proc_tree(tmp_path, {10: (1, SHELL, 5), 20: (10, PLAYBOOK, 600), 30: (20, PLAYBOOK, 700)})
    assert playbook_process(30, proc) == 20
    found = identity(proc, hostname="ctl", pid=30)
    assert found == {"controller": "ctl", "boot_id": "b00t-1d", "pidns": "pid:[4026531836]",
                     "pid": 20, "pid_start": "600"}


def test_a_spawned_worker_walks_up_to_it(tmp_path):
    proc = proc_tree(tmp_path, {20: (1, ["/venv/bin/ansible-playbook", "site.yml"], 600),
                                25: (20, ["/usr/bin/python3", "-c", "from multiprocessing.forkserver import main"], 650),
                                30: (25, ["/usr/bin/python3", "-c", "from multiprocessing.spawn import main"], 700)})
    assert playbook_process(30, proc) == 20


def test_a_playbook_run_by_a_task_of_another_is_its_own_run(tmp_path):
    proc = proc_tree(tmp_path, {20: (1, PLAYBOOK, 600), 21: (20, PLAYBOOK, 610),
                                40: (21, ["/usr/bin/python3", "AnsiballZ_command.py"], 620),
                                50: (40, PLAYBOOK, 630), 60: (50, PLAYBOOK, 640)})
    assert playbook_process(60, proc) == 50


def test_no_ansible_playbook_above_names_no_process(tmp_path):
    proc = proc_tree(tmp_path, {10: (1, SHELL, 5), 30: (10, ["/venv/bin/ansible-console"], 700)})
    assert playbook_process(30, proc) is None
    assert "pid" not in identity(proc, hostname="ctl", pid=30)
    assert not is_playbook(99, proc)


def test_this_process_is_found_under_the_real_proc():
    found = identity()
    assert found["controller"] and found["boot_id"] and found["pidns"].startswith("pid:[")
