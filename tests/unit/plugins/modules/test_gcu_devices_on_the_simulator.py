# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gcu_devices against the simulated T20 node's own tools, faults injected with simctl.

What molecule's gcu_devices scenario asked of the module on a simulated node,
moved here: the module's main runs in this process and reads what a simulated
node gives it: the simulator's efsmi, run for real on this test's state, and
the PCI tree, device files and driver version file that simctl writes (all
under tmp_path: tests/unit/sim_node.py, shared with the card exporter's
units), which the module's roots point at here. Every case is a decision made from those reads,
so no container is needed. The module on a simulated node through Ansible is
still run by verify.yml, rollback.yml, fleet_info.yml and launch_check.yml and
by the slurm_node, card_exporter and dist_launch roles in other scenarios."""
import pytest

from ansible.module_utils import basic
from ansible_collections.gcu.topsrider.plugins.module_utils import _cards
from ansible_collections.gcu.topsrider.plugins.modules import gcu_devices as module

from sim_node import Node
from utils import AnsibleExitJson, AnsibleFailJson, exit_json, fail_json, set_module_args

T20_BUS = ["0000:3d:00.0", "0000:3e:00.0", "0000:40:00.0", "0000:41:00.0",
           "0000:b1:00.0", "0000:b2:00.0", "0000:b4:00.0", "0000:b5:00.0"]


@pytest.fixture
def node(tmp_path, monkeypatch):
    """A simulated node (sim_node.Node) in its default state, 8 healthy idle T20 cards, whose PCI tree, device
    files and driver version file the module reads. node.gcu_devices(args, check=False) runs the module on it
    with the node's efsmi and returns its result, failed or not, with the warnings it gave."""
    sim = Node(tmp_path, cards=8)
    monkeypatch.setattr(_cards, "PCI_ROOT", sim.env["SIM_PCI_ROOT"])
    monkeypatch.setattr(_cards, "DEV_ROOT", sim.env["SIM_DEV_ROOT"])
    monkeypatch.setattr(_cards, "SYS_MODULE_ROOT", sim.env["SIM_SYSMODULE_ROOT"])
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)
    warned = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, w: warned.append(w))

    def gcu_devices(args=None, check=False):
        args = dict(args or {}, efsmi_path=str(sim.tool))
        if check:
            args["_ansible_check_mode"] = True
        del warned[:]
        with set_module_args(args):
            with pytest.raises((AnsibleExitJson, AnsibleFailJson)) as exc:
                module.main()
        result = exc.value.args[0]
        result["warnings"] = list(warned)
        return result

    sim.gcu_devices = gcu_devices
    return sim


def test_the_facts_describe_the_eight_cards_from_efsmi_q_plus_the_table(node):
    res = node.gcu_devices({"expected_count": 8, "require_healthy": True, "max_temperature": 85})
    assert not res.get("failed"), res.get("msg")
    facts = res["ansible_facts"]
    cards = facts["gcu_devices"]
    assert res["changed"] is False and res["source"] == "query" and res["problems"] == []
    assert facts["gcu_vendor"] == "enflame" and "efsmi" in res and "nvidia_smi" not in res
    assert facts["gcu_device_count"] == 8 and [c["index"] for c in cards] == list(range(8))
    assert {c["health"] for c in cards} == {True} and {c["firmware"] for c in cards} == {"10.19.3"}
    assert cards[0]["serial"] == "W28001150301" and cards[7]["bus_id"] == "0000:b5:00.0"
    assert cards[0]["memory_total_mib"] == 32768
    assert facts["gcu_driver_version"] == "2.4.20230829" and facts["gcu_efsmi_version"] == "1.20.0"
    pci = facts["gcu_pci_devices"]
    assert pci["count"] == 8 and set(pci["device_ids"]) == {"0021"}
    assert pci["bus_ids"] == [c["bus_id"] for c in cards] == T20_BUS


def test_the_summary_table_gives_the_same_cards_health_unknown_there(node):
    res = node.gcu_devices({"source": "summary", "expected_count": 8})
    assert not res.get("failed") and res["changed"] is False and res["source"] == "summary"
    facts = res["ansible_facts"]
    assert facts["gcu_device_count"] == 8
    assert [c["bus_id"] for c in facts["gcu_devices"]] == facts["gcu_pci_devices"]["bus_ids"]
    assert {c["health"] for c in facts["gcu_devices"]} == {None}


def test_a_busy_check_on_an_idle_node_fails_naming_every_card(node):
    res = node.gcu_devices({"min_utilization": 10})
    assert res["failed"] and res["changed"] is False
    assert "8 of 8 GCUs not busy" in res["msg"] and "cards 0-7 sleeping" in res["msg"]
    assert len(res["problems"]) == 1


def test_eight_cards(node):
    res = node.gcu_devices({"expected_count": 8, "require_healthy": True})
    assert not res.get("failed"), res.get("msg")
    facts = res["ansible_facts"]
    assert facts["gcu_device_count"] == 8 and facts["gcu_pci_devices"]["count"] == 8
    assert res["changed"] is False


def test_expected_count_wrong(node):
    res = node.gcu_devices({"expected_count": 16})
    assert res["failed"] and "expected 16 GCUs, the driver sees 8" in res["msg"]
    assert "PCI sees 8 too" in res["msg"]


def test_sixteen_cards(node):
    node.simctl("reset", "--cards", "16")
    res = node.gcu_devices({"expected_count": 16})
    assert not res.get("failed"), res.get("msg")
    assert [c["index"] for c in res["ansible_facts"]["gcu_devices"]] == list(range(16))


def test_unhealthy_card_fails_require_healthy(node):
    node.simctl("card", "3", "health=false")
    res = node.gcu_devices({"require_healthy": True})
    assert res["failed"] and res["changed"] is False
    assert "unhealthy GCU(s): GCU 3 (0000:41:00.0, serial W28001180500)" in res["msg"]
    assert len(res["problems"]) == 1
    # without the expectation it only reports
    res = node.gcu_devices()
    assert not res.get("failed")
    assert [c["health"] for c in res["ansible_facts"]["gcu_devices"]] == [True] * 3 + [False] + [True] * 4


def test_one_busy_of_eight_fails_busy_check(node):
    node.simctl("busy", "0")
    res = node.gcu_devices({"min_utilization": 50})
    assert res["failed"]
    assert "7 of 8 GCUs not busy" in res["msg"] and "cards 1-7 sleeping" in res["msg"]
    assert "only card(s) 0 working" in res["msg"]


def test_all_busy_passes_busy_check(node):
    node.simctl("busy", "all")
    res = node.gcu_devices({"min_utilization": 50, "expected_count": 8})
    assert not res.get("failed"), res.get("msg")
    assert {c["utilization_pct"] for c in res["ansible_facts"]["gcu_devices"]} == {85.0}


@pytest.mark.parametrize("source", ["auto", "query", "summary"])
def test_driver_not_loaded(node, source):
    node.simctl("set", "driver_loaded=false")
    res = node.gcu_devices({"source": source})
    assert res["failed"] and res["rc"] == 1
    assert "driver is not loaded" in res["stderr"]
    assert "modprobe enflame" in res["msg"] and "/dev/gcuctl" in res["msg"]


def test_removed_card_pci_8_driver_7(node, tmp_path):
    node.simctl("remove", "7")
    assert (tmp_path / "pci" / "0000:b5:00.0" / "vendor").read_text().strip() == "0x1e36"
    res = node.gcu_devices()
    assert not res.get("failed")
    facts = res["ansible_facts"]
    assert (facts["gcu_pci_devices"]["count"], facts["gcu_device_count"]) == (8, 7)
    assert "PCI sees 8 Enflame device(s), the driver sees 7" in " ".join(res["warnings"])
    res = node.gcu_devices({"expected_count": 8})
    assert res["failed"]
    assert "expected 8 GCUs, the driver sees 7" in res["msg"]
    assert "not seen by the driver: 0000:b5:00.0" in res["msg"]


def test_pipe_table_and_new_keys(node):
    node.simctl("set", "table_style=pipe", "query_memory_keys=new")
    node.simctl("busy", "2")
    for source in ("query", "summary"):
        res = node.gcu_devices({"source": source, "expected_count": 8})
        assert not res.get("failed"), res.get("msg")
        assert [c["utilization_pct"] for c in res["ansible_facts"]["gcu_devices"]][:3] == [0.0, 0.0, 85.0]


def test_check_mode_reports_the_same(node):
    node.simctl("busy", "0")
    res = node.gcu_devices({"expected_count": 8, "min_utilization": 50}, check=True)
    assert res["failed"] and "cards 1-7 sleeping" in res["msg"]
    res = node.gcu_devices({"expected_count": 8}, check=True)
    assert not res.get("failed") and res["changed"] is False and res["ansible_facts"]["gcu_device_count"] == 8
    # the same read as outside check mode, and nothing on the node changed
    assert node.gcu_devices({"expected_count": 8})["ansible_facts"] == res["ansible_facts"]
