# SIMULATOR: the functions sim/bundles/build.sh (the sample bundles) and
# sim/bundles/build-large.sh (the bench's large variant) build bundles with.
# Sourced, not run. The caller sets: top (the checkout), work (a scratch
# directory), pythons (the wheels' Python minors, each PY or PY:TORCH when that
# wheel is built for another torch than torch_version), torch_version,
# SOURCE_DATE_EPOCH and LC_ALL=C; optionally
#   DEB_COMPRESS      dpkg-deb's -Z (default xz; none for incompressible payloads)
#   SDK_PAYLOAD       a file installed by tops-sdk as
#                     /usr/local/tops/share/tops-sdk-payload.bin (default: none)

# build_deb PKGDIR_TEMPLATE STAGING OUTDIR DEBVER
build_deb() {
  local tmpl=$1 root=$2 outdir=$3 debver=$4 size
  mkdir -p "$root/DEBIAN"
  size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
  sed -e "s/@DEBVER@/$debver/g" -e "s/@SIZE@/$size/g" "$tmpl/control" >"$root/DEBIAN/control"
  for s in preinst postinst prerm postrm; do
    if [ -f "$tmpl/$s" ]; then install -m 0755 "$tmpl/$s" "$root/DEBIAN/$s"; fi
  done
  find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
  dpkg-deb --root-owner-group -Z"${DEB_COMPRESS:-xz}" --build "$root" "$outdir" >/dev/null
  echo "sim/bundles: built $(basename "$outdir")/$(sed -n "s/^Package: //p" "$root/DEBIAN/control")" >&2
}

# build_version V OUTDIR
build_version() {
  local v=$1 dir=$2 major minor patch debver b cflags
  IFS=. read -r major minor patch <<<"$v"
  debver="$v-1"
  b="$work/build-$v"
  mkdir -p "$dir" "$b"
  cflags=(-O2 -fPIC -Wall -Werror -DTOPS_MAJOR="$major" -DTOPS_MINOR="$minor"
          -DTOPS_PATCH="$patch" -I sim/bundles/src -ffile-prefix-map="$top"=.)

  # tops-sdk: runtime library (soname libtopsrt.so.2), header, tops-version.
  local r="$b/tops-sdk"
  mkdir -p "$r/usr/local/tops/lib" "$r/usr/local/tops/include" "$r/usr/local/tops/bin"
  gcc "${cflags[@]}" -shared -Wl,-soname,libtopsrt.so."$major" -o "$r/usr/local/tops/lib/libtopsrt.so.$v" sim/bundles/src/topsrt.c
  ln -s "libtopsrt.so.$v" "$r/usr/local/tops/lib/libtopsrt.so.$major"
  ln -s "libtopsrt.so.$major" "$r/usr/local/tops/lib/libtopsrt.so"
  install -m 0644 sim/bundles/src/topsrt.h "$r/usr/local/tops/include/topsrt.h"
  # Static: built here against bookworm's glibc (2.36) it would need GLIBC_2.34 and
  # not start on the bullseye node (2.31); vendors build on old distributions for that.
  # tops-sdk's control says libc6 (>= 2.31): both node OSes (deb_bundle refuses a
  # node whose libc6 is older, before anything changes).
  gcc "${cflags[@]}" -static -o "$r/usr/local/tops/bin/tops-version" sim/bundles/src/tops-version.c
  printf '%s\n' "$v" >"$r/usr/local/tops/version"
  if [ -n "${SDK_PAYLOAD:-}" ]; then
    mkdir -p "$r/usr/local/tops/share"
    cp "$SDK_PAYLOAD" "$r/usr/local/tops/share/tops-sdk-payload.bin"
    chmod 0644 "$r/usr/local/tops/share/tops-sdk-payload.bin"
  fi
  build_deb sim/bundles/debian/tops-sdk "$r" "$dir" "$debver"

  # topsfactor
  r="$b/topsfactor"
  mkdir -p "$r/usr/local/tops/lib"
  gcc "${cflags[@]}" -shared -Wl,-soname,libtopsfactor.so -o "$r/usr/local/tops/lib/libtopsfactor.so" sim/bundles/src/topsfactor.c
  build_deb sim/bundles/debian/topsfactor "$r" "$dir" "$debver"

  # tops-eccl: libeccl.so with ecclGetVersion/ecclGetVersionString
  r="$b/tops-eccl"
  mkdir -p "$r/usr/local/tops/lib" "$r/usr/local/tops/include"
  gcc "${cflags[@]}" -shared -Wl,-soname,libeccl.so -o "$r/usr/local/tops/lib/libeccl.so" sim/bundles/src/eccl.c
  install -m 0644 sim/bundles/src/eccl.h "$r/usr/local/tops/include/eccl.h"
  build_deb sim/bundles/debian/tops-eccl "$r" "$dir" "$debver"
  cp -a "$r" "$b/tops-eccl-staging"

  local entry py torch
  for entry in "${pythons[@]}"; do
    py=${entry%%:*} torch=$torch_version
    [ "$entry" = "$py" ] || torch=${entry#*:}
    python3 sim/wheel/build_wheel.py --out "$dir" --stack-version "$v" --python "$py" \
      --torch "$torch" >/dev/null
  done
  scripts/topsrider-manifest create "$dir" --version "$v" >/dev/null
}

# The vendor's installer shape: a makeself .run (Debian's makeself) holding the
# debs in subdirectories, one torch_gcu wheel per Python minor and an
# install.sh that the collection never runs (it exits 1).
# build_run V DIR COMPRESSION-ARGS...
build_run() {
  local v=$1 dir=$2 name="TopsRider_t2x_${1}_deb_amd64" tree
  shift 2
  tree="$work/run-$v/$name"
  mkdir -p "$tree/sdk" "$tree/distributed" "$tree/framework"
  cp "$dir"/tops-sdk_*.deb "$dir"/topsfactor_*.deb "$tree/sdk/"
  cp "$dir"/tops-eccl_*.deb "$tree/distributed/"
  cp "$dir"/*.whl "$tree/framework/"
  install -m 0755 sim/bundles/run/install.sh "$tree/install.sh"
  find "$tree" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
  # Same inputs, same bytes: relative paths (the header records its command
  # line), sorted tar with fixed owners and times, and gzip without its time
  # stamp (makeself calls gzip by name: a wrapper adds -n).
  (cd "$work/run-$v" && PATH="$work/bin:$PATH" makeself --quiet "$@" \
    --packaging-date "Wed Jan  1 00:00:00 UTC 2020" \
    --tar-extra "--sort=name --owner=0 --group=0 --numeric-owner --mtime=@$SOURCE_DATE_EPOCH" \
    "$name" "$name.run" "ENFLAME TOPSRIDER PACKAGE" ./install.sh)
  mv "$work/run-$v/$name.run" "$work/$name.run"
  echo "sim/bundles: built $name.run" >&2
}

# gzip without its time stamp, for build_run (makeself calls gzip by name).
gzip_wrapper() {
  mkdir -p "$work/bin"
  printf '#!/bin/sh\nexec %s -n "$@"\n' "$(command -v gzip)" >"$work/bin/gzip"
  chmod 0755 "$work/bin/gzip"
}
