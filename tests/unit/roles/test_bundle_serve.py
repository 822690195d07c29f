"""bundle_stage's peer server (roles/bundle_stage/files/bundle_serve.py) as the role runs it on a
node: a detached process that serves a bundle's files, stops when its time is up, and stops on
`stop` at once, also in the middle of requests (no signal handler that could hang it)."""
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

from conftest import TOP, load_script

SERVE = os.path.join(TOP, "roles", "bundle_stage", "files", "bundle_serve.py")
# The script's own marker and its own check of a pid (the one `stop` makes; a zombie's command line is empty).
BUNDLE_SERVE = load_script(os.path.join("roles", "bundle_stage", "files", "bundle_serve.py"), "bundle_serve")
MARKER = BUNDLE_SERVE.MARKER
alive = BUNDLE_SERVE._is_ours  # pylint: disable=protected-access


def serve(tmp_path, seconds=60):
    bundle = tmp_path / "bundle"
    bundle.mkdir(exist_ok=True)
    (bundle / "tops-sdk_2.5.136_amd64.deb").write_bytes(b"deb" * 1000)
    state = tmp_path / "serve.json"
    proc = subprocess.run([sys.executable, SERVE, MARKER, "serve", str(bundle), "127.0.0.1", "0", str(state),
                           str(seconds), str(tmp_path / "serve.log")],
                          stdout=subprocess.PIPE, universal_newlines=True, timeout=30, check=True)
    started = json.loads(proc.stdout)
    assert json.loads(state.read_text()) == started
    # The URL the peers fetch from, as the role takes it: the server says where it listens.
    assert started["url"] == "http://127.0.0.1:%d" % started["port"], started
    return started, state


def stop(state):
    proc = subprocess.run([sys.executable, SERVE, MARKER, "stop", str(state)], stdout=subprocess.PIPE,
                          universal_newlines=True, timeout=30, check=True)
    return json.loads(proc.stdout)


def get(port, name):
    with urllib.request.urlopen("http://127.0.0.1:%d/%s" % (port, name), timeout=10) as response:
        return response.read()


def signal_masks(pid, task):
    """A thread's blocked and the process's caught signals, from /proc/PID/task/TID/status."""
    with open("/proc/%d/task/%s/status" % (pid, task)) as handle:
        fields = dict(line.split(":", 1) for line in handle if ":" in line)
    return int(fields["SigBlk"], 16), int(fields["SigCgt"], 16)


def test_it_serves_the_files_only_and_stop_ends_it(tmp_path):
    started, state = serve(tmp_path)
    # SIGTERM is waited for (sigtimedwait in the main thread, blocked in every other thread), not
    # caught: no Python handler runs inside a lock the main thread holds.
    term = 1 << (signal.SIGTERM - 1)
    tasks = os.listdir("/proc/%d/task" % started["pid"])
    assert len(tasks) >= 2, tasks
    for task in tasks:
        blocked, caught = signal_masks(started["pid"], task)
        assert not caught & term
        assert blocked & term or task == str(started["pid"]), task
    assert get(started["port"], "tops-sdk_2.5.136_amd64.deb") == b"deb" * 1000
    for name in ("", ".hidden", "../serve.json"):
        try:
            get(started["port"], name)
            raise AssertionError("served %r" % name)
        except urllib.error.HTTPError as err:
            assert err.code == 404, name
    assert stop(state) == {"stopped": True}
    assert not alive(started["pid"])
    assert not state.exists()
    assert "GET /tops-sdk_2.5.136_amd64.deb HTTP/1.1\" 200" in (tmp_path / "serve.log").read_text()


def test_it_stops_by_itself_when_its_time_is_up(tmp_path):
    started, state = serve(tmp_path, seconds=1)
    deadline = time.time() + 10
    while alive(started["pid"]) and time.time() < deadline:
        time.sleep(0.1)
    assert not alive(started["pid"])
    assert not state.exists()


def test_stop_in_the_middle_of_requests_ends_it_at_once_every_time(tmp_path):
    # A SIGTERM that lands while the server starts a request's thread: the
    # handler the server had until 2026-12-07 started a thread itself and
    # could hang on the lock the interrupted start held.
    for attempt in range(8):
        (tmp_path / str(attempt)).mkdir()
        started, state = serve(tmp_path / str(attempt))
        done = threading.Event()

        def hammer(port=started["port"], done=done):
            while not done.is_set():
                try:
                    get(port, "tops-sdk_2.5.136_amd64.deb")
                except (OSError, http.client.HTTPException):
                    return

        clients = [threading.Thread(target=hammer) for dummy in range(6)]
        for client in clients:
            client.start()
        time.sleep(0.05 * (attempt % 4))
        began = time.monotonic()
        assert stop(state) == {"stopped": True}
        assert time.monotonic() - began < 4, "needed SIGKILL on attempt %d" % attempt
        done.set()
        for client in clients:
            client.join()
        assert not alive(started["pid"])


def test_stop_leaves_a_process_that_is_not_the_server_alone(tmp_path):
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        state = tmp_path / "serve.json"
        state.write_text(json.dumps({"pid": other.pid}))
        assert stop(state) == {"stopped": False}
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_the_url_puts_an_ipv6_address_in_brackets():
    assert BUNDLE_SERVE.url("127.0.0.1", 8080) == "http://127.0.0.1:8080"
    assert BUNDLE_SERVE.url("node7.example.invalid", 80) == "http://node7.example.invalid:80"
    assert BUNDLE_SERVE.url("::1", 8080) == "http://[::1]:8080"
