# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gcu_devices against a simulated T20 node, faults injected with simctl."""
import json
import os
import subprocess

import pytest

testinfra_hosts = ["all"]


@pytest.fixture
def sim(host):
    """simctl on the node; the node is back in its default state afterwards."""
    def simctl(*args):
        out = host.run("simctl " + " ".join(args))
        assert out.rc == 0, out.stderr
        return out.stdout

    simctl("reset")
    yield simctl
    simctl("reset")


def gcu_devices(host, args="", check=False):
    """Run the module on the node (not check mode unless asked) and return its
    result, failed or not, with the warnings Ansible printed.

    host.ansible() is not used for this: it reads results through the tree
    callback, which in ansible-core 2.19 drops `failed` and `warnings`, so a
    failure would look like a success. This is the same ad-hoc `ansible` run
    with the json callback, which keeps them."""
    runner = host.backend.ansible_runner
    argv = ["ansible", "-i", runner.inventory_file, host.backend.host, "-m", "gcu.topsrider.gcu_devices"]
    if args:
        argv += ["-a", args]
    if check:
        argv.append("--check")
    env = dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
               ANSIBLE_DEPRECATION_WARNINGS="0")
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode in (0, 2), err.decode()
    task = json.loads(out.decode())["plays"][0]["tasks"][0]
    result = task["hosts"][host.backend.host]
    result["_stderr"] = err.decode()
    return result


def test_eight_cards(host, sim):
    res = gcu_devices(host, "expected_count=8 require_healthy=true")
    assert not res.get("failed"), res.get("msg")
    facts = res["ansible_facts"]
    assert facts["gcu_device_count"] == 8 and facts["gcu_pci_devices"]["count"] == 8
    assert res["changed"] is False


def test_expected_count_wrong(host, sim):
    res = gcu_devices(host, "expected_count=16")
    assert res["failed"] and "expected 16 GCUs, the driver sees 8" in res["msg"]
    assert "PCI sees 8 too" in res["msg"]


def test_sixteen_cards(host, sim):
    sim("reset", "--cards", "16")
    res = gcu_devices(host, "expected_count=16")
    assert not res.get("failed"), res.get("msg")
    assert [c["index"] for c in res["ansible_facts"]["gcu_devices"]] == list(range(16))


def test_unhealthy_card_fails_require_healthy(host, sim):
    sim("card", "3", "health=false")
    res = gcu_devices(host, "require_healthy=true")
    assert res["failed"] and res["changed"] is False
    assert "unhealthy GCU(s): GCU 3 (0000:41:00.0, serial W28001180500)" in res["msg"]
    assert len(res["problems"]) == 1
    # without the expectation it only reports
    res = gcu_devices(host)
    assert not res.get("failed")
    assert [c["health"] for c in res["ansible_facts"]["gcu_devices"]] == [True] * 3 + [False] + [True] * 4


def test_one_busy_of_eight_fails_busy_check(host, sim):
    sim("busy", "0")
    res = gcu_devices(host, "min_utilization=50")
    assert res["failed"]
    assert "7 of 8 GCUs not busy" in res["msg"] and "cards 1-7 sleeping" in res["msg"]
    assert "only card(s) 0 working" in res["msg"]


def test_all_busy_passes_busy_check(host, sim):
    sim("busy", "all")
    res = gcu_devices(host, "min_utilization=50 expected_count=8")
    assert not res.get("failed"), res.get("msg")
    assert {c["utilization_pct"] for c in res["ansible_facts"]["gcu_devices"]} == {85.0}


@pytest.mark.parametrize("source", ["auto", "query", "summary"])
def test_driver_not_loaded(host, sim, source):
    sim("set", "driver_loaded=false")
    res = gcu_devices(host, "source=%s" % source)
    assert res["failed"] and res["rc"] == 1
    assert "driver is not loaded" in res["stderr"]
    assert "modprobe enflame" in res["msg"] and "/dev/gcuctl" in res["msg"]


def test_removed_card_pci_8_driver_7(host, sim):
    sim("remove", "7")
    assert host.file("/sys/bus/pci/devices/0000:b5:00.0/vendor").content_string.strip() == "0x1e36"
    res = gcu_devices(host)
    assert not res.get("failed")
    facts = res["ansible_facts"]
    assert (facts["gcu_pci_devices"]["count"], facts["gcu_device_count"]) == (8, 7)
    assert "PCI sees 8 Enflame device(s), the driver sees 7" in " ".join(res.get("warnings", [])) + res["_stderr"]
    res = gcu_devices(host, "expected_count=8")
    assert res["failed"]
    assert "expected 8 GCUs, the driver sees 7" in res["msg"]
    assert "not seen by the driver: 0000:b5:00.0" in res["msg"]


def test_pipe_table_and_new_keys(host, sim):
    sim("set", "table_style=pipe", "query_memory_keys=new")
    sim("busy", "2")
    for source in ("query", "summary"):
        res = gcu_devices(host, "source=%s expected_count=8" % source)
        assert not res.get("failed"), res.get("msg")
        assert [c["utilization_pct"] for c in res["ansible_facts"]["gcu_devices"]][:3] == [0.0, 0.0, 85.0]


def test_check_mode_reports_the_same(host, sim):
    sim("busy", "0")
    res = gcu_devices(host, "expected_count=8 min_utilization=50", check=True)
    assert res["failed"] and "cards 1-7 sleeping" in res["msg"]
    res = gcu_devices(host, "expected_count=8", check=True)
    assert not res.get("failed") and res["changed"] is False and res["ansible_facts"]["gcu_device_count"] == 8
