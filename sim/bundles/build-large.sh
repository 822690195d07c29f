#!/usr/bin/env bash
# SIMULATOR: the bench's large variant of the sample 2.5.136 bundle (issue 16).
# The same debs, wheels and makeself installer as sim/bundles/build.sh builds
# (its functions, sim/bundles/lib.sh), with SIZE_MIB MiB of incompressible
# bytes inside tops-sdk (/usr/local/tops/share/tops-sdk-payload.bin: AES-CTR
# of zeros under a fixed key, so the same size gives the same bytes). The debs
# are stored uncompressed (dpkg-deb -Znone) and the .run with makeself
# --nocomp --sha256: compressing 1 GiB of random bytes would take long and
# save nothing. Bench-only: never part of make test, never committed.
#
#   sim/bundles/build-large.sh SIZE_MIB    prints the output directory
#
# Output: .cache/bundles-large/<SIZE_MIB>M/ (TOPSRIDER_LARGE_BUNDLES_DIR
# overrides .cache/bundles-large) holding
#   TopsRider_t2x_2.5.136_deb_amd64.run   the installer
#   runs/<sha256 of the .run>/            its extraction with manifest.json
#                                         (scripts/topsrider-manifest extract
#                                         --cache runs: the cache a deploy of
#                                         the .run with topsrider_bundle_cache
#                                         = <dir>/runs finds, so it extracts
#                                         nothing)
#   2.5.136 -> runs/<sha256>              the same directory, by version
# Rebuilds only when its inputs or the size change (hash stamp).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
size_mib=${1:-}
case "$size_mib" in
  '' | *[!0-9]* | 0*) echo "usage: sim/bundles/build-large.sh SIZE_MIB (a whole number of MiB, at least 1)" >&2; exit 2 ;;
esac
v=2.5.136
name="TopsRider_t2x_${v}_deb_amd64"
pythons=(3.11 3.10)
torch_version=$(cat "$top/sim/image/torch-version")
out=${TOPSRIDER_LARGE_BUNDLES_DIR:-$top/.cache/bundles-large}/${size_mib}M
cd "$top"

for tool in gcc dpkg-deb python3 sha256sum makeself openssl df; do
  command -v "$tool" >/dev/null || { echo "sim/bundles: $tool is required" >&2; exit 1; }
done

inputs=$(find sim/bundles sim/wheel scripts/topsrider-manifest plugins/module_utils/_manifest.py plugins/module_utils/_values.py \
  plugins/module_utils/_dpkg.py plugins/plugin_utils/_makeself.py sim/image/torch-version -type f ! -name '*.pyc' | LC_ALL=C sort)
stamp=$( { echo "size=$size_mib"; for f in $inputs; do echo "$f"; stat -c %a "$f"; cat "$f"; done; } | sha256sum | cut -c1-16)
if [ "$(cat "$out/.stamp" 2>/dev/null)" = "$stamp" ] && [ -f "$out/$name.run" ] && [ -f "$out/$v/manifest.json" ]; then
  echo "$out"
  exit 0
fi

# Room: the payload, its deb, the .run and the extraction, plus the scratch copies.
mkdir -p "$out"
need_kib=$(( (size_mib * 5 + 64) * 1024 ))
free_kib=$(df -Pk "$out" | awk 'NR == 2 {print $4}')
if [ "$free_kib" -lt "$need_kib" ]; then
  echo "sim/bundles: a ${size_mib} MiB bundle needs about $((need_kib / 1024)) MiB free under $out; $((free_kib / 1024)) MiB are" >&2
  exit 1
fi

rm -rf "${out:?}/runs" "$out/$v" "$out/$name.run" "$out/.stamp"
work=$(mktemp -d "$out/.build.XXXXXX")
trap 'rm -rf "$work"' EXIT
export SOURCE_DATE_EPOCH=1577836800
export LC_ALL=C
# shellcheck source=sim/bundles/lib.sh
source "$here/lib.sh"

echo "sim/bundles: ${size_mib} MiB of incompressible payload" >&2
head -c "$((size_mib * 1024 * 1024))" /dev/zero \
  | openssl enc -aes-128-ctr -nosalt -K 746f70737269646572626c61726765 -iv 0 >"$work/payload.bin" 2>/dev/null
[ "$(stat -c %s "$work/payload.bin")" = "$((size_mib * 1024 * 1024))" ] \
  || { echo "sim/bundles: the payload is not ${size_mib} MiB" >&2; exit 1; }

SDK_PAYLOAD="$work/payload.bin" DEB_COMPRESS=none build_version "$v" "$work/$v"
rm -f "$work/payload.bin"
gzip_wrapper
build_run "$v" "$work/$v" --nocomp --sha256
rm -rf "${work:?}/$v" "$work/build-$v" "$work/run-$v"
mv "$work/$name.run" "$out/$name.run"
bundle=$(scripts/topsrider-manifest extract "$out/$name.run" --cache "$out/runs" --json \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["bundle"])')
scripts/topsrider-manifest check "$bundle" >/dev/null
ln -sfn "runs/$(basename "$bundle")" "$out/$v"
echo "$stamp" >"$out/.stamp"
echo "$out"
