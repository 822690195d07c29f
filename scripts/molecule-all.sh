#!/usr/bin/env bash
# Runs every molecule scenario (default first), each with its full test
# sequence. MOLECULE_SCENARIOS="a b" runs a subset; MOLECULE_SKIP="a b" leaves
# scenarios out of the full list (default: fabric, eight nodes and seven fabric
# checks, which `make fabric-check-test` runs, and slurm, which needs the Slurm
# image: `make slurm-test`).
#
# MOLECULE_JOBS (default 2) scenarios run at once, in the order given, each in
# its own ANSIBLE_HOME (molecule installs the collection there) with its output
# in .cache/molecule-logs/<scenario>.log, printed whole when it ends. One
# scenario keeps about one core of this 2-core machine busy (much of a
# scenario is waiting: for a Slurm requeue, a job, a node), so two at a time
# take about half the wall time. Scenarios share nothing but the Docker
# engine: their containers have names of their own, the Slurm scenario its own
# ports, and every other port is picked free at run time. After the first
# failure no new scenario starts; the ones running finish, then the failed
# scenarios' failed tests are printed last (from the verifier's JUnit file),
# where a CI log's tail shows them.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
if [ -n "${MOLECULE_SCENARIOS:-}" ]; then
  scenarios=$MOLECULE_SCENARIOS
else
  scenarios=$( { [ -f molecule/default/molecule.yml ] && echo default; \
    for d in molecule/*/molecule.yml; do basename "$(dirname "$d")"; done | grep -vx -e default \
      $(for s in ${MOLECULE_SKIP-fabric slurm}; do printf -- '-e %s ' "$s"; done) | LC_ALL=C sort; } )
fi
jobs=${MOLECULE_JOBS:-2}
junit_dir=$top/.cache/molecule-junit
logs=$top/.cache/molecule-logs
mkdir -p "$junit_dir" "$logs"

declare -A pid_of=() start_of=()
failed=()
run_one() {
  local s=$1
  rm -f "$junit_dir/$s.xml"
  # Each scenario its own ANSIBLE_HOME: molecule installs the collection into
  # it, and two installs into one directory at once would race.
  ANSIBLE_HOME=${ANSIBLE_HOME:-$top/.cache/ansible-home}/molecule-$s molecule test -s "$s" >"$logs/$s.log" 2>&1
}

finish_one() {
  local s=$1 rc=$2
  echo "=== molecule test -s $s (output)"
  cat "$logs/$s.log"
  if [ "$rc" -eq 0 ]; then
    echo "=== molecule $s passed in $(( $(date +%s) - start_of[$s] ))s"
  else
    echo "=== molecule $s failed after $(( $(date +%s) - start_of[$s] ))s"
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
  echo "=== molecule test -s $s: started (log: ${logs#"$top"/}/$s.log)"
  start_of[$s]=$(date +%s)
  run_one "$s" &
  pid_of[$s]=$!
done
while [ "${#pid_of[@]}" -gt 0 ]; do reap; done

if [ "${#failed[@]}" -gt 0 ]; then
  for s in "${failed[@]}"; do
    echo "=== molecule $s failed; its failed tests:"
    python3 scripts/junit-failures.py "$junit_dir/$s.xml"
  done
  exit 1
fi
