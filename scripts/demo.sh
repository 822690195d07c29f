#!/usr/bin/env bash
# make demo: a simulated T20 fleet (sim/, clearly not real hardware) and the
# collection's real playbooks against it over SSH: deploy, verify, upgrade,
# rollback, drift found and repaired, with the fleet report after each.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
n=${1:-4}
bundles=$top/.cache/bundles
reports=$top/reports/demo
inv=.sim/inventory.yml
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
play() {
  # The report each playbook prints is the part worth reading; the rest goes to a log.
  local name=$1; shift
  local log=$reports/$name.log
  # Progress of the long steps shows as it happens: the ECCL probe's, the
  # copy's and the staging's lines (job_progress, bundle_push, bundle_progress),
  # a wait for a busy node or for another run's lock.
  set +e
  ansible-playbook -i "$inv" "$@" -e topsrider_reports_dir="$reports" 2>&1 | tee "$log" \
    | { grep --line-buffered -E '^[^ ]+: .*(: running, [0-9]+ s of [0-9]+ s|: (done|failed) after [0-9]+ s|\([0-9]+%\)|waiting until the node is free: .*|waiting for the node lock, .*)$' || true; }
  rc=${PIPESTATUS[0]}
  set -e
  # the last fleet report the run printed (tasks/finish.yml's report task,
  # a failed run's included: plain lines, printed as they are between the
  # task's heading and its result), then the recap
  awk '/^TASK \[/ { if (inb) last = out; inb = ($0 ~ /Report \| .*print it/); out = ""; next }
       inb && /^(ok|changed|fatal|skipping): \[|^PLAY / { last = out; inb = 0; next }
       inb { out = out $0 "\n" }
       END { if (inb) last = out; printf "%s", last }' "$log"
  sed -n '/PLAY RECAP/,$p' "$log"
  echo "(full output: $log, exit $rc)"
  return $rc
}

mkdir -p "$reports"
say "Simulated T20 fleet: $n nodes (Docker, host networking, SSH on 127.0.0.1)"
sim/fleet down >/dev/null
sim/fleet up "$n"

say "What the fleet is (playbooks/fleet_info.yml)"
ansible-playbook -i "$inv" playbooks/fleet_info.yml | sed -n '/Print the fleet table/,/PLAY RECAP/p' \
  | grep -v -e '^TASK \[' -e '^ok: \[' -e '^PLAY RECAP' -e '^$'

common=(-e topsrider_python=/opt/venvs/train/bin/python -e topsrider_expected_count=8)

say "Deploy TopsRider 2.5.136 (playbooks/deploy.yml)"
play deploy-2.5.136 playbooks/deploy.yml "${common[@]}" -e topsrider_bundle_dir="$bundles/2.5.136"

say "Deploy again: nothing to do (changed=0 on every node)"
play deploy-2.5.136-again playbooks/deploy.yml "${common[@]}" -e topsrider_bundle_dir="$bundles/2.5.136"

say "Verify, with a real all-reduce on every node (playbooks/verify.yml, collective level)"
play verify playbooks/verify.yml -e topsrider_probe_level=collective -e topsrider_expected_count=8

say "Upgrade to 2.5.140; t20-node-$n gets a bundle whose tops-eccl postinst fails"
play upgrade-2.5.140 playbooks/deploy.yml "${common[@]}" \
  -e "topsrider_bundle_dir={{ '$bundles/2.5.140-broken-postinst' if inventory_hostname == 't20-node-$n' else '$bundles/2.5.140' }}" \
  || echo "(expected: t20-node-$n failed, was restored to 2.5.136, and the others upgraded)"

say "Roll the upgraded nodes back to 2.5.136 (playbooks/rollback.yml)"
play rollback playbooks/rollback.yml --limit "t20:!t20-node-$n"

drift() {  # scripts/topsrider-drift: exit 0 clean, 3 drift, 4 failed/unreachable
  local rc=0
  scripts/topsrider-drift --reports-dir "$reports/drift" -i "$inv" "${common[@]}" \
    -e topsrider_bundle_dir="$bundles/2.5.136" >"$reports/drift-$1.log" 2>&1 || rc=$?
  sed -n '1,/^## Details/p' "$reports/drift/drift-latest.md" | grep -v '^## Details'
  echo "(drift check exit $rc; reports: $reports/drift/drift-latest.{json,md,xml,prom})"
}
say "Nightly drift check (scripts/topsrider-drift): the fleet is clean"
drift clean

say "Someone edits the ECCL environment on t20-node-2 by hand"
docker exec topsrider-sim-t20-2 sed -i 's/ECCL_DEBUG=WARN/ECCL_DEBUG=INFO/' /etc/profile.d/topsrider.sh
drift found
sed -n '/^## Details/,$p' "$reports/drift/drift-latest.md"

say "Deploy again repairs it; the next check is clean"
play repair-drift playbooks/deploy.yml "${common[@]}" -e topsrider_bundle_dir="$bundles/2.5.136"
drift fixed

say "Fleet after the story"
ansible-playbook -i "$inv" playbooks/fleet_info.yml | sed -n '/Print the fleet table/,/PLAY RECAP/p' \
  | grep -v -e '^TASK \[' -e '^ok: \[' -e '^PLAY RECAP' -e '^$'
# The minimal callback (not -o, whose oneline callback is deprecated): "host | CHANGED | rc=0 >>", then the output.
ANSIBLE_LOAD_CALLBACK_PLUGINS=1 ANSIBLE_STDOUT_CALLBACK=ansible.builtin.minimal \
  ansible -i "$inv" t20 -m ansible.builtin.command -a "dpkg-query -W -f '\${Package}=\${Version} ' tops-sdk topsfactor tops-eccl" \
  | sed -e 's/ | CHANGED | rc=0 >>$/:/'

say "Done. Reports in $reports. The fleet stays up: 'make fleet-down' removes it."
