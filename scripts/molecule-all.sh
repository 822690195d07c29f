#!/usr/bin/env bash
# Runs molecule scenarios (default first), each with its full test sequence,
# as a pool. MOLECULE_SCENARIOS="a b" runs those, in that order;
# MOLECULE_SKIP="a b" leaves scenarios out of the full list (default: slurm,
# which needs the Slurm image: `make slurm-test`). A name
# "make:<target>" in MOLECULE_SCENARIOS runs that make target (with its
# set-up taken as done: the pool's caller did it) as one more job of the pool:
# make test runs the README examples and the perf check this way.
#
# MOLECULE_JOBS (default 3) jobs run at once, started in the order given (the
# Makefile lists them longest first, so the lanes end at about the same
# time), each scenario in its own ANSIBLE_HOME (the playbooks use the
# checkout's collection: .config/molecule/config.yml has no prerun) with its
# output in .cache/molecule-logs/<name>.log,
# printed whole when it ends. A job keeps about 0.7 of a core busy (it waits
# on dpkg, Slurm, timeouts and its nodes), so three at a time keep this
# 2-core machine busy (idle 2.4 % of a full pool against 12.6 % with two,
# 2026-12-07: CONTRIBUTING.md), and a job's CPU, not its wall time, is what
# it costs the pool. Jobs share
# nothing but the Docker engine: their containers have names of their own,
# the Slurm scenario its own ports, the README's and the perf check's fleets
# their own prefixes and ports, and every other port is picked free at run
# time. After the first failure no new job starts; the ones running finish,
# then the failed scenarios' failed tests are printed last (from the
# verifier's JUnit file), where a CI log's tail shows them. Each job's last
# line says its own CPU (bash's times: molecule, ansible-playbook and its
# workers, testinfra); the simulated nodes' CPU, a line per container, comes
# at the pool's end (scripts/pool-cpu.py reads their cgroups while it runs).
#
# POOL_SETUP (make test's pool sets it): the set-up, as chains of make
# targets separated by ";", e.g. "venv collection-link; docker sim-image
# bundles". Each chain runs in order, beside the others and beside the jobs
# (much of the set-up waits on the network and the disk), and a job starts
# once the set-up targets it needs are made (needs_of below): the units and
# the linters run while the simulator's images are still being built. A
# set-up target that needs what another chain makes waits for it
# (setup_waits_for below). A job
# needing a target that no chain makes takes it as made (the caller did the
# set-up). A failed set-up target fails the pool like a failed job.
#
# A scenario (or make job) holds /tmp/topsrider-scn-<name>.lock while it
# runs, so two pools on one machine (two checkouts) never run the same
# scenario's containers at once: the second waits.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
# The set-up targets a job needs: the venvs, Docker with the host tools the
# units use, the simulator's images its molecule.yml names, the bundles.
image_target() {
  case $1 in
    topsrider-sim/node:*) echo sim-image ;;
    topsrider-sim/node-bullseye:*) echo sim-image-bullseye ;;
    topsrider-sim/node-deployed:*) echo sim-image-deployed ;;
    topsrider-sim/node-systemd:*) echo sim-image-systemd ;;
    topsrider-sim/slurm:*) echo slurm-image ;;
    topsrider-sim/slurm-deployed:*) echo slurm-image-deployed ;;
    *) echo "molecule-all: no set-up target makes image $1" >&2; return 1 ;;
  esac
}
needs_of() {
  local image images
  case $1 in
    make:units) echo "venv collection-link docker" ;;
    make:units-2.21) echo "venv-2.21 collection-link docker" ;;
    make:sanity-2.21) echo "venv-2.21" ;;
    make:molecule-default-2.21) echo "venv-2.21 collection-link docker sim-image bundles" ;;
    make:readme-test|make:installed-test|make:perf-check) echo "venv collection-link docker sim-image bundles" ;;
    make:*) echo "venv collection-link" ;;
    *)
      echo "venv collection-link docker bundles"
      # A scenario without platforms of its own has the base config's.
      images=$(sed -n 's/^ *image: *//p' "molecule/$1/molecule.yml" | sort -u)
      [ -n "$images" ] || images=$(sed -n 's/^ *image: *//p' .config/molecule/config.yml | sort -u)
      for image in $images; do
        image_target "$image"
      done
      ;;
  esac
}
# The set-up targets of other chains that a set-up target waits for (its
# Makefile prerequisites that another chain makes): the pre-deployed node
# image runs deploy.yml from the venv on the node image with the bundles; the
# bundles' manifests are written by the venv's Python (it has packaging).
setup_waits_for() {
  case $1 in
    bundles) echo "venv" ;;
    sim-image-deployed) echo "venv collection-link sim-image bundles" ;;
    slurm-image-deployed) echo "venv collection-link slurm-image bundles" ;;
  esac
}
# scripts/molecule-all.sh --needs JOB...: what each job needs, a line each
# (tests/unit/test_test_pools.py checks the table against the Makefile).
if [ "${1:-}" = --needs ]; then
  shift
  for job in "$@"; do echo "$job: $(needs_of "$job" | tr '\n' ' ')"; done
  exit 0
fi
# scripts/molecule-all.sh --setup-waits TARGET...: what each set-up target waits for
if [ "${1:-}" = --setup-waits ]; then
  shift
  for t in "$@"; do echo "$t: $(setup_waits_for "$t")"; done
  exit 0
fi
if [ -n "${MOLECULE_SCENARIOS:-}" ]; then
  scenarios=$MOLECULE_SCENARIOS
else
  scenarios=$( { [ -f molecule/default/molecule.yml ] && echo default; \
    for d in molecule/*/molecule.yml; do basename "$(dirname "$d")"; done | grep -vx -e default \
      $(for s in ${MOLECULE_SKIP-slurm}; do printf -- '-e %s ' "$s"; done) | LC_ALL=C sort; } )
fi
jobs=${MOLECULE_JOBS:-3}
junit_dir=$top/.cache/molecule-junit
logs=$top/.cache/molecule-logs
ready=$top/.cache/pool-setup
mkdir -p "$junit_dir" "$logs"
rm -rf "$ready"
mkdir -p "$ready"
pool_start=$(date +%s)
# The simulated nodes' CPU, read from their containers' cgroups while the pool
# runs (scripts/pool-cpu.py); reported at the end.
node_cpu=$logs/pool-nodes-cpu.jsonl
rm -f "$node_cpu" "$node_cpu.stop"
python3 scripts/pool-cpu.py sample "$node_cpu" &
node_cpu_pid=$!
trap 'touch "$node_cpu.stop"' EXIT

declare -A pid_of=() start_of=()
failed=()
label() {
  if [ "${1#make:}" != "$1" ]; then echo "make ${1#make:}"; else echo "molecule test -s $1"; fi
}

# ---- set-up chains -----------------------------------------------------------
setup_targets=" "
setup_pids=()
IFS=';' read -r -a chains <<<"${POOL_SETUP:-}"
for chain in "${chains[@]}"; do
  for t in $chain; do setup_targets+="$t "; done
done

run_chain() {
  local t t0 rc rest w
  for t in "$@"; do
    # Wait for what other chains make first (a target no chain makes is taken
    # as made: the caller did it); one of them failed: this target is not made.
    for w in $(setup_waits_for "$t"); do
      case "$setup_targets" in *" $w "*) ;; *) continue ;; esac
      while [ ! -e "$ready/$w" ]; do
        if [ -e "$ready/$w.failed" ] || [ -e "$ready/$w.not-made" ]; then
          echo "=== make $t (set-up) not made: make $w failed"
          for rest in "$@"; do [ -e "$ready/$rest" ] || : >"$ready/$rest.not-made"; done
          return 1
        fi
        sleep 2
      done
    done
    t0=$(date +%s)
    rc=0
    make --no-print-directory "$t" >"$logs/setup-$t.log" 2>&1 || rc=$?
    if [ "$rc" -eq 0 ]; then
      echo "=== make $t (set-up) done in $(( $(date +%s) - t0 ))s, $(( $(date +%s) - pool_start ))s into the pool"
      : >"$ready/$t"
    else
      echo "=== make $t (set-up) failed after $(( $(date +%s) - t0 ))s; its output:"
      cat "$logs/setup-$t.log"
      : >"$ready/$t.failed"
      # The chain's later targets are never made: the jobs that need them fail too.
      for rest in "$@"; do [ -e "$ready/$rest" ] || [ -e "$ready/$rest.failed" ] || : >"$ready/$rest.not-made"; done
      return 1
    fi
  done
}

# 0: every target the job needs is made; 1: one is still being made; 2: one failed.
job_state() {
  local t
  for t in $(needs_of "$1"); do
    case "$setup_targets" in *" $t "*) ;; *) continue ;; esac
    [ -e "$ready/$t.failed" ] || [ -e "$ready/$t.not-made" ] && return 2
    [ -e "$ready/$t" ] || return 1
  done
  return 0
}

for chain in "${chains[@]}"; do
  # shellcheck disable=SC2086
  [ -n "${chain// }" ] && { run_chain $chain & setup_pids+=("$!"); }
done

# ---- jobs --------------------------------------------------------------------
run_one() {
  local s=$1 lock=/tmp/topsrider-scn-${1#make:}.lock rc=0
  rm -f "$junit_dir/$s.xml" "$logs/$s.cpu"
  if [ "${s#make:}" != "$s" ]; then
    flock "$lock" make --no-print-directory -o setup "${s#make:}" >"$logs/$s.log" 2>&1 || rc=$?
  else
    # Each scenario its own ANSIBLE_HOME (Ansible's state, galaxy's cache): two
    # scenarios' runs never share one.
    ANSIBLE_HOME=${ANSIBLE_HOME:-$top/.cache/ansible-home}/molecule-$s \
      flock "$lock" molecule test -s "$s" >"$logs/$s.log" 2>&1 || rc=$?
  fi
  # The job's own CPU: bash's times (not in a pipe: that would be a subshell
  # of its own), its second line the user and system time of every process
  # this subshell waited for, and theirs (molecule, ansible-playbook and its
  # workers, testinfra). Its nodes' CPU is in their containers
  # (scripts/pool-cpu.py, printed at the pool's end).
  times >"$logs/$s.cpu"
  return "$rc"
}

# The CPU seconds of a job's children in its times output (second line,
# "0m12.5s 0m3.2s": user and system), rounded.
cpu_of() {
  awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); sub("s", "", a[2]); n += a[1] * 60 + a[2] }
                 printf "%.0f", n }' "$logs/$1.cpu" 2>/dev/null || true
}

finish_one() {
  local s=$1 rc=$2
  echo "=== $(label "$s") (output)"
  cat "$logs/$s.log"
  local cpu
  cpu=$(cpu_of "$s")
  if [ "$rc" -eq 0 ]; then
    echo "=== $(label "$s") passed in $(( $(date +%s) - start_of[$s] ))s (its own CPU: ${cpu:-?}s)"
  else
    echo "=== $(label "$s") failed after $(( $(date +%s) - start_of[$s] ))s (its own CPU: ${cpu:-?}s)"
    failed+=("$s")
  fi
}

# Report every running job that has ended; 0 when one had.
reap_ended() {
  local s rc any=1
  for s in "${!pid_of[@]}"; do
    if ! kill -0 "${pid_of[$s]}" 2>/dev/null; then
      rc=0
      wait "${pid_of[$s]}" || rc=$?
      unset "pid_of[$s]"
      finish_one "$s" "$rc"
      any=0
    fi
  done
  return "$any"
}

# shellcheck disable=SC2206
pending=($scenarios)
setup_failed=""
while [ "${#pending[@]}" -gt 0 ] && [ "${#failed[@]}" -eq 0 ] && [ -z "$setup_failed" ]; do
  if [ "${#pid_of[@]}" -lt "$jobs" ]; then
    # The first job in the given order whose set-up is made.
    pick=-1
    for i in "${!pending[@]}"; do
      st=0
      job_state "${pending[$i]}" || st=$?
      if [ "$st" -eq 2 ]; then setup_failed=${pending[$i]}; break; fi
      if [ "$st" -eq 0 ]; then pick=$i; break; fi
    done
    [ -z "$setup_failed" ] || break
    if [ "$pick" -ge 0 ]; then
      s=${pending[$pick]}
      unset "pending[$pick]"
      pending=("${pending[@]}")
      echo "=== $(label "$s"): started $(( $(date +%s) - pool_start ))s into the pool (log: ${logs#"$top"/}/$s.log)"
      start_of[$s]=$(date +%s)
      run_one "$s" &
      pid_of[$s]=$!
      continue
    fi
  fi
  reap_ended || sleep 2
done
while [ "${#pid_of[@]}" -gt 0 ]; do reap_ended || sleep 2; done
# The chains' end, judged by their ready markers, not by wait's status: a
# chain that ended long ago may have had its pid reused by a later child of
# this shell (pid_max wraps in a long pool), and bash then forgets its status.
for p in "${setup_pids[@]}"; do wait "$p" 2>/dev/null || true; done
setup_rc=0
for t in $setup_targets; do [ -e "$ready/$t" ] || setup_rc=1; done
[ -z "$setup_failed" ] || echo "=== the set-up that $(label "$setup_failed") needs failed: no job started after it"
touch "$node_cpu.stop"
wait "$node_cpu_pid" 2>/dev/null || true
python3 scripts/pool-cpu.py report "$node_cpu"
echo "=== pool: $(( $(date +%s) - pool_start ))s"

if [ "${#failed[@]}" -gt 0 ] || [ "$setup_rc" -ne 0 ]; then
  for t in "$ready"/*.failed; do
    [ -e "$t" ] || continue
    t=$(basename "$t" .failed)
    echo "=== make $t (set-up) failed; the end of its output:"
    tail -n 40 "$logs/setup-$t.log"
  done
  for s in "${failed[@]}"; do
    if [ "${s#make:}" != "$s" ]; then
      echo "=== make ${s#make:} failed; the end of its output:"
      tail -n 40 "$logs/$s.log"
    else
      echo "=== molecule $s failed; its failed tests:"
      python3 scripts/junit-failures.py "$junit_dir/$s.xml"
    fi
  done
  exit 1
fi
