# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Serve one staged bundle to peer nodes over HTTP, for a bounded time (bundle_stage, peer staging).

Run on a node by the role as `python3 -c <this file> serve|stop ...` (Python 3.8+, stdlib only):

  serve DIR ADDRESS PORT STATEFILE SECONDS LOGFILE
        Start CPython's http.server (ThreadingHTTPServer) on ADDRESS:PORT (0: a free
        port the kernel picks) serving the files of DIR read-only, no directory
        listing, in a detached process that stops by itself after SECONDS. Prints
        {"port": ..., "pid": ..., "url": "http://ADDRESS:PORT"} (an IPv6 ADDRESS in
        brackets) once the socket listens, and writes the same to STATEFILE; every
        request is logged to LOGFILE (client, path, status, bytes).
  stop STATEFILE
        Stop the server named in STATEFILE if it is still this server (its
        command line is checked: a reused pid is left alone): SIGTERM, then
        SIGKILL if it is still there after 5 s. Prints {"stopped": true|false}
        (true: it was running and is gone).

The peers check every file's sha256 (module bundle_fetch) before they use it;
this server only hands out bytes.
"""
import functools
import http.server
import json
import os
import signal
import sys
import threading
import time

MARKER = "topsrider-bundle-serve"


class BundleHandler(http.server.SimpleHTTPRequestHandler):
    """Files only: no directory listing, no dotfiles, HEAD and GET; bodies sent with sendfile."""

    log_path = None

    def list_directory(self, path):
        self.send_error(404, "No listing")
        return None

    def send_head(self):
        name = self.path.split("?", 1)[0].lstrip("/")
        if not name or "/" in name or name.startswith("."):
            self.send_error(404, "Not a bundle file")
            return None
        return http.server.SimpleHTTPRequestHandler.send_head(self)

    def copyfile(self, source, outputfile):
        # The kernel copies file to socket (sendfile(2)); http.server's own
        # copy reads every byte into Python and writes it out again.
        self.connection.sendfile(source)

    def log_message(self, fmt, *args):  # pylint: disable=arguments-differ
        if not self.log_path:
            return
        line = "%s %s %s\n" % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), self.client_address[0], fmt % args)
        with open(self.log_path, "a") as log:
            log.write(line)


def _write_state(path, state):
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(state, handle)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def url(address, port):
    """Where the peers fetch from: http://ADDRESS:PORT, an IPv6 address in brackets."""
    return "http://%s:%d" % ("[%s]" % address if ":" in address else address, port)


def serve(directory, address, port, state_file, seconds, log_file):
    BundleHandler.log_path = log_file
    handler = functools.partial(BundleHandler, directory=directory)
    server = http.server.ThreadingHTTPServer((address, int(port)), handler)
    server.daemon_threads = True
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid:
        # The parent reports once the child is detached, then leaves; the
        # listening socket is the child's.
        os.close(write_end)
        server.socket.close()
        with os.fdopen(read_end) as pipe:
            state = pipe.read()
        if not state:
            sys.stderr.write("bundle server did not start\n")
            return 1
        sys.stdout.write(state + "\n")
        return 0
    os.close(read_end)
    os.setsid()
    if os.fork():
        os._exit(0)  # pylint: disable=protected-access
    # No Python signal handler: one runs in the main thread between two of its
    # bytecodes, and a handler that takes a lock (starting a thread does) while
    # the main thread holds it hangs the server for good. SIGTERM is blocked
    # here, before anyone knows this pid and before any thread exists (every
    # thread inherits the mask), and the main thread takes it with
    # sigtimedwait, which also ends the serving time.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    state = json.dumps({"port": server.server_address[1], "pid": os.getpid(), "marker": MARKER,
                        "directory": directory, "url": url(address, server.server_address[1])})
    _write_state(state_file, json.loads(state))
    os.write(write_end, state.encode())
    os.close(write_end)
    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.5}, daemon=True)
    serving.start()
    try:
        signal.sigtimedwait({signal.SIGTERM}, float(seconds))
        server.shutdown()
        serving.join()
    finally:
        server.server_close()
        try:
            with open(state_file) as handle:
                if json.load(handle).get("pid") == os.getpid():
                    os.unlink(state_file)
        except (OSError, ValueError):
            pass
    os._exit(0)  # pylint: disable=protected-access


def _is_ours(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return MARKER.encode() in handle.read()
    except OSError:
        return False


def stop(state_file):
    try:
        with open(state_file) as handle:
            pid = int(json.load(handle)["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        sys.stdout.write(json.dumps({"stopped": False}) + "\n")
        return 0
    stopped = False
    if _is_ours(pid):
        # SIGTERM, and SIGKILL if it is still there after 5 s: a server left
        # running keeps its port and serves until its time is up.
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.kill(pid, sig)
            except OSError:
                break
            for dummy in range(50):
                if not _is_ours(pid):
                    break
                time.sleep(0.1)
            if not _is_ours(pid):
                break
        stopped = not _is_ours(pid)
    try:
        os.unlink(state_file)
    except OSError:
        pass
    sys.stdout.write(json.dumps({"stopped": stopped}) + "\n")
    return 0


def main(argv):
    # argv[0] is "-c" when run as python3 -c; the marker is argv[1] so the
    # process can be recognised in /proc/<pid>/cmdline.
    args = argv[2:] if len(argv) > 1 and argv[1] == MARKER else argv[1:]
    if args[:1] == ["serve"] and len(args) == 7:
        return serve(*args[1:])
    if args[:1] == ["stop"] and len(args) == 2:
        return stop(args[1])
    sys.stderr.write("usage: serve DIR ADDRESS PORT STATEFILE SECONDS LOGFILE | stop STATEFILE\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
