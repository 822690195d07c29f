# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A hung efsmi or nvidia-smi (a wedged driver blocks them forever) is killed
at the timeout and named: gcu_devices fails saying which tool and how long,
topsrider_state returns it as the devices' error. Real processes here (fake
tools that sleep, one of them through a child that holds the output pipe),
AnsibleModule.run_command unpatched."""
import os
import time

import pytest

from ansible.module_utils import basic
from ansible_collections.gcu.topsrider.plugins.module_utils import _cards, _node
from ansible_collections.gcu.topsrider.plugins.module_utils import _state_read
from ansible_collections.gcu.topsrider.plugins.modules import gcu_devices, topsrider_state

from utils import AnsibleExitJson, AnsibleFailJson, exit_json, fail_json, set_module_args

# `sleep` as a child of the shell: it holds stdout, so killing the shell alone would still hang.
HANG = u"#!/bin/sh\necho starting\nsleep 30\necho never\n"


def tool(tmp_path, name, text=HANG):
    path = tmp_path / name
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def patched(monkeypatch, tmp_path):
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)
    monkeypatch.setattr(_cards, "PCI_ROOT", str(tmp_path / "no-pci"))
    monkeypatch.setattr(_cards, "SYS_MODULE_ROOT", str(tmp_path / "no-sys-module"))
    monkeypatch.setattr(_cards, "DEV_ROOT", str(tmp_path / "dev"))
    monkeypatch.setattr(_state_read, "PCI_ROOT", str(tmp_path / "no-pci"))


def call(main, args):
    with set_module_args(args):
        with pytest.raises((AnsibleExitJson, AnsibleFailJson)) as exc:
            main()
    return exc.value.args[0]


@pytest.mark.parametrize("name,arg", [("efsmi", "efsmi_path"), ("nvidia-smi", "nvidia_smi_path")])
def test_gcu_devices_fails_on_a_hung_tool_naming_it_and_the_timeout(patched, tmp_path, name, arg):
    path = tool(tmp_path, name)
    start = time.time()
    res = call(gcu_devices.main, {arg: path, "timeout": 1})
    took = time.time() - start
    assert res["failed"] is True and took < 10, took
    assert "did not finish within 1s and was killed: %s hangs (timeout 1s)" % name in res["msg"], res["msg"]
    assert res["cmd"].startswith(path) and res["timeout"] == 1
    assert "ansible_facts" not in res


def test_gcu_devices_auto_does_not_run_the_summary_after_a_hung_query(patched, tmp_path):
    marker = tmp_path / "calls"
    path = tool(tmp_path, "efsmi", u"#!/bin/sh\necho \"$@\" >> %s\nexec sleep 30\n" % marker)
    res = call(gcu_devices.main, {"efsmi_path": path, "timeout": 1})
    assert res["failed"] is True and "`%s -q` did not finish within 1s" % path in res["msg"]
    assert marker.read_text() == u"-q\n"


def test_gcu_devices_rejects_a_timeout_below_one_second(patched, tmp_path):
    res = call(gcu_devices.main, {"efsmi_path": tool(tmp_path, "efsmi"), "timeout": 0})
    assert res["failed"] is True and "timeout must be 1 second or more" in res["msg"]


def test_topsrider_state_reports_the_hung_efsmi_as_the_devices_error(patched, tmp_path, monkeypatch):
    monkeypatch.setattr(_node, "TOOL_TIMEOUT_S", 1)
    path = tool(tmp_path, "efsmi")
    res = call(topsrider_state.main, {"devices": True, "efsmi_path": path})
    devices = res["state"]["devices"]
    assert res.get("failed") is not True and devices["count"] is None
    assert devices["error"] == "`%s -q` did not finish within 1s and was killed: efsmi hangs (timeout 1s)" % path


def test_run_c_kills_only_past_the_timeout(tmp_path, monkeypatch):
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)
    with set_module_args({}):
        module = basic.AnsibleModule(argument_spec={})
    quick = _node.run_c(module, [tool(tmp_path, "quick", u"#!/bin/sh\nsleep 0.2\necho done\n")], timeout=5)
    assert (quick["rc"], quick["stdout"], quick["timed_out"]) == (0, "done\n", False)
    hung = _node.run_c(module, [tool(tmp_path, "hung")], timeout=1)
    assert hung["timed_out"] is True and hung["rc"] != 0 and hung["stdout"] == "starting\n"
    assert os.path.basename(hung["argv"][0]) == "hung"
