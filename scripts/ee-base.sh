#!/usr/bin/env bash
# The local stand-in for contrib/execution-environment.yml's base image, which
# is pinned by digest on a registry this machine cannot reach: a Debian
# bookworm rootfs made with debootstrap (the mirror read from this host's apt
# sources at run time, as sim/image/build-base.sh does), with python3 and a
# venv /opt/ee first on PATH, imported into Docker as TAG. The build's Python
# is the venv's: ansible-builder's pip_install step runs `python -m ensurepip`,
# which Debian refuses for its system Python and allows in a venv. The certificate authorities this host adds to
# its own trust store (/usr/local/share/ca-certificates) are added to the
# rootfs's, so the build's pip reaches PyPI the way the host's does. Nothing
# else: dpkg and gpgv come with Debian's base system (the build's bindep step
# checks them and finds nothing to install).
#
# Usage: ee-base.sh TAG   (scripts/ee-build.sh calls it when TAG is missing)
set -euo pipefail
tag=${1:?usage: ee-base.sh TAG}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
cache=$top/.cache/ee
mkdir -p "$cache"

mirror=$("$top/sim/image/host-mirror.sh")
echo "ee-base: debootstrap bookworm from the host's mirror $mirror"

work=$(mktemp -d "$cache/rootfs.XXXXXX")
trap 'rm -rf "$work"' EXIT
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
  bookworm "$work/root" "$mirror" >"$work/debootstrap.log" 2>&1 \
  || { tail -30 "$work/debootstrap.log"; exit 1; }

if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  cp /usr/local/share/ca-certificates/*.crt "$work/root/usr/local/share/ca-certificates/"
  chroot "$work/root" update-ca-certificates >/dev/null
fi
chroot "$work/root" /usr/bin/python3 -m venv /opt/ee
rm -rf "$work/root/var/cache/apt/archives"/*.deb "$work/root/var/lib/apt/lists"/*
# The image must not carry the host's mirror.
: >"$work/root/etc/apt/sources.list"

tar -C "$work/root" -c . | docker import \
  --change 'ENV PATH=/opt/ee/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --message "gcu.topsrider EE build's local base (Debian bookworm, python3)" \
  - "$tag" >/dev/null
echo "ee-base: imported $tag"
