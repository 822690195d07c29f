# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugins/plugin_utils/_deploy_split.py: which hosts of a deploy are already at
the release, and the order the others roll out in (deploy.yml's first play)."""
import json
import os
import subprocess
import sys

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.gcu.topsrider.plugins.filter import truth
from ansible_collections.gcu.topsrider.plugins.plugin_utils._deploy_split import (
    HOSTVARS_READ, current_lines, deploy_at_release, deploy_split, left_drained)

AT = {"pending": [], "state": {}}


def slurm_read(pending=(), drain=False, reason="", jobs=0, holders=0):
    return {"pending": list(pending), "state": {"slurm": {"node": {"drain": drain, "reason": reason},
                                                          "jobs": [{"id": i} for i in range(jobs)]},
                                                "holders": {"processes": [{"pid": i} for i in range(holders)]}}}


def rec(host, read=None, probe=None, compare_error=False, slurm=False, reprobe=None, tagged=None):
    """One host's variables as hostvars has them (only those the filters read, plus one they never read)."""
    found = {"inventory_hostname": host, "deploy_current_state": read, "deploy_current_probe": probe,
             "topsrider_scheduler": "slurm" if slurm else "none", "unrelated": {"state": "never read"}}
    if compare_error:
        found["deploy_compare_error"] = "the read could not finish"
    if reprobe is not None:
        found["topsrider_deploy_reprobe"] = reprobe
    if tagged is not None:
        found["deploy_current_slurm"] = {"changed": tagged}
    return host, found


def split(records, *args):
    hostvars = dict(records)
    return deploy_split(hostvars, [host for host, _found in records], *args)


def at_release(records):
    return deploy_at_release(dict(records), [host for host, _found in records])


@pytest.mark.parametrize("record,current", [
    (rec("a", AT), True),
    (rec("a", AT, {"skipped": True}), True),
    (rec("a", AT, {"healthy": True}), True),
    # The re-probe found it unhealthy.
    (rec("a", AT, {"healthy": False}), False),
    (rec("a", {"pending": ["package tops-sdk 2.5.136-1, want 2.5.140-1"]}), False),
    # Not compared: the fast path's block was skipped (its read is a skipped result), or the read failed.
    (rec("a", {"skipped": True}), False),
    (rec("a", {"pending": None}), False),
    (rec("a", None), False),
    (rec("a", AT, compare_error=True), False),
    # Left drained by an earlier run of this collection: the rollout resumes it.
    (rec("a", slurm_read(drain=True, reason="gcu.topsrider deploy 20261126T100000Z: deferred"), slurm=True), False),
    # Drained by someone else, or not a Slurm fleet: at the release.
    (rec("a", slurm_read(drain=True, reason="maintenance"), slurm=True), True),
    (rec("a", slurm_read(drain=True, reason="gcu.topsrider deploy x: y"), slurm=False), True),
])
def test_a_host_is_at_the_release_only_when_everything_says_so(record, current):
    assert split([record]) == ({"current": ["a"], "rollout": []} if current else {"current": [], "rollout": ["a"]})


def test_the_fast_path_off_rolls_out_every_host():
    assert split([rec("a", AT), rec("b", AT)], False) == {"current": [], "rollout": ["a", "b"]}


def test_idle_nodes_roll_out_first_in_inventory_order_with_slurm_only():
    busy = [rec("n1", slurm_read(["x"], jobs=2), slurm=True), rec("n2", slurm_read(["x"], holders=1), slurm=True),
            rec("n3", slurm_read(["x"]), slurm=True), rec("n4", AT, slurm=True), rec("n5", slurm_read(["x"]), slurm=True)]
    assert split(busy) == {"current": ["n4"], "rollout": ["n3", "n5", "n2", "n1"]}
    # Without Slurm the inventory's order, whoever holds the cards (the rollout defers a busy node itself).
    plain = [(host, dict(found, topsrider_scheduler="none")) for host, found in busy]
    assert split(plain) == {"current": ["n4"], "rollout": ["n1", "n2", "n3", "n5"]}


def test_left_drained_is_this_collections_drain_only():
    assert left_drained(slurm_read(drain=True, reason="gcu.topsrider rollback R1: failed"), "slurm")
    assert not left_drained(slurm_read(drain=True, reason="gcu.topsriderX"), "slurm")
    assert not left_drained(slurm_read(drain=False, reason="gcu.topsrider deploy D: x"), "slurm")
    assert not left_drained(slurm_read(drain=True, reason="gcu.topsrider deploy D: x"), "none")
    assert not left_drained({"skipped": True}, "slurm") and not left_drained(None, "slurm")


def test_the_filters_refuse_what_is_not_hostvars_and_host_names():
    filters = truth.FilterModule().filters()
    hostvars = dict([rec("a", AT)])
    assert filters["topsrider_deploy_split"](hostvars, ["a"], True) == {"current": ["a"], "rollout": []}
    with pytest.raises(AnsibleFilterError, match="^deploy_split: takes the play's hostvars and a list of host names, got a list"):
        filters["topsrider_deploy_split"]([{"host": "a", "read": AT}], ["a"], True)
    with pytest.raises(AnsibleFilterError, match="^deploy_at_release: b is not a host of this inventory$"):
        filters["topsrider_deploy_at_release"](hostvars, ["a", "b"])
    with pytest.raises(AnsibleFilterError, match="^current_lines: takes the play's hostvars and a list of host names"):
        filters["topsrider_deploy_current_lines"](hostvars, "a", "2.5.140", "tops_", 0, 1)
    assert filters["topsrider_left_drained"]({}, "slurm") is False


def test_the_hosts_re_probed_or_tagged_first_are_clean_reads_where_slurm_or_a_re_probe_applies():
    records = [rec("n1", AT, reprobe=False), rec("n2", AT, slurm=True, reprobe=False),
               rec("n3", AT, reprobe="yes"), rec("n4", {"pending": ["package x"]}, slurm=True, reprobe=True),
               rec("n5", {"pending": None}, slurm=True, reprobe=True), rec("n6", None, reprobe=True),
               rec("n7", {"skipped": True}, slurm=True, reprobe=True),
               # Left drained by an earlier run: re-probed and shown to at_release.yml, whose tag task skips it.
               rec("n8", slurm_read(drain=True, reason="gcu.topsrider deploy D: x"), slurm=True),
               # topsrider_deploy_reprobe as an operator types it (-e ...=false is the string "false").
               rec("n9", AT, reprobe="false")]
    assert at_release(records) == ["n2", "n3", "n8"]
    # Neither Slurm nor a re-probe anywhere (the common re-run): nobody.
    assert at_release([(host, dict(found, topsrider_scheduler="none", topsrider_deploy_reprobe=False))
                       for host, found in records]) == []
    filters = truth.FilterModule().filters()
    assert filters["topsrider_deploy_at_release"](dict(records), [host for host, _found in records]) == ["n2", "n3", "n8"]


def test_the_lines_of_the_hosts_at_the_release_say_ok_and_changed_only_where_the_feature_was_set():
    hostvars = dict([rec("n1", AT), rec("n2", AT, slurm=True, tagged=True), rec("n3", AT, slurm=True, tagged=False)])
    assert current_lines(hostvars, ["n2", "n1", "n3"], "2.5.140", "tops_", 1000.0, 1012.34) == [
        {"host": "n2", "result": "ok", "version": "2.5.140", "changed": True,
         "detail": "already at 2.5.140; Slurm feature tops_2.5.140 set", "duration_s": 12.3},
        {"host": "n1", "result": "ok", "version": "2.5.140", "changed": False, "detail": "already at 2.5.140",
         "duration_s": 12.3},
        {"host": "n3", "result": "ok", "version": "2.5.140", "changed": False, "detail": "already at 2.5.140",
         "duration_s": 12.3}]
    assert current_lines(hostvars, [], "2.5.140", "tops_", "1000", "1001") == []


FILTERS = ("{{ {'at_release': hostvars | gcu.topsrider.topsrider_deploy_at_release(ansible_play_hosts),"
           " 'split': hostvars | gcu.topsrider.topsrider_deploy_split(ansible_play_hosts, true),"
           " 'lines': hostvars | gcu.topsrider.topsrider_deploy_current_lines(['n2', 'n3'], '2.5.140', 'tops_', 10, 11)} }}")


def test_the_filters_read_a_real_plays_hostvars(tmp_path):
    """deploy.yml hands them the play's hostvars (lazy, templated on access): the same answers as the
    plain mappings above, a variable that refers to another templated for its own host."""
    from conftest import COLLECTIONS, TOP
    inventory = {"all": {"hosts": {
        "n1": {"topsrider_scheduler": "slurm", "n1_pending": ["package tops-sdk"]},
        "n2": {"topsrider_scheduler": "slurm", "topsrider_deploy_reprobe": "yes"},
        "n3": {},
    }, "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}
    play = [{"hosts": "all", "gather_facts": False, "tasks": [
        {"name": "Each host's read", "ansible.builtin.set_fact": {
            "deploy_current_state": {"pending": "{{ n1_pending if inventory_hostname == 'n1' else [] }}",
                                     "state": {"slurm": {"node": {}, "jobs": "{{ [1] if inventory_hostname == 'n3' else [] }}"}}}}},
        {"name": "n2's feature was set", "ansible.builtin.set_fact": {"deploy_current_slurm": {"changed": True}},
         "when": "inventory_hostname == 'n2'"},
        {"name": "The filters", "ansible.builtin.debug": {"msg": FILTERS}, "run_once": True},
    ]}]
    (tmp_path / "inventory.json").write_text(json.dumps(inventory))
    (tmp_path / "play.yml").write_text(json.dumps(play))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(TOP, "sim", "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i",
                           str(tmp_path / "inventory.json"), str(tmp_path / "play.yml")],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=str(tmp_path),
                          universal_newlines=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout
    result = json.loads(proc.stdout)["plays"][0]["tasks"][2]["hosts"]["n1"]["msg"]
    assert result == {
        "at_release": ["n2"],
        # n1 has a package pending; n3 is at the release, but not a Slurm node: its job count is not read.
        "split": {"current": ["n2", "n3"], "rollout": ["n1"]},
        "lines": [{"host": "n2", "result": "ok", "version": "2.5.140", "changed": True,
                   "detail": "already at 2.5.140; Slurm feature tops_2.5.140 set", "duration_s": 1.0},
                  {"host": "n3", "result": "ok", "version": "2.5.140", "changed": False,
                   "detail": "already at 2.5.140", "duration_s": 1.0}]}, proc.stdout


class Recording(dict):
    """A host's variables that remember which were read (hostvars templates each one it is asked for)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.asked = set()

    def __getitem__(self, key):
        self.asked.add(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        self.asked.add(key)
        return super().__contains__(key)

    def get(self, key, default=None):
        self.asked.add(key)
        return super().get(key, default)


def test_the_filters_read_only_the_variables_they_name():
    hostvars = dict((host, Recording(found)) for host, found in [rec("n1", AT, slurm=True, reprobe=True, tagged=True)])
    deploy_at_release(hostvars, ["n1"])
    deploy_split(hostvars, ["n1"])
    current_lines(hostvars, ["n1"], "2.5.140", "tops_", 0, 1)
    assert hostvars["n1"].asked == set(HOSTVARS_READ)
