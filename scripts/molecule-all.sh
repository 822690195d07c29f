#!/usr/bin/env bash
# Runs molecule scenarios (default first), each with its full test sequence,
# as a pool. MOLECULE_SCENARIOS="a b" runs those, in that order;
# MOLECULE_SKIP="a b" leaves scenarios out of the full list (default: slurm,
# which needs the Slurm image: `make slurm-test`). A name
# "make:<target>" in MOLECULE_SCENARIOS runs that make target (with its
# set-up taken as done: the pool's caller did it) as one more job of the pool:
# make test runs the README examples and the perf check this way.
#
# MOLECULE_JOBS (default 2) jobs run at once, started in the order given (the
# Makefile lists them longest first, so both lanes end at about the same
# time), each scenario in its own ANSIBLE_HOME (molecule installs the
# collection there) with its output in .cache/molecule-logs/<name>.log,
# printed whole when it ends. One scenario keeps about one core of this
# 2-core machine busy (much of a scenario is waiting: for a Slurm requeue, a
# job, a node), so two at a time take about half the wall time. Jobs share
# nothing but the Docker engine: their containers have names of their own,
# the Slurm scenario its own ports, the README's and the perf check's fleets
# their own prefixes and ports, and every other port is picked free at run
# time. After the first failure no new job starts; the ones running finish,
# then the failed scenarios' failed tests are printed last (from the
# verifier's JUnit file), where a CI log's tail shows them.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
if [ -n "${MOLECULE_SCENARIOS:-}" ]; then
  scenarios=$MOLECULE_SCENARIOS
else
  scenarios=$( { [ -f molecule/default/molecule.yml ] && echo default; \
    for d in molecule/*/molecule.yml; do basename "$(dirname "$d")"; done | grep -vx -e default \
      $(for s in ${MOLECULE_SKIP-slurm}; do printf -- '-e %s ' "$s"; done) | LC_ALL=C sort; } )
fi
jobs=${MOLECULE_JOBS:-2}
junit_dir=$top/.cache/molecule-junit
logs=$top/.cache/molecule-logs
mkdir -p "$junit_dir" "$logs"

declare -A pid_of=() start_of=()
failed=()
label() {
  if [ "${1#make:}" != "$1" ]; then echo "make ${1#make:}"; else echo "molecule test -s $1"; fi
}

run_one() {
  local s=$1
  rm -f "$junit_dir/$s.xml"
  if [ "${s#make:}" != "$s" ]; then
    make --no-print-directory -o setup "${s#make:}" >"$logs/$s.log" 2>&1
    return
  fi
  # Each scenario its own ANSIBLE_HOME: molecule installs the collection into
  # it, and two installs into one directory at once would race.
  ANSIBLE_HOME=${ANSIBLE_HOME:-$top/.cache/ansible-home}/molecule-$s molecule test -s "$s" >"$logs/$s.log" 2>&1
}

finish_one() {
  local s=$1 rc=$2
  echo "=== $(label "$s") (output)"
  cat "$logs/$s.log"
  if [ "$rc" -eq 0 ]; then
    echo "=== $(label "$s") passed in $(( $(date +%s) - start_of[$s] ))s"
  else
    echo "=== $(label "$s") failed after $(( $(date +%s) - start_of[$s] ))s"
    failed+=("$s")
  fi
}

# Wait for any one running scenario to end; report it.
reap() {
  local s rc
  while true; do
    for s in "${!pid_of[@]}"; do
      if ! kill -0 "${pid_of[$s]}" 2>/dev/null; then
        rc=0
        wait "${pid_of[$s]}" || rc=$?
        unset "pid_of[$s]"
        finish_one "$s" "$rc"
        return
      fi
    done
    sleep 2
  done
}

for s in $scenarios; do
  [ "${#failed[@]}" -eq 0 ] || break
  while [ "${#pid_of[@]}" -ge "$jobs" ]; do reap; done
  [ "${#failed[@]}" -eq 0 ] || break
  echo "=== $(label "$s"): started (log: ${logs#"$top"/}/$s.log)"
  start_of[$s]=$(date +%s)
  run_one "$s" &
  pid_of[$s]=$!
done
while [ "${#pid_of[@]}" -gt 0 ]; do reap; done

if [ "${#failed[@]}" -gt 0 ]; then
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
