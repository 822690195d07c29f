# gcu.topsrider: the two commands are `make demo` and `make test`.
# Both set up everything they need and are safe to run again.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

VENV        := $(CURDIR)/.venv
PYTHON      ?= python3
COLL_LINK   := .cache/collections/ansible_collections/gcu/topsrider
# The simulated nodes' compile-once hook for Ansible's module zips, which the
# test venvs get too (scripts/venv-bytecode.sh).
PYC_HOOK    := sim/node/rootfs/usr/lib/python3/dist-packages/topsrider_sim_pyc.py \
               sim/node/rootfs/usr/lib/python3/dist-packages/topsrider_sim_pyc.pth
export PATH := $(VENV)/bin:$(PATH)
# The simulated fleet's settings (its inventory, no host-key checking): only for
# these targets. The root ansible.cfg is the one for real hosts.
export ANSIBLE_CONFIG := $(CURDIR)/sim/ansible.cfg
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/.cache/collections
export ANSIBLE_LOCAL_TEMP := $(CURDIR)/.cache/ansible-tmp
export ANSIBLE_HOME := $(CURDIR)/.cache/ansible-home
export MOLECULE_PROJECT_DIRECTORY := $(CURDIR)
FLEET_SIZE  ?= 4

.PHONY: help demo test setup venv docker sim-image bundles collection-link \
        lint sanity units molecule fleet-up fleet-down build clean

help:
	@echo "make demo   simulated T20 fleet + the real playbooks against it"
	@echo "make test   lint, sanity, units, molecule, README examples, perf check (sets everything up first)"
	@echo "make test-slow  the molecule scenarios left out of make test (dist_launch, drift, fabric, rollback_truth, slurm, staging); CI runs make test TEST_SLOW=1, which adds them"
	@echo "make setup  only the set-up (venv, docker engine, sim image, bundles)"
	@echo "make units-2.21 sanity-2.21 molecule-default-2.21  the units, sanity and the default scenario on ansible-core 2.21 (.venv-2.21, Python 3.12; in make test)"
	@echo "make bench  fleets of 1, 4 and 16 nodes: what each playbook costs (docs/performance.md)"
	@echo "make fabric-check-test  the fabric scenario alone, with five clean runs (docs/fabric.md; CI runs it with one)"
	@echo "make importer  galaxy-importer's offline checks on the built tarball (as Galaxy imports it; in make test)"
	@echo "make installed-test  the built tarball, installed, run as an operator runs it (stock Ansible settings, SSH, cron line)"
	@echo "make slurm-test  molecule slurm: a real Slurm cluster of simulated nodes, sbatch and the health gate (docs/slurm.md)"
	@echo "make bench-large  16 nodes, 1 GiB bundle: copying the .run to every node vs the staging alone vs a fresh deploy"
	@echo "make bench-mitogen  the same with Mitogen's strategy (measured, not shipped)"
	@echo "make bench-verify  verifying the signed 1 GiB bundle against one sha256 pass (docs/performance.md)"
	@echo "make ee     contrib's execution environment built with ansible-builder on a local base and run (docs/drift.md)"
	@echo "make bench-exporter  the card exporter on a 16-card node: scrape latency and CPU (docs/performance.md)"

# ---- set-up -----------------------------------------------------------------
venv: $(VENV)/.stamp
# --no-compile: pip would byte-compile every file it installs (the `ansible`
# package's collections are most of them, and the controller imports few);
# scripts/venv-bytecode.sh then compiles the rest once, since with
# PYTHONDONTWRITEBYTECODE=1 (this machine's and CI's environment) Python
# never caches what it compiles on import.
$(VENV)/.stamp: requirements/controller.txt requirements/constraints.txt scripts/venv-bytecode.sh $(PYC_HOOK)
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --no-compile -r requirements/controller.txt -c requirements/constraints.txt
	scripts/venv-bytecode.sh $(VENV)
	touch $@

# ansible-core 2.21 (issue 30): its own venv on a Python 3.12 or newer (2.20
# and later need it), pyenv's where the machine has one (CI's and this
# machine's do), else python3.12/python3.13 on PATH; PYTHON_2_21=... to choose.
# Only the units, ansible-test sanity and molecule's default scenario run
# there (make units-2.21 sanity-2.21 molecule-default-2.21); everything else
# runs on .venv (2.19).
VENV_2_21   := $(CURDIR)/.venv-2.21
PYENV_ROOT  ?= $(shell pyenv root 2>/dev/null || echo $$HOME/.pyenv)
PYTHON_2_21 ?= $(firstword $(wildcard $(PYENV_ROOT)/versions/3.12.*/bin/python3 $(PYENV_ROOT)/versions/3.13.*/bin/python3) \
                 $(shell command -v python3.12 python3.13 2>/dev/null))
.PHONY: venv-2.21
venv-2.21: $(VENV_2_21)/.stamp
$(VENV_2_21)/.stamp: requirements/controller-2.21.txt requirements/constraints-2.21.txt scripts/venv-bytecode.sh $(PYC_HOOK)
	@[ -n "$(PYTHON_2_21)" ] || { echo "no Python 3.12 or 3.13 for ansible-core 2.21 (looked in $(PYENV_ROOT)/versions and PATH): set PYTHON_2_21"; exit 1; }
	rm -rf $(VENV_2_21)
	$(PYTHON_2_21) -m venv $(VENV_2_21)
	$(VENV_2_21)/bin/pip install --quiet --no-compile -r requirements/controller-2.21.txt -c requirements/constraints-2.21.txt
	scripts/venv-bytecode.sh $(VENV_2_21)
	touch $@

docker:
	@scripts/ensure-docker.sh

sim-image: docker
	@sim/image/build.sh >/dev/null

# The second node OS (Debian bullseye, Python 3.9, Debian's torch 1.7): molecule/bullseye.
.PHONY: sim-image-bullseye
sim-image-bullseye: docker
	@sim/image/build.sh bullseye >/dev/null

# The bookworm node with systemd as PID 1 (Debian's systemd from the host's
# mirror; only molecule/metrics uses it: its role installs a systemd service).
.PHONY: sim-image-systemd
sim-image-systemd: sim-image
	@sim/image/build-systemd.sh >/dev/null

# The manifests' version rules need PEP 440's packaging: the venv's Python (on
# PATH first) must be whole before the build runs, so bundles waits for venv.
bundles: venv
	@sim/bundles/build.sh >/dev/null

# The node image with 2.5.136 deployed by this checkout's deploy.yml
# (sim/image/build-deployed.sh): the scenarios that only need nodes at a
# release to start from (fleet, drift, fabric, dist_launch, rollback_truth).
.PHONY: sim-image-deployed slurm-image-deployed
sim-image-deployed: venv collection-link sim-image bundles
	@sim/image/build-deployed.sh >/dev/null

# The same on the Slurm image: molecule/slurm's nodes.
slurm-image-deployed: venv collection-link slurm-image bundles
	@sim/image/build-deployed.sh slurm >/dev/null

# The node image plus Debian's Slurm and munge (only molecule/slurm uses it).
.PHONY: slurm-image
slurm-image: sim-image
	@sim/slurm/build.sh >/dev/null

collection-link:
	@mkdir -p $(dir $(COLL_LINK)) .cache/ansible-tmp .cache/ansible-home
	@[ -L $(COLL_LINK) ] || ln -sfn ../../../.. $(COLL_LINK)

setup: venv docker sim-image sim-image-bullseye sim-image-systemd bundles collection-link

# ---- tests ------------------------------------------------------------------
test: test-pool
	@echo "make test: all passed$(if $(TEST_SLOW), (with the slow scenarios))"

lint: venv collection-link
	ansible-lint --profile production --offline

sanity: venv
	@scripts/sanity.sh

# antsibull-changelog's own lint of changelogs/, and CHANGELOG.md must be what
# changelogs/changelog.yaml generates (edit the fragments, never CHANGELOG.md).
.PHONY: changelog-lint
changelog-lint: venv
	antsibull-changelog lint
	@tmp=$$(mktemp) && antsibull-changelog generate --output "$$tmp" >/dev/null \
	  && diff -u CHANGELOG.md "$$tmp" && rm -f "$$tmp" \
	  || { echo "CHANGELOG.md differs from what changelogs/changelog.yaml generates: run antsibull-changelog generate"; exit 1; }

# Every plugin documented (filters sharing a .py file have a .yml sidecar
# each), its markup and its M()/P()/O() references valid.
.PHONY: docs-lint
docs-lint: venv collection-link
	antsibull-docs lint-collection-docs --plugin-docs .

units: venv collection-link
	$(VENV)/bin/python -m pytest -q tests/unit

# The units that drive ansible-core (tests/unit/conftest.py says which: a
# playbook run, a module's argument handling, an action, filter or callback
# plugin) again on ansible-core 2.21 (.venv-2.21 first on PATH: the units run its
# ansible-playbook); the rest cannot differ there and runs once. With an ANSIBLE_HOME and temp of its own and no pytest
# cache, since make units runs beside it in the pool.
.PHONY: units-2.21 sanity-2.21 molecule-default-2.21
units-2.21: venv-2.21 collection-link
	PATH=$(VENV_2_21)/bin:$$PATH TOPSRIDER_UNITS=ansible-core ANSIBLE_HOME=$(CURDIR)/.cache/ansible-home-2.21 \
	  ANSIBLE_LOCAL_TEMP=$(CURDIR)/.cache/ansible-tmp-2.21 \
	  $(VENV_2_21)/bin/python -m pytest -q -p no:cacheprovider tests/unit

# ansible-test sanity of ansible-core 2.21 (.cache/sanity-venv-2.21) on what
# the tarball ships (SANITY_SCOPE=shipped: not tests/ or molecule/, which no
# ansible-core loads; make sanity checks them).
sanity-2.21: venv-2.21
	@SANITY_REQUIREMENTS=requirements/controller-2.21.txt SANITY_PYTHON=$(PYTHON_2_21) SANITY_SCOPE=shipped scripts/sanity.sh

# molecule's default scenario on ansible-core 2.21. It runs beside the 2.19
# one (the pool's "default"), so everything of its own: its container
# (TOPSRIDER_MOLECULE_TAG, .config/molecule/config.yml: topsrider-default-core221-node1),
# JUnit file, ephemeral directory and ANSIBLE_HOME.
molecule-default-2.21: venv-2.21 collection-link
	rm -rf $(CURDIR)/.cache/molecule-ephemeral/default-core221
	PATH=$(VENV_2_21)/bin:$$PATH TOPSRIDER_MOLECULE_TAG=-core221 \
	  MOLECULE_EPHEMERAL_DIRECTORY=$(CURDIR)/.cache/molecule-ephemeral/default-core221 \
	  ANSIBLE_HOME=$(CURDIR)/.cache/ansible-home-2.21/molecule-default \
	  ANSIBLE_LOCAL_TEMP=$(CURDIR)/.cache/ansible-tmp-2.21 \
	  $(VENV_2_21)/bin/molecule test -s default

# The molecule scenarios, the README examples, the perf check, ansible-lint,
# ansible-test sanity and the units run as one pool, three at a time
# (MOLECULE_JOBS), longest first so that the lanes end together
# (scripts/molecule-all.sh; "make:<target>" in a pool is a make
# target). make test's pool leaves out the longest scenarios (the real Slurm
# cluster and its rolling upgrades, rollback fault injection, peer staging's
# failures, multi-node drift and launch, the fabric check across four nodes);
# make test TEST_SLOW=1 (CI, .ci/run) puts them in the same pool, and make
# test-slow runs them alone.
# Sanity, the units that drive ansible-core and the default scenario run a
# second time on ansible-core 2.21 (make:sanity-2.21, make:units-2.21,
# make:molecule-default-2.21; the first two early: they are long).
# tests/unit/test_test_pools.py checks that every scenario is in a pool.
# signing (issue 32: tampering refused, revocation, drift and rollback; two
# nodes): 230 s alone on the 2-core machine, 2026-11-26, so before eccl_probe.
# metrics (issue 33: the card exporter on two systemd nodes, a real Prometheus,
# faults and alerts, drift's service finding): 132 s alone on the 2-core machine,
# 2026-11-26 (273 s beside drift), so after eccl_probe.
SLOW_SCENARIOS := slurm rollback_truth staging fabric drift dist_launch
FAST_POOL := make:changelog-lint make:docs-lint make:readme-test make:sanity-2.21 make:units-2.21 fleet make:installed-test make:sanity signing eccl_probe \
             metrics bullseye default make:molecule-default-2.21 make:units nvidia_node bad_input deb_bundle \
             make:perf-check make:lint make:importer
FULL_POOL := make:changelog-lint make:docs-lint slurm rollback_truth fabric make:readme-test make:sanity-2.21 make:units-2.21 staging fleet \
             make:installed-test drift dist_launch make:sanity signing eccl_probe metrics bullseye default make:molecule-default-2.21 \
             make:units nvidia_node bad_input deb_bundle make:perf-check make:lint make:importer

# make molecule: the scenarios of make test's pool alone.
molecule: setup sim-image-deployed
	@MOLECULE_SCENARIOS="$${MOLECULE_SCENARIOS:-$(filter-out make:%,$(FAST_POOL))}" scripts/molecule-all.sh

# make test does its set-up inside the pool (POOL_SETUP): chains of set-up
# targets run beside the jobs, and each job starts once what it needs is made
# (scripts/molecule-all.sh), so the units and the linters run while the
# simulator's images are built. A third chain makes the pre-deployed node
# images (fleet's, and the slow scenarios'); it waits for the venv and the
# images the other two make.
SETUP_CHAINS = venv collection-link venv-2.21; docker sim-image bundles $(if $(TEST_SLOW),slurm-image) sim-image-systemd \
               sim-image-bullseye; sim-image-deployed $(if $(TEST_SLOW),slurm-image-deployed)
.PHONY: test-pool
test-pool:
	@POOL_SETUP="$(SETUP_CHAINS)" MOLECULE_SCENARIOS="$(if $(TEST_SLOW),$(FULL_POOL),$(FAST_POOL))" scripts/molecule-all.sh

.PHONY: test-slow
test-slow: setup slurm-image sim-image-deployed slurm-image-deployed
	@MOLECULE_SCENARIOS="$(SLOW_SCENARIOS)" scripts/molecule-all.sh
	@echo "make test-slow: all passed"

# The fabric scenario (issue 18) alone, with five clean runs instead of CI's
# one: that no clean run names a node, run after run (docs/fabric.md).
.PHONY: fabric-check-test
fabric-check-test: setup sim-image-deployed
	TOPSRIDER_FABRIC_CLEAN_RUNS=5 MOLECULE_SCENARIOS=fabric scripts/molecule-all.sh

# Slurm for real (issue 19): Debian's slurmctld/slurmd/munge on a controller
# and three simulated nodes, sbatch of dist_launch's slurm.sbatch, the
# slurm_node role's health gate (docs/slurm.md).
.PHONY: slurm-test
slurm-test: setup slurm-image slurm-image-deployed
	MOLECULE_SCENARIOS=slurm scripts/molecule-all.sh

# galaxy-importer, what Galaxy and Automation Hub run on an upload, on the
# built tarball: its offline checks (scripts/galaxy-importer.sh and .cfg), in a
# venv of its own (.cache/importer-venv, requirements/importer.txt).
IMPORTER_VENV := $(CURDIR)/.cache/importer-venv
$(IMPORTER_VENV)/.stamp: requirements/importer.txt
	rm -rf $(IMPORTER_VENV)
	$(PYTHON) -m venv $(IMPORTER_VENV)
	$(IMPORTER_VENV)/bin/pip install --quiet --no-compile --no-deps -r requirements/importer.txt
	scripts/venv-bytecode.sh $(IMPORTER_VENV)
	touch $@
.PHONY: importer
importer: venv $(IMPORTER_VENV)/.stamp
	@scripts/galaxy-importer.sh

# The README's examples run verbatim against two simulated nodes over SSH
# (tests/readme/run.py says why a script and not a molecule scenario).
.PHONY: readme-test
readme-test: setup
	$(VENV)/bin/python tests/readme/run.py

# The built tarball installed as an operator installs it and run from an empty
# directory with Ansible's stock settings against two simulated nodes over SSH
# (tests/installed/run.py: fleet_info, a failed deploy, a deploy, the cron line
# of the nightly drift check).
.PHONY: installed-test
installed-test: setup
	$(VENV)/bin/python tests/installed/run.py

# ---- the simulated fleet and the demo ----------------------------------------
fleet-up: setup
	sim/fleet up $(FLEET_SIZE)

fleet-down:
	sim/fleet down

demo: setup
	@scripts/demo.sh $(FLEET_SIZE)

build: venv
	ansible-galaxy collection build --force --output-path .cache/dist .

# contrib/execution-environment.yml built for real with ansible-builder and
# this machine's Docker engine, on a local stand-in base (the definition's
# digest-pinned base is on a registry not reachable here), then run:
# scripts/ee-build.sh, docs/drift.md. Image topsrider-ee:local.
.PHONY: ee
ee: venv docker
	@scripts/ee-build.sh

clean: fleet-down
	rm -rf .cache/collections .cache/dist reports .sim

# ---- performance (issue 9) ---------------------------------------------------
# make bench: fleets of 1, 4 and 16 simulated nodes (its own names and ports),
# results in docs/performance.json and docs/performance.md; BENCH_ARGS e.g.
# "--sizes 1 --rounds 1" or "--strategy mitogen". make perf-check: the
# no-change re-run must change nothing and re-send no bundle bytes.
.PHONY: bench bench-mitogen bench-large bench-verify bench-exporter perf-check
BENCH_ARGS ?=
bench: setup
	$(VENV)/bin/python scripts/bench/bench.py $(BENCH_ARGS)

# make bench-large (issue 16): the 2.5.136 bundle with 1 GiB of incompressible
# payload (sim/bundles/build-large.sh, built once into .cache/bundles-large),
# 16 nodes: the fresh deploy against the runbook's copy of the .run to every
# node; docs/performance-large.json and its own section of docs/performance.md.
# Needs about 35 GiB free (16 nodes x cache copy + unpacked). BENCH_LARGE_ARGS
# e.g. "--sizes 2 --bundle-mib 8" for a quick look.
BENCH_LARGE_ARGS ?=
bench-large: setup
	$(VENV)/bin/python scripts/bench/bench.py --sizes 16 --rounds 1 --bundle-mib 1024 --ops copy_baseline stage fresh \
	  $(BENCH_LARGE_ARGS)

# make bench-verify (issue 32): topsrider-manifest verify of make bench-large's
# 1 GiB bundle, signed for the run, against one sha256 pass over the same
# files; docs/performance-verify.json. Fails above 1.1x. VERIFY_ARGS e.g.
# "--mib 64 --rounds 3" for a quick look (then not written to docs/).
VERIFY_ARGS ?= --json docs/performance-verify.json
bench-verify: venv
	$(VENV)/bin/python scripts/bench/verify_cost.py $(VERIFY_ARGS)

# make bench-exporter (issue 33): the card exporter against a simulated 16-card
# node on this machine: p99 of 1000 scrapes (<= 50 ms), its CPU with efsmi's
# runs at a 15 s interval over 5 minutes (<= 1 % of a core) and its peak RSS
# under an endless and a 50 MB tool output, 2 minutes each (<= 64 MB over idle);
# docs/performance-exporter.json. Fails when a goal is missed. EXPORTER_ARGS
# e.g. "--window 30 --scrapes 200" for a quick look (then not written to docs/).
EXPORTER_ARGS ?= --json docs/performance-exporter.json
bench-exporter: venv
	$(VENV)/bin/python scripts/bench/exporter_cost.py $(EXPORTER_ARGS)

# The same with Mitogen's strategy (measured, not shipped: docs/performance.md).
MITOGEN_DIR := $(CURDIR)/.cache/mitogen
$(MITOGEN_DIR)/.stamp: requirements/bench-mitogen.txt | venv
	rm -rf $(MITOGEN_DIR)
	$(VENV)/bin/pip install --quiet --no-deps --target $(MITOGEN_DIR) -r requirements/bench-mitogen.txt
	touch $@
bench-mitogen: setup $(MITOGEN_DIR)/.stamp
	$(VENV)/bin/python scripts/bench/bench.py --strategy mitogen --mitogen-dir $(MITOGEN_DIR) $(BENCH_ARGS)

perf-check: setup
	$(VENV)/bin/python scripts/bench/bench.py --perf-check
