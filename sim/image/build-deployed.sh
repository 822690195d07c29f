#!/usr/bin/env bash
# SIMULATOR: makes sure a node image with TopsRider 2.5.136 already deployed
# exists and prints its tag:
#   sim/image/build-deployed.sh         topsrider-sim/node-deployed:<hash> (and :latest)
#   sim/image/build-deployed.sh slurm   topsrider-sim/slurm-deployed:<hash> (and :latest),
#                                       the same on the Slurm image (sim/slurm/build.sh)
# The scenarios that only need nodes at a release to start from (drift,
# fabric, dist_launch, rollback_truth, fleet; slurm's nodes) use them, so they do not
# each pay a fresh deploy; their converge is the same deploy.yml, which then
# finds the nodes at the release (the fast path). A fresh deploy stays proven
# by the scenarios on topsrider-sim/node:latest (default, staging, signing,
# bullseye), the README test, the installed test and the perf check.
#
# How: a container of the image, deployed by this checkout's
# playbooks/deploy.yml with the 2.5.136 bundle (.cache/bundles, make bundles)
# and the settings those scenarios share, its simulated card state removed
# (sim-init makes it again from the new container's SIM_CARDS), stopped,
# committed. Rebuilt when the image under it, the bundle or the collection's
# code (plugins, roles, playbooks) changes.
#
# Needs: the project venv (ansible-playbook), the image under it and the bundles.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cd "$top"
case ${1:-node} in
  node) node_tag=$(sim/image/build.sh); flavour=node ;;
  slurm) node_tag=$(sim/slurm/build.sh); flavour=slurm ;;
  *) echo "sim-image-deployed: no image '$1' (node or slurm)" >&2; exit 2 ;;
esac
bundle=.cache/bundles/2.5.136
[ -f "$bundle/manifest.json" ] || { echo "sim-image-deployed: $bundle is missing (make bundles)" >&2; exit 2; }
inputs=$(git ls-files -co --exclude-standard plugins roles playbooks galaxy.yml meta sim/ansible.cfg | LC_ALL=C sort)
hash=$( { echo "$node_tag"; cat "$0"; for f in $inputs; do [ -f "$f" ] || continue; echo "$f"; stat -c %a "$f"; cat "$f"; done; \
          for f in "$bundle"/*; do echo "$f"; sha256sum <"$f"; done; } | sha256sum | cut -c1-12)
tag="topsrider-sim/$flavour-deployed:$hash"
if ! docker image inspect "$tag" >/dev/null 2>&1; then
  echo "sim-image-deployed: building $tag (deploy.yml of 2.5.136 on a node)" >&2
  name="simbuild-deployed-$$"
  work=$(mktemp -d "${TMPDIR:-/tmp}/sim-deployed.XXXXXX")
  trap 'docker rm -f "$name" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
  docker run -d --name "$name" --network host --shm-size 256m \
    --tmpfs /sys/bus/pci/devices:rw,mode=755 --tmpfs /sys/module:rw,mode=755 "$node_tag" >/dev/null
  cat >"$work/inventory.yml" <<EOF
t20:
  hosts:
    $name:
      ansible_connection: community.docker.docker
  vars:
    bundle_stage_serve_address: 127.0.0.1
    topsrider_bundle_dir: $top/$bundle
    topsrider_python: /opt/venvs/train/bin/python
    topsrider_reports_dir: $work/reports
EOF
  ANSIBLE_CONFIG=$top/sim/ansible.cfg ANSIBLE_COLLECTIONS_PATH=$top/.cache/collections \
    ANSIBLE_HOME=$work/ansible-home ANSIBLE_LOCAL_TEMP=$work/tmp ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3 \
    "$top/.venv/bin/ansible-playbook" -i "$work/inventory.yml" playbooks/deploy.yml >"$work/deploy.log" 2>&1 \
    || { tail -n 60 "$work/deploy.log" >&2; echo "sim-image-deployed: the deploy failed" >&2; exit 1; }
  # The simulated cards are the new container's (sim-init makes them from its SIM_CARDS), not this one's.
  docker exec "$name" rm -f /etc/topsrider-sim/state.json
  docker stop -t 1 "$name" >/dev/null
  docker commit "$name" "$tag" >/dev/null
fi
docker tag "$tag" "topsrider-sim/$flavour-deployed:latest"
echo "$tag"
