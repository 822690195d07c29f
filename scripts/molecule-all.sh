#!/usr/bin/env bash
# Runs every molecule scenario (default first), each with its full test
# sequence, and stops at the first that fails. MOLECULE_SCENARIOS="a b" runs a subset;
# MOLECULE_SKIP="a b" leaves scenarios out of the full list (default: fabric,
# eight nodes and seven fabric checks, which `make fabric-check-test` runs, and
# slurm, which needs the Slurm image: `make slurm-test`).
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
junit_dir=$top/.cache/molecule-junit
mkdir -p "$junit_dir"
for s in $scenarios; do
  echo "=== molecule test -s $s"
  start=$(date +%s)
  rm -f "$junit_dir/$s.xml"
  if ! molecule test -s "$s"; then
    # The verifier's failed tests, last, where the tail of a CI log shows them.
    echo "=== molecule $s failed after $(( $(date +%s) - start ))s; its failed tests:"
    python3 scripts/junit-failures.py "$junit_dir/$s.xml"
    exit 1
  fi
  echo "=== molecule $s passed in $(( $(date +%s) - start ))s"
done
