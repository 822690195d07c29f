#!/usr/bin/env bash
# SIMULATOR: makes sure the node image with systemd as PID 1 exists and prints
# its tag: topsrider-sim/node-systemd:<hash> (and :latest), for the molecule
# scenarios whose role installs a systemd service (molecule/metrics). Every
# other scenario and sim/fleet keep topsrider-sim/node:latest (sim-init as
# PID 1), which this script does not change.
#
#   1. the bookworm node image (sim/image/build.sh);
#   2. Debian's systemd and systemd-sysv installed into it from the host's
#      mirror (read at run time, given to apt on stdin, and emptied again, so
#      the image names no registry host), committed;
#   3. sim/image/systemd/Dockerfile on top: the simulator's init as a unit,
#      the units that would act on the host masked, systemd as CMD.
# Rebuilt only when the node image or these files change.
#
# Run it (as molecule/metrics' platforms do, molecule-plugins' docker driver):
#   docker run -d --name N --network host --cgroupns host -v /sys/fs/cgroup:/sys/fs/cgroup:rw \
#     --cap-add SYS_ADMIN --cap-add SYS_PTRACE --cap-add DAC_READ_SEARCH \
#     --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
#     --tmpfs /run --tmpfs /run/lock --tmpfs /tmp \
#     --tmpfs /sys/bus/pci/devices:rw,mode=755 --tmpfs /sys/module:rw,mode=755 \
#     topsrider-sim/node-systemd:latest
#   docker exec N systemctl is-system-running --wait     # prints: running
# (not --privileged: where dockerd lacks a capability, CAP_SYS_RESOURCE on the
# project's machine, runc refuses it: "unable to apply caps: operation not permitted")
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cd "$top"
node_tag=$(sim/image/build.sh)
files=$(find sim/image/systemd -type f | LC_ALL=C sort)
hash=$( { echo "$node_tag"; cat sim/image/build-systemd.sh; for f in $files; do echo "$f"; stat -c %a "$f"; cat "$f"; done; } \
        | sha256sum | cut -c1-12)
tag="topsrider-sim/node-systemd:$hash"
if ! docker image inspect "$tag" >/dev/null 2>&1; then
  echo "sim-image: building $tag (Debian's systemd from the host's mirror)" >&2
  mirror=$("$here/host-mirror.sh")
  work="simbuild-systemd-$$"
  pkgs="topsrider-sim/node-systemd-pkgs:$hash"
  trap 'docker rm -f "$work" >/dev/null 2>&1 || true' EXIT
  printf 'deb %s bookworm main\n' "$mirror" | docker run -i --name "$work" --network host --entrypoint /bin/sh "$node_tag" -c '
    set -e
    cat >/etc/apt/sources.list
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        systemd systemd-sysv; } >/tmp/apt.log 2>&1 || { tail -30 /tmp/apt.log; exit 1; }
    rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /tmp/apt.log
    : >/etc/apt/sources.list' >&2
  docker commit "$work" "$pkgs" >/dev/null
  DOCKER_BUILDKIT=0 docker build --quiet --network host --build-arg "BASE=$pkgs" \
    -f sim/image/systemd/Dockerfile -t "$tag" sim/image/systemd >/dev/null
  docker rmi "$pkgs" >/dev/null
fi
docker tag "$tag" topsrider-sim/node-systemd:latest
echo "$tag"
