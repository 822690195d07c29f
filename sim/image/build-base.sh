#!/usr/bin/env bash
# SIMULATOR: builds the Debian bookworm rootfs that stands in for a T20 node's
# operating system. No Enflame software is in it; that comes from sim/bundles.
#
# debootstrap's mirror is read from this host's apt configuration at run time,
# so no registry host name is written into the project. The training venv gets
# torch from wheels that pip fetched on the host, installed offline.
#
# Usage: build-base.sh TAG      (imports the rootfs into Docker as TAG)
set -euo pipefail
tag=${1:?usage: build-base.sh TAG}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cache=${SIM_CACHE:-$top/.cache/sim}
torch_version=$(cat "$here/torch-version")
mkdir -p "$cache/wheels"

mirror=$("$here/host-mirror.sh")
echo "sim-base: debootstrap bookworm from the host's mirror $mirror"

# Wheels for the training environment, fetched once on the host.
if ! ls "$cache/wheels"/torch-"$torch_version"* >/dev/null 2>&1; then
  python3 -m pip download --quiet --only-binary=:all: --python-version 3.11 \
    --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
    --implementation cp --dest "$cache/wheels" "torch==$torch_version"
fi

work=$(mktemp -d "$cache/rootfs.XXXXXX")
cleanup() {
  for m in proc sys dev/pts dev; do umount -l "$work/root/$m" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

debootstrap --variant=minbase \
  --include=python3,python3-venv,openssh-server,procps,ca-certificates \
  bookworm "$work/root" "$mirror" >"$work/debootstrap.log" 2>&1 \
  || { tail -30 "$work/debootstrap.log"; exit 1; }

# The training environment: a venv, as a conda env would be on a real node.
mkdir -p "$work/root/tmp/wheels"
cp "$cache/wheels"/*.whl "$work/root/tmp/wheels/"
chroot "$work/root" /usr/bin/python3 -m venv /opt/venvs/train
chroot "$work/root" /opt/venvs/train/bin/pip install --quiet --no-index \
  --find-links /tmp/wheels "torch==$torch_version"
rm -rf "$work/root/tmp/wheels" "$work/root/var/cache/apt/archives"/*.deb \
  "$work/root/var/lib/apt/lists"/* "$work/root/root/.cache"
# The image must not carry the host's mirror either.
: >"$work/root/etc/apt/sources.list"

tar -C "$work/root" -c . | docker import \
  --change 'CMD ["/usr/local/sbin/sim-init"]' \
  --message "gcu.topsrider simulator base (Debian bookworm, torch $torch_version CPU)" \
  - "$tag" >/dev/null
echo "sim-base: imported $tag"
