"""The pools make test and CI run (Makefile, scripts/molecule-all.sh): every
molecule scenario is in CI's pool or named as left out, and CI runs the pool
with the slow scenarios."""
import os
import re

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# Every scenario runs in CI.
NOT_IN_CI = set()


def makefile_lists():
    with open(os.path.join(TOP, "Makefile")) as f:
        text = f.read().replace("\\\n", " ")
    lists = {}
    for name in ("SLOW_SCENARIOS", "FAST_POOL", "FULL_POOL"):
        m = re.search(r"^%s\s*:=(.*)$" % name, text, re.M)
        assert m, "Makefile has no %s" % name
        lists[name] = m.group(1).split()
    return text, lists


def test_every_scenario_is_in_ci_pool_once():
    lists = makefile_lists()[1]
    scenarios = {d for d in os.listdir(os.path.join(TOP, "molecule"))
                 if os.path.isfile(os.path.join(TOP, "molecule", d, "molecule.yml"))}
    full = lists["FULL_POOL"]
    assert len(full) == len(set(full)), full
    assert {s for s in full if not s.startswith("make:")} == scenarios - NOT_IN_CI


def test_the_full_pool_is_make_test_pool_plus_the_slow_scenarios():
    lists = makefile_lists()[1]
    assert sorted(lists["FULL_POOL"]) == sorted(lists["FAST_POOL"] + lists["SLOW_SCENARIOS"])
    assert not set(lists["FAST_POOL"]) & set(lists["SLOW_SCENARIOS"])
    # make test's other checks run in the pool too
    assert {"make:lint", "make:sanity", "make:units", "make:readme-test", "make:installed-test",
            "make:perf-check"} <= set(lists["FAST_POOL"])
    # and the ones on the second ansible-core (issue 30)
    assert {"make:units-2.21", "make:sanity-2.21", "make:molecule-default-2.21"} <= set(lists["FAST_POOL"])


def test_make_jobs_in_a_pool_are_targets():
    text, lists = makefile_lists()
    for job in lists["FULL_POOL"]:
        if job.startswith("make:"):
            assert re.search(r"^%s:" % re.escape(job[5:]), text, re.M), job


def test_ci_runs_make_test_with_the_slow_scenarios():
    with open(os.path.join(TOP, ".ci", "run")) as f:
        lines = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    assert "make test TEST_SLOW=1" in lines
    text = makefile_lists()[0]
    assert re.search(r"^test: .*\btest-pool\b", text, re.M)
    assert "$(if $(TEST_SLOW),$(FULL_POOL),$(FAST_POOL))" in text
