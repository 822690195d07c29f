# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shared body of scripts/topsrider-drift and scripts/topsrider-fabric:
run the check's playbook with this run's id and reports directory, read the
JSON report the run wrote, and turn it into the wrapper's exit status. Each
wrapper keeps its own exit codes and summary line; this file sits beside them
(in a checkout and in the installed collection) and they import it from there."""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.realpath(__file__))


def default_playbook(name):
    """playbooks/<name>.yml from a checkout; the FQCN from an installed collection."""
    local = os.path.join(HERE, "..", "playbooks", name + ".yml")
    return os.path.normpath(local) if os.path.isfile(local) else "gcu.topsrider." + name


def main(kind, playbook, description, exit_status, summary, argv=None):
    """kind: drift or fabric (reports <kind>-<id>.json, extra vars topsrider_<kind>_id
    and topsrider_reports_dir, $TOPSRIDER_<KIND>_PLAYBOOK); playbook: its name
    under playbooks/; exit_status(rc, report or None) -> exit status;
    summary(report, s, path, status) -> the line printed after the run."""
    name = "topsrider-" + kind
    parser = argparse.ArgumentParser(
        description=description,
        epilog="Other arguments go to ansible-playbook (-i INVENTORY, -e VAR=VALUE, -l LIMIT, ...).")
    parser.add_argument("--reports-dir", default=os.environ.get("TOPSRIDER_REPORTS_DIR") or
                        os.path.join(os.getcwd(), "reports"))
    parser.add_argument("--playbook", default=os.environ.get("TOPSRIDER_%s_PLAYBOOK" % kind.upper()) or
                        default_playbook(playbook))
    parser.add_argument("--ansible-playbook", default=os.environ.get("ANSIBLE_PLAYBOOK", "ansible-playbook"),
                        help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args(argv)
    reports = os.path.abspath(args.reports_dir)
    run_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-%d" % os.getpid()
    cmd = [args.ansible_playbook, args.playbook,
           "-e", json.dumps({"topsrider_%s_id" % kind: run_id, "topsrider_reports_dir": reports})] + rest
    try:
        rc = subprocess.call(cmd)
    except OSError as e:
        print("%s: cannot run %s: %s" % (name, args.ansible_playbook, e), file=sys.stderr)
        return exit_status(None, None)
    path = os.path.join(reports, "%s-%s.json" % (kind, run_id))
    try:
        with open(path) as f:
            report = json.load(f)
    except (IOError, OSError, ValueError) as e:
        print("%s: no report from this run (%s); ansible-playbook rc=%d" % (name, e, rc), file=sys.stderr)
        report = None
    status = exit_status(rc, report)
    if report is not None:
        print("%s: %s" % (name, summary(report, report.get("summary", {}), path, status)))
    return status
