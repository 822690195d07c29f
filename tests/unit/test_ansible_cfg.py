# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The root ansible.cfg (a checkout's) and the README's example ansible.cfg
are for real hosts: they name no inventory and never turn host-key checking
off. The simulator's settings live in sim/ansible.cfg, which only the Makefile
uses."""
import configparser
import os
import re

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def read(path):
    parser = configparser.ConfigParser(interpolation=None)
    with open(os.path.join(TOP, path)) as f:
        parser.read_file(f)
    return parser


def readme_config():
    """The README's ansible.cfg block (the file the README test writes and runs every example with)."""
    with open(os.path.join(TOP, "README.md")) as f:
        blocks = re.findall(r"^```ini\n(# ansible\.cfg\n.*?)^```$", f.read(), re.S | re.M)
    assert len(blocks) == 1
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(blocks[0])
    return parser


@pytest.mark.parametrize("cfg", [read("ansible.cfg"), readme_config()], ids=["root", "readme"])
def test_config_is_safe_for_real_hosts(cfg):
    assert not cfg.has_option("defaults", "inventory"), "every command names its own inventory"
    assert cfg.get("defaults", "host_key_checking", fallback="True").lower() in ("true", "yes", "1")
    ssh_args = cfg.get("ssh_connection", "ssh_args", fallback="")
    assert not re.search(r"StrictHostKeyChecking\s*=\s*no|UserKnownHostsFile\s*=\s*/dev/null", ssh_args)
    assert cfg.get("ssh_connection", "pipelining").lower() == "true"
    assert cfg.getint("defaults", "forks") == 16


def test_only_the_makefile_uses_the_simulator_config():
    cfg = read("sim/ansible.cfg")
    assert cfg.get("defaults", "inventory") == "../.sim/inventory.yml"
    with open(os.path.join(TOP, "Makefile")) as f:
        assert "export ANSIBLE_CONFIG := $(CURDIR)/sim/ansible.cfg\n" in f.read()


def test_every_readme_playbook_command_names_its_inventory():
    with open(os.path.join(TOP, "README.md")) as f:
        lines = [line for line in f if re.match(r"\s*`?ansible-playbook ", line)]
    assert lines
    for line in lines:
        assert " -i " in line, line
