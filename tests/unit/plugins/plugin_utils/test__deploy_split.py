# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugins/plugin_utils/_deploy_split.py: which hosts of a deploy are already at
the release, and the order the others roll out in (deploy.yml's first play)."""
import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.gcu.topsrider.plugins.filter import truth
from ansible_collections.gcu.topsrider.plugins.plugin_utils._deploy_split import deploy_at_release, deploy_split, left_drained

AT = {"pending": [], "state": {}}


def slurm_read(pending=(), drain=False, reason="", jobs=0, holders=0):
    return {"pending": list(pending), "state": {"slurm": {"node": {"drain": drain, "reason": reason},
                                                          "jobs": [{"id": i} for i in range(jobs)]},
                                                "holders": {"processes": [{"pid": i} for i in range(holders)]}}}


def rec(host, read=None, probe=None, compare_error=False, slurm=False):
    return {"host": host, "read": read, "probe": probe, "compare_error": compare_error, "slurm": slurm}


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
    assert deploy_split([record]) == ({"current": ["a"], "rollout": []} if current else {"current": [], "rollout": ["a"]})


def test_the_fast_path_off_rolls_out_every_host():
    assert deploy_split([rec("a", AT), rec("b", AT)], False) == {"current": [], "rollout": ["a", "b"]}


def test_idle_nodes_roll_out_first_in_inventory_order_with_slurm_only():
    busy = [rec("n1", slurm_read(["x"], jobs=2), slurm=True), rec("n2", slurm_read(["x"], holders=1), slurm=True),
            rec("n3", slurm_read(["x"]), slurm=True), rec("n4", AT, slurm=True), rec("n5", slurm_read(["x"]), slurm=True)]
    assert deploy_split(busy) == {"current": ["n4"], "rollout": ["n3", "n5", "n2", "n1"]}
    # Without Slurm the inventory's order, whoever holds the cards (the rollout defers a busy node itself).
    plain = [dict(r, slurm=False) for r in busy]
    assert deploy_split(plain) == {"current": ["n4"], "rollout": ["n1", "n2", "n3", "n5"]}


def test_left_drained_is_this_collections_drain_only():
    assert left_drained(slurm_read(drain=True, reason="gcu.topsrider rollback R1: failed"), "slurm")
    assert not left_drained(slurm_read(drain=True, reason="gcu.topsriderX"), "slurm")
    assert not left_drained(slurm_read(drain=False, reason="gcu.topsrider deploy D: x"), "slurm")
    assert not left_drained(slurm_read(drain=True, reason="gcu.topsrider deploy D: x"), "none")
    assert not left_drained({"skipped": True}, "slurm") and not left_drained(None, "slurm")


def test_the_filters_refuse_records_without_a_host():
    filters = truth.FilterModule().filters()
    assert filters["topsrider_deploy_split"]([rec("a", AT)], True) == {"current": ["a"], "rollout": []}
    with pytest.raises(AnsibleFilterError, match="^deploy_split: records are a list of mappings with a host"):
        filters["topsrider_deploy_split"]([{"read": AT}], True)
    assert filters["topsrider_left_drained"]({}, "slurm") is False


def test_the_hosts_re_probed_or_tagged_first_are_clean_reads_where_slurm_or_a_re_probe_applies():
    records = [dict(rec("n1", AT), reprobe=False), dict(rec("n2", AT, slurm=True), reprobe=False),
               dict(rec("n3", AT), reprobe=True), dict(rec("n4", {"pending": ["package x"]}, slurm=True), reprobe=True),
               dict(rec("n5", {"pending": None}, slurm=True), reprobe=True), dict(rec("n6", None), reprobe=True),
               dict(rec("n7", {"skipped": True}, slurm=True), reprobe=True),
               # Left drained by an earlier run: re-probed and shown to at_release.yml, whose tag task skips it.
               dict(rec("n8", slurm_read(drain=True, reason="gcu.topsrider deploy D: x"), slurm=True), reprobe=False)]
    assert deploy_at_release(records) == ["n2", "n3", "n8"]
    # Neither Slurm nor a re-probe anywhere (the common re-run): nobody.
    assert deploy_at_release([dict(r, slurm=False, reprobe=False) for r in records]) == []
    filters = truth.FilterModule().filters()
    assert filters["topsrider_deploy_at_release"](records) == ["n2", "n3", "n8"]
    with pytest.raises(AnsibleFilterError, match="^deploy_at_release: records are a list of mappings with a host"):
        filters["topsrider_deploy_at_release"]([{"read": AT}])
