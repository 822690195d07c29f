# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slurm_node role without a node: slurm.conf.topsrider names the gate as
Prolog, its epilog link as Epilog, and the gate as HealthCheckProgram unless
the site's NHC runs it (slurm_node_nhc_conf) or the health check is off; the
NHC check line's timeout; the line the role writes into nhc.conf, run as NHC's
check_cmd_status runs it; every setting documented with its default."""
import getopt
import json
import os
import re
import shlex
import subprocess
import sys

import jinja2
import pytest
import yaml

from conftest import TOP, run_play

ROLE = os.path.join(TOP, "roles", "slurm_node")
GATE = os.path.join(ROLE, "files", "topsrider_slurm_gate.py")


def load(*parts):
    with open(os.path.join(ROLE, *parts)) as f:
        return yaml.safe_load(f)


def render(**over):
    env = jinja2.Environment(keep_trailing_newline=True)
    env.filters["extract"] = lambda name, hv, key: hv[name][key]
    env.filters["bool"] = bool
    defaults = load("defaults", "main.yml")
    values = dict((k, v) for k, v in defaults.items() if "{{" not in str(v))
    values.update(ansible_play_hosts=["n1"],
                  hostvars={"n1": {"slurm_node_gres_name": "gcu", "slurm_node_line": "NodeName=n1 Gres=gcu:8"}})
    values.update(over)
    with open(os.path.join(ROLE, "templates", "slurm.conf.topsrider.j2")) as f:
        return env.from_string(f.read()).render(**values)


def settings(text):
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def test_the_gate_is_prolog_epilog_and_health_check():
    lines = settings(render())
    assert lines[:5] == ["GresTypes=gcu", "Prolog=/usr/local/libexec/topsrider/topsrider-slurm-gate", "PrologFlags=Alloc",
                         "SchedulerParameters=nohold_on_prolog_fail",
                         "Epilog=/usr/local/libexec/topsrider/topsrider-slurm-epilog"]
    assert "HealthCheckProgram=/usr/local/libexec/topsrider/topsrider-slurm-gate" in lines


@pytest.mark.parametrize("over", [{"slurm_node_nhc_conf": "/etc/nhc/nhc.conf"}, {"slurm_node_health_check": False}])
def test_with_nhc_or_without_the_health_check_no_health_check_program(over):
    text = render(**over)
    assert not [line for line in settings(text) if line.startswith("HealthCheck")]
    assert "Prolog=/usr/local/libexec/topsrider/topsrider-slurm-gate" in settings(text)
    assert ("NHC" in text) == ("slurm_node_nhc_conf" in over)


def test_the_nhc_check_line_fits_nhcs_default_timeout():
    tasks = load("tasks", "main.yml")
    (task,) = [t for t in tasks if t.get("name", "").startswith("Add the gate to NHC's check list")]
    block = jinja2.Environment().from_string(task["ansible.builtin.blockinfile"]["block"]).render(
        slurm_node_gate_deadline_s=10, slurm_node_gate_command_timeout_s=5,
        slurm_node_gate_path="/usr/local/libexec/topsrider/topsrider-slurm-gate")
    assert block == "* || check_cmd_status -t 25 -r 0 /usr/local/libexec/topsrider/topsrider-slurm-gate --mode health"
    # NHC refuses a command timeout above its own TIMEOUT (30 s by default)
    assert int(re.search(r"-t (\d+)", block).group(1)) <= 30


def test_every_setting_is_documented_with_its_default():
    defaults = load("defaults", "main.yml")
    options = load("meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert set(defaults) == set(options)
    for name in ("slurm_node_epilog_path", "slurm_node_jobs_dir", "slurm_node_nhc_conf"):
        assert options[name]["default"] == defaults[name], name


# ---------------------------------------------------------------- NHC: the check line, run as NHC runs it
# LBNL NHC is packaged neither by Debian nor on PyPI, so no real NHC runs here. What is tested: the line the
# role's own task writes into nhc.conf (by ansible-playbook, the site's lines kept), that it is NHC's
# `TARGET || check` form with check_cmd_status and only the options NHC's check_cmd_status takes (getopts
# ":C:r:t:", lbnl_cmd.nhc), a command timeout NHC accepts (at most its TIMEOUT, 30 s by default), and the
# command itself run as check_cmd_status runs it ("$@" </dev/null >&/dev/null, the exit status compared with -r):
# the installed gate with stand-in efsmi, sinfo and scontrol. Not tested: NHC's own parser, its watchdog,
# and its node-mark-offline talking to a real slurmctld.
NHC_CONF = """# NHC Configuration File (the site's own checks)
* || check_fs_mount_rw -f /
* || check_ps_service -u root -S sshd
"""
SINFO = "#!/bin/sh\nprintf 'n1|%s|tops_2.5.136|%s\\nn2|idle|tops_2.5.136|none\\n'\n"


def nhc_check(line):
    """(target, check, {option: value}, command) of an nhc.conf check line, split as NHC's
    check_cmd_status reads its arguments."""
    target, sep, check = line.partition(" || ")
    assert sep, line
    words = shlex.split(check)
    opts, command = getopt.getopt(words[1:], "C:r:t:")
    return target, words[0], dict(opts), command


@pytest.fixture
def gate_node(tmp_path):
    """The gate installed as the role installs it (a #! line and the script, mode 0755), its
    configuration, and stand-in efsmi, sinfo and scontrol (which records what it is asked)."""
    gate = tmp_path / "topsrider-slurm-gate"
    with open(GATE) as f:
        gate.write_text("#!%s\n%s" % (sys.executable, f.read()))
    gate.chmod(0o755)
    (tmp_path / "topsrider.fact").write_text(json.dumps({"version": "2.5.136"}))
    (tmp_path / "topsrider.sh").write_text("export TOPS=1\n")

    def tool(name, text):
        path = tmp_path / name
        path.write_text(text)
        path.chmod(0o755)
        return str(path)

    def node(bad=(), state="idle", reason="none", **over):
        blocks = "".join("DEV ID %d\n    Health : %s\n" % (i, "False" if i in bad else "True") for i in range(8))
        cfg = {"vendor": "enflame", "node_name": "n1", "expected_cards": 8, "release": "2.5.136",
               "facts_file": str(tmp_path / "topsrider.fact"), "env_file": str(tmp_path / "topsrider.sh"),
               "max_drain_share": 0.5, "log_file": str(tmp_path / "gate.log"), "jobs_dir": "",
               "efsmi": tool("efsmi", "#!/bin/sh\ncat <<'X'\n%sX\n" % blocks),
               "sinfo": tool("sinfo", SINFO % (state, reason)),
               "scontrol": tool("scontrol", "#!/bin/sh\necho \"$*\" >> %s\n" % (tmp_path / "scontrol.calls"))}
        cfg.update(over)
        (tmp_path / "slurm-gate.json").write_text(json.dumps(cfg))
        for name in ("scontrol.calls", "gate.log"):
            if (tmp_path / name).exists():
                (tmp_path / name).unlink()
    node.gate = str(gate)
    node.tmp = tmp_path
    return node


def test_the_gate_runs_from_nhcs_check_list_as_nhc_runs_it(tmp_path, gate_node):
    nhc_conf = tmp_path / "nhc.conf"
    nhc_conf.write_text(NHC_CONF)
    (task,) = [t for t in load("tasks", "main.yml") if t.get("name", "").startswith("Add the gate to NHC's check list")]
    play_vars = {"slurm_node_nhc_conf": str(nhc_conf), "slurm_node_gate_path": gate_node.gate,
                 "slurm_node_gate_deadline_s": 10, "slurm_node_gate_command_timeout_s": 5}
    # the run adds the block and keeps the site's checks; a second run changes nothing
    for changed in (1, 0):
        rc, out = run_play(tmp_path, [task], play_vars)
        assert rc == 0 and "changed=%d " % changed in out, out
    lines = nhc_conf.read_text().splitlines()
    assert lines[:3] == NHC_CONF.splitlines()
    assert lines[3:] == ["# BEGIN gcu.topsrider slurm_node: the health gate",
                         "* || check_cmd_status -t 25 -r 0 %s --mode health" % gate_node.gate,
                         "# END gcu.topsrider slurm_node: the health gate"]
    target, check, opts, command = nhc_check(lines[4])
    assert (target, check, command) == ("*", "check_cmd_status", [gate_node.gate, "--mode", "health"])
    timeout, want = int(opts["-t"]), int(opts["-r"])
    assert want == 0 and timeout <= 30, "NHC refuses a command timeout above its TIMEOUT (30 s by default)"

    def as_nhc():
        # The configuration file: the role's path under NHC; here the test's, by the gate's environment
        # variable for it. No SLURMD_NODENAME: the node name comes from the configuration.
        env = {"PATH": "/usr/bin:/bin", "TOPSRIDER_GATE_CONFIG": str(gate_node.tmp / "slurm-gate.json")}
        proc = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=env, timeout=timeout, check=False)
        calls = gate_node.tmp / "scontrol.calls"
        return proc.returncode == want, calls.read_text().splitlines() if calls.exists() else []

    # fit: NHC's check passes and nothing changes
    gate_node()
    assert as_nhc() == (True, [])
    # unfit: the check fails (NHC marks the node offline, keeping the reason the node has) and the
    # gate has drained it with its own reason, which its log keeps (NHC throws the output away)
    gate_node(bad=(3,))
    assert as_nhc() == (False, ["update nodename=n1 state=drain reason=topsrider: card gcu3 unhealthy"])
    assert "not fit: draining n1: topsrider: card gcu3 unhealthy" in (gate_node.tmp / "gate.log").read_text()
    # health_drains false: the check fails and the gate drains nothing (NHC drains with its own reason)
    gate_node(bad=(3,), health_drains=False)
    assert as_nhc() == (False, [])
    # repaired, drained by the gate: the check passes and the gate resumes the node
    gate_node(state="drained", reason="topsrider: card gcu3 unhealthy")
    assert as_nhc() == (True, ["update nodename=n1 state=resume"])
    # drained by someone else (NHC's own reason included): passes, and the gate leaves it alone
    gate_node(state="drained", reason="NHC: check_fs_mount_rw:  / mounted read-only")
    assert as_nhc() == (True, [])
    # the cluster unreadable (sinfo fails): nothing changes, and an unfit node still fails the check
    failing_sinfo = str(gate_node.tmp / "sinfo-down")
    with open(failing_sinfo, "w") as f:
        f.write("#!/bin/sh\necho 'slurm_load_node: Unable to contact slurm controller' >&2\nexit 1\n")
    os.chmod(failing_sinfo, 0o755)
    gate_node(bad=(3,), sinfo=failing_sinfo)
    assert as_nhc() == (False, [])
    gate_node(sinfo=failing_sinfo)
    assert as_nhc() == (True, [])
    # a broken gate configuration fails the check (exit 2): a gate that cannot check never passes a node
    gate_node(expected_cards=0)
    assert as_nhc() == (False, [])


@pytest.mark.parametrize("config", [None, "conf/site-gate.json"])
def test_the_installed_gate_reads_slurm_node_gate_config_without_arguments(tmp_path, gate_node, config):
    """Slurm runs the gate with no arguments (Prolog, Epilog, HealthCheckProgram, NHC's line): the gate
    the role installs reads slurm_node_gate_config by default, not only the gate's built-in path."""
    (task,) = [t for t in load("tasks", "main.yml") if t.get("name", "").startswith("Install the health gate")]
    # the role's own task; outside the role its file lookup needs the file's full path
    content = task["ansible.builtin.copy"]["content"]
    assert content.count("'topsrider_slurm_gate.py'") == 1, content
    task["ansible.builtin.copy"]["content"] = content.replace("'topsrider_slurm_gate.py'", repr(GATE))
    installed = tmp_path / "bin" / "topsrider-slurm-gate"
    installed.parent.mkdir()
    play_vars = {"slurm_node_gate_path": str(installed), "slurm_node_gate_python": sys.executable}
    if config:
        play_vars["slurm_node_gate_config"] = str(tmp_path / config)
    else:
        play_vars["slurm_node_gate_config"] = "/etc/topsrider/slurm-gate.json"
    rc, out = run_play(tmp_path, [task], play_vars)
    assert rc == 0 and "changed=1 " in out, out
    text = installed.read_text()
    assert text.startswith("#!%s\n" % sys.executable)
    assert text.count("\nDEFAULT_CONFIG = %s\n" % json.dumps(play_vars["slurm_node_gate_config"])) == 1
    if config:
        # the configuration where the role writes it: the gate, run with no arguments or
        # environment for it, checks that file
        gate_node()
        (tmp_path / "conf").mkdir()
        os.rename(str(tmp_path / "slurm-gate.json"), str(tmp_path / config))
        env = {"PATH": "/usr/bin:/bin"}
        proc = subprocess.run([str(installed), "--mode", "config"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True, timeout=60, check=False)
        assert proc.returncode == 0, proc.stdout
        os.rename(str(tmp_path / config), str(tmp_path / "elsewhere.json"))
        proc = subprocess.run([str(installed), "--mode", "config"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True, timeout=60, check=False)
        assert proc.returncode != 0 and config in proc.stdout, proc.stdout
