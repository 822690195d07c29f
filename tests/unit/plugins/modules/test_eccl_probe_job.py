"""gcu.topsrider.eccl_probe: one node's share of a multi-node job (the fabric check's jobs).

Real rank children on the fake torch/torch_gcu of eccl_fakes; the fake
all_reduce sums over WORLD_SIZE, so a share whose ranks got the wrong global
RANK or WORLD_SIZE fails the sum check.
"""
import sys

import pytest

from test_eccl_probe import alive, codes, collective, libdir, node, run  # noqa: F401 pylint: disable=unused-import

# eccl_probe run as Ansible runs a module, through test_eccl_probe's helper.
pytestmark = pytest.mark.ansible_core


def test_job_share_starts_global_ranks_and_counts_the_job_in_busbw(node, libdir, tmp_path):
    failed, r = collective(node, libdir, tmp_path, env={"FAKE_GCU_DEVICES": "2"}, world_size=2,
                           job_world_size=6, rank_offset=2, master_addr="10.1.2.3", master_port=29611,
                           framework_check=False)
    assert not failed and r["healthy"], r["problems"]
    c = r["collective"]
    assert (c["world_size"], c["job_world_size"], c["rank_offset"]) == (2, 6, 2)
    assert (c["master_addr"], c["master_port"]) == ("10.1.2.3", 29611)
    assert [rk["rank"] for rk in c["ranks"]] == [2, 3]
    # framework_check: false -> no framework probe ran, only the ranks.
    assert r["framework"] is None
    for x in c["results"]:
        # The sum of 1..6 checked on this node's two ranks; busbw counts the job's six ranks.
        assert x["correct"] and x["ranks"] == 2
        assert x["busbw_gbps"] == pytest.approx(x["algbw_gbps"] * 2 * 5 / 6, rel=1e-3)
    assert all(not alive(rk["pid"]) for rk in c["ranks"])


def test_job_share_rank_failure_names_the_global_rank(node, libdir, tmp_path):
    failed, r = collective(node, libdir, tmp_path, env={"FAKE_GCU_DEVICES": "2", "FAKE_DIST_MODE": "crash",
                                                        "FAKE_DIST_RANK": "5"},
                           world_size=2, job_world_size=6, rank_offset=4, master_port=29612)
    assert "RANK_FAILED" in codes(r)
    assert "rank 5 exited" in r["problems"][0]["message"]
    # framework_check defaults to true: the framework level ran first.
    assert r["framework"]["device_count"] == 2


def test_single_node_defaults_unchanged(node, libdir, tmp_path):
    failed, r = collective(node, libdir, tmp_path, env={"FAKE_GCU_DEVICES": "2"})
    c = r["collective"]
    assert r["healthy"] and (c["world_size"], c["job_world_size"], c["rank_offset"]) == (2, 2, 0)
    assert c["master_addr"] == "127.0.0.1"


@pytest.mark.parametrize("args,fragment", [
    ({"job_world_size": 4, "world_size": 2}, "master_port"),
    ({"job_world_size": 4, "master_port": 29613}, "world_size"),
    ({"job_world_size": 3, "world_size": 2, "rank_offset": 2, "master_port": 29613}, "smaller than rank_offset"),
    ({"rank_offset": 2}, "rank_offset needs job_world_size"),
    ({"rank_offset": -1}, "rank_offset must be 0 or more"),
    ({"level": "collective", "framework_check": False}, "world_size"),
])
def test_job_share_bad_arguments(node, args, fragment):
    failed, r = run(dict(args, python=sys.executable))
    assert failed and fragment in r["msg"], r["msg"]
    assert node["commands"] == []
