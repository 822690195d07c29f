#!/usr/bin/env bash
# Prints the Debian mirror this host's apt uses (deb822 .sources first, then
# one-line sources.list), so nothing in the project names a registry host.
set -euo pipefail
pick() {
  awk '
    /^[[:space:]]*#/ {next}
    /^URIs:/ {uris=$2}
    /^Suites:/ {for (i=2;i<=NF;i++) if ($i=="bookworm") ok=1}
    /^[[:space:]]*$/ {if (ok && uris!="") {print uris; exit} uris=""; ok=0}
    END {if (ok && uris!="") print uris}
  ' "$@" 2>/dev/null | head -n1
}
m=""
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] || continue
  m=$(pick "$f"); [ -n "$m" ] && break
done
if [ -z "$m" ] && [ -f /etc/apt/sources.list ]; then
  m=$(awk '$1=="deb" && $0 ~ / bookworm / { for (i=2;i<=NF;i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit} }' /etc/apt/sources.list)
fi
[ -n "$m" ] || { echo "host-mirror: no bookworm mirror in the host's apt sources" >&2; exit 1; }
echo "$m"
