# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/dist_launch/tasks/cluster.yml on two hosts of the group (local
connection, the controller files under tmp), with what main.yml hands it
(each host's card count and release): nodes at two releases are refused
before anything is written, naming every node's release; nodes with
different card counts are named with their counts, and the files use the
smallest."""
from conftest import local_inventory, run_play

CLUSTER = {"ansible.builtin.include_role": {"name": "gcu.topsrider.dist_launch", "tasks_from": "cluster"},
           "run_once": True}


def cluster(tmp_path, hosts):
    out_dir = tmp_path / "launch"
    (tmp_path / "stock.cfg").write_text("")  # Ansible's stock settings: the default callback, a message on one line
    rc, out = run_play(tmp_path, [
        {"name": "Case", "block": [CLUSTER], "rescue": [
            {"ansible.builtin.copy": {"content": "{{ ansible_failed_result.msg }}", "dest": str(tmp_path / "msg.txt"),
                                      "mode": "0644"}, "delegate_to": "localhost", "run_once": True}]}],
        {"dist_launch_output_dir": str(out_dir), "dist_launch_vendor": "enflame", "dist_launch_backend": "eccl",
         "dist_launch_environment": {}, "dist_launch_master_addr": "127.0.0.1"},
        inventory=local_inventory(tmp_path, hosts, "t20"), hosts="t20", config=str(tmp_path / "stock.cfg"))
    assert rc == 0, out
    msg = tmp_path / "msg.txt"
    return (msg.read_text() if msg.exists() else None), out, out_dir / "t20"


def test_nodes_at_two_releases_are_refused_naming_each_nodes_release(tmp_path):
    msg, out, written = cluster(tmp_path, {
        "node1": {"dist_launch_nproc": 2, "dist_launch_release": "2.5.136"},
        "node2": {"dist_launch_nproc": 2, "dist_launch_release": "2.5.140"},
        "node3": {"dist_launch_nproc": 2, "dist_launch_release": ""}})
    assert msg is not None, out
    assert msg.startswith("dist_launch: refused, nothing was written on the controller: the nodes of t20 run "
                          "2.5.136, 2.5.140, no deployed release (node1=2.5.136 node2=2.5.140 node3=none), "
                          "and slurm.sbatch asks for one release"), msg
    assert not written.exists()


def test_nodes_with_different_card_counts_are_named_with_their_counts(tmp_path):
    msg, out, written = cluster(tmp_path, {
        "node1": {"dist_launch_nproc": 8, "dist_launch_release": "2.5.136"},
        "node2": {"dist_launch_nproc": 2, "dist_launch_release": "2.5.136"}})
    assert ('"msg": "dist_launch: the nodes of t20 have different card counts (node1=8 node2=2); the hostfile lists '
            'each node\'s own count, slurm.sbatch and k8s-job.yaml use 2 per node."') in out, out
    assert msg is None, msg
    assert (written / "hostfile").read_text().split("\n")[-3:] == ["node1 slots=8", "node2 slots=2", ""]
