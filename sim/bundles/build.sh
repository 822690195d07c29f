#!/usr/bin/env bash
# SIMULATOR: builds the sample TopsRider bundles (gcu.topsrider sim/bundles).
# No Enflame software: tiny C libraries compiled here, packed with dpkg-deb,
# plus the stand-in torch_gcu wheels from sim/wheel/build_wheel.py.
#
#   sim/bundles/build.sh        prints the bundles directory (.cache/bundles)
#
# Output (each dir has a manifest.json written by scripts/topsrider-manifest):
#   2.5.136/  2.5.140/              tops-sdk, topsfactor, tops-eccl debs and
#                                   torch_gcu wheels for Python 3.11 and 3.10
#                                   (torch 2.13.0) and 3.9 (bullseye's torch 1.7.0a0)
#   2.5.140-broken-postinst/        as 2.5.140, but tops-eccl's postinst exits 1
#   2.5.140-corrupt/                as 2.5.140, but topsfactor's deb bytes were
#                                   changed after the manifest was written
#   test-interrupt/                 test-only tops-sim-interrupt deb whose
#                                   postinst waits while /run/topsrider-sim-slow-postinst exists
#   TopsRider_t2x_<v>_deb_amd64.run for 2.5.136 (gzip, MD5) and 2.5.140 (xz,
#                                   MD5 + SHA256): makeself installers holding
#                                   the same debs (sdk/, distributed/), wheels
#                                   (framework/) and an install.sh that exits 1
#   TopsRider_t2x_2.5.140-corrupt_deb_amd64.run
#                                   as 2.5.140, one payload byte changed after
#                                   makeself wrote its checksums
# Rebuilds only when its inputs change (hash stamp); safe to run again.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=${TOPSRIDER_BUNDLES_DIR:-$top/.cache/bundles}
versions=(2.5.136 2.5.140)
# 3.11 and 3.10 for torch_version (the bookworm node's venv); 3.9 for Debian
# bullseye's own torch (the second node OS, sim/image/torch-version-bullseye).
torch_version=$(cat "$top/sim/image/torch-version")
pythons=(3.11 3.10 "3.9:$(cat "$top/sim/image/torch-version-bullseye")")
cd "$top"

for tool in gcc dpkg-deb python3 sha256sum makeself; do
  command -v "$tool" >/dev/null || { echo "sim/bundles: $tool is required" >&2; exit 1; }
done
[ -f sim/wheel/build_wheel.py ] || { echo "sim/bundles: sim/wheel/build_wheel.py is missing" >&2; exit 1; }

inputs=$(find sim/bundles sim/wheel scripts/topsrider-manifest plugins/module_utils/_manifest.py plugins/module_utils/_values.py \
  plugins/module_utils/_dpkg.py plugins/plugin_utils/_makeself.py sim/image/torch-version sim/image/torch-version-bullseye -type f ! -name '*.pyc' | LC_ALL=C sort)
stamp=$( { for f in $inputs; do echo "$f"; stat -c %a "$f"; cat "$f"; done; } | sha256sum | cut -c1-16)
all_dirs=("${versions[@]}" 2.5.140-broken-postinst 2.5.140-corrupt test-interrupt)
all_runs=()
for v in "${versions[@]}" 2.5.140-corrupt; do all_runs+=("TopsRider_t2x_${v}_deb_amd64.run"); done
up_to_date=1
[ "$(cat "$out/.stamp" 2>/dev/null)" = "$stamp" ] || up_to_date=0
for d in "${all_dirs[@]}"; do [ -f "$out/$d/manifest.json" ] || up_to_date=0; done
for r in "${all_runs[@]}"; do [ -f "$out/$r" ] || up_to_date=0; done
if [ "$up_to_date" = 1 ]; then
  echo "$out"
  exit 0
fi

mkdir -p "$out"
work=$(mktemp -d "$out/.build.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Fixed timestamps inside the debs, so the same inputs give the same bytes.
export SOURCE_DATE_EPOCH=1577836800
export LC_ALL=C

# build_deb, build_version, build_run, gzip_wrapper
# shellcheck source=sim/bundles/lib.sh
source "$here/lib.sh"

for v in "${versions[@]}"; do
  build_version "$v" "$work/$v"
done

# 2.5.140 with a tops-eccl whose postinst fails (same version, other bytes).
broken="$work/2.5.140-broken-postinst"
cp -a "$work/2.5.140" "$broken"
rm -f "$broken/tops-eccl_"*.deb "$broken/manifest.json"
build_deb sim/bundles/debian/tops-eccl-broken "$work/build-2.5.140/tops-eccl-staging" "$broken" 2.5.140-1
scripts/topsrider-manifest create "$broken" --version 2.5.140 >/dev/null

# 2.5.140 where one deb's bytes no longer match the manifest.
corrupt="$work/2.5.140-corrupt"
cp -a "$work/2.5.140" "$corrupt"
python3 - "$corrupt"/topsfactor_2.5.140-1_amd64.deb <<'EOF'
import sys
path = sys.argv[1]
with open(path, "r+b") as f:
    data = bytearray(f.read())
    i = len(data) // 2
    data[i] ^= 0xFF          # flip one byte in the middle: same size, other sha256
    f.seek(0)
    f.write(data)
EOF
if scripts/topsrider-manifest check "$corrupt" >/dev/null 2>&1; then
  echo "sim/bundles: the corrupt bundle still matches its manifest" >&2
  exit 1
fi

gzip_wrapper
build_run 2.5.136 "$work/2.5.136"
build_run 2.5.140 "$work/2.5.140" --xz --sha256
python3 - "$work/TopsRider_t2x_2.5.140_deb_amd64.run" "$work/TopsRider_t2x_2.5.140-corrupt_deb_amd64.run" <<'EOF'
import importlib.util, shutil, sys
spec = importlib.util.spec_from_file_location("_makeself", "plugins/plugin_utils/_makeself.py")
makeself = importlib.util.module_from_spec(spec)
spec.loader.exec_module(makeself)
header = makeself.read_header(sys.argv[1])
shutil.copy(sys.argv[1], sys.argv[2])
with open(sys.argv[2], "r+b") as f:
    f.seek(header["offset"] + header["totalsize"] // 2)   # one byte in the middle of the payload
    byte = f.read(1)
    f.seek(-1, 1)
    f.write(bytes([byte[0] ^ 0xFF]))
EOF
for r in "${all_runs[@]}"; do
  rc=0
  scripts/topsrider-manifest extract "$work/$r" "$work/check-$r" >/dev/null 2>&1 || rc=$?
  case "$r:$rc" in
    *-corrupt_*:1) ;;
    *-corrupt_*:*) echo "sim/bundles: $r was not refused (rc=$rc)" >&2; exit 1 ;;
    *:0) scripts/topsrider-manifest check "$work/check-$r" >/dev/null ;;
    *) echo "sim/bundles: $r does not extract (rc=$rc)" >&2; exit 1 ;;
  esac
done

# Test-only: a deb whose postinst can be held open so dpkg can be killed mid-install.
interrupt="$work/test-interrupt"
mkdir -p "$interrupt" "$work/build-interrupt/usr/local/tops/share"
echo "SIMULATOR test artefact (gcu.topsrider sim)" >"$work/build-interrupt/usr/local/tops/share/sim-interrupt.txt"
build_deb sim/bundles/debian/tops-sim-interrupt "$work/build-interrupt" "$interrupt" 1.0-1
scripts/topsrider-manifest create "$interrupt" --version 1.0 --product "TopsRider-sim-test" >/dev/null

for d in "${all_dirs[@]}"; do
  scripts/topsrider-manifest check "$work/$d" >/dev/null 2>&1 || [ "$d" = 2.5.140-corrupt ] \
    || { echo "sim/bundles: $d does not match its own manifest" >&2; exit 1; }
  rm -rf "${out:?}/$d"
  mv "$work/$d" "$out/$d"
done
for r in "${all_runs[@]}"; do mv -f "$work/$r" "$out/$r"; done
echo "$stamp" >"$out/.stamp"
echo "$out"
