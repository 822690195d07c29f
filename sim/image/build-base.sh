#!/usr/bin/env bash
# SIMULATOR: builds the Debian rootfs that stands in for a T20 node's operating
# system. No Enflame software is in it; that comes from sim/bundles.
#
#   bookworm (the default node OS): Python 3.11; the training venv gets torch
#     from wheels that pip fetched on the host (sim/image/torch-version), offline.
#   bullseye (the second node OS, sim/image/build.sh bullseye): Python 3.9;
#     the training venv sees Debian's own python3-torch (1.7.1, which reports
#     itself as 1.7.0a0; the torch_gcu 1.x API generation), as
#     --system-site-packages, the way a distribution's torch is used.
#
# debootstrap's mirror is read from this host's apt configuration at run time,
# so no registry host name is written into the project (nor left in the image).
#
# Usage: build-base.sh TAG [SUITE]   (imports the rootfs into Docker as TAG)
set -euo pipefail
tag=${1:?usage: build-base.sh TAG [bookworm|bullseye]}
suite=${2:-bookworm}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cache=${SIM_CACHE:-$top/.cache/sim}
torch_version=$(cat "$here/torch-version")
case "$suite" in
  bookworm|bullseye) ;;
  *) echo "build-base.sh: no node OS '$suite' (bookworm or bullseye)" >&2; exit 2 ;;
esac
mkdir -p "$cache/wheels"

mirror=$("$here/host-mirror.sh")
echo "sim-base: debootstrap $suite from the host's mirror $mirror"

# Wheels for the bookworm training environment, fetched once on the host.
if [ "$suite" = bookworm ] && ! ls "$cache/wheels"/torch-"$torch_version"* >/dev/null 2>&1; then
  python3 -m pip download --quiet --only-binary=:all: --python-version 3.11 \
    --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
    --implementation cp --dest "$cache/wheels" "torch==$torch_version"
fi

# Outside the checkout: the rootfs has /proc, /sys and /dev bound into it
# while apt runs, and nothing that walks the checkout may meet them.
work=$(mktemp -d "${TMPDIR:-/tmp}/topsrider-rootfs.XXXXXX")
cleanup() {
  for m in proc sys dev/pts dev; do umount -l "$work/root/$m" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

debootstrap --variant=minbase \
  --include=python3,python3-venv,openssh-server,procps,ca-certificates \
  "$suite" "$work/root" "$mirror" >"$work/debootstrap.log" 2>&1 \
  || { tail -30 "$work/debootstrap.log"; exit 1; }

if [ "$suite" = bookworm ]; then
  # The training environment: a venv, as a conda env would be on a real node.
  mkdir -p "$work/root/tmp/wheels"
  cp "$cache/wheels"/*.whl "$work/root/tmp/wheels/"
  chroot "$work/root" /usr/bin/python3 -m venv /opt/venvs/train
  chroot "$work/root" /opt/venvs/train/bin/pip install --quiet --no-index \
    --find-links /tmp/wheels "torch==$torch_version"
  rm -rf "$work/root/tmp/wheels"
  described="torch $torch_version CPU"
else
  # Debian's torch, without its recommends (debootstrap's --include would pull them in).
  echo "deb $mirror $suite main" >"$work/root/etc/apt/sources.list"
  for m in proc sys dev; do mount --bind "/$m" "$work/root/$m"; done
  chroot "$work/root" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends python3-torch' >"$work/apt.log" 2>&1 \
    || { tail -30 "$work/apt.log"; exit 1; }
  for m in proc sys dev; do umount -l "$work/root/$m"; done
  chroot "$work/root" /usr/bin/python3 -m venv --system-site-packages /opt/venvs/train
  described="Debian's torch $(chroot "$work/root" /opt/venvs/train/bin/python -c 'import torch; print(torch.__version__)')"
fi
rm -rf "$work/root/var/cache/apt/archives"/*.deb \
  "$work/root/var/lib/apt/lists"/* "$work/root/root/.cache"
# The image must not carry the host's mirror either.
: >"$work/root/etc/apt/sources.list"

tar -C "$work/root" -c . | docker import \
  --change 'CMD ["/usr/local/sbin/sim-init"]' \
  --message "gcu.topsrider simulator base (Debian $suite, $described)" \
  - "$tag" >/dev/null
echo "sim-base: imported $tag"
