# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugins/plugin_utils/_filters.py: plain data in, AnsibleFilterError out, for every filter of the collection."""
import os
import subprocess
import sys
from collections import OrderedDict

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.gcu.topsrider.plugins.filter import drift, fabric, report, truth, vendor
from ansible_collections.gcu.topsrider.plugins.plugin_utils._filters import guarded, guarded_filters, plain
from conftest import COLLECTIONS


class Tagged(str):
    """Stands in for ansible-core's tagged strings."""


class TaggedInt(int):
    pass


def test_plain_makes_plain_containers_and_scalars():
    value = plain(OrderedDict([(Tagged("a"), (TaggedInt(1), Tagged("x"), True, None, 1.5))]))
    assert value == {"a": [1, "x", True, None, 1.5]}
    assert [type(v) for v in (value, value["a"], next(iter(value)))] == [dict, list, str]
    assert [type(v) for v in value["a"]] == [int, str, bool, type(None), float]
    other = object()
    assert plain(other) is other


class Oops(Exception):
    pass


def pure(a, b=None):
    """The wrapped function's doc."""
    if a == "bad":
        raise ValueError("a is bad")
    if a == "oops":
        raise Oops("its own error")
    if a == "other":
        raise RuntimeError("not a bad input")
    return [type(a), b]


def test_guarded_passes_plain_arguments_and_keeps_the_name():
    f = guarded(pure)
    assert f(Tagged("x")) == [str, None]
    assert f("x", b=(1, 2)) == [str, [1, 2]]
    assert f.__name__ == "pure" and f.__doc__ == "The wrapped function's doc."


@pytest.mark.parametrize("arg,errors,message", [
    ("bad", (), "pure: a is bad"),
    ("oops", (Oops,), "pure: its own error"),
])
def test_guarded_raises_bad_input_and_the_given_errors_as_filter_errors(arg, errors, message):
    with pytest.raises(AnsibleFilterError, match=message):
        guarded(pure, errors)(arg)


@pytest.mark.parametrize("arg,errors", [("oops", ()), ("other", (Oops,))])
def test_guarded_lets_other_errors_through(arg, errors):
    with pytest.raises((Oops, RuntimeError)):
        guarded(pure, errors)(arg)


@pytest.mark.parametrize("module,names", [
    (drift, ["topsrider_deploy_pending", "topsrider_drift_findings", "topsrider_drift_junit",
             "topsrider_drift_markdown", "topsrider_drift_prometheus", "topsrider_drift_report",
             "topsrider_probe_findings", "topsrider_revoked_findings"]),
    (fabric, ["topsrider_fabric_advance", "topsrider_fabric_job", "topsrider_fabric_junit",
              "topsrider_fabric_markdown", "topsrider_fabric_max_rounds", "topsrider_fabric_plan",
              "topsrider_fabric_prometheus", "topsrider_fabric_report"]),
    (report, ["topsrider_fleet_report", "topsrider_holders_text", "topsrider_in_progress_lines", "topsrider_report_files",
              "topsrider_report_junit",
              "topsrider_report_markdown", "topsrider_report_slurm", "topsrider_report_summary",
              "topsrider_report_text"]),
    (truth, ["topsrider_deploy_at_release", "topsrider_deploy_current_lines", "topsrider_deploy_result",
             "topsrider_deploy_split", "topsrider_failure",
             "topsrider_left_drained", "topsrider_node_lost", "topsrider_preflight_problem",
             "topsrider_restore_desired", "topsrider_restore_plan", "topsrider_rollback_choice", "topsrider_run_id",
             "topsrider_snapshot_needs", "topsrider_snapshot_plan",
             "topsrider_snapshot_record",
             "topsrider_value_problems"]),
    (vendor, ["topsrider_collectives", "topsrider_job_files", "topsrider_vendor"]),
])
def test_every_filter_of_the_plugins_is_guarded(module, names):
    filters = module.FilterModule().filters()
    assert sorted(filters) == names
    for name, func in filters.items():
        assert callable(getattr(func, "__wrapped__", None)), name


def test_guarded_filters_guards_every_entry_with_the_errors():
    filters = guarded_filters({"f": pure, "g": len}, (Oops,))
    assert sorted(filters) == ["f", "g"] and filters["g"]((1, 2)) == 2
    with pytest.raises(AnsibleFilterError, match="^pure: its own error"):
        filters["f"]("oops")
    with pytest.raises(AnsibleFilterError, match="^len: "):
        filters["g"](3)


def test_filter_specific_errors_and_adaptors():
    with pytest.raises(AnsibleFilterError, match="^plan: "):
        fabric.FilterModule().filters()["topsrider_fabric_plan"]("not cards")
    snapshot_record = truth.FilterModule().filters()["topsrider_snapshot_record"]
    with pytest.raises(AnsibleFilterError, match="^snapshot_record: "):
        snapshot_record("not a state", "D1", "t", "2.5.140", [], "/j", False, "/p", {}, "/c", {})


def test_deferred_is_the_function_at_its_path_with_its_name():
    from ansible_collections.gcu.topsrider.plugins.module_utils._values import run_id
    from ansible_collections.gcu.topsrider.plugins.plugin_utils._filters import deferred
    f = deferred("module_utils._values.run_id")
    assert f.__name__ == "run_id" and f("x1") == run_id("x1") == "x1"
    with pytest.raises(AnsibleFilterError, match="^value_problems: "):
        guarded_filters({"v": deferred("module_utils._values.value_problems")})["v"]({"a": 1}, "no such kind")
    # A path to nothing fails when the filter runs, naming it.
    with pytest.raises(AttributeError, match="no_such"):
        deferred("module_utils._values.no_such")()


def test_a_filter_file_imports_no_helper_until_a_filter_runs():
    """ansible-core imports every file of plugins/filter to find one filter, in each
    worker: the files themselves import only _filters, and a filter its own helper."""
    code = (
        "import sys\n"
        "from ansible_collections.gcu.topsrider.plugins.filter import drift, env_problems, fabric, report, staging, truth, vendor\n"
        "mods = lambda: sorted(m.rsplit('.', 1)[-1] for m in sys.modules if '.topsrider.plugins.' in m and '_utils.' in m)\n"
        "print(mods())\n"
        "truth.FilterModule().filters()['topsrider_run_id']('')\n"
        "print(mods())\n")
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=COLLECTIONS),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=True).stdout
    assert out.splitlines() == ["['_filters']", "['_filters', '_values']"], out
