# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The card exporter daemon (roles/card_exporter/files/topsrider-card-exporter)
run as a process on 127.0.0.1, its tool the simulator's efsmi reading a state
file that simctl edits, its library only the module_utils files
_card_metrics.EXPORTER_MODULE_UTILS names (what the role installs): values
served, a change seen after the next reading, a hung tool killed at --timeout
with the ages growing while scrapes still answer at once, each failure counted
by reason and logged once, 404 for other paths, SIGTERM a clean exit; the
Slurm jobs of the prolog's job files as labels; TLS and basic auth of a
web-config file (a self-signed certificate made with openssl, a bcrypt hash)."""
import base64
import http.client
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import ssl

import bcrypt
import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import TOP
from sim_node import EFSMI, Node
from test_node_python_floor import find_python

from ansible_collections.gcu.topsrider.plugins.module_utils import _card_metrics

DAEMON = os.path.join(TOP, "roles", "card_exporter", "files", "topsrider-card-exporter")
INTERVAL = "0.2"


def lib(tmp_path):
    """A library tree with only the files the role installs."""
    root = tmp_path / "lib"
    d = root / "ansible_collections" / "gcu" / "topsrider" / "plugins" / "module_utils"
    if root.exists():
        return str(root)
    d.mkdir(parents=True)
    for p in [d] + list(d.parents)[:4]:
        (p / "__init__.py").write_text("")
    for name in _card_metrics.EXPORTER_MODULE_UTILS:
        shutil.copy(os.path.join(TOP, "plugins", "module_utils", name + ".py"), str(d))
    return str(root)


class Exporter(object):
    def __init__(self, node, *extra, **kw):
        argv = [kw.get("python", sys.executable), DAEMON, "--lib", lib(node.tmp), "--listen", "127.0.0.1:0", "--interval", INTERVAL,
                "--timeout", kw.get("timeout", "2"), "--vendor", "enflame", "--tool", kw.get("tool", str(node.tool)),
                "--pci-root", node.env["SIM_PCI_ROOT"],
                "--jobs-dir", kw.get("jobs_dir", str(node.tmp / "jobs"))] + list(extra)
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=str(node.tmp))
        line = self.line(10)
        m = re.search(r"listening on 127\.0\.0\.1:(\d+) \((https?)", line)
        assert m, line
        self.url = "%s://127.0.0.1:%s" % (m.group(2), m.group(1))
        self.headers, self.context = {}, None

    def line(self, wait):
        ready, _w, _x = select.select([self.proc.stderr], [], [], wait)
        assert ready, "the exporter printed nothing within %ss" % wait
        return self.proc.stderr.readline().decode()

    def get(self, path="/metrics"):
        started = time.monotonic()
        req = urllib.request.Request(self.url + path, headers=self.headers)
        with urllib.request.urlopen(req, timeout=5, context=self.context) as r:
            body = r.read().decode()
            return r.status, r.headers["Content-Type"], body, time.monotonic() - started

    def metrics(self):
        return self.get()[2]

    def until(self, check, wait=10):
        """The first scrape for which check(text) is true (polled every 50 ms)."""
        deadline = time.monotonic() + wait
        while True:
            text = self.metrics()
            if check(text):
                return text
            assert time.monotonic() < deadline, "not seen within %ss; last scrape:\n%s" % (wait, text)
            time.sleep(0.05)

    def stop(self):
        """SIGTERM; returns (exit status, the rest of stderr)."""
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(10)
        return rc, self.proc.stderr.read().decode()


@pytest.fixture
def node(tmp_path):
    return Node(tmp_path)


@pytest.fixture
def exporters():
    started = []
    yield started
    for e in started:
        if e.proc.poll() is None:
            e.proc.kill()
            e.proc.wait()


def value(text, name, **labels):
    """The value of the sample `name` whose labels include `labels` (None when there is none)."""
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
    return None


def errors(text, reason):
    return value(text, "topsrider_exporter_read_errors_total", reason=reason)


def test_serves_the_cards_and_a_change_after_the_next_reading(node, exporters):
    node.simctl("card", "1", "temperature_c=44", "link_width=8")
    e = Exporter(node)
    exporters.append(e)
    # simctl writes the state (efsmi's readings) and then the PCI sysfs files (the link width):
    # a reading between the two has one without the other, as two sources on a node can. Wait for both.
    text = e.until(lambda t: value(t, "topsrider_card_temperature_celsius", card="1") == 44
                   and value(t, "topsrider_card_pcie_link_width", card="1") == 8)
    assert value(text, "topsrider_card_pcie_link_width", card="1", bus_id="0000:3e:00.0") == 8
    assert value(text, "topsrider_card_pcie_link_width_max", card="1") == 16
    assert value(text, "topsrider_card_info", card="3", firmware="10.19.3", model="T20") == 1  # the table's firmware
    assert value(text, "topsrider_exporter_interval_seconds") == float(INTERVAL)
    assert 0 <= value(text, "topsrider_card_reading_age_seconds", card="0") < 5
    assert all(errors(text, r) == 0 for r in _card_metrics.ERROR_REASONS)
    # promtool (Debian's prometheus package, as test_prometheus_rules) lints the exposition
    lint = subprocess.run(["promtool", "check", "metrics"], input=text, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert lint.returncode == 0, lint.stdout
    status, ctype, _body, _s = e.get()
    assert (status, ctype) == (200, _card_metrics.CONTENT_TYPE)

    node.simctl("card", "2", "temperature_c=95", "ecc_uncorrected=4", "link_width=4", "utilization_pct=50")
    text = e.until(lambda t: value(t, "topsrider_card_temperature_celsius", card="2") == 95
                   and value(t, "topsrider_card_pcie_link_width", card="2") == 4)
    assert value(text, "topsrider_card_ecc_uncorrected_errors_total", card="2") == 4
    assert value(text, "topsrider_card_pcie_link_width", card="2") == 4
    assert value(text, "topsrider_card_utilization_ratio", card="2") == 0.5

    assert e.get("/")[0:2] == (200, "text/html; charset=utf-8")
    with pytest.raises(urllib.error.HTTPError) as err:
        e.get("/metricsx")
    assert err.value.code == 404
    rc, log = e.stop()
    assert rc == 0 and log.strip().splitlines()[-1].endswith("stopped"), log
    assert "fails" not in log  # no failure, no line per reading


def test_a_hung_tool_is_killed_and_the_ages_grow_while_scrapes_answer(node, exporters):
    e = Exporter(node, timeout="0.3")
    exporters.append(e)
    e.until(lambda t: value(t, "topsrider_card_reading_age_seconds", card="0") is not None)
    node.simctl("set", "tool_hang=true")
    text = e.until(lambda t: errors(t, "timeout") >= 3)
    age = value(text, "topsrider_card_reading_age_seconds", card="0")
    assert age >= 0.5  # three readings of at least --timeout each since the last good one
    # the last good values are still served, and every scrape answers at once
    assert value(text, "topsrider_card_temperature_celsius", card="0") == 30
    times = [e.get()[3] for _n in range(20)]
    assert max(times) < 0.25, times
    later = e.metrics()
    assert value(later, "topsrider_card_reading_age_seconds", card="0") > age
    assert value(later, "topsrider_exporter_read_duration_seconds") >= 0.3
    # each hung run was killed with its process group: none is left behind
    hung = [p for p in os.listdir("/proc") if p.isdigit() and cmdline_has(p, node.env["SIM_STATE"])]
    assert len(hung) <= 1, hung  # at most the run in progress
    node.simctl("set", "tool_hang=false")
    back = time.time()
    text = e.until(lambda t: value(t, "topsrider_exporter_last_success_timestamp_seconds") > back)
    assert value(text, "topsrider_card_reading_age_seconds", card="0") < time.time() - back + 0.1
    rc, log = e.stop()
    assert rc == 0
    states = [line for line in log.splitlines() if "reading" in line]
    # One line when it fails, one when it recovers, never one per reading: the hang's three
    # timeouts and more are one line. On a loaded machine a later reading may time out too
    # (efsmi -q slower than 0.3 s); that is a failure and a recovery of their own, in turn.
    assert len(states) >= 2, log
    assert "reading fails (timeout)" in states[0] and "did not finish within 0.3s" in states[0]
    assert all(("reading fails" in line) == (n % 2 == 0) and ("reading recovered" in line) == (n % 2 == 1)
               for n, line in enumerate(states)), log


def cmdline_has(pid, text):
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            cmd = f.read().decode("utf-8", "replace")
        with open("/proc/%s/environ" % pid, "rb") as f:
            env = f.read().decode("utf-8", "replace")
    except OSError:
        return False
    return EFSMI in cmd and text in env


def test_failures_by_reason(node, exporters, tmp_path):
    # the tool is not there: missing_tool, and only the exporter's own series
    e = Exporter(node, tool=str(tmp_path / "no-efsmi"))
    exporters.append(e)
    text = e.until(lambda t: errors(t, "missing_tool") >= 2)
    assert value(text, "topsrider_card_temperature_celsius") is None
    assert value(text, "topsrider_exporter_reads_total") >= 2
    assert value(text, "topsrider_exporter_last_success_timestamp_seconds") is None
    assert "not an executable file" in e.stop()[1]

    e = Exporter(node)
    exporters.append(e)
    e.until(lambda t: value(t, "topsrider_card_healthy", card="0") == 1)
    node.simctl("set", "driver_loaded=false")  # efsmi fails (exit 1)
    text = e.until(lambda t: errors(t, "exit") >= 1)
    assert value(text, "topsrider_card_healthy", card="0") == 1  # the last good reading, ageing
    node.simctl("set", "driver_loaded=true")
    back = time.time()
    e.until(lambda t: (value(t, "topsrider_exporter_last_success_timestamp_seconds") or 0) > back)
    node.tool.write_text("#!/bin/sh\necho 'efsmi: not what you expect'\n")
    text = e.until(lambda t: errors(t, "parse") >= 1)
    rc, log = e.stop()
    assert rc == 0
    assert [re.sub(r".*reading (\w+)( \((\w+)\))?.*", r"\1 \3", line).strip()
            for line in log.splitlines() if "reading" in line] == ["fails exit", "recovered", "fails parse"]


def write_job(jobs_dir, job_id, user, cards):
    """A job file as the Slurm gate's prolog writes it (test_slurm_gate checks the gate writes this form)."""
    jobs_dir.mkdir(exist_ok=True)
    (jobs_dir / ("%s.json" % job_id)).write_text(json.dumps({"job_id": job_id, "user": user, "cards": cards}))


def test_jobs_from_the_prolog_files(node, exporters, tmp_path):
    jobs = tmp_path / "jobs"
    e = Exporter(node, jobs_dir=str(jobs))
    exporters.append(e)
    # no job files (a node outside Slurm): every card's holder series is empty, no error
    text = e.until(lambda t: value(t, "topsrider_card_holder_info", card="3") is not None)
    assert [value(text, "topsrider_card_holder_info", card=str(i), slurm_job="", user="") for i in range(4)] == [1] * 4
    assert errors(text, "jobs") == 0
    # efsmi lists no processes per card: no count rather than a made-up 0
    assert value(text, "topsrider_card_processes") is None
    write_job(jobs, "4242", "alice", [1, 2])
    write_job(jobs, "4243", "bob", [2])
    text = e.until(lambda t: value(t, "topsrider_card_holder_info", card="1", slurm_job="4242") == 1)
    assert value(text, "topsrider_card_holder_info", card="1", slurm_job="4242", user="alice") == 1
    assert value(text, "topsrider_card_holder_info", card="2", slurm_job="4242,4243", user="alice,bob") == 1
    assert value(text, "topsrider_card_holder_info", card="0", slurm_job="", user="") == 1
    assert "pids" not in text
    # the epilog removes a job's file: its cards are free again; a bad file is an error that names it
    (jobs / "4242.json").unlink()
    (jobs / "77.json").write_text('{"job_id": "78", "user": "eve", "cards": [0]}')
    text = e.until(lambda t: errors(t, "jobs") >= 1 and value(t, "topsrider_card_holder_info", card="1", slurm_job="") == 1)
    assert value(text, "topsrider_card_holder_info", card="2", slurm_job="4243", user="bob") == 1
    assert value(text, "topsrider_card_holder_info", card="0", slurm_job="", user="") == 1
    assert value(text, "topsrider_card_temperature_celsius", card="0") == 30
    rc, log = e.stop()
    assert rc == 0 and "77.json: names job 78" in log


def openssl_cert(tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
    return cert, key


def basic(user, password):
    return "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()


def test_tls_and_basic_auth_of_a_web_config(node, exporters, tmp_path):
    cert, key = openssl_cert(tmp_path)
    hashed = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(rounds=4)).decode()
    config = tmp_path / "web.yml"
    config.write_text("tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  prometheus: '%s'\n"
                      % (cert, key, hashed))
    e = Exporter(node, "--web-config", str(config))
    exporters.append(e)
    assert e.url.startswith("https://")
    e.context = ssl.create_default_context(cafile=str(cert))  # the certificate is verified, not ignored
    with pytest.raises(urllib.error.HTTPError) as err:
        e.get()
    assert err.value.code == 401 and err.value.headers["WWW-Authenticate"] == 'Basic realm="topsrider-card-exporter"'
    for wrong in (basic("prometheus", "wrong"), basic("nobody", "s3cret"), "Bearer s3cret"):
        e.headers = {"Authorization": wrong}
        with pytest.raises(urllib.error.HTTPError) as err:
            e.get()
        assert err.value.code == 401, wrong
    e.headers = {"Authorization": basic("prometheus", "s3cret")}
    text = e.until(lambda t: value(t, "topsrider_card_temperature_celsius", card="0") == 30)
    assert value(text, "topsrider_exporter_reads_total") >= 1
    # plain HTTP to the TLS port is no scrape
    with pytest.raises((urllib.error.URLError, ConnectionError, http.client.HTTPException)):
        urllib.request.urlopen(e.url.replace("https:", "http:") + "/metrics", timeout=5).read()
    # and the exporter still serves TLS afterwards
    assert e.get()[0] == 200
    assert e.stop()[0] == 0


def test_a_web_config_with_basic_auth_only_is_plain_http(node, exporters, tmp_path):
    config = tmp_path / "web.json"  # the form the role writes (JSON is YAML)
    config.write_text(json.dumps({"basic_auth_users": {"p": bcrypt.hashpw(b"pw", bcrypt.gensalt(4)).decode()}}))
    e = Exporter(node, "--web-config", str(config))
    exporters.append(e)
    assert e.url.startswith("http://")
    with pytest.raises(urllib.error.HTTPError) as err:
        e.get()
    assert err.value.code == 401
    e.headers = {"Authorization": basic("p", "pw")}
    assert e.get()[0] == 200
    assert e.stop()[0] == 0


@pytest.mark.parametrize("content, message", [
    ("tls_server_config:\n  cert_file: /nonexistent.pem\n  key_file: /nonexistent.key\n", "No such file"),
    ("basic_auth_users:\n  p: plaintext\n", "basic_auth_users.p must be a bcrypt hash"),
    ("http_server_config:\n  http2: true\n", "unknown or unsupported keys http_server_config"),
    ("tls_server_config:\n  cert_file: a.pem\n  key_file: /k\n", "cert_file must be an absolute path"),
    ("- a list\n", "not a mapping"),
])
def test_a_bad_web_config_is_refused_before_listening(tmp_path, content, message):
    config = tmp_path / "web.yml"
    config.write_text(content)
    proc = subprocess.run([sys.executable, DAEMON, "--lib", lib(tmp_path), "--vendor", "enflame", "--web-config",
                           str(config), "--check-web-config"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=30, check=False)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    config.write_text("{}\n")
    proc = subprocess.run([sys.executable, DAEMON, "--lib", lib(tmp_path), "--vendor", "enflame", "--web-config",
                           str(config), "--check-web-config"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr


def test_the_table_is_best_effort(node, exporters, tmp_path):
    """efsmi's table gives only the firmware: when it fails, -q's values are still served."""
    tool = tmp_path / "efsmi-q-only"
    tool.write_text("#!/bin/sh\n[ \"$1\" = -q ] && SIM_STATE='%s' exec '%s' '%s' -q\necho 'table: broken' >&2\nexit 3\n"
                    % (node.env["SIM_STATE"], sys.executable, EFSMI))
    tool.chmod(0o755)
    e = Exporter(node, tool=str(tool))
    exporters.append(e)
    text = e.until(lambda t: (errors(t, "exit") or 0) >= 1 and value(t, "topsrider_card_healthy", card="0") == 1)
    assert value(text, "topsrider_card_info", card="0", firmware="") == 1
    assert value(text, "topsrider_exporter_last_success_timestamp_seconds") is None  # not wholly successful
    rc, log = e.stop()
    assert rc == 0 and "table: broken" in log


def test_a_tool_of_no_known_name_needs_the_vendor(tmp_path):
    proc = subprocess.run([sys.executable, DAEMON, "--lib", lib(tmp_path), "--tool", sys.executable],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=30,
                          check=False)
    assert proc.returncode == 2 and "name the vendor (--vendor)" in proc.stderr
    proc = subprocess.run([sys.executable, DAEMON, "--lib", lib(tmp_path), "--vendor", "ascend"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=30,
                          check=False)
    assert proc.returncode == 2 and "unknown vendor 'ascend'" in proc.stderr


def test_runs_on_python_3_6(node, exporters):
    """The node floor of the daemon (standard library only, Python 3.6+)."""
    e = Exporter(node, python=find_python("3.6"))
    exporters.append(e)
    e.until(lambda t: value(t, "topsrider_card_temperature_celsius", card="3") == 30)
    assert e.stop()[0] == 0


def test_sigterm_while_the_tool_hangs(node, exporters):
    """SIGTERM stops the daemon at once, the hung tool killed with it."""
    node.simctl("set", "tool_hang=true")
    e = Exporter(node, timeout="30")
    exporters.append(e)
    deadline = time.monotonic() + 10
    while not [p for p in os.listdir("/proc") if p.isdigit() and cmdline_has(p, node.env["SIM_STATE"])]:
        assert time.monotonic() < deadline, "efsmi never started"
        time.sleep(0.05)
    started = time.monotonic()
    rc, log = e.stop()
    assert rc == 0 and time.monotonic() - started < 5 and "stopped" in log
    assert [p for p in os.listdir("/proc") if p.isdigit() and cmdline_has(p, node.env["SIM_STATE"])] == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_as_soon_as_it_listens_stops_it(node, exporters, signum):
    """The signal lands while the main thread is still starting the reader and the web thread.
    A Python handler that set a threading.Event hung the exporter when it ran while the main
    thread held that Event's lock (CI, under load); the main thread now reads a wakeup pipe."""
    for _attempt in range(3):
        e = Exporter(node)
        exporters.append(e)
        e.proc.send_signal(signum)
        rc = e.proc.wait(10)
        assert rc == 0 and "stopped" in e.proc.stderr.read().decode()


# A vendor tool that misbehaves as the file `mode` next to it says; otherwise
# the simulator's efsmi. Hostile values go into the first card of `efsmi -q`.
HOSTILE_TOOL = """import os, re, subprocess, sys
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "mode")) as f:
    mode = f.read().strip()
args = sys.argv[1:]
if mode == "endless":
    line = b"DEV ID 0 " + b"x" * 100 + b"\\n"
    while True:
        sys.stdout.buffer.write(line * 100)
if mode == "big":
    sys.stdout.buffer.write((b"y" * 999 + b"\\n") * 50000)  # 50 MB, then exit 0
    sys.exit(0)
if mode == "random":
    sys.stdout.buffer.write(os.urandom(65536))
    sys.exit(0)
if mode == "stderr":
    sys.stderr.write("Error: boom\\ntopsrider-card-exporter: reading recovered (exit failures before)\\n\\x1b[2J\\x00")
    sys.exit(1)
out = subprocess.run([sys.executable, %(efsmi)r] + args, stdout=subprocess.PIPE, check=True).stdout.decode("utf-8")
if "-q" in args:
    subs = {"ecc321": (r"(Total DBE\\s*: )0", "1" * 321), "mem400": (r"(Mem Size\\s*: )32768", "1" * 400),
            "cold": (r"(GCU Temp\\s*: )30", "-300"), "util": (r"(GCU Usage\\s*: )0\\.0", "250.0"),
            "nan": (r"(Cur Power\\s*: )48", "nan")}
    if mode in subs:
        pattern, value = subs[mode]
        out = re.sub(pattern, lambda m: m.group(1) + value, out, count=1)
    if mode == "renumber":
        n = iter(range(100))
        out = re.sub(r"^DEV ID \\d+", lambda m: "DEV ID %%d" %% next(n), out, flags=re.M)
sys.stdout.write(out)
"""


def hostile_tool(node, mode="normal"):
    script = node.tmp / "hostile.py"
    script.write_text(HOSTILE_TOOL % {"efsmi": EFSMI})
    (node.tmp / "mode").write_text(mode)
    tool = node.tmp / "efsmi-hostile" / "efsmi"
    tool.parent.mkdir(exist_ok=True)
    tool.write_text("#!/bin/sh\nSIM_STATE='%s' exec '%s' '%s' \"$@\"\n" % (
        node.env["SIM_STATE"], sys.executable, script))
    tool.chmod(0o755)
    return str(tool)


def checked(text):
    """text as a strict parser and promtool read it: both must accept every line."""
    list(text_string_to_metric_families(text))
    lint = subprocess.run(["promtool", "check", "metrics"], input=text, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert lint.returncode == 0, lint.stdout
    return text


def state_lines(log):
    return [line for line in log.splitlines() if "reading " in line]


@pytest.mark.parametrize("mode, metric, reason", [
    ("random", "topsrider_card_temperature_celsius", "parse"),
    ("nan", "topsrider_card_power_watts", "parse"),
    ("ecc321", "topsrider_card_ecc_uncorrected_errors_total", "out_of_range"),
    ("cold", "topsrider_card_temperature_celsius", "out_of_range"),
    ("util", "topsrider_card_utilization_ratio", "out_of_range"),
    ("mem400", "topsrider_card_memory_total_bytes", "out_of_range"),
])
def test_a_value_out_of_range_fails_the_reading_and_the_last_good_one_stays(node, exporters, mode, metric, reason):
    tool = hostile_tool(node)
    e = Exporter(node, tool=tool)
    exporters.append(e)
    good = checked(e.until(lambda t: value(t, metric, bus_id="0000:3d:00.0") is not None))
    before = value(good, metric, bus_id="0000:3d:00.0")
    (node.tmp / "mode").write_text(mode)
    text = checked(e.until(lambda t: errors(t, reason) >= 3))
    reads = value(text, "topsrider_exporter_reads_total")
    assert sum(errors(text, r) for r in _card_metrics.ERROR_REASONS) == errors(text, reason)
    assert errors(text, reason) <= reads
    # the last good value stays and its age grows: the card of the bad value only (or every card,
    # where the output cannot be parsed at all: random bytes, a power of "nan", a 400-digit memory size)
    assert value(text, metric, bus_id="0000:3d:00.0") == before
    first = value(text, "topsrider_card_reading_age_seconds", bus_id="0000:3d:00.0")
    assert first >= 0.4
    other = value(text, "topsrider_card_reading_age_seconds", bus_id="0000:3e:00.0")
    assert (other < first) == (mode not in ("mem400", "random", "nan"))
    # and the tool is still read, failing each time: later the age has grown and more reads have failed
    # (waited for together: under load a scrape can see the age grow before the next read ends)
    later = e.until(lambda t: value(t, "topsrider_card_reading_age_seconds", bus_id="0000:3d:00.0") > first + 0.3
                    and errors(t, reason) > errors(text, reason))
    assert errors(later, reason) > errors(text, reason)
    assert value(later, metric, bus_id="0000:3d:00.0") == before
    (node.tmp / "mode").write_text("normal")
    back = time.time()
    e.until(lambda t: (value(t, "topsrider_exporter_last_success_timestamp_seconds") or 0) > back)
    rc, log = e.stop()
    assert rc == 0
    lines = state_lines(log)
    assert len(lines) == 2, log  # one when it fails, one when it recovers
    assert "reading fails (%s)" % reason in lines[0] and "reading recovered" in lines[1]
    assert "1" * 30 not in log  # a long number is named by its length, never printed whole


@pytest.mark.parametrize("mode", ["endless", "big"])
def test_an_output_past_the_cap_is_cut_and_the_tool_killed(node, exporters, mode):
    tool = hostile_tool(node, mode)
    e = Exporter(node, tool=tool, timeout="5")
    exporters.append(e)
    text = checked(e.until(lambda t: errors(t, "too_large") >= 2, wait=20))
    assert value(text, "topsrider_exporter_read_duration_seconds") < 4  # cut at the cap, not at --timeout
    assert errors(text, "timeout") == 0
    with open("/proc/%d/status" % e.proc.pid) as f:
        rss_kib = int(re.search(r"VmHWM:\s*(\d+)", f.read()).group(1))
    assert rss_kib < 64 * 1024, rss_kib
    # no run of the tool is left behind
    left = [p for p in os.listdir("/proc") if p.isdigit() and cmdline_has_text(p, "hostile.py")]
    assert len(left) <= 1, left
    rc, log = e.stop()
    assert rc == 0
    lines = state_lines(log)
    assert len(lines) == 1 and "reading fails (too_large)" in lines[0], log


def cmdline_has_text(pid, text):
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            return text in f.read().decode("utf-8", "replace")
    except OSError:
        return False


def test_the_tools_stderr_is_one_quoted_line_of_the_log(node, exporters):
    tool = hostile_tool(node, "stderr")
    e = Exporter(node, tool=tool)
    exporters.append(e)
    checked(e.until(lambda t: errors(t, "exit") >= 3))
    rc, log = e.stop()
    assert rc == 0
    lines = log.splitlines()
    assert all(line.startswith("topsrider-card-exporter: ") for line in lines), log
    (fails,) = [line for line in lines if "reading" in line]
    assert "reading recovered" not in fails.split("stderr", 1)[0]
    said = "Error: boom\ntopsrider-card-exporter: reading recovered (exit failures before)\n\x1b[2J\x00"
    assert fails.endswith("stderr " + repr(said)), fails
    assert "\x1b" not in log and "\x00" not in log


def test_a_card_is_its_bus_id(node, exporters):
    tool = hostile_tool(node, "renumber")
    e = Exporter(node, tool=tool)
    exporters.append(e)
    text = checked(e.until(lambda t: value(t, "topsrider_card_info", card="3", bus_id="0000:41:00.0") is not None))
    node.simctl("card", "1", "temperature_c=41")
    node.simctl("card", "2", "temperature_c=42")
    e.until(lambda t: value(t, "topsrider_card_temperature_celsius", card="2") == 42)
    # card 1 (0000:3e:00.0) leaves the bus: the tool lists the others renumbered 0, 1, 2
    node.simctl("remove", "1")
    gone = time.time()
    text = checked(e.until(lambda t: value(t, "topsrider_card_info", card="2", bus_id="0000:41:00.0") is not None
                           and value(t, "topsrider_card_reading_age_seconds", bus_id="0000:3e:00.0") > 1.0))
    # the card that went keeps its last values, ageing, and is said to be missing
    assert value(text, "topsrider_card_temperature_celsius", bus_id="0000:3e:00.0", card="1") == 41
    assert value(text, "topsrider_card_missing_info", bus_id="0000:3e:00.0") == 1
    assert value(text, "topsrider_card_reading_age_seconds", bus_id="0000:3e:00.0") >= time.time() - gone - 0.5
    # the renumbered cards are fresh, each under its bus id with its new index as a label
    assert value(text, "topsrider_card_temperature_celsius", bus_id="0000:40:00.0", card="1") == 42
    for bus in ("0000:3d:00.0", "0000:40:00.0", "0000:41:00.0"):
        assert value(text, "topsrider_card_reading_age_seconds", bus_id=bus) < 1.0, bus
        assert value(text, "topsrider_card_missing_info", bus_id=bus) is None
    assert len([line for line in text.splitlines() if line.startswith("topsrider_card_info{")]) == 4
    node.simctl("restore", "1")
    text = checked(e.until(lambda t: value(t, "topsrider_card_missing_info", bus_id="0000:3e:00.0") is None))
    assert value(text, "topsrider_card_reading_age_seconds", bus_id="0000:3e:00.0") < 1.0
    rc, log = e.stop()
    assert rc == 0 and state_lines(log) == [], log


def load_daemon():
    """The daemon's file as a module (it has no .py suffix), for what needs a reading made to raise."""
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.SourceFileLoader("topsrider_card_exporter", DAEMON)
    spec = importlib.util.spec_from_loader("topsrider_card_exporter", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_an_exception_inside_a_reading_is_counted_and_logged_once(node, tmp_path, capsys, monkeypatch):
    daemon = load_daemon()
    from ansible_collections.gcu.topsrider.plugins.module_utils import _card_jobs
    args = daemon.argparse.Namespace(vendor="enflame", tool=str(node.tool), pci_root=node.env["SIM_PCI_ROOT"],
                                     jobs_dir=str(tmp_path / "jobs"), interval=15.0, timeout=10.0)
    e = daemon.Exporter(args, _card_metrics, _card_jobs)
    e.read_once()
    assert e.stats["errors"] == {} and len(e.entries) == 4
    good = dict((k, t) for k, (_e, t) in e.entries.items())

    def broken(*_a, **_k):
        raise RuntimeError("a bug\nwith a second line")
    monkeypatch.setattr(_card_metrics, "snapshot", broken)
    for _n in range(3):
        e.read_once()
    assert e.stats["reads"] == 4 and e.stats["errors"] == {"internal": 3}
    assert dict((k, t) for k, (_e, t) in e.entries.items()) == good  # the last good entries stay
    text = checked(e.scrape().decode())
    assert errors(text, "internal") == 3
    monkeypatch.undo()
    e.read_once()
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["topsrider-card-exporter: reading fails (internal): RuntimeError: a bug\\nwith a second line",
                     "topsrider-card-exporter: reading recovered (internal failures before)"], lines
