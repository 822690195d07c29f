"""The pools make test and CI run (Makefile, scripts/molecule-all.sh): every
molecule scenario is in CI's pool or named as left out, and CI runs the pool
with the slow scenarios."""
import filecmp
import os
import re
import shutil
import subprocess

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
            "make:perf-check", "make:changelog-lint", "make:docs-lint", "make:importer"} <= set(lists["FAST_POOL"])
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


def setup_chains(text, slow):
    """SETUP_CHAINS as the pool gets it: a list of chains, each a list of targets."""
    m = re.search(r"^SETUP_CHAINS\s*=(.*)$", text, re.M)
    assert m, "Makefile has no SETUP_CHAINS"
    value = re.sub(r"\$\(if \$\(TEST_SLOW\),([^)]*)\)", r"\1" if slow else "", m.group(1))
    return [chain.split() for chain in value.split(";")]


def needs(jobs):
    out = subprocess.run([os.path.join(TOP, "scripts", "molecule-all.sh"), "--needs"] + jobs, cwd=TOP, check=True,
                         stdout=subprocess.PIPE, universal_newlines=True).stdout
    # "JOB: target target ...", a job's name may hold a colon (make:units)
    return dict((line.split(": ", 1)[0], line.split(": ", 1)[1].split()) for line in out.splitlines())


def test_every_job_of_a_pool_has_its_set_up_made_by_the_pools_chains():
    """make test does its set-up inside the pool: every set-up target a job
    needs (its venv, Docker and the host tools, the image its molecule.yml or
    the base config names) is made by one of the pool's chains, so no job
    waits for a target nobody makes, or starts before its image exists."""
    text, lists = makefile_lists()
    for pool, slow in (("FAST_POOL", False), ("FULL_POOL", True)):
        made = [t for chain in setup_chains(text, slow) for t in chain]
        assert len(made) == len(set(made)), made
        for job, targets in needs(lists[pool]).items():
            assert targets, job
            missing = set(targets) - set(made)
            assert not missing, "%s in %s needs %s, which no chain of SETUP_CHAINS makes" % (job, pool, missing)


def setup_waits(targets):
    out = subprocess.run([os.path.join(TOP, "scripts", "molecule-all.sh"), "--setup-waits"] + targets, cwd=TOP,
                         check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout
    return dict((line.split(":", 1)[0], line.split(":", 1)[1].split()) for line in out.splitlines())


def test_set_up_chains_are_make_targets_in_their_prerequisites_order():
    """A chain makes a target after the targets it depends on in the
    Makefile (the images after docker, the systemd and Slurm images after the
    node image), or, where another chain makes one, after waiting for it
    (the pre-deployed node image waits for the venv and the node image), so
    two chains never make a prerequisite at once."""
    text = makefile_lists()[0]
    chains = setup_chains(text, True)
    position = dict((t, (i, j)) for i, chain in enumerate(chains) for j, t in enumerate(chain))
    waits = setup_waits(list(position))
    for target, (chain, place) in position.items():
        m = re.search(r"^%s:([^=\n]*)$" % re.escape(target), text, re.M)
        assert m, "%s is not a make target" % target
        for prerequisite in m.group(1).split():
            if prerequisite not in position:
                continue
            if position[prerequisite][0] == chain:
                assert position[prerequisite][1] < place, \
                    "%s needs %s: it must come earlier in the same chain" % (target, prerequisite)
            else:
                assert prerequisite in waits[target], \
                    "%s needs %s, which another chain makes: setup_waits_for must name it" % (target, prerequisite)
        # A target waits only for what another chain makes, never for one of its own chain's later ones.
        for waited in waits[target]:
            assert waited in position and position[waited][0] != chain, (target, waited)


def test_a_scenario_without_an_image_of_its_own_needs_the_base_configs():
    got = needs(["default", "bullseye", "metrics", "slurm", "make:units", "make:lint"])
    assert got["default"] == ["venv", "collection-link", "docker", "bundles", "sim-image"]
    assert got["bullseye"][-1] == "sim-image-bullseye"
    assert got["metrics"][-1] == "sim-image-systemd"
    assert got["slurm"][-1] == "slurm-image"
    assert needs(["drift"])["drift"][-1] == "sim-image-deployed"
    assert got["make:units"] == ["venv", "collection-link", "docker"]
    assert got["make:lint"] == ["venv", "collection-link"]


def test_the_units_on_ansible_core_2_21_are_the_ones_that_drive_it():
    """make units-2.21 runs the files conftest's rule selects: every test of
    a module, an action, a filter, every playbook run (the callback's tests among them); not the
    simulator's or the node-side scripts' tests."""
    import conftest
    makefile = makefile_lists()[0]
    assert re.search(r"^units-2\.21:.*\n\t.*TOPSRIDER_UNITS=ansible-core", makefile, re.M)
    unit = os.path.join(TOP, "tests", "unit")
    for sub in ("plugins/modules", "plugins/action", "plugins/filter", "playbooks"):
        for name in os.listdir(os.path.join(unit, sub)):
            if name.startswith("test_") and name.endswith(".py"):
                assert conftest.drives_ansible_core(os.path.join(unit, sub, name)), (sub, name)
    for name in os.listdir(os.path.join(unit, "sim")):
        if name.startswith("test_"):
            assert not conftest.drives_ansible_core(os.path.join(unit, "sim", name)), name
    assert not conftest.drives_ansible_core(os.path.join(unit, "roles", "test_slurm_gate.py"))


def test_every_venv_pip_fills_without_bytecode_is_compiled_after():
    """With PYTHONDONTWRITEBYTECODE=1 (this machine's and CI's environment) Python never caches what it
    compiles, so a venv installed with pip --no-compile is compiled by scripts/venv-bytecode.sh before
    its stamp is written (the Makefile's venvs, scripts/sanity.sh's)."""
    makefile = makefile_lists()[0]
    with open(os.path.join(TOP, "scripts", "sanity.sh")) as f:
        sanity = f.read()
    recipes = re.findall(r"^\S+\.stamp:.*\n((?:\t.*\n)+)", makefile, re.M)
    filled = [r for r in recipes if "--no-compile" in r]
    assert len(filled) >= 3, recipes  # .venv, .venv-2.21, galaxy-importer's
    for recipe in filled:
        lines = recipe.splitlines()
        pip = max(i for i, line in enumerate(lines) if "pip install" in line)
        assert "scripts/venv-bytecode.sh" in "".join(lines[pip + 1:]), recipe
        assert "touch $@" in lines[-1], recipe
    pip = sanity.rindex("pip\" install")
    assert sanity.index("venv-bytecode.sh", pip) < sanity.index('touch "$venv/.stamp-', pip)


def test_venv_bytecode_compiles_the_packages_and_leaves_the_collections(tmp_path):
    import sys
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = subprocess.run([str(venv / "bin" / "python"), "-c",
                           "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.strip()
    for rel in ("pkg/__init__.py", "pkg/mod.py", "ansible_collections/community/docker/plugins/x.py"):
        path = os.path.join(site, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("VALUE = 1\n")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    for _run in range(2):  # the second run finds everything current
        subprocess.run([os.path.join(TOP, "scripts", "venv-bytecode.sh"), str(venv)], env=env, check=True)
    compiled = sorted(os.path.relpath(os.path.join(d, f), site) for d, _s, files in os.walk(site)
                      for f in files if f.endswith(".pyc"))
    tag = "cpython-%d%d" % sys.version_info[:2]
    assert compiled == ["__pycache__/topsrider_sim_pyc.%s.pyc" % tag, "pkg/__pycache__/__init__.%s.pyc" % tag,
                        "pkg/__pycache__/mod.%s.pyc" % tag], compiled
    # The compile-once hook for the module zips of tasks on localhost, loaded at start-up.
    hook = os.path.join(TOP, "sim", "node", "rootfs", "usr", "lib", "python3", "dist-packages")
    for name in ("topsrider_sim_pyc.py", "topsrider_sim_pyc.pth"):
        assert filecmp.cmp(os.path.join(site, name), os.path.join(hook, name), shallow=False), name
    loaded = subprocess.run([str(venv / "bin" / "python"), "-c", "import zipimport; print(zipimport._compile_source.__name__)"],
                            stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.strip()
    assert loaded == "cached_compile"


def pool_in(tmp_path, setup, jobs, failing=()):
    """scripts/molecule-all.sh in a copy of its own under tmp_path, with a stand-in `make` on PATH
    that fails for the targets in `failing` and records the others it made; (exit status, output, made)."""
    (tmp_path / "scripts").mkdir()
    for script in ("molecule-all.sh", "pool-cpu.py"):
        shutil.copy(os.path.join(TOP, "scripts", script), str(tmp_path / "scripts"))
    stub = tmp_path / "bin" / "make"
    stub.parent.mkdir()
    stub.write_text(u"#!/bin/sh\n"
                    u"target=$2\n"  # make --no-print-directory TARGET or make --no-print-directory -o setup TARGET
                    u"[ \"$target\" = -o ] && target=$4\n"
                    u"case ' %s ' in *\" $target \"*) echo \"$target broke\"; exit 2 ;; esac\n"
                    # A job (not a set-up target) burns a second of CPU in a grandchild: its own CPU counts it.
                    u"case $target in stub-*) python3 -c 'import time\nwhile time.process_time() < 1.0: pass' ;; esac\n"
                    u"echo \"$target\" >>%s\n" % (" ".join(failing), tmp_path / "made.txt"))
    stub.chmod(0o755)
    env = dict(os.environ, PATH="%s:%s" % (stub.parent, os.environ["PATH"]), POOL_SETUP=setup,
               MOLECULE_SCENARIOS=" ".join(jobs))
    r = subprocess.run(["bash", str(tmp_path / "scripts" / "molecule-all.sh")], cwd=str(tmp_path), env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=120,
                       check=False)
    for job in jobs:
        lock = "/tmp/topsrider-scn-%s.lock" % job.split(":", 1)[-1]
        if os.path.exists(lock):
            os.remove(lock)
    made = (tmp_path / "made.txt").read_text().split() if (tmp_path / "made.txt").exists() else []
    return r.returncode, r.stdout, made


def stub_jobs(tmp_path):
    """Two make jobs of names no real pool has (each job holds /tmp/topsrider-scn-<name>.lock: the
    real units job, which runs this test, holds units')."""
    return ["stub-a-" + tmp_path.name, "stub-b-" + tmp_path.name]


def test_a_pool_whose_set_up_and_jobs_pass_passes(tmp_path):
    a, b = stub_jobs(tmp_path)
    rc, out, made = pool_in(tmp_path, "venv collection-link; docker", ["make:" + a, "make:" + b])
    assert rc == 0, out
    assert sorted(made) == sorted(["collection-link", "docker", a, b, "venv"]), made
    # each job's line says its own CPU (bash's times of what it waited for); the nodes' CPU comes last
    for job in (a, b):
        m = re.search(r"^=== make %s passed in \d+s \(its own CPU: (\d+)s\)$" % re.escape(job), out, re.M)
        assert m and int(m.group(1)) >= 1, out
    assert re.search(r"^=== the nodes' CPU", out, re.M), out
    # each job started once what it needs (the venv and the collection link) was made
    assert made.index("collection-link") < min(made.index(a), made.index(b)), made


def test_a_failed_set_up_target_fails_the_pool_and_what_waits_for_it_never_starts(tmp_path):
    """venv fails: the job (which needs it) never starts, the chain's later target is not made, the
    pool exits non-zero naming the target; judged from the ready markers, not from wait's status."""
    a, _b = stub_jobs(tmp_path)
    rc, out, made = pool_in(tmp_path, "venv collection-link; docker", ["make:" + a], failing=("venv",))
    assert rc == 1, out
    assert "=== make venv (set-up) failed" in out and "venv broke" in out, out
    assert a not in made and "collection-link" not in made, made


def test_a_set_up_target_waits_for_what_another_chain_makes(tmp_path):
    """The pre-deployed image's chain starts its target once the venv and the node image of the
    other chains are made; a waited-for target that no chain makes is taken as made."""
    a, _b = stub_jobs(tmp_path)
    rc, out, made = pool_in(tmp_path, "venv collection-link; docker sim-image bundles; sim-image-deployed", ["make:" + a])
    assert rc == 0, out
    for waited in ("venv", "collection-link", "sim-image", "bundles"):
        assert made.index(waited) < made.index("sim-image-deployed"), made
    alone = tmp_path / "alone"
    alone.mkdir()
    rc, out, made = pool_in(alone, "sim-image-deployed", ["make:" + a])
    assert rc == 0 and sorted(made) == sorted(["sim-image-deployed", a]), out


def test_a_failed_target_another_chain_waits_for_leaves_the_waiting_one_unmade(tmp_path):
    a, _b = stub_jobs(tmp_path)
    rc, out, made = pool_in(tmp_path, "venv collection-link; docker sim-image bundles; sim-image-deployed", ["make:" + a],
                            failing=("sim-image",))
    assert rc == 1, out
    assert "=== make sim-image-deployed (set-up) not made: make sim-image failed" in out, out
    assert "sim-image-deployed" not in made and "bundles" not in made, made
