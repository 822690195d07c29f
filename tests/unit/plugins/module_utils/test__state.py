# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""topsrider_state's pure helpers: dpkg-query output, owned library copies,
the Python probe (run for real by this interpreter) and file descriptions."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from ansible_collections.gcu.topsrider.plugins.module_utils import _state

QUERY = ("tops-sdk\tamd64\t2.5.136-1\thi \t\tlibc6 (>= 2.34)\t\n"
         "tops-eccl\tamd64\t2.5.140-1\tii \t\ttops-sdk (= 2.5.140-1)\t\n"
         "topsfactor\tamd64\t2.5.136-1\trc \t\t\t\n")


def test_packages_state():
    got = _state.packages_state(["tops-sdk", "tops-eccl", "topsfactor", "nope"], QUERY)
    assert got == {
        "tops-sdk": {"version": "2.5.136-1", "status": "installed", "want": "hold", "held": True},
        "tops-eccl": {"version": "2.5.140-1", "status": "installed", "want": "install", "held": False},
        "topsfactor": {"version": None, "status": "config-files", "want": "deinstall", "held": False},
        "nope": {"version": None, "status": "not-installed", "want": "unknown", "held": False},
    }


@pytest.mark.parametrize("listing,want", [
    ("/.\n/usr/local/tops/lib\n/usr/local/tops/lib/libeccl.so\n/usr/local/tops/include/eccl.h\n",
     ["/usr/local/tops/lib/libeccl.so"]),
    ("/usr/lib/libeccl.so.2\n/usr/lib/libeccl.so.2.5\n/usr/lib/libeccl.sox\n/usr/lib/libeccl.so.2\n",
     ["/usr/lib/libeccl.so.2", "/usr/lib/libeccl.so.2.5"]),
    ("", []),
    ("package 'tops-eccl' is not installed\n", []),
])
def test_owned_files(listing, want):
    assert _state.owned_files(listing, "libeccl.so") == want


def test_library_state_resolves_links():
    real = {"/a/libeccl.so": "/a/libeccl.so.2"}.get
    got = _state.library_state("libeccl.so", "tops-eccl", ["/a/libeccl.so"], ["/a/libeccl.so.2"],
                               realpath=lambda p: real(p, p))
    assert got["resolved"] == [{"path": "/a/libeccl.so", "realpath": "/a/libeccl.so.2"}]
    assert got["owned"] == [{"path": "/a/libeccl.so.2", "realpath": "/a/libeccl.so.2"}]


def test_python_probe_runs_for_real():
    proc = subprocess.run([sys.executable, "-c", _state.PYTHON_PROBE], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)
    data = _state.parse_python_probe(proc.returncode, proc.stdout, proc.stderr)
    assert data["python"] == "%d.%d" % sys.version_info[:2]
    assert data["torch_gcu"] is None
    assert set(data) == {"python", "executable", "torch", "torch_gcu", "torch_gcu_url", "pip"}


def _dist(root, dirname, name, version):
    d = root / dirname
    d.mkdir()
    (d / "METADATA").write_text(u"Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version))


def _probe(tmp_path, dists):
    """The probe as topsrider_state runs it (python -c, cwd /, C locale), by a
    real interpreter that sees only fake installed distributions."""
    for dirname, name, version in dists:
        _dist(tmp_path, dirname, name, version)
    env = dict(os.environ, PYTHONPATH=str(tmp_path), LC_ALL="C", LANG="C")
    # -S: no site-packages of the interpreter running the tests, only PYTHONPATH
    proc = subprocess.run([sys.executable, "-S", "-c", _state.PYTHON_PROBE], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env, cwd="/", universal_newlines=True, check=False)
    assert len(proc.stdout.splitlines()) == 1, proc.stdout + proc.stderr
    return _state.parse_python_probe(proc.returncode, proc.stdout, proc.stderr)


@pytest.mark.parametrize("dists, torch, torch_gcu, pip", [
    ([], None, None, None),
    ([("torch-2.13.0+cpu.dist-info", "torch", "2.13.0+cpu")], "2.13.0+cpu", None, None),
    ([("torch-2.13.0+cpu.dist-info", "torch", "2.13.0+cpu"),
      ("torch_gcu-2.13.0+2.5.136.dist-info", "torch_gcu", "2.13.0+2.5.136"),
      ("pip-23.0.1.dist-info", "pip", "23.0.1")], "2.13.0+cpu", "2.13.0+2.5.136", "23.0.1"),
    # the distribution spelled with a dash in its metadata
    ([("torch_gcu-1.10.0+2.5.136.dist-info", "torch-gcu", "1.10.0+2.5.136")], None, "1.10.0+2.5.136", None),
], ids=["nothing", "torch-only", "all", "dash-name"])
def test_python_probe_reports_installed_versions(tmp_path, dists, torch, torch_gcu, pip):
    got = _probe(tmp_path, dists)
    assert (got["torch"], got["torch_gcu"], got["pip"]) == (torch, torch_gcu, pip)
    assert got["python"] == "%d.%d" % sys.version_info[:2]
    assert got["executable"] == sys.executable


@pytest.mark.parametrize("direct_url, url", [
    # pip install <file>: PEP 610's record, what pip freeze prints after "torch_gcu @"
    ('{"url": "file:///var/cache/topsrider/2.5.136/torch_gcu-2.13.0%2B2.5.136-py3-none-any.whl", "archive_info": {}}',
     "file:///var/cache/topsrider/2.5.136/torch_gcu-2.13.0%2B2.5.136-py3-none-any.whl"),
    (None, None),            # from an index or --find-links: no record
    ("not json", None),
], ids=["from-a-file", "from-an-index", "unreadable"])
def test_python_probe_reports_where_torch_gcu_came_from(tmp_path, direct_url, url):
    _dist(tmp_path, "torch_gcu-2.13.0+2.5.136.dist-info", "torch_gcu", "2.13.0+2.5.136")
    if direct_url is not None:
        (tmp_path / "torch_gcu-2.13.0+2.5.136.dist-info" / "direct_url.json").write_text(direct_url)
    got = _probe(tmp_path, [])
    assert (got["torch_gcu"], got["torch_gcu_url"]) == ("2.13.0+2.5.136", url)


def test_python_probe_imports_neither_torch_nor_torch_gcu(tmp_path):
    # A torch_gcu package that fails on import: the probe must not import it
    # (it reads metadata only), so a broken install is still probed.
    pkg = tmp_path / "torch_gcu"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(u"raise ImportError('libeccl.so: cannot open shared object file')\n")
    got = _probe(tmp_path, [("torch_gcu-2.13.0+2.5.140.dist-info", "torch_gcu", "2.13.0+2.5.140")])
    assert got["torch_gcu"] == "2.13.0+2.5.140"


# The probe's own lookup, run by a real interpreter beside importlib.metadata.
_COMPARE = r"""
import contextlib, io, json, sys
ns = {}
with contextlib.redirect_stdout(io.StringIO()):
    exec(sys.stdin.read(), ns)
from importlib import metadata
names = sorted(set(d.metadata["Name"] for d in metadata.distributions() if d.metadata["Name"]))
print(json.dumps(dict((n, [ns["v"]([n]), metadata.version(n)]) for n in names)))
"""


def test_python_probe_finds_what_importlib_metadata_finds():
    """Every distribution this test interpreter has (its venv: dozens, dist-info and egg-info, names
    spelled with dashes, dots and capitals): the probe's scan answers what importlib.metadata does."""
    proc = subprocess.run([sys.executable, "-c", _COMPARE], input=_state.PYTHON_PROBE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, cwd="/", universal_newlines=True, check=True)
    found = json.loads(proc.stdout)
    assert len(found) > 20, found
    assert [n for n, (ours, theirs) in found.items() if ours != theirs] == [], found


def test_python_probe_reads_metadata_without_importing_importlib_metadata(tmp_path):
    """The scan answers alone when it finds every name (importlib.metadata's import was a third of
    the probe's time); a name it does not find is asked of importlib.metadata."""
    check = _state.PYTHON_PROBE + "\nprint(json.dumps({'loaded': 'importlib.metadata' in sys.modules}))\n"
    dists = [("torch-2.13.0+cpu.dist-info", "torch", "2.13.0+cpu"),
             ("torch_gcu-2.13.0+2.5.136.dist-info", "torch_gcu", "2.13.0+2.5.136"),
             ("pip-23.0.1.dist-info", "pip", "23.0.1")]
    for dirname, name, version in dists:
        _dist(tmp_path, dirname, name, version)
    env = dict(os.environ, PYTHONPATH=str(tmp_path), LC_ALL="C", LANG="C")
    for present, loaded in ((dists, False), (dists[:2], True)):
        if present is not dists:
            shutil.rmtree(str(tmp_path / dists[2][0]))
        proc = subprocess.run([sys.executable, "-S", "-c", check], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=env, cwd="/", universal_newlines=True, check=True)
        assert json.loads(proc.stdout.splitlines()[-1]) == {"loaded": loaded}, proc.stdout


def test_python_probe_asks_importlib_metadata_where_sys_path_has_a_zip(tmp_path):
    """A zip on sys.path is importlib.metadata's to read: the probe hands the lookup over."""
    archive = tmp_path / "dists.zip"
    with zipfile.ZipFile(str(archive), "w") as z:
        z.writestr("torch_gcu-2.13.0+2.5.140.dist-info/METADATA",
                   "Metadata-Version: 2.1\nName: torch_gcu\nVersion: 2.13.0+2.5.140\n")
    env = dict(os.environ, PYTHONPATH=str(archive), LC_ALL="C", LANG="C")
    proc = subprocess.run([sys.executable, "-S", "-c", _state.PYTHON_PROBE], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env, cwd="/", universal_newlines=True, check=False)
    assert _state.parse_python_probe(proc.returncode, proc.stdout, proc.stderr)["torch_gcu"] == "2.13.0+2.5.140"


@pytest.mark.parametrize("layout", ["egg-info-directory", "egg-info-file"])
def test_python_probe_reads_an_egg_info(tmp_path, layout):
    """An old setuptools install: the version from the egg-info's PKG-INFO (a directory) or the file itself."""
    text = u"Metadata-Version: 1.1\nName: torch-gcu\nVersion: 1.10.0+2.5.136\n\nVersion: not this one\n"
    if layout == "egg-info-directory":
        (tmp_path / "torch_gcu-1.10.0+2.5.136-py3.8.egg-info").mkdir()
        (tmp_path / "torch_gcu-1.10.0+2.5.136-py3.8.egg-info" / "PKG-INFO").write_text(text)
    else:
        (tmp_path / "torch_gcu-1.10.0+2.5.136.egg-info").write_text(text)
    assert _probe(tmp_path, [])["torch_gcu"] == "1.10.0+2.5.136"


def test_python_probe_runs_on_python_3_6(tmp_path):
    # The probe is a string, so the module-code check (test_py36_compat) does not see it.
    probe = tmp_path / "probe.py"
    probe.write_text(_state.PYTHON_PROBE)
    vermin = os.path.join(os.path.dirname(sys.executable), "vermin")
    proc = subprocess.run([vermin, "--target=3.6-", "--violations", "--no-tips", str(probe)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout


@pytest.mark.parametrize("rc,out,err,msg", [
    (1, "", "Traceback\nImportError: no json\n", "rc=1: Traceback | ImportError: no json"),
    (0, "hello\n", "", "no JSON report"),
    (0, "[1, 2]\n", "", "no JSON report"),
])
def test_python_probe_failures(rc, out, err, msg):
    with pytest.raises(_state.StateError, match=msg.replace("|", r"\|")):
        _state.parse_python_probe(rc, out, err)


def test_file_state(tmp_path):
    f = tmp_path / "topsrider.sh"
    f.write_bytes(b"export A=1\n")
    os.chmod(str(f), 0o640)
    got = _state.file_state(str(f))
    assert got["exists"] and got["type"] == "file" and got["mode"] == "0640"
    assert got["sha256"] == hashlib.sha256(b"export A=1\n").hexdigest()
    assert got["content"] == "export A=1\n" and got["size"] == 11
    assert _state.file_state(str(tmp_path / "missing")) == {"exists": False}


def test_file_state_large_or_binary_has_no_content(tmp_path):
    big = tmp_path / "big"
    big.write_bytes(b"x" * 100)
    binary = tmp_path / "bin"
    binary.write_bytes(b"\xff\xfe")
    assert _state.file_state(str(big), max_bytes=10)["content"] is None
    assert _state.file_state(str(big), max_bytes=10)["sha256"] == hashlib.sha256(b"x" * 100).hexdigest()
    assert _state.file_state(str(binary))["content"] is None


def test_file_state_symlink_is_not_followed(tmp_path):
    (tmp_path / "target").write_text(u"x")
    os.symlink(str(tmp_path / "target"), str(tmp_path / "link"))
    got = _state.file_state(str(tmp_path / "link"))
    assert got["type"] == "link" and got["sha256"] is None


def test_record_state_parses_a_record_whole(tmp_path):
    rec = tmp_path / "open-deploy.json"
    value = {"id": "20261128T120000Z", "to_version": "2.5.140", "padding": "x" * (200 * 1024)}
    rec.write_text(json.dumps(value))
    assert _state.record_state(str(rec)) == {"exists": True, "value": value, "problem": None}
    assert _state.record_state(str(tmp_path / "missing.json")) == {"exists": False, "value": None, "problem": None}


@pytest.mark.parametrize("content, fault", [
    (b"{cut off", "is not JSON: "),
    (b"[1, 2]", "is not a JSON object"),
    (b"\xff\xfe", "is not UTF-8 text: "),
    (b"", "is not JSON: "),
    (b"x" * 101, "is 101 bytes, more than a record may be (100)"),
])
def test_record_state_names_a_record_it_cannot_use(tmp_path, content, fault):
    rec = tmp_path / "deploys.json"
    rec.write_bytes(content)
    got = _state.record_state(str(rec), max_bytes=100)
    assert got["exists"] and got["value"] is None
    assert got["problem"].startswith("%s %s" % (rec, fault)), got["problem"]


def test_record_state_does_not_follow_a_link_or_read_a_directory(tmp_path):
    (tmp_path / "target.json").write_text(u"{}")
    os.symlink(str(tmp_path / "target.json"), str(tmp_path / "link.json"))
    assert _state.record_state(str(tmp_path / "link.json"))["problem"] == "%s is not a regular file" % (tmp_path / "link.json")
    assert _state.record_state(str(tmp_path))["problem"] == "%s is not a regular file" % tmp_path


def test_space_state_reads_the_nearest_existing_parent(tmp_path):
    missing = str(tmp_path / "cache" / "topsrider")
    st = os.statvfs(str(tmp_path))
    got = _state.space_state(missing)
    assert got["path"] == missing and got["checked"] == str(tmp_path) and got["error"] is None
    assert isinstance(got["free"], int) and got["free"] <= st.f_blocks * st.f_frsize
    os.makedirs(missing)
    assert _state.space_state(missing)["checked"] == missing


@pytest.mark.parametrize("text,family,dist", [
    ('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n', "Debian", "debian"),
    ('ID=ubuntu\nID_LIKE=debian\nVERSION_ID="22.04"\n', "Debian", "ubuntu"),
    ('ID=linuxmint\nID_LIKE="ubuntu debian"\n', "Debian", "linuxmint"),
    ('ID="rocky"\nID_LIKE="rhel centos fedora"\n', "rocky", "rocky"),
    ("", None, None),
])
def test_os_family_as_ansible_facts_name_it_for_debian_and_its_derivatives(text, family, dist):
    release = _state.parse_os_release(text)
    assert _state.os_family(release) == family and (release.get("ID") or None) == dist


def test_local_facts_as_ansible_local_has_them(tmp_path):
    (tmp_path / "topsrider.fact").write_text(u'{"version": "2.5.136", "snapshot": "s1"}\n')
    (tmp_path / "broken.fact").write_text(u"{not json")
    (tmp_path / "list.fact").write_text(u"[1, 2]")
    (tmp_path / "notes.txt").write_text(u"{}")
    facts = _state.local_facts(str(tmp_path))
    assert sorted(facts) == ["broken", "list", "topsrider"]
    assert facts["topsrider"] == {"version": "2.5.136", "snapshot": "s1"}
    assert facts["broken"].startswith("error loading fact") and "not a JSON object" in facts["list"]
    assert _state.local_facts(str(tmp_path / "none")) == {}


def test_system_state_reads_os_release_and_the_machine(tmp_path):
    release = tmp_path / "os-release"
    release.write_text(u'ID=debian\nVERSION_ID="11"\n')
    got = _state.system_state(str(tmp_path / "facts"), str(release))
    assert got == {"os_family": "Debian", "distribution": "debian", "distribution_version": "11",
                   "architecture": os.uname()[4], "local": {}}


def test_parse_dpkg_verify_reads_changed_missing_and_conffiles():
    out = ("??5??????   /usr/local/tops/lib/libeccl.so\n"
           "missing   c /etc/debuginfod/elfutils.urls\n"
           "missing     /usr/lib/node_modules/npm/lib\n"
           "??5?????? c /etc/tops/tops.conf\n"
           "?M???????   /usr/local/tops/bin/tops-version\n"
           "dpkg: warning: files list file for package 'x' missing\n")
    assert _state.parse_dpkg_verify(out) == [
        {"path": "/usr/local/tops/lib/libeccl.so", "problem": "changed", "conffile": False, "attrs": "??5??????"},
        {"path": "/etc/debuginfod/elfutils.urls", "problem": "missing", "conffile": True, "attrs": "missing"},
        {"path": "/usr/lib/node_modules/npm/lib", "problem": "missing", "conffile": False, "attrs": "missing"},
        {"path": "/etc/tops/tops.conf", "problem": "changed", "conffile": True, "attrs": "??5??????"},
        {"path": "/usr/local/tops/bin/tops-version", "problem": "differs", "conffile": False, "attrs": "?M???????"}]
    assert _state.parse_dpkg_verify("") == [] and _state.parse_dpkg_verify(None) == []


def test_package_files_state_puts_each_file_with_the_package_that_lists_it():
    problems = _state.parse_dpkg_verify("??5??????   /a/lib.so\nmissing     /b/tool\n")
    listing = "/a\n/a/lib.so\ndiverted by other to: /a/lib.so.real\n"
    assert _state.listed_paths(listing) == {"/a", "/a/lib.so"}
    got = _state.package_files_state(["p", "q"], problems, {"p": _state.listed_paths(listing), "q": {"/b/tool"}})
    assert [i["path"] for i in got["p"]] == ["/a/lib.so"] and [i["path"] for i in got["q"]] == ["/b/tool"]
    # One package verified: every line is its own, no listing needed.
    assert [i["path"] for i in _state.package_files_state(["p"], problems)["p"]] == ["/a/lib.so", "/b/tool"]


@pytest.mark.parametrize("args, want", [
    ((False,), {"deployed": False, "active": None, "error": None}),
    ((True, 0, "active\n", ""), {"deployed": True, "active": "active", "error": None}),
    ((True, 3, "inactive\n", ""), {"deployed": True, "active": "inactive", "error": None}),
    ((True, 3, "failed\n", ""), {"deployed": True, "active": "failed", "error": None}),
    # a node whose PID 1 is not systemd: systemctl says why
    ((True, 1, "", "System has not been booted with systemd as init system (PID 1). Can't operate.\n"
      "Failed to connect to bus: Host is down\n"),
     {"deployed": True, "active": None,
      "error": "System has not been booted with systemd as init system (PID 1). Can't operate. | "
               "Failed to connect to bus: Host is down"}),
    ((True, 4, "", ""), {"deployed": True, "active": None, "error": "systemctl printed no state (rc=4)"}),
])
def test_service_state(args, want):
    assert _state.service_state(*args) == want
