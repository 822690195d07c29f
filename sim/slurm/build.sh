#!/usr/bin/env bash
# SIMULATOR: makes sure the simulated node image WITH Slurm exists and prints
# its tag: topsrider-sim/slurm:<hash> = the node image (sim/image/build.sh) +
# Debian's own slurmd, slurmctld, slurm-client and munge. Only the Slurm
# scenario (molecule/slurm, make slurm-test) uses it; the plain node image is
# unchanged. topsrider-sim/slurm:latest points at the current one.
#
# The .deb files are fetched on this host by apt from the host's own apt
# sources (bookworm, like the image), resolved against the node image's dpkg
# status, so only what the image lacks is fetched; the image build itself only
# COPYs and installs them (nothing is fetched inside a container).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cd "$top"
cache=${SIM_CACHE:-$top/.cache/sim}/slurm
# python3-apt: Ansible's apt module (the slurm_node role) reads dpkg with it
packages=(slurmd slurmctld slurm-client munge python3-apt)

node_tag=$(sim/image/build.sh)
inputs=$(find sim/slurm -type f | LC_ALL=C sort)
tag="topsrider-sim/slurm:$( { echo "$node_tag"; echo "${packages[*]}"; for f in $inputs; do echo "$f"; stat -c %a "$f"; cat "$f"; done; } | sha256sum | cut -c1-12)"
if ! docker image inspect "$tag" >/dev/null 2>&1; then
  echo "sim-slurm: building $tag (apt on the host fetches ${packages[*]})" >&2
  work=$(mktemp -d "${TMPDIR:-/tmp}/sim-slurm.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/ctx/debs" "$work/archives/partial" "$cache"
  docker run --rm --network none --entrypoint cat "$node_tag" /var/lib/dpkg/status >"$work/status"
  apt-get -q=2 -y --download-only --no-install-recommends \
    -o Dir::State::status="$work/status" -o Dir::Cache::archives="$work/archives" \
    -o Debug::NoLocking=1 -o APT::Sandbox::User=root install "${packages[@]}" >&2
  cp "$work/archives"/*.deb "$work/ctx/debs/"
  cp -a sim/slurm/Dockerfile sim/slurm/rootfs "$work/ctx/"
  DOCKER_BUILDKIT=0 docker build --quiet --network none --build-arg "BASE=$node_tag" \
    -t "$tag" "$work/ctx" >/dev/null
fi
docker tag "$tag" topsrider-sim/slurm:latest
echo "$tag"
