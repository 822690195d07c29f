# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
#
# topsrider-slurm-gate: the gcu.topsrider node health gate for Slurm
# (installed by the role gcu.topsrider.slurm_node; docs/slurm.md).
#
# Runs as the node's Prolog (a job is about to start) and, when configured,
# as its HealthCheckProgram (every HealthCheckInterval seconds, on drained
# nodes too). Checks, within a deadline (default 10 s):
#   the accelerator driver is loaded, the expected card count is seen, every
#   card is healthy (efsmi -q / nvidia-smi, each with a timeout), the deployed
#   release is the expected one (the local facts the deploy writes) - the one
#   the node's Slurm feature tops_<release> names, which a deploy with
#   topsrider_scheduler: slurm sets after it proved the node, else the release
#   the role recorded -, the environment file is present.
# On a problem it drains the node with a reason that starts with
# "topsrider:" and names the problem, and (as a prolog) exits 1 so that Slurm
# requeues the batch job instead of running it here. A node drained by this
# gate (reason "topsrider: ...") is resumed by the next passing check; a node
# drained for any other reason is never touched. It never drains more than
# max_drain_share of the cluster's nodes (counting the nodes it drained): past
# that it only logs and lets the job run. A gate that runs out of time drains
# with a reason that names the gate timeout, not the cards.
#
# A prolog that lets the job start writes the job's file,
# <jobs_dir>/<job id>.json (root-owned, mode 0644):
#   {"job_id": "4242", "user": "alice", "cards": [0, 1]}
# the cards from SLURM_JOB_GPUS (gres/gpu) or else this node's GRES indexes
# in `scontrol show job -d <id>`, its host lists expanded by Slurm's own
# `scontrol show hostnames` (cards it cannot tell get no file and the job
# still runs: the file labels cards, it never decides whether the node is
# fit). Run as the Epilog (SLURM_SCRIPT_CONTEXT epilog_slurmd, or installed
# under a name that contains "epilog") it removes that file and always
# exits 0. The card exporter reads these files to label
# each card with its job (plugins/module_utils/_card_jobs.py).
#
#   topsrider-slurm-gate [--config FILE] [--mode prolog|epilog|health|check|config] [--node NAME]
#   check: run the checks and print the verdict; never drains or resumes
#   (what a site's NHC runs: docs/slurm.md).
#   config: only validate the configuration file.
# Exit: 0 pass (or nothing done), 1 node not fit (prolog: job requeued),
# 2 bad configuration or usage.
# Runs on the node's Python 3.8 or later (the role installs it with a
# #!/usr/bin/python3 line, slurm_node_gate_python); standard library only.
import argparse
import json
import os
import re
import subprocess
import sys
import time

REASON_PREFIX = "topsrider:"
DEFAULT_CONFIG = "/etc/topsrider/slurm-gate.json"
DEFAULTS = {
    "vendor": "enflame",
    "expected_cards": None,
    "release": None,
    "facts_file": "/etc/ansible/facts.d/topsrider.fact",
    "env_file": "/etc/profile.d/topsrider.sh",
    "deadline_s": 10.0,
    "command_timeout_s": 5.0,
    "max_drain_share": 0.25,
    "efsmi": "/usr/sbin/efsmi",
    "nvidia_smi": "/usr/bin/nvidia-smi",
    "scontrol": "/usr/bin/scontrol",
    "sinfo": "/usr/bin/sinfo",
    "node_name": None,
    "log_file": "/var/log/topsrider-slurm-gate.log",
    # false: as HealthCheckProgram the gate only resumes the nodes it drained
    # (drains are left to the prolog, when a job is about to land).
    "health_drains": True,
    # The node feature that names the release the node runs (set by deploy.yml).
    "feature_prefix": "tops_",
    # Where a prolog writes each job's file (its cards) and the epilog removes
    # it; "" writes none.
    "jobs_dir": "/run/topsrider/jobs",
}
# The vendor's Slurm GRES name (the collection's vendor table, slurm_gres).
GRES = {"enflame": "gcu", "nvidia": "gpu"}
# Node states (sinfo %T, lower case) that count as drained or being drained.
DRAIN_STATES = ("drain", "drained", "draining")


class GateTimeout(Exception):
    """The gate itself ran out of time (its deadline or a command's timeout)."""


class ConfigError(Exception):
    pass


class Clock(object):
    """The gate's deadline; every command gets at most what is left of it."""

    def __init__(self, deadline_s, now=time.monotonic):
        self.now = now
        self.deadline_s = float(deadline_s)
        self.end = now() + self.deadline_s

    def left(self):
        return self.end - self.now()


def load_config(path):
    cfg = dict(DEFAULTS)
    try:
        with open(path) as f:
            data = json.load(f)
    except (IOError, OSError, ValueError) as e:
        raise ConfigError("cannot read %s: %s" % (path, e))
    if not isinstance(data, dict):
        raise ConfigError("%s: not a JSON object" % path)
    unknown = sorted(set(data) - set(DEFAULTS))
    if unknown:
        raise ConfigError("%s: unknown keys %s" % (path, ", ".join(unknown)))
    cfg.update(data)
    if cfg["vendor"] not in CARD_READERS:
        raise ConfigError("vendor must be %s, got %r" % (" or ".join(sorted(CARD_READERS)), cfg["vendor"]))
    if not isinstance(cfg["expected_cards"], int) or cfg["expected_cards"] < 1:
        raise ConfigError("expected_cards must be a whole number >= 1, got %r" % (cfg["expected_cards"],))
    share = cfg["max_drain_share"]
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
        raise ConfigError("max_drain_share must be a number from 0 to 1, got %r" % (share,))
    if not isinstance(cfg["feature_prefix"], str) or not cfg["feature_prefix"]:
        raise ConfigError("feature_prefix must be a non-empty string, got %r" % (cfg["feature_prefix"],))
    jobs_dir = cfg["jobs_dir"]
    if not isinstance(jobs_dir, str) or (jobs_dir and (not jobs_dir.startswith("/") or ".." in jobs_dir.split("/"))):
        raise ConfigError("jobs_dir must be an absolute path or empty, got %r" % (jobs_dir,))
    if not isinstance(cfg["health_drains"], bool):
        raise ConfigError("health_drains must be true or false, got %r" % (cfg["health_drains"],))
    for key in ("deadline_s", "command_timeout_s"):
        v = cfg[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
            raise ConfigError("%s must be a positive number, got %r" % (key, v))
    return cfg


def run_command(argv, clock, timeout_s, runner=subprocess.run):
    """(rc, stdout, stderr) of argv; GateTimeout when it takes too long."""
    limit = min(float(timeout_s), clock.left())
    if limit <= 0:
        raise GateTimeout("gate timed out after %gs before %s" % (clock.deadline_s, os.path.basename(argv[0])))
    try:
        p = runner(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                   universal_newlines=True, timeout=limit, check=False)
    except subprocess.TimeoutExpired:
        raise GateTimeout("gate timed out: %s gave no answer in %gs" % (os.path.basename(argv[0]), limit))
    except OSError as e:
        return 127, "", str(e)
    return p.returncode, p.stdout, p.stderr


def first_line(text):
    for line in (text or "").splitlines():
        line = line.strip()
        if line:
            return line[:120]
    return ""


def parse_efsmi_query(text):
    """{index: healthy} from `efsmi -q` (blocks 'DEV ID N' ... 'Health : True')."""
    cards = {}
    current = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("DEV ID"):
            try:
                current = int(line.split()[2])
            except (IndexError, ValueError):
                current = None
                continue
            cards[current] = None
        elif current is not None and ":" in line:
            key, _sep, value = line.partition(":")
            if key.strip().lower() == "health":
                cards[current] = value.strip().lower() == "true"
    return cards


def parse_nvidia_query(text):
    """{index: healthy} from nvidia-smi --query-gpu=index,ecc.errors.uncorrected.volatile.total."""
    cards = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 2 or not parts[0].isdigit():
            continue
        errors = parts[1]
        cards[int(parts[0])] = not (errors.isdigit() and int(errors) > 0)
    return cards


# How the gate reads each vendor's cards: the config key of the tool's path,
# its arguments, the command's name in problems, the parser ({index: healthy}),
# and a card's name in problems.
# The rest of the vendor's values come from the role (the collection's vendor
# table, plugins/module_utils/_vendors.py); this is what only the gate needs.
CARD_READERS = {
    "enflame": {"tool": "efsmi", "args": ["-q"], "says": "efsmi -q", "parse": parse_efsmi_query, "card": "gcu"},
    "nvidia": {"tool": "nvidia_smi", "args": ["--query-gpu=index,ecc.errors.uncorrected.volatile.total",
                                              "--format=csv,noheader,nounits"],
               "says": "nvidia-smi", "parse": parse_nvidia_query, "card": "gpu"},
}


def check_cards(cfg, clock, runner=subprocess.run):
    """Problems of the driver and the cards (a list of short texts)."""
    t = cfg["command_timeout_s"]
    reader = CARD_READERS[cfg["vendor"]]
    tool = cfg[reader["tool"]]
    rc, out, err = run_command([tool] + reader["args"], clock, t, runner)
    if rc == 127:
        return ["driver not loaded: %s not found" % tool]
    if rc != 0:
        why = first_line(err) or first_line(out)
        return ["driver not loaded: %s failed (rc=%d%s)" % (reader["says"], rc, ": " + why if why else "")]
    cards = reader["parse"](out)
    name = reader["card"]
    problems = []
    if len(cards) != cfg["expected_cards"]:
        problems.append("%d of %d cards seen" % (len(cards), cfg["expected_cards"]))
    bad = sorted(i for i, ok in cards.items() if ok is not True)
    if bad:
        names = ",".join("%s%d" % (name, i) for i in bad)
        problems.append("%s %s unhealthy" % ("card" if len(bad) == 1 else "cards", names))
    return problems


def feature_release(features, prefix):
    """The release the node's features name (tops_2.5.140 -> 2.5.140), None when none (or several) do."""
    found = [f[len(prefix):] for f in features or [] if prefix and f.startswith(prefix)]
    return found[0] if len(found) == 1 else None


def check_release(cfg, features=None):
    """The deployed release against the node's release feature when it has one
    (a deploy sets it once it proved the node), else the release the role recorded."""
    path = cfg["facts_file"]
    try:
        with open(path) as f:
            facts = json.load(f)
    except (IOError, OSError):
        return ["stack not deployed: %s missing" % path]
    except ValueError:
        return ["stack facts unreadable: %s" % path]
    version = facts.get("version") if isinstance(facts, dict) else None
    tagged = feature_release(features, cfg["feature_prefix"])
    if tagged is not None and version != tagged:
        return ["stack at %s, but the node's feature says %s%s" % (version, cfg["feature_prefix"], tagged)]
    if tagged is None and cfg["release"] and version != cfg["release"]:
        return ["stack at %s, expected %s" % (version, cfg["release"])]
    if not version:
        return ["stack facts without a version: %s" % path]
    return []


def check_env_file(cfg):
    path = cfg["env_file"]
    if path and not os.path.isfile(path):
        return ["environment file %s missing" % path]
    return []


def run_checks(cfg, clock, runner=subprocess.run, features=None):
    """All problems, cheapest checks first; GateTimeout when out of time.
    features: the node's Slurm features (None when unknown)."""
    problems = check_release(cfg, features) + check_env_file(cfg)
    problems += check_cards(cfg, clock, runner)
    if clock.left() <= 0:
        raise GateTimeout("gate timed out after %gs" % clock.deadline_s)
    return problems


SINFO_FORMAT = "%N|%T|%b|%E"


def _sinfo_rows(text):
    """{node: (state, features, reason)} from sinfo -h -N -o SINFO_FORMAT (or '%N|%T|%E')."""
    nodes = {}
    for line in text.splitlines():
        parts = line.split("|", 3)
        if len(parts) < 3 or not parts[0]:
            continue
        features = [f for f in parts[2].split(",") if f and f != "(null)"] if len(parts) == 4 else []
        nodes[parts[0]] = (parts[1].strip().lower().rstrip("*~#!%$@^-"), features, parts[-1].strip())
    return nodes


def parse_sinfo(text):
    """[(node, state, reason)], by node name."""
    return [(n, s, r) for n, (s, _f, r) in sorted(_sinfo_rows(text).items())]


def parse_features(text):
    """{node: [active features]}."""
    return dict((n, f) for n, (_s, f, _r) in _sinfo_rows(text).items())


def is_drained(state):
    return any(state.startswith(s) or ("+" + s) in state for s in DRAIN_STATES)


def ours(reason):
    return reason.startswith(REASON_PREFIX)


def decide(node, problems, timed_out, nodes, max_share):
    """What the gate does: (action, reason, message).

    action: 'pass' (nothing), 'resume', 'drain', 'hold' (not fit, already
    drained: no change), 'capped' (not fit, but draining would pass the share).
    """
    me = [x for x in nodes if x[0] == node]
    state, reason = (me[0][1], me[0][2]) if me else ("unknown", "")
    if not problems and not timed_out:
        if is_drained(state) and ours(reason):
            return "resume", None, "checks passed: resuming %s (was drained: %s)" % (node, reason)
        return "pass", None, "checks passed"
    text = "; ".join(problems)
    new_reason = "%s %s" % (REASON_PREFIX, text)
    if len(new_reason) > 240:
        new_reason = new_reason[:237] + "..."
    if is_drained(state):
        # Drained already (by us or by someone else): nothing to change; a
        # reason set by someone else is never overwritten.
        return "hold", None, "not fit (%s); %s already drained: %s" % (text, node, reason or "no reason")
    total = len(nodes)
    others = sum(1 for n, s, r in nodes if n != node and is_drained(s) and ours(r))
    allowed = int(total * max_share + 1e-9)
    if others + 1 > allowed:
        return "capped", None, (
            "not fit (%s), NOT drained: %d of %d nodes are drained by the gate already and "
            "max_drain_share %g allows %d" % (text, others, total, max_share, allowed))
    return "drain", new_reason, "not fit: draining %s: %s" % (node, new_reason)


# ---------------------------------------------------------------- job files
JOB_ID_RE = re.compile(r"^[0-9]+(_[0-9]+)?(\+[0-9]+)?\Z")  # as _card_jobs.JOB_ID_RE
_GRES_IDX_RE = re.compile(r"([A-Za-z0-9_]+)(?::[^,()]*)?\(IDX:([^)]*)\)")


def parse_indexes(text):
    """'0,2-3' -> [0, 2, 3]; None when text is not such a list."""
    out = set()
    for part in (text or "").split(","):
        m = re.match(r"^\s*(\d+)(?:-(\d+))?\s*\Z", part)
        if not m:
            return None
        first, last = int(m.group(1)), int(m.group(2) or m.group(1))
        if last < first:
            return None
        out.update(range(first, last + 1))
    return sorted(out)


class HostlistError(Exception):
    """Slurm could not expand a host list: the nodes it names are unknown."""


# What `scontrol show hostnames` prints for each node: one name a line, no
# blanks, no host list syntax (a broken expression comes back as "n]").
_NODE_NAME_RE = re.compile(r"^[^\s\[\],]+\Z")


def parse_hostnames(text):
    """The node names `scontrol show hostnames` prints, one a line; None when a
    line is not a node name (an error message, a piece of host list syntax)."""
    names = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return names if all(_NODE_NAME_RE.match(n) for n in names) else None


def read_hostnames(cfg, host_list, clock, runner=subprocess.run):
    """The nodes of a host list ('n[01-02,5],gpu1') as Slurm's own parser expands
    them: `scontrol show hostnames HOST_LIST` (no slurmctld needed). HostlistError
    when scontrol fails, prints no names (it says "Invalid hostlist" on stderr and
    exits 0) or prints something that is not a list of names; GateTimeout when it
    gives no answer in time."""
    argv = [cfg["scontrol"], "show", "hostnames", host_list]
    rc, out, err = run_command(argv, clock, cfg["command_timeout_s"], runner)
    names = parse_hostnames(out) if rc == 0 else None
    if not names:
        why = first_line(err) or first_line(out) or "no output"
        raise HostlistError("scontrol show hostnames %s: %s (rc=%d)" % (host_list, why, rc))
    return names


def parse_job_nodes(text):
    """[(host list, GRES)] of the node lines of `scontrol show job -d`
    ('Nodes=n[1-2] CPU_IDs=0-3 Mem=0 GRES=gcu:2(IDX:0-1)' -> ('n[1-2]', 'gcu:2(IDX:0-1)'))."""
    found = []
    for line in text.splitlines():
        m = re.search(r"(?:^|\s)Nodes=(\S+)\s.*\bGRES=(\S*)", line)
        if m:
            found.append((m.group(1), m.group(2)))
    return found


def gres_indexes(gres_text, gres):
    """The card indexes of GRES `gres` in a node line's GRES= value
    ('gpu:tesla:1(IDX:0),gcu:3(IDX:4-6)', 'gcu' -> [4, 5, 6])."""
    cards = set()
    for name, idx in _GRES_IDX_RE.findall(gres_text):
        got = parse_indexes(idx) if name == gres else []
        cards.update(got or [])
    return sorted(cards)


def cards_from_scontrol(text, node, gres, hostnames):
    """This node's card indexes of GRES `gres` in `scontrol show job -d` output;
    None when no node line names the node. hostnames(host list) -> [names]
    (read_hostnames); its HostlistError goes to the caller: a line whose nodes
    are unknown may be this node's, so the cards are unknown, not none."""
    expanded = {}
    for host_list, gres_text in parse_job_nodes(text):
        if host_list not in expanded:
            expanded[host_list] = hostnames(host_list)
        if node in expanded[host_list]:
            return gres_indexes(gres_text, gres)
    return None


def job_cards(cfg, environ, node, clock, runner=subprocess.run):
    """(cards, how) of this job on this node: SLURM_JOB_GPUS (gres/gpu), else scontrol show job -d;
    cards None (unknown) when scontrol fails or cannot expand the job's host lists."""
    gres = GRES[cfg["vendor"]]
    if gres == "gpu" and parse_indexes(environ.get("SLURM_JOB_GPUS")) is not None:
        return parse_indexes(environ["SLURM_JOB_GPUS"]), "SLURM_JOB_GPUS"
    rc, text, err = run_command([cfg["scontrol"], "show", "job", "-d", environ["SLURM_JOB_ID"]], clock,
                                cfg["command_timeout_s"], runner)
    if rc != 0:
        return None, "scontrol show job -d: %s" % (first_line(err) or "rc=%d" % rc)
    try:
        cards = cards_from_scontrol(text, node, gres, lambda h: read_hostnames(cfg, h, clock, runner))
    except HostlistError as e:
        return None, str(e)
    if cards is None:
        return [], "scontrol show job -d names no GRES line of %s: no card" % node
    return cards, "scontrol show job -d"


def job_file(cfg, job_id):
    return os.path.join(cfg["jobs_dir"], "%s.json" % job_id)


def write_job_file(cfg, job):
    """<jobs_dir>/<job id>.json, written whole (a temporary file renamed), root's, mode 0644;
    the directories it creates mode 0755."""
    missing = []
    d = cfg["jobs_dir"]
    while not os.path.isdir(d):
        missing.append(d)
        d = os.path.dirname(d)
    for d in reversed(missing):
        try:
            os.mkdir(d)
        except FileExistsError:
            pass
        os.chmod(d, 0o755)
    path = job_file(cfg, job["job_id"])
    tmp = os.path.join(cfg["jobs_dir"], ".%s.json.tmp" % job["job_id"])
    with open(tmp, "w") as f:
        f.write(json.dumps(job, sort_keys=True) + "\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return path


def record_job(cfg, environ, node, runner=subprocess.run, now=time.monotonic, out=sys.stderr):
    """The prolog's job file (never fails the job: a file it cannot write is logged)."""
    job_id = environ.get("SLURM_JOB_ID", "")
    if not cfg["jobs_dir"]:
        return
    if not JOB_ID_RE.match(job_id):
        log(cfg, "%s: no job file: SLURM_JOB_ID %r is not a job id" % (node, job_id), out)
        return
    clock = Clock(cfg["command_timeout_s"], now)
    try:
        cards, how = job_cards(cfg, environ, node, clock, runner)
    except GateTimeout as e:
        cards, how = None, str(e)
    if cards is None:
        log(cfg, "%s: no job file for job %s: its cards are unknown (%s)" % (node, job_id, how), out)
        return
    job = {"job_id": job_id, "user": environ.get("SLURM_JOB_USER", ""), "cards": cards}
    try:
        write_job_file(cfg, job)
    except (IOError, OSError) as e:
        log(cfg, "%s: cannot write the job file of job %s: %s" % (node, job_id, e), out)


def forget_job(cfg, environ, node, out=sys.stderr):
    """The epilog: the job's file removed (none there is fine). Always 0: a failing
    epilog would drain the node."""
    job_id = environ.get("SLURM_JOB_ID", "")
    if cfg["jobs_dir"] and JOB_ID_RE.match(job_id):
        try:
            os.remove(job_file(cfg, job_id))
        except FileNotFoundError:
            pass
        except OSError as e:
            log(cfg, "%s: cannot remove the job file of job %s: %s" % (node, job_id, e), out)
    return 0


def script_mode(args, environ, prog):
    """--mode, else what Slurm runs the gate as (SLURM_SCRIPT_CONTEXT, the name it is installed under)."""
    if args.mode:
        return args.mode
    context = environ.get("SLURM_SCRIPT_CONTEXT", "")
    if context.startswith("epilog") or "epilog" in os.path.basename(prog):
        return "epilog"
    if context.startswith("prolog") or environ.get("SLURM_JOB_ID"):
        return "prolog"
    return "health"


def node_name(cfg, args, environ):
    return args.node or environ.get("SLURMD_NODENAME") or cfg["node_name"]


def log(cfg, message, stream=sys.stderr):
    line = "%s topsrider-slurm-gate: %s" % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), message)
    stream.write(line + "\n")
    path = cfg.get("log_file")
    if path:
        try:
            with open(path, "a") as f:
                f.write(line + "\n")
        except (IOError, OSError):
            pass


def main(argv=None, environ=None, runner=subprocess.run, now=time.monotonic, out=sys.stderr, prog=None):
    environ = os.environ if environ is None else environ
    ap = argparse.ArgumentParser(prog="topsrider-slurm-gate")
    ap.add_argument("--config", default=environ.get("TOPSRIDER_GATE_CONFIG", DEFAULT_CONFIG))
    ap.add_argument("--mode", choices=("prolog", "epilog", "health", "check", "config"))
    ap.add_argument("--node")
    args = ap.parse_args(argv)
    try:
        cfg = load_config(args.config)
    except ConfigError as e:
        out.write("topsrider-slurm-gate: bad configuration: %s\n" % e)
        return 2
    if args.mode == "config":
        return 0
    mode = script_mode(args, environ, sys.argv[0] if prog is None else prog)
    node = node_name(cfg, args, environ)
    if not node:
        out.write("topsrider-slurm-gate: no node name (SLURMD_NODENAME, --node or node_name)\n")
        return 2
    if mode == "epilog":
        return forget_job(cfg, environ, node, out)
    rc = verdict(cfg, mode, node, runner, now, out)
    if mode == "prolog" and rc == 0:
        record_job(cfg, environ, node, runner, now, out)
    return rc


def verdict(cfg, mode, node, runner, now, out):
    """Run the checks and act on them as `mode` (prolog, health, check): the exit status."""
    # The cluster's view first, with its own short timeout: this node's state,
    # reason and release feature, how many nodes are drained. A check without
    # it still runs (the release then is the one the role recorded).
    sclock = Clock(cfg["command_timeout_s"], now)
    try:
        rc, text, err = run_command([cfg["sinfo"], "-h", "-N", "-o", SINFO_FORMAT], sclock,
                                    cfg["command_timeout_s"], runner)
    except GateTimeout as e:
        rc, text, err = 1, "", str(e)
    features = parse_features(text).get(node) if rc == 0 else None
    clock = Clock(cfg["deadline_s"], now)
    timed_out = None
    try:
        problems = run_checks(cfg, clock, runner, features)
    except GateTimeout as e:
        timed_out = str(e)
        problems = [timed_out]
    if mode == "check":
        out.write("%s: %s\n" % (node, "; ".join(problems) if problems else "fit"))
        return 1 if problems else 0
    if rc != 0:
        log(cfg, "%s: cannot read the cluster (sinfo: %s); changing nothing%s" % (
            node, first_line(err) or "rc=%d" % rc, "; not fit: " + "; ".join(problems) if problems else ""), out)
        # Not fit and the share unknown: still exit 1. A prolog refuses the
        # job (Slurm then drains the node itself with "Prolog error"); under
        # NHC's check_cmd_status the check fails and NHC drains it.
        return 1 if problems else 0
    sclock = Clock(cfg["command_timeout_s"], now)
    nodes = parse_sinfo(text)
    action, reason, message = decide(node, problems, timed_out, nodes, cfg["max_drain_share"])
    if action == "drain" and mode == "health" and not cfg["health_drains"]:
        action, message = "report", "not fit (%s); not drained by the health check (health_drains is false)" % (
            "; ".join(problems))
    log(cfg, "%s [%s]: %s" % (node, mode, message), out)
    if action == "resume":
        rc, _out, err = run_command([cfg["scontrol"], "update", "nodename=" + node, "state=resume"],
                                    sclock, cfg["command_timeout_s"], runner)
        if rc != 0:
            log(cfg, "%s: scontrol resume failed: %s" % (node, first_line(err)), out)
        return 0
    if action == "drain":
        rc, _out, err = run_command([cfg["scontrol"], "update", "nodename=" + node, "state=drain",
                                     "reason=" + reason], sclock, cfg["command_timeout_s"], runner)
        if rc != 0:
            log(cfg, "%s: scontrol drain failed: %s" % (node, first_line(err)), out)
        return 1
    if action in ("hold", "report"):
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except GateTimeout as e:  # pragma: no cover - every command path catches it
        sys.stderr.write("topsrider-slurm-gate: %s\n" % e)
        sys.exit(1)
