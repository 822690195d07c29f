# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shared body of scripts/topsrider-drift and scripts/topsrider-fabric:
run the check's playbook with this run's id and reports directory, read the
JSON report the run wrote, and turn it into the wrapper's exit status. Each
wrapper keeps its own exit codes and summary line; this file sits beside them
(in a checkout and in the installed collection) and they import it from there.

Run from cron or systemd, the wrapper takes its settings from one environment
file (--env-file, $TOPSRIDER_ENV_FILE, or systemd's EnvironmentFile=; see
contrib/default/topsrider-drift): every KEY=VALUE in it is set for the run,
and these are the wrapper's own (<KIND> is DRIFT or FABRIC):
  TOPSRIDER_ANSIBLE_BIN        the directory of ansible-playbook (a virtualenv's
                               bin/), put first on PATH for the run
  TOPSRIDER_<KIND>_DIR         the directory to run in (inventory, ansible.cfg)
  TOPSRIDER_<KIND>_ARGS        ansible-playbook arguments (shell words)
  TOPSRIDER_REPORTS_DIR        where the reports go (default ./reports)
  TOPSRIDER_REPORTS_KEEP_DAYS  run reports older than this many days are
                               removed after a run (default 30; 0 keeps all)
  TOPSRIDER_TEXTFILE_DIR       node_exporter's textfile directory: the wrapper
                               writes topsrider_<kind>_run.prom there after
                               every run, run_ok 0 when the check could not run
                               or wrote no report (the alert
                               TopsRider<Kind>RunFailed), so a check that
                               cannot start is seen at once.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time

# PATH for a run started with no PATH at all (cron's env, env -i).
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class SettingsError(Exception):
    pass


def read_env_file(path):
    """The settings of an environment file, as systemd's EnvironmentFile=
    reads them: KEY=VALUE lines, blank lines and # or ; comments skipped, an
    optional `export `, a value in matching single or double quotes unquoted,
    nothing expanded."""
    env = {}
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except (IOError, OSError) as e:
        raise SettingsError("cannot read the environment file %s: %s" % (path, e))
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("export "):
            line = line[len("export "):].lstrip()
        key, sep, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not KEY.match(key):
            raise SettingsError("%s:%d: not KEY=VALUE: %s" % (path, number, line))
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        env[key] = value
    return env


def _atomic():
    """The collection's one atomic writer (plugins/module_utils/_atomic.py,
    standard library only), loaded by its path beside this script: the
    wrappers run outside Ansible's collection loader."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "plugins", "module_utils", "_atomic.py")
    spec = importlib.util.spec_from_file_location("topsrider_atomic", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_run_metric(directory, kind, report_written, status, now):
    """<directory>/topsrider_<kind>_run.prom, written whole (renamed into place):
    whether this run wrote its report, the wrapper's exit status, when it ended."""
    metrics = (("run_ok", "1 when the last run of the %s check wrote its report; 0 when it could not run "
                          "or stopped before (no ansible-playbook, bad settings, a crash)." % kind,
                1 if report_written else 0),
               ("run_exit_status", "The exit status of the last run of topsrider-%s." % kind, status),
               ("run_timestamp_seconds", "When the last run of the %s check ended." % kind, "%.3f" % now))
    text = "".join("# HELP topsrider_%s_%s %s\n# TYPE topsrider_%s_%s gauge\ntopsrider_%s_%s %s\n"
                   % (kind, name, help_text, kind, name, kind, name, value) for name, help_text, value in metrics)
    os.makedirs(directory, exist_ok=True)
    _atomic().write_atomic(os.path.join(directory, "topsrider_%s_run.prom" % kind), text, 0o644,
                           prefix=".topsrider-%s-run-" % kind)


def prune_reports(directory, kind, keep_days, now):
    """Remove the run reports of this kind (<kind>-<id>.json, .md, .xml, .prom;
    never <kind>-latest.*) last written more than keep_days days ago; the
    paths removed. keep_days 0 keeps them all."""
    if keep_days <= 0 or not os.path.isdir(directory):
        return []
    name = re.compile(r"^%s-(?!latest\.)[A-Za-z0-9][A-Za-z0-9._+~-]*\.(json|md|xml|prom)\Z" % re.escape(kind))
    removed = []
    for entry in sorted(os.listdir(directory)):
        path = os.path.join(directory, entry)
        if name.match(entry) and os.path.isfile(path) and now - os.path.getmtime(path) > keep_days * 86400:
            os.unlink(path)
            removed.append(path)
    return removed


HERE = os.path.dirname(os.path.realpath(__file__))


def default_playbook(name):
    """playbooks/<name>.yml from a checkout; the FQCN from an installed collection."""
    local = os.path.join(HERE, "..", "playbooks", name + ".yml")
    return os.path.normpath(local) if os.path.isfile(local) else "gcu.topsrider." + name


def settings(kind, argv):
    """Load the environment file (--env-file or $TOPSRIDER_ENV_FILE) into
    this process's environment; the run's settings from the environment."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--env-file", default=os.environ.get("TOPSRIDER_ENV_FILE"))
    known, dummy = pre.parse_known_args(argv)
    if known.env_file:
        os.environ.update(read_env_file(known.env_file))
    bin_dir = os.environ.get("TOPSRIDER_ANSIBLE_BIN", "")
    os.environ["PATH"] = ((bin_dir + os.pathsep) if bin_dir else "") + (os.environ.get("PATH") or DEFAULT_PATH)
    workdir = os.environ.get("TOPSRIDER_%s_DIR" % kind.upper())
    if workdir:
        try:
            os.chdir(workdir)
        except OSError as e:
            raise SettingsError("TOPSRIDER_%s_DIR %s: %s" % (kind.upper(), workdir, e))
    try:
        extra = shlex.split(os.environ.get("TOPSRIDER_%s_ARGS" % kind.upper(), ""))
        keep = int(os.environ.get("TOPSRIDER_REPORTS_KEEP_DAYS", "30"))
    except ValueError as e:
        raise SettingsError("TOPSRIDER_%s_ARGS or TOPSRIDER_REPORTS_KEEP_DAYS: %s" % (kind.upper(), e))
    return {"bin": bin_dir, "extra": extra, "keep_days": keep,
            "textfile_dir": os.environ.get("TOPSRIDER_TEXTFILE_DIR")}


def main(kind, playbook, description, exit_status, summary, argv=None):
    """kind: drift or fabric (reports <kind>-<id>.json, extra vars topsrider_<kind>_id
    and topsrider_reports_dir, $TOPSRIDER_<KIND>_PLAYBOOK); playbook: its name
    under playbooks/; exit_status(rc, report or None) -> exit status;
    summary(report, s, path, status) -> the line printed after the run."""
    name = "topsrider-" + kind
    try:
        conf = settings(kind, argv)
    except SettingsError as e:
        print("%s: %s; nothing was run" % (name, e), file=sys.stderr)
        textfile_dir = os.environ.get("TOPSRIDER_TEXTFILE_DIR")
        status = exit_status(None, None)
        if textfile_dir:
            write_run_metric(textfile_dir, kind, False, status, time.time())
        return status
    parser = argparse.ArgumentParser(
        description=description,
        epilog="Other arguments go to ansible-playbook (-i INVENTORY, -e VAR=VALUE, -l LIMIT, ...), after "
               "those of $TOPSRIDER_%s_ARGS." % kind.upper())
    parser.add_argument("--env-file", help="KEY=VALUE settings for a run from cron or systemd "
                        "(e.g. /etc/default/topsrider-%s; default $TOPSRIDER_ENV_FILE)" % kind)
    parser.add_argument("--reports-dir", default=os.environ.get("TOPSRIDER_REPORTS_DIR") or
                        os.path.join(os.getcwd(), "reports"))
    parser.add_argument("--playbook", default=os.environ.get("TOPSRIDER_%s_PLAYBOOK" % kind.upper()) or
                        default_playbook(playbook))
    parser.add_argument("--ansible-playbook", default=os.environ.get("ANSIBLE_PLAYBOOK") or (
        os.path.join(conf["bin"], "ansible-playbook") if conf["bin"] else "ansible-playbook"),
        help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args(argv)
    reports = os.path.abspath(args.reports_dir)
    run_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-%d" % os.getpid()
    cmd = [args.ansible_playbook, args.playbook,
           "-e", json.dumps({"topsrider_%s_id" % kind: run_id, "topsrider_reports_dir": reports})] + conf["extra"] + rest
    report = None
    try:
        rc = subprocess.call(cmd)
    except OSError as e:
        rc = None
        print("%s: cannot run %s: %s (PATH %s; set TOPSRIDER_ANSIBLE_BIN, the directory of ansible-playbook, "
              "in the environment file)" % (name, args.ansible_playbook, e, os.environ["PATH"]), file=sys.stderr)
    path = os.path.join(reports, "%s-%s.json" % (kind, run_id))
    if rc is not None:
        try:
            with open(path) as f:
                report = json.load(f)
        except (IOError, OSError, ValueError) as e:
            print("%s: no report from this run (%s); ansible-playbook rc=%d" % (name, e, rc), file=sys.stderr)
    status = exit_status(rc, report)
    if report is not None:
        print("%s: %s" % (name, summary(report, report.get("summary", {}), path, status)))
        for old in prune_reports(reports, kind, conf["keep_days"], time.time()):
            print("%s: removed %s (older than %d days, TOPSRIDER_REPORTS_KEEP_DAYS)" % (name, old, conf["keep_days"]))
    if conf["textfile_dir"]:
        write_run_metric(conf["textfile_dir"], kind, report is not None, status, time.time())
    return status
