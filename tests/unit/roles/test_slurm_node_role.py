# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slurm_node role without a node: slurm.conf.topsrider names the gate as
Prolog, its epilog link as Epilog, and the gate as HealthCheckProgram unless
the site's NHC runs it (slurm_node_nhc_conf) or the health check is off; the
NHC check line's timeout; every setting documented with its default."""
import os
import re

import jinja2
import pytest
import yaml

from conftest import TOP

ROLE = os.path.join(TOP, "roles", "slurm_node")


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
