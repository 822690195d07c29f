#!/usr/bin/env bash
# SIMULATOR: makes sure the simulated T20 node image exists in the local
# Docker engine and prints its tag. Two layers, each tagged by a hash of its
# inputs so that it is rebuilt only when they change:
#   topsrider-sim/base:<hash>  debootstrap rootfs + training venv (slow, minutes)
#   topsrider-sim/node:<hash>  base + sim/node/rootfs (efsmi simulator, simctl, init)
# topsrider-sim/node:latest always points at the current node image; molecule
# scenarios and sim/fleet use that tag.
#
#   sim/image/build.sh             the default node OS, Debian bookworm (Python 3.11)
#   sim/image/build.sh bullseye    the second node OS, Debian bullseye (Python 3.9,
#                                  Debian's torch 1.7): topsrider-sim/node-bullseye:latest
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cd "$top"
suite=${1:-bookworm}
case "$suite" in
  bookworm) flavour="" ;;
  bullseye) flavour="-bullseye" ;;
  *) echo "sim-image: no node OS '$suite' (bookworm or bullseye)" >&2; exit 2 ;;
esac

base_inputs=(sim/image/build-base.sh sim/image/host-mirror.sh sim/image/torch-version)
base_tag="topsrider-sim/base$flavour:$( { echo "$suite"; cat "${base_inputs[@]}"; } | sha256sum | cut -c1-12)"
if ! docker image inspect "$base_tag" >/dev/null 2>&1; then
  echo "sim-image: building $base_tag (debootstrap; a few minutes)" >&2
  bash sim/image/build-base.sh "$base_tag" "$suite" >&2
fi

node_files=$(find sim/node/rootfs sim/image/Dockerfile.node -type f | LC_ALL=C sort)
node_hash=$( { echo "$base_tag"; for f in $node_files; do echo "$f"; stat -c %a "$f"; cat "$f"; done; } | sha256sum | cut -c1-12)
node_tag="topsrider-sim/node$flavour:$node_hash"
if ! docker image inspect "$node_tag" >/dev/null 2>&1; then
  echo "sim-image: building $node_tag" >&2
  DOCKER_BUILDKIT=0 docker build --quiet --network host --build-arg "BASE=$base_tag" \
    -f sim/image/Dockerfile.node -t "$node_tag" sim/node >/dev/null
fi
docker tag "$node_tag" "topsrider-sim/node$flavour:latest"
echo "$node_tag"
