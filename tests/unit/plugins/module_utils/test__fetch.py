# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugins/module_utils/_fetch.py against a real HTTP server (the role's own
bundle_serve.py handler on 127.0.0.1): files fetched, sha256-checked while they
arrive, moved into place only when they match; every failure names its URL."""
import errno
import functools
import hashlib
import http.server
import os
import threading

import pytest

from ansible.module_utils.urls import open_url
from ansible_collections.gcu.topsrider.plugins.module_utils import _fetch

HERE = os.path.dirname(os.path.abspath(__file__))
SERVE = os.path.abspath(os.path.join(HERE, "..", "..", "..", "..", "roles", "bundle_stage", "files", "bundle_serve.py"))


def serve_module():
    namespace = {"__name__": "bundle_serve"}
    with open(SERVE) as handle:
        exec(compile(handle.read(), SERVE, "exec"), namespace)  # pylint: disable=exec-used
    return namespace


def entry(name, data):
    return {"file": name, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def opener(url):
    return open_url(url, timeout=5, use_proxy=False, follow_redirects="none")


@pytest.fixture
def served(tmp_path):
    """(base URL, served dir): bundle_serve.py's handler in a thread, serving with sendfile."""
    root = tmp_path / "served"
    root.mkdir()
    handler = functools.partial(serve_module()["BundleHandler"], directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d" % server.server_address[1], root
    server.shutdown()
    server.server_close()


@pytest.fixture
def node(tmp_path):
    dest = tmp_path / "cache" / "2.5.136"
    dest.mkdir(parents=True)
    return dest, tmp_path / "cache" / ".partial"


def test_fetches_what_is_missing_or_wrong_and_keeps_what_is_held(served, node):
    base, root = served
    dest, partial = node
    big = os.urandom(3 * _fetch.CHUNK + 17)
    files = [entry("tops-sdk_2.5.136-1_amd64.deb", big), entry("held.deb", b"held"), entry("wrong.deb", b"right")]
    for e, data in zip(files, (big, b"held", b"right")):
        (root / e["file"]).write_bytes(data)
    (dest / "held.deb").write_bytes(b"held")
    (dest / "wrong.deb").write_bytes(b"WRONG")
    partial.mkdir()
    (partial / "tmpkilled").write_bytes(b"left by a killed transfer")
    assert _fetch.missing(str(dest), files) == ["tops-sdk_2.5.136-1_amd64.deb", "wrong.deb"]
    results = _fetch.fetch_all(opener, base, files, str(dest), str(partial))
    assert results == [{"file": "tops-sdk_2.5.136-1_amd64.deb", "changed": True, "bytes": len(big)},
                       {"file": "held.deb", "changed": False, "bytes": 0},
                       {"file": "wrong.deb", "changed": True, "bytes": 5}]
    assert (dest / "tops-sdk_2.5.136-1_amd64.deb").read_bytes() == big
    assert (dest / "wrong.deb").read_bytes() == b"right"
    assert oct(os.stat(str(dest / "wrong.deb")).st_mode & 0o777) == "0o600"
    assert not partial.exists()
    assert _fetch.missing(str(dest), files) == []


def test_bytes_that_do_not_match_the_manifest_never_reach_dest(served, node):
    base, root = served
    dest, partial = node
    (root / "a.deb").write_bytes(b"tampered on the serving node")
    files = [entry("a.deb", b"what the manifest says")]
    with pytest.raises(_fetch.FetchError) as caught:
        _fetch.fetch_all(opener, base, files, str(dest), str(partial))
    assert caught.value.name == "a.deb"
    assert "%s/a.deb sent 28 bytes with sha256 " % base in str(caught.value)
    assert files[0]["sha256"] in str(caught.value)
    assert not (dest / "a.deb").exists() and os.listdir(str(partial)) == []


def test_a_source_that_cannot_be_reached_is_named_with_its_url(node):
    dest, partial = node
    with pytest.raises(_fetch.FetchError, match=r"cannot fetch http://127\.0\.0\.1:9/a\.deb: .*(refused|Errno)"):
        _fetch.fetch_all(opener, "http://127.0.0.1:9", [entry("a.deb", b"x")], str(dest), str(partial))


def test_a_file_the_source_does_not_have_is_an_http_error(served, node):
    base, dummy = served
    dest, partial = node
    with pytest.raises(_fetch.FetchError, match=r"cannot fetch .*/a%20b\.deb: HTTP 404"):
        _fetch.fetch_all(opener, base, [entry("a b.deb", b"x")], str(dest), str(partial))


def test_a_full_disk_is_a_write_error_not_a_network_one(served, node, monkeypatch):
    base, root = served
    dest, partial = node
    (root / "a.deb").write_bytes(b"x" * 10)

    class FullFile(object):
        def __init__(self, path):
            self.path = path
            open(path, "wb").close()

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

        def flush(self):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    real_open = open
    monkeypatch.setattr(_fetch, "open", lambda path, mode="r": FullFile(path) if "w" in mode else real_open(path, mode),
                        raising=False)
    with pytest.raises(_fetch.FetchError, match=r"cannot write .*a\.deb \(fetching .*\): \[Errno 28\] No space left"):
        _fetch.fetch_all(opener, base, [entry("a.deb", b"x" * 10)], str(dest), str(partial))
    assert not (dest / "a.deb").exists() and not (partial / "a.deb").exists()


def test_files_fetched_before_a_failure_stay(served, node):
    base, root = served
    dest, partial = node
    (root / "a.deb").write_bytes(b"aaa")
    files = [entry("a.deb", b"aaa"), entry("b.deb", b"not served")]
    with pytest.raises(_fetch.FetchError):
        _fetch.fetch_all(opener, base, files, str(dest), str(partial))
    assert (dest / "a.deb").read_bytes() == b"aaa"
    assert _fetch.missing(str(dest), files) == ["b.deb"]


@pytest.mark.parametrize("files, problem", [
    ([{"file": "../etc/passwd", "sha256": "0" * 64, "size": 1}], "is not a plain name"),
    ([{"file": ".hidden", "sha256": "0" * 64, "size": 1}], "is not a plain name"),
    ([{"file": "a\n", "sha256": "0" * 64, "size": 1}], "has a newline"),
    ([{"file": "a", "sha256": "0" * 63, "size": 1}], "64 lower-case hex"),
    ([{"file": "a", "sha256": "0" * 64 + "\n", "size": 1}], "64 lower-case hex"),
    ([{"file": "a", "sha256": "0" * 64, "size": -1}], "non-negative integer"),
    ([{"file": "a", "sha256": "0" * 64, "size": True}], "non-negative integer"),
    ([{"file": "a", "sha256": "0" * 64, "size": 1}, {"file": "a", "sha256": "0" * 64, "size": 1}], "listed twice"),
])
def test_spec_problems(files, problem):
    assert any(problem in p for p in _fetch.spec_problems(files))


def test_a_good_spec_has_no_problems():
    assert _fetch.spec_problems([entry("tops-sdk_2.5.136-1_amd64.deb", b"x")]) == []


def test_a_partial_directory_that_cannot_be_written_is_a_write_error(served, node, monkeypatch):
    base, root = served
    dest, partial = node
    (root / "a.deb").write_bytes(b"x")
    real_open = open

    def refuse(path, mode="r"):
        if "w" in mode:
            raise OSError(errno.EROFS, "Read-only file system")
        return real_open(path, mode)
    monkeypatch.setattr(_fetch, "open", refuse, raising=False)
    with pytest.raises(_fetch.FetchError, match=r"cannot write .*a\.deb \(fetching .*\): \[Errno 30\] Read-only"):
        _fetch.fetch_all(opener, base, [entry("a.deb", b"x")], str(dest), str(partial))
    assert not (dest / "a.deb").exists()
