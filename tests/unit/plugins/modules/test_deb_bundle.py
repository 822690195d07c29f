"""deb_bundle with its commands mocked by a small stateful fake of dpkg.

The fake keeps a package database (version, status, hold) and answers the
exact argv the module runs: dpkg-query -W, dpkg-deb --field, dpkg --audit,
--install, --purge, --remove, --set-selections, --configure -a. Every call is
recorded, so the tests can assert that nothing mutating ran.
"""
import hashlib
import json
import os
import subprocess
import sys
import time

import pytest

from ansible.module_utils import basic
from ansible_collections.gcu.topsrider.plugins.module_utils import _deb_bundle
from ansible_collections.gcu.topsrider.plugins.modules import deb_bundle
from utils import AnsibleExitJson, AnsibleFailJson, exit_json, fail_json, set_module_args

V136, V140 = "2.5.136-1", "2.5.140-1"
PKGS = ("tops-sdk", "topsfactor", "tops-eccl")
MUTATING = ("--install", "--purge", "--remove", "--set-selections", "--configure")


def _control(name, version):
    dep = "" if name == "tops-sdk" else "Depends: tops-sdk (= %s)\n" % version
    if name == "tops-sdk":
        dep = "Depends: libc6 (>= 2.34)\n"
    return ("Package: %s\nVersion: %s\nArchitecture: amd64\n%sDescription: test (simulated stand-in)\n"
            % (name, version, dep))


class FakeDpkg(object):
    def __init__(self):
        self.db = {"libc6": {"version": "2.36-9", "abbrev": "ii ", "depends": ""}}
        self.debs = {}            # path -> control text
        self.audit = ""
        self.fail_postinst = set()  # (package, version) whose configure fails
        self.calls = []

    def install_state(self, name, version, held=False, status="i"):
        self.db[name] = {"version": version, "abbrev": ("h" if held else "i") + status + " ",
                         "depends": "" if name == "tops-sdk" else "tops-sdk (= %s)" % version}

    def versions(self):
        return dict((n, e["version"]) for n, e in self.db.items() if n in PKGS and e["abbrev"][1] != "n")

    def held(self):
        return sorted(n for n, e in self.db.items() if n in PKGS and e["abbrev"][0] == "h")

    def mutations(self):
        return [c for c in self.calls if any(a in MUTATING for a in c[1:2])]

    def __call__(self, argv, data=None, environ_update=None, binary_data=False, **kw):
        self.calls.append(list(argv))
        prog = os.path.basename(argv[0])
        if any(a in MUTATING for a in argv[1:2]):
            assert environ_update.get("DPKG_FRONTEND_LOCKED") == "1", argv
        assert environ_update["LC_ALL"] == "C"
        if prog == "dpkg-query":
            lines = ["%s\tamd64\t%s\t%s\t\t%s\t\n" % (n, e["version"], e["abbrev"], e["depends"])
                     for n, e in sorted(self.db.items())]
            return 0, "".join(lines), ""
        if prog == "dpkg-deb":
            path = argv[-1]
            if path not in self.debs:
                return 2, "", "dpkg-deb: error: failed to read archive '%s'" % path
            return 0, self.debs[path], ""
        op = argv[1]
        if op == "--print-architecture":
            return 0, "amd64\n", ""
        if op == "--print-foreign-architectures":
            return 0, "", ""
        if op == "--audit":
            return 0, self.audit, ""
        if op == "--configure":
            self.audit = ""
            for e in self.db.values():
                e["abbrev"] = e["abbrev"][0] + "i "
            return 0, "", ""
        if op == "--install":
            rc, err = 0, ""
            for path in argv[3:]:
                text = self.debs[path]
                fields = dict(l.split(": ", 1) for l in text.splitlines() if ": " in l)
                name = fields["Package"]
                ok = (name, fields["Version"]) not in self.fail_postinst
                self.db[name] = {"version": fields["Version"], "abbrev": "i" + ("i" if ok else "F") + " ",
                                 "depends": fields.get("Depends", "")}
                if not ok:
                    rc, err = 1, "%s: SIMULATED postinst failure\nErrors were encountered while processing:\n %s\n" % (name, name)
            return rc, "", err
        if op in ("--purge", "--remove"):
            for name in argv[3:]:
                self.db.pop(name, None)
            return 0, "", ""
        if op == "--set-selections":
            for line in data.splitlines():
                name, sel = line.split()
                e = self.db[name]
                e["abbrev"] = ("h" if sel == "hold" else "i") + e["abbrev"][1:]
            return 0, "", ""
        raise AssertionError("unexpected command %r" % argv)


def make_bundle(root, version, fake, corrupt=None):
    d = root / version
    d.mkdir(parents=True)
    files = []
    for name in PKGS:
        fname = "%s_%s-1_amd64.deb" % (name, version)
        data = ("deb %s %s" % (name, version)).encode()
        (d / fname).write_bytes(data)
        fake.debs[str(d / fname)] = _control(name, version + "-1")
        files.append({"file": fname, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data),
                      "type": "deb", "package": name, "version": version + "-1", "architecture": "amd64"})
    whl = "torch_gcu-2.13.0+%s-py311-none-any.whl" % version
    (d / whl).write_bytes(b"wheel")
    files.append({"file": whl, "sha256": hashlib.sha256(b"wheel").hexdigest(), "size": 5, "type": "wheel",
                  "package": "torch_gcu", "version": "2.13.0+" + version, "python": "3.11",
                  "requires_torch": "2.13.0"})
    (d / "manifest.json").write_text(json.dumps({"format": 1, "product": "TopsRider", "version": version,
                                                 "files": files}))
    if corrupt:
        (d / corrupt).write_bytes(b"XXXX" + (d / corrupt).read_bytes()[4:])
    return str(d)


@pytest.fixture
def env(tmp_path, monkeypatch):
    fake = FakeDpkg()
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)
    monkeypatch.setattr(basic.AnsibleModule, "run_command", lambda self, argv, **kw: fake(argv, **kw))
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path",
                        lambda self, name, required=False, opt_dirs=None: "/usr/bin/" + name)
    locks = tmp_path / "dpkg"
    locks.mkdir()
    real = _deb_bundle.acquire_dpkg_lock
    monkeypatch.setattr(_deb_bundle, "acquire_dpkg_lock", lambda timeout: real(
        timeout, frontend=str(locks / "lock-frontend"), database=str(locks / "lock")))
    cache = tmp_path / "cache"
    b136 = make_bundle(cache, "2.5.136", fake)
    b140 = make_bundle(cache, "2.5.140", fake)
    base = {"journal_dir": str(tmp_path / "journal"), "cache_dirs": [str(cache)]}
    return {"fake": fake, "b136": b136, "b140": b140, "base": base, "cache": cache, "tmp": tmp_path,
            "locks": locks}


def run(env, check_mode=False, **args):
    a = dict(env["base"])
    a.update(args)
    if check_mode:
        a["_ansible_check_mode"] = True
    a["_ansible_diff"] = True
    with set_module_args(a):
        with pytest.raises((AnsibleExitJson, AnsibleFailJson)) as e:
            deb_bundle.main()
    return e.value.args[0]


def _plan(result):
    return [(p["package"], p["action"], p["before"], p["after"]) for p in result["plan"]]


# ---- planning / check mode -------------------------------------------------

@pytest.mark.parametrize("setup,args,expected", [
    ({}, {"hold": False}, [("tops-eccl", "install", None, V136), ("tops-sdk", "install", None, V136),
                           ("topsfactor", "install", None, V136)]),
    ({"tops-sdk": V136, "topsfactor": V136, "tops-eccl": V136}, {"hold": True},
     [("tops-eccl", "hold", V136, V136), ("tops-sdk", "hold", V136, V136), ("topsfactor", "hold", V136, V136)]),
    ({"tops-sdk": V136}, {"packages": ["tops-sdk", "tops-eccl"]}, [("tops-eccl", "install", None, V136)]),
])
def test_check_mode_plans_exactly_and_changes_nothing(env, setup, args, expected):
    for n, v in setup.items():
        env["fake"].install_state(n, v)
    before = json.dumps(env["fake"].db, sort_keys=True)
    r = run(env, check_mode=True, path=env["b136"], **args)
    assert not r.get("failed"), r
    assert _plan(r) == expected
    assert r["changed"] is True and r["snapshot"] is None
    assert env["fake"].mutations() == []
    assert json.dumps(env["fake"].db, sort_keys=True) == before
    assert not os.path.exists(env["base"]["journal_dir"])
    assert r["diff"]["before"]["packages"]["tops-sdk"] == setup.get("tops-sdk")


def test_fresh_install_then_no_change(env):
    r = run(env, path=env["b136"], hold=True)
    assert r["changed"] and not r.get("failed"), r
    f = env["fake"]
    installs = [c for c in f.calls if c[1:2] == ["--install"]]
    assert len(installs) == 1 and len(installs[0]) == 3 + 3  # one transaction, all three debs
    assert f.versions() == {"tops-sdk": V136, "topsfactor": V136, "tops-eccl": V136}
    assert f.held() == sorted(PKGS) and r["held"] == sorted(PKGS)
    snap = json.load(open(os.path.join(env["base"]["journal_dir"], "snapshots", r["snapshot"] + ".json")))
    assert snap["status"] == "applied"
    assert snap["packages"]["tops-sdk"]["before"] is None
    idx = json.load(open(os.path.join(env["base"]["journal_dir"], "debs.json")))
    assert idx["tops-sdk"][V136]["path"] == os.path.join(env["b136"], "tops-sdk_2.5.136-1_amd64.deb")
    f.calls[:] = []
    r2 = run(env, path=env["b136"], hold=True)
    assert r2["changed"] is False and r2["plan"] == [] and r2["snapshot"] is None
    assert f.mutations() == []


def test_upgrade_then_rollback_restores_exactly(env):
    f = env["fake"]
    run(env, path=env["b136"], hold=True)
    up = run(env, path=env["b140"], hold=True, snapshot="deploy-1")
    assert _plan(up) == [("tops-eccl", "upgrade", V136, V140), ("tops-sdk", "upgrade", V136, V140),
                         ("topsfactor", "upgrade", V136, V140)]
    assert f.versions() == dict.fromkeys(PKGS, V140) and f.held() == sorted(PKGS)
    chk = run(env, check_mode=True, state="rolled_back")
    assert chk["snapshot"] == "deploy-1" and {p["action"] for p in chk["plan"]} == {"downgrade"}
    assert f.versions() == dict.fromkeys(PKGS, V140)
    rb = run(env, state="rolled_back")
    assert not rb.get("failed"), rb
    assert f.versions() == dict.fromkeys(PKGS, V136) and f.held() == sorted(PKGS)
    assert rb["packages"] == dict.fromkeys(PKGS, V136)
    again = run(env, state="rolled_back")
    assert again["changed"] is False


def test_rollback_to_absent_purges_and_named_snapshot(env):
    f = env["fake"]
    first = run(env, path=env["b136"], snapshot="first")
    run(env, path=env["b140"])
    rb = run(env, state="rolled_back", snapshot="first")
    assert _plan(rb) == [(n, "remove", V140, None) for n in sorted(PKGS)]
    assert [c[1] for c in f.calls if c[1:2] == ["--purge"]] == ["--purge"]
    assert f.versions() == {}
    assert first["snapshot"] == "first"


def test_same_snapshot_id_keeps_first_previous_state(env):
    run(env, path=env["b136"], packages=["tops-sdk"], snapshot="d")
    run(env, path=env["b140"], packages=["tops-sdk", "tops-eccl"], snapshot="d")
    snap = json.load(open(os.path.join(env["base"]["journal_dir"], "snapshots", "d.json")))
    assert snap["packages"]["tops-sdk"]["before"] is None
    assert snap["packages"]["tops-eccl"]["before"] is None
    assert snap["packages"]["tops-sdk"]["after"] == V140


# ---- refusals: nothing changes -----------------------------------------------

def test_checksum_mismatch_and_missing_file_fail_listing_each(env):
    d = make_bundle(env["tmp"] / "bad", "2.5.140", env["fake"], corrupt="topsfactor_2.5.140-1_amd64.deb")
    os.unlink(os.path.join(d, "torch_gcu-2.13.0+2.5.140-py311-none-any.whl"))
    r = run(env, path=d)
    assert r["failed"]
    assert [(m["file"], m["problem"]) for m in r["mismatches"]] == [
        ("topsfactor_2.5.140-1_amd64.deb", "sha256 mismatch"),
        ("torch_gcu-2.13.0+2.5.140-py311-none-any.whl", "missing")]
    assert "topsfactor_2.5.140-1_amd64.deb: sha256 mismatch" in r["msg"]
    assert env["fake"].calls == []  # not even dpkg-deb


def test_dependency_failure_lists_missing(env):
    r = run(env, path=env["b140"], packages=["tops-eccl"])
    assert r["failed"] and "unmet dependencies" in r["msg"]
    assert r["unmet"] == [{"package": "tops-eccl", "version": V140, "requires": "tops-sdk (= 2.5.140-1)"}]
    assert env["fake"].mutations() == []


def test_reverse_dependency_failure(env):
    run(env, path=env["b136"])
    env["fake"].calls[:] = []
    r = run(env, path=env["b140"], packages=["tops-sdk"])
    assert r["failed"]
    assert sorted(u["package"] for u in r["unmet"]) == ["tops-eccl", "topsfactor"]
    assert env["fake"].mutations() == []


def test_downgrade_refused_unless_allowed(env):
    run(env, path=env["b140"])
    env["fake"].calls[:] = []
    r = run(env, path=env["b136"])
    assert r["failed"] and "refusing to downgrade" in r["msg"] and "allow_downgrade" in r["msg"]
    assert env["fake"].mutations() == []
    r = run(env, path=env["b136"], allow_downgrade=True)
    assert not r.get("failed") and env["fake"].versions() == dict.fromkeys(PKGS, V136)


def test_manifest_deb_mismatch_and_unknown_package(env):
    env["fake"].debs[os.path.join(env["b140"], "tops-sdk_2.5.140-1_amd64.deb")] = _control("tops-sdk", "2.5.139-1")
    r = run(env, path=env["b140"])
    assert r["failed"] and "the deb says version 2.5.139-1, the manifest 2.5.140-1" in r["msg"]
    r = run(env, path=env["b136"], packages=["tops-nope"])
    assert r["failed"] and "tops-nope" in r["msg"]
    assert env["fake"].mutations() == []


# ---- audit / recovery ---------------------------------------------------------

AUDIT = ("The following packages are only half configured, probably due to problems\n"
         "configuring them the first time.\n tops-sim-interrupt  test-only package\n")


def test_audit_refuses_without_recover(env):
    env["fake"].audit = AUDIT
    r = run(env, path=env["b136"])
    assert r["failed"] and "recover_interrupted" in r["msg"] and r["audit"] == AUDIT.strip()
    assert env["fake"].mutations() == []


def test_audit_repaired_with_recover(env):
    f = env["fake"]
    f.audit = AUDIT
    f.install_state("tops-sdk", V136, status="F")
    r = run(env, path=env["b136"], recover_interrupted=True)
    assert not r.get("failed"), r
    assert r["recovered"] is True and r["changed"] is True
    muts = [c[1] for c in f.mutations()]
    assert muts[0] == "--configure" and muts[1] == "--install"
    assert f.versions() == dict.fromkeys(PKGS, V136)


# ---- the transaction fails: put back -------------------------------------------

def test_failed_postinst_is_put_back(env):
    f = env["fake"]
    run(env, path=env["b136"], hold=True)
    before = json.dumps(f.db, sort_keys=True)
    f.fail_postinst.add(("tops-eccl", V140))
    r = run(env, path=env["b140"], hold=True)
    assert r["failed"] and r["restored"] is True and r["rc"] == 1
    assert "SIMULATED postinst failure" in r["msg"] and "put back" in r["msg"]
    assert json.dumps(f.db, sort_keys=True) == before
    assert r["packages"] == dict.fromkeys(PKGS, V136)
    snap = json.load(open(os.path.join(env["base"]["journal_dir"], "snapshots", r["snapshot"] + ".json")))
    assert snap["status"] == "failed-restored"
    # the latest restorable snapshot is still the first install
    rb = run(env, check_mode=True, state="rolled_back")
    assert rb["snapshot"] != r["snapshot"]


def test_failed_fresh_install_is_purged(env):
    f = env["fake"]
    f.fail_postinst.add(("tops-eccl", V136))
    r = run(env, path=env["b136"])
    assert r["failed"] and r["restored"] is True
    assert f.versions() == {}


# ---- rollback planning ------------------------------------------------------------

def test_rollback_refuses_when_deb_is_gone(env):
    run(env, path=env["b136"])
    run(env, path=env["b140"], snapshot="up")
    os.unlink(os.path.join(env["b136"], "tops-eccl_2.5.136-1_amd64.deb"))
    env["fake"].calls[:] = []
    r = run(env, state="rolled_back")
    assert r["failed"] and "the deb needed is gone" in r["msg"] and "tops-eccl 2.5.136-1" in r["msg"]
    assert env["fake"].mutations() == []


def test_rollback_finds_moved_deb_in_cache_dirs(env):
    run(env, path=env["b136"])
    run(env, path=env["b140"], snapshot="up")
    moved = env["cache"] / "moved"
    moved.mkdir()
    src = os.path.join(env["b136"], "tops-sdk_2.5.136-1_amd64.deb")
    dst = str(moved / "tops-sdk_2.5.136-1_amd64.deb")
    os.rename(src, dst)
    env["fake"].debs[dst] = env["fake"].debs[src]
    r = run(env, state="rolled_back")
    assert not r.get("failed"), r
    assert any(dst in c for c in env["fake"].calls if c[1:2] == ["--install"])


def test_rollback_errors(env):
    r = run(env, state="rolled_back")
    assert r["failed"] and "no snapshot to roll back to" in r["msg"]
    r = run(env, state="rolled_back", snapshot="nope")
    assert r["failed"] and "no snapshot nope" in r["msg"]
    r = run(env, state="rolled_back", snapshot="../etc")
    assert r["failed"] and "invalid snapshot id" in r["msg"]


def test_absent_removes_and_checks_dependents(env):
    run(env, path=env["b136"])
    r = run(env, state="absent", packages=["tops-sdk"])
    assert r["failed"] and sorted(u["package"] for u in r["unmet"]) == ["tops-eccl", "topsfactor"]
    r = run(env, state="absent", path=env["b136"])
    assert not r.get("failed") and env["fake"].versions() == {}
    assert r["packages"] == dict.fromkeys(PKGS)
    assert run(env, state="absent", path=env["b136"])["changed"] is False


# ---- the lock ------------------------------------------------------------------------

HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.lockf(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(30)
"""


@pytest.mark.parametrize("which", ["lock-frontend", "lock"])
def test_lock_timeout_fails_with_nothing_changed(env, which):
    path = str(env["locks"] / which)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, path], stdout=subprocess.PIPE,
                              universal_newlines=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        t0 = time.time()
        r = run(env, path=env["b136"], lock_timeout=1)
        elapsed = time.time() - t0
    finally:
        holder.kill()
        holder.wait()
    assert r["failed"] and "lock_timeout=1" in r["msg"] and r["lock"] == path
    assert 0.9 <= elapsed < 10
    assert env["fake"].mutations() == []
    # released: the next run gets it
    assert not run(env, path=env["b136"], lock_timeout=1).get("failed")


def test_bad_arguments(env):
    r = run(env, path=env["b136"], lock_timeout=-1)
    assert r["failed"] and "lock_timeout" in r["msg"]
    r = run(env, state="absent")
    assert r["failed"]
    r = run(env, path=env["b136"], manifest="m.json", manifest_content={"format": 1})
    assert r["failed"] and "mutually exclusive" in r["msg"]


def test_failed_transaction_without_previous_debs_says_what_is_left(env):
    f = env["fake"]
    for n in PKGS:
        f.install_state(n, V136)  # installed before this module: no journal, no cached debs
    f.fail_postinst.add(("tops-eccl", V140))
    r = run(env, path=env["b140"], cache_dirs=[str(env["tmp"] / "empty")])
    assert r["failed"] and r["restored"] is False
    assert "did not complete" in r["msg"] and "no deb for tops-sdk 2.5.136-1" in r["msg"]
    assert "the node is left with: tops-eccl 2.5.140-1" in r["msg"]
    assert r["packages"]["tops-eccl"] == V140
