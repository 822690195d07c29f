#!/usr/bin/env bash
# `make ee`: a real `ansible-builder build` of contrib/execution-environment.yml
# with this machine's Docker engine, then the image run. The definition's
# base is pinned by digest on a registry this machine cannot reach, so the
# build runs on a local stand-in (scripts/ee-base.sh: debootstrap + docker
# import, as the simulator's images are made) through a definition that
# scripts/ee_local_definition.py derives from contrib's (base, package
# manager, Python swapped; nothing else). Every step of ansible-builder's
# Containerfile then runs for real: pip installs ansible-core, ansible-runner,
# bindep and dumb-init from PyPI, ansible-galaxy installs the collection from
# its tarball, introspection reads the collection's meta/execution-environment.yml
# and bindep checks its system packages. The containers of the build use host
# networking (dockerd runs with --bridge=none).
# Then, in the image: ansible-galaxy collection list gcu.topsrider,
# dpkg-deb --version, gpgv --version and topsrider-manifest --help.
#
# Usage: scripts/ee-build.sh [TAG]   (default topsrider-ee:local)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
tag=${1:-topsrider-ee:local}
python=${PYTHON:-$top/.venv/bin/python}
bin=$(dirname "$python")
start=$(date +%s)

base_tag="topsrider-ee/base:$(cat scripts/ee-base.sh sim/image/host-mirror.sh | sha256sum | cut -c1-12)"
if ! docker image inspect "$base_tag" >/dev/null 2>&1; then
  echo "ee: building the local base $base_tag (debootstrap; a few minutes)"
  bash scripts/ee-base.sh "$base_tag"
fi

work=$top/.cache/ee/src
rm -rf "$work" && mkdir -p "$work/dist"
"$bin/ansible-galaxy" collection build --output-path "$work/dist" . >/dev/null
cp "$work"/dist/gcu-topsrider-*.tar.gz "$work/gcu-topsrider.tar.gz"
"$python" scripts/ee_local_definition.py contrib/execution-environment.yml "$base_tag" \
  >"$work/execution-environment.yml"

echo "ee: ansible-builder build -t $tag (base $base_tag)"
built=$(date +%s)
"$bin/ansible-builder" build -f "$work/execution-environment.yml" -c "$work/context" \
  -t "$tag" --container-runtime docker --extra-build-cli-args "--network host" -v 3 \
  >"$top/.cache/ee/build.log" 2>&1 \
  || { tail -40 "$top/.cache/ee/build.log"; echo "ee: build failed; log in .cache/ee/build.log" >&2; exit 1; }
echo "ee: built $tag in $(( $(date +%s) - built )) s"

installed=/usr/share/ansible/collections/ansible_collections/gcu/topsrider
check() {
  echo "ee: in the image: $*" >&2
  docker run --rm --network host "$tag" "$@"
}
check ansible-galaxy collection list gcu.topsrider
check dpkg-deb --version
check gpgv --version
check "$installed/scripts/topsrider-manifest" --help >/dev/null
echo "ee: done in $(( $(date +%s) - start )) s"
