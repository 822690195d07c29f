#!/usr/bin/env bash
# make demo: a simulated T20 fleet (sim/, clearly not real hardware) and the
# collection's playbooks against it over SSH.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
n=${1:-4}
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "Simulated T20 fleet: $n nodes (Docker, host networking, SSH on 127.0.0.1)"
sim/fleet up "$n"
inv=.sim/inventory.yml

say "What the fleet is (playbooks/fleet_info.yml over SSH)"
ansible-playbook -i "$inv" playbooks/fleet_info.yml

say "Done. The fleet stays up: 'sim/fleet down' (or make fleet-down) removes it."
