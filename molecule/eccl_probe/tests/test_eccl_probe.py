# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What eccl_probe leaves on the node after every scenario step, the hang included."""

testinfra_hosts = ["all"]


def test_no_probe_process_survives(host):
    # Rank and probe children carry the report marker in their command line.
    procs = host.run("ps -eo pid,args")
    assert procs.rc == 0
    leftovers = [line for line in procs.stdout.splitlines() if "ECCL_PROBE" in line and "ps -eo" not in line]
    assert leftovers == []


def test_no_probe_temp_dir_left(host):
    out = host.run("find /tmp -maxdepth 1 -name 'eccl_probe-*'")
    assert out.rc == 0 and out.stdout.strip() == ""


def test_stack_is_back_as_deployed(host):
    lib = host.file("/usr/local/tops/lib/libeccl.so")
    assert lib.exists and lib.is_file
    assert not host.file("/usr/local/lib/libeccl.so").exists
    assert host.file("/etc/ld.so.conf.d/topsrider.conf").content_string == "/usr/local/tops/lib\n"
    assert "/usr/local/tops/lib/libeccl.so" in host.run("ldconfig -p").stdout
    pip = host.run("/opt/venvs/train/bin/pip list --format=freeze")
    assert "torch_gcu==2.13.0+2.5.136" in pip.stdout.replace("torch-gcu", "torch_gcu")


def test_no_card_left_wedged(host):
    state = host.file("/etc/topsrider-sim/state.json").content_string
    assert '"hang": true' not in state
