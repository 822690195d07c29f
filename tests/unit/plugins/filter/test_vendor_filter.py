# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vendor table (plugins/module_utils/_vendors.py), its filter
gcu.topsrider.topsrider_vendor as Ansible loads it, and the rule that goes
with it: no source file compares a vendor's name to pick a value."""
import os
import re

import pytest

from ansible_collections.gcu.topsrider.plugins.module_utils import _vendors
from ansible_collections.gcu.topsrider.plugins.module_utils._vendors import VENDORS, VendorError, vendor_spec
from conftest import TOP, run_play


def test_every_row_has_the_same_fields_and_a_unique_name():
    fields = set(VENDORS[0])
    assert all(set(row) == fields for row in VENDORS)
    assert len(_vendors.NAMES) == len(set(_vendors.NAMES)) == len(VENDORS)
    for key in ("card_prefix", "slurm_gres", "k8s_resource", "backend", "pci_vendor_id", "tool", "tool_option"):
        values = [row[key] for row in VENDORS]
        assert len(set(values)) == len(values), key


def test_unknown_vendor_is_an_error_never_another_row():
    with pytest.raises(VendorError, match=r"unknown vendor 'ascend': the collection knows enflame, nvidia"):
        vendor_spec("ascend")
    with pytest.raises(VendorError):
        vendor_spec(None)


def test_a_row_is_a_copy():
    row = vendor_spec("nvidia")
    row["tool_dirs"].append("/tmp")
    row["backend"] = "x"
    assert vendor_spec("nvidia")["backend"] == "nccl" and "/tmp" not in vendor_spec("nvidia")["tool_dirs"]


def test_filter_in_a_play(tmp_path):
    rc, out = run_play(tmp_path, [{"name": "Rows", "ansible.builtin.assert": {"that": [
        "('enflame' | gcu.topsrider.topsrider_vendor).slurm_gres == 'gcu'",
        "('nvidia' | gcu.topsrider.topsrider_vendor).k8s_resource == 'nvidia.com/gpu'",
        "('nvidia' | gcu.topsrider.topsrider_vendor).env_file == ''",
        "('enflame' | gcu.topsrider.topsrider_vendor) == expected"]}}], {"expected": vendor_spec("enflame")})
    assert rc == 0, out


def test_collectives_filter_in_a_play(tmp_path):
    # What dist_launch installs beside the rank code: the vendor's backend's row, then gloo's.
    rc, out = run_play(tmp_path, [{"name": "Rows", "ansible.builtin.assert": {"that": [
        "('nvidia' | gcu.topsrider.topsrider_collectives) == expected",
        "('enflame' | gcu.topsrider.topsrider_collectives) | map(attribute='backend') | list == ['eccl', 'gloo']"]}}],
        {"expected": [_vendors.collective_spec("nccl"), _vendors.collective_spec("gloo")]})
    assert rc == 0, out
    rc, out = run_play(tmp_path, [{"name": "Unknown", "ansible.builtin.debug": {
        "msg": "{{ 'ascend' | gcu.topsrider.topsrider_collectives }}"}}], {})
    assert rc != 0 and "unknown vendor 'ascend': the collection knows enflame, nvidia" in " ".join(out.split()), out


def test_unknown_vendor_fails_the_role_before_anything_is_written(tmp_path):
    out_dir = tmp_path / "out"
    rc, out = run_play(tmp_path, [{"name": "Slurm node", "ansible.builtin.include_role": {
        "name": "gcu.topsrider.slurm_node"}}], {"slurm_node_vendor": "ascend", "slurm_node_output_dir": str(out_dir),
                                                "slurm_node_conf_dir": str(tmp_path / "etc")})
    flat = " ".join(out.split()).replace("''", "'")
    assert rc != 0 and "unknown vendor 'ascend': the collection knows enflame, nvidia" in flat, out
    # refused while the role's arguments are checked (their defaults read the row): no task ran
    assert "Read the node's cards" not in out and not out_dir.exists() and not (tmp_path / "etc").exists(), out


# A value picked by comparing a vendor's or a collective backend's name:
# `'x' if vendor == 'enflame' else ...`, `vendor == "nvidia"`, `if backend == "eccl"`,
# a shell's `[ "$VENDOR" = enflame ]`. The table gives the value instead.
NAMES = "|".join(_vendors.NAMES + _vendors.BACKENDS)
VENDOR_TEST = re.compile(r"""(==|!=)\s*['"](%s)['"]|['"](%s)['"]\s*(==|!=)|"\s+!?=\s+['"]?(%s)\b""" % (
    NAMES, NAMES, NAMES))
SOURCES = ("plugins", "roles", "playbooks")


def sources():
    for top in SOURCES:
        for dirpath, _dirs, files in os.walk(os.path.join(TOP, top)):
            for name in files:
                if name.endswith((".py", ".yml", ".yaml", ".j2", ".sh")):
                    yield os.path.join(dirpath, name)


def test_no_source_file_compares_a_vendor_name():
    found = []
    for path in sources():
        with open(path) as f:
            for number, line in enumerate(f, 1):
                if VENDOR_TEST.search(line):
                    found.append("%s:%d: %s" % (os.path.relpath(path, TOP), number, line.strip()))
    assert found == [], "pick the value from the vendor table (topsrider_vendor / vendor_spec):\n" + "\n".join(found)


def test_the_rule_sees_what_it_forbids():
    assert VENDOR_TEST.search("x: \"{{ 'gcu' if slurm_node_vendor == 'enflame' else 'gpu' }}\"")
    assert VENDOR_TEST.search('    if vendor == "nvidia":')
    assert VENDOR_TEST.search('  if [ "$DIST_LAUNCH_VENDOR" = enflame ]; then')
    assert VENDOR_TEST.search('[ "$vendor" != "nvidia" ]')
    assert VENDOR_TEST.search('    if backend == "eccl":') and VENDOR_TEST.search("if params['backend'] != 'gloo':")
    assert not VENDOR_TEST.search("dist_launch_vendor: enflame")
