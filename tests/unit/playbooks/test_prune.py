# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/tasks/prune.yml, the deploy's last step, run on localhost (each
case a host of one play, its node's cache and state directory under tmp): the
bundle cache keeps the newest topsrider_cache_keep versions and, whatever
their age, every directory a rollback to the snapshot the local facts now name
reads (its deploy snapshot and package journal read once, parsed on the node
by topsrider_state's records, a record over 64 KiB too); a record that cannot
be used prunes nothing."""
import json
import os

import pytest

from conftest import TOP, local_inventory, run_play

VERSIONS = ["2.5.120", "2.5.130", "2.5.133", "2.5.136", "2.5.140"]
# The snapshot returns to 2.5.130; its journal reinstalls a deb cached under 2.5.133.
SNAPSHOT = {"id": "D1", "from_version": "2.5.130", "to_version": "2.5.140", "padding": "x" * (100 * 1024)}
CASES = {
    "protects": {"new_release": True, "facts_snapshot": "D0", "snapshot": SNAPSHOT,
                 "kept": ["2.5.130", "2.5.133", "2.5.136", "2.5.140"]},
    # A same-release repair: the snapshot the local facts name (none here): the newest two only.
    "no-snapshot": {"new_release": False, "facts_snapshot": "", "snapshot": None, "kept": ["2.5.136", "2.5.140"]},
    "unusable": {"new_release": True, "facts_snapshot": "D0", "snapshot": "{cut off", "kept": VERSIONS},
}


@pytest.fixture(scope="module")
def pruned(tmp_path_factory):
    """{case: the versions left in its cache} after one play of tasks/prune.yml over every case."""
    tmp = tmp_path_factory.mktemp("prune")
    hosts = {}
    for case, spec in CASES.items():
        cache, state = tmp / case / "cache", tmp / case / "state"
        for n, version in enumerate(VERSIONS):
            (cache / version).mkdir(parents=True)
            os.utime(str(cache / version), (1_700_000_000 + n, 1_700_000_000 + n))
        (state / "deploys").mkdir(parents=True)
        (state / "snapshots").mkdir()
        if spec["snapshot"] is not None:
            text = spec["snapshot"] if isinstance(spec["snapshot"], str) else json.dumps(spec["snapshot"])
            (state / "deploys" / "D1.json").write_text(text)
            (state / "snapshots" / "D1.json").write_text(json.dumps(
                {"packages": {"tops-sdk": {"before_deb": {"path": str(cache / "2.5.133" / "tops-sdk.deb")}}}}))
        hosts[case] = {"bundle_stage_cache_root": str(cache), "bundle_stage_path": str(cache / "2.5.140"),
                       "deploy_state_dir": str(state), "run_cache_keep": 2,
                       "deploy_snapshot": {"id": "D1", "new_release": spec["new_release"]},
                       "deploy_local_facts": {"topsrider": {"snapshot": spec["facts_snapshot"]}},
                       "desired_manifest": {"version": "2.5.140"}}
    rc, out = run_play(tmp, [
        {"name": "The prune", "ansible.builtin.import_tasks": os.path.join(TOP, "playbooks", "tasks", "prune.yml")}],
        inventory=local_inventory(tmp, hosts), hosts="all")
    assert rc == 0, out
    return dict((case, sorted(os.listdir(str(tmp / case / "cache")))) for case in CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_prune_keeps_the_newest_and_what_a_rollback_reads(pruned, case):
    assert pruned[case] == CASES[case]["kept"]
