#!/usr/bin/env bash
# make importer: galaxy-importer, what Galaxy and Automation Hub run on an
# uploaded collection, on the tarball `ansible-galaxy collection build` makes
# (make build's, the dev venv's ansible-galaxy). galaxy-importer runs in a venv
# of its own (.cache/importer-venv, requirements/importer.txt, made by make)
# with its own ansible-doc and ansible-lint first on PATH, with the settings of
# scripts/galaxy-importer.cfg (the checks that run offline) and none of make's
# ANSIBLE_* settings. Fails when the import fails (galaxy-importer exits 1:
# a role without README.md, galaxy.yml refused, a plugin whose documentation
# ansible-doc cannot read...) and when it logs an error or an ansible-lint
# finding without failing (lint is off in the .cfg, and says why). Its log:
# .cache/importer/importer.log.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
venv=$top/.cache/importer-venv
work=$top/.cache/importer
rm -rf "$work"
mkdir -p "$work/dist" "$work/tmp"
src=$top
# Galaxy requires `repository` (galaxy-importer: "'repository' is required").
# galaxy.yml leaves it out while the project has no public address, so the
# import runs on a copy of the checkout whose galaxy.yml names a stand-in that
# cannot resolve; the rest of the tarball is the checkout's. With a repository
# in galaxy.yml, the checkout is built as it is.
if ! grep -q '^repository:' "$top/galaxy.yml"; then
  src=$work/src/ansible_collections/gcu/topsrider
  mkdir -p "$src"
  (cd "$top" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$src" 2>/dev/null) || true
  echo "repository: https://example.invalid/no-public-repository-yet" >>"$src/galaxy.yml"
  echo "galaxy-importer: galaxy.yml has no repository, which Galaxy requires: importing with a stand-in (set it before publishing)"
fi
"${IMPORTER_BUILD_GALAXY:-$top/.venv/bin/ansible-galaxy}" collection build --output-path "$work/dist" "$src" >"$work/build.log"
tarball=$(ls "$work"/dist/gcu-topsrider-*.tar.gz)
unset $(env | sed -n 's/^\(ANSIBLE_[A-Z0-9_]*\|MOLECULE_[A-Z0-9_]*\)=.*/\1/p')
export PATH=$venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export GALAXY_IMPORTER_CONFIG=$top/scripts/galaxy-importer.cfg
export GALAXY_IMPORTER_ANSIBLE_LOCAL_TMP=$work/tmp GALAXY_IMPORTER_TMP_ROOT_DIR=$work/tmp
cd "$work"
start=$SECONDS
rc=0
"$venv/bin/python" -m galaxy_importer.main "$tarball" >"$work/importer.log" 2>&1 || rc=$?
cat "$work/importer.log"
if [ "$rc" -ne 0 ]; then
  echo "galaxy-importer: the import of $(basename "$tarball") failed (exit $rc)"
  exit 1
fi
# An error it logs without failing, or an ansible-lint finding (logged as a
# warning: "path:line: rule: text" in ansible-lint's pep8 format).
bad=$(grep -E '^ERROR: |^WARNING: [^ ]+:[0-9]+(:[0-9]+)?: ' "$work/importer.log" || true)
if [ -n "$bad" ]; then
  printf 'galaxy-importer: the import passed, but logged:\n%s\n' "$bad"
  exit 1
fi
echo "galaxy-importer: $(basename "$tarball") imports cleanly ($((SECONDS - start)) s)"
