#!/usr/bin/env bash
# Makes sure a Docker engine answers. When none does, installs Debian's
# docker.io (and debootstrap and makeself, which the simulator's image and
# sample .run installers need, prometheus for the units' promtool, gpg for the
# units' signatures, slurm-client for the units' scontrol, openssl for the
# metrics scenario's certificate) and starts dockerd with no bridge and no
# iptables rules, so that no container can land on a private-range network:
# every container uses host networking.
# Safe to run again: it does nothing when the engine already answers.
set -euo pipefail
log_dir=${DOCKERD_LOG_DIR:-$(cd "$(dirname "$0")/.." && pwd)/.cache}
mkdir -p "$log_dir"

need_pkgs=()
command -v dockerd >/dev/null 2>&1 || need_pkgs+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need_pkgs+=(debootstrap)
command -v makeself >/dev/null 2>&1 || need_pkgs+=(makeself)   # sim/bundles' .run installers
command -v promtool >/dev/null 2>&1 || need_pkgs+=(prometheus)  # promtool: contrib/prometheus/ rules (units)
command -v gpg >/dev/null 2>&1 || need_pkgs+=(gpg)   # the units make real OpenPGP keys and signatures
command -v gpg-agent >/dev/null 2>&1 || need_pkgs+=(gpg-agent)  # gpg makes and uses secret keys through it
command -v gpgv >/dev/null 2>&1 || need_pkgs+=(gpgv)  # the verifier (apt depends on it: always there on Debian)
command -v scontrol >/dev/null 2>&1 || need_pkgs+=(slurm-client)  # the units expand Slurm host lists with scontrol
command -v openssl >/dev/null 2>&1 || need_pkgs+=(openssl)  # molecule/metrics makes the exporter's TLS certificate
if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "ensure-docker: installing ${need_pkgs[*]} from Debian"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

if docker info >/dev/null 2>&1; then
  exit 0
fi

echo "ensure-docker: starting dockerd (--bridge=none --iptables=false), log in $log_dir/dockerd.log"
# setsid: the engine outlives the make that started it (a second run reuses it).
setsid nohup dockerd --bridge=none --iptables=false --ip-masq=false \
  >>"$log_dir/dockerd.log" 2>&1 </dev/null &
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    echo "ensure-docker: engine is up"
    exit 0
  fi
  sleep 1
done
echo "ensure-docker: dockerd did not answer within 60s; last lines of its log:" >&2
tail -20 "$log_dir/dockerd.log" >&2
exit 1
