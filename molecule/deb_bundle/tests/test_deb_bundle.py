# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Real node state after the deb_bundle scenario (converge + side_effect):
2.5.136 back in place and held, the journal root-only, the libraries real."""
import json

testinfra_hosts = ["all"]

BUNDLE = ("tops-sdk", "topsfactor", "tops-eccl")


def _dpkg(host, fmt, *pkgs):
    out = host.run("dpkg-query -W -f='%s' %s" % (fmt, " ".join(pkgs)))
    assert out.rc == 0, out.stderr
    return out.stdout


def test_bundle_is_2_5_136_held_and_installed(host):
    lines = sorted(_dpkg(host, r"${Package} ${Version} ${db:Status-Abbrev}\n", *BUNDLE).splitlines())
    assert lines == ["tops-eccl 2.5.136-1 hi ", "tops-sdk 2.5.136-1 hi ", "topsfactor 2.5.136-1 hi "]
    sel = host.run("dpkg --get-selections %s" % " ".join(BUNDLE))
    assert sorted(l.split() for l in sel.stdout.splitlines()) == sorted([p, "hold"] for p in BUNDLE)


def test_interrupted_install_was_repaired(host):
    assert _dpkg(host, r"${db:Status-Abbrev}", "tops-sim-interrupt") == "ii "
    assert host.run("dpkg --audit").stdout.strip() == ""


def test_libeccl_is_the_installed_version(host):
    code = ("import ctypes; l = ctypes.CDLL('/usr/local/tops/lib/libeccl.so'); v = ctypes.c_int(); "
            "assert l.ecclGetVersion(ctypes.byref(v)) == 0; "
            "l.ecclGetVersionString.restype = ctypes.c_char_p; "
            "print(v.value, l.ecclGetVersionString().decode())")
    out = host.run("python3 -c \"%s\"" % code)
    assert out.rc == 0, out.stderr
    assert out.stdout.split() == ["2005136", "2.5.136"]


def test_no_loader_config_shipped(host):
    # writing /etc/ld.so.conf.d is the eccl_env role's job, not the debs'
    listing = host.run("dpkg -L %s" % " ".join(BUNDLE)).stdout
    assert "/etc/ld.so.conf.d" not in listing
    assert "/usr/local/tops/lib/libeccl.so" in listing


def test_journal_is_root_only(host):
    d = host.file("/var/lib/topsrider")
    assert d.is_directory and d.user == "root" and d.mode == 0o700
    snaps = host.file("/var/lib/topsrider/snapshots")
    assert snaps.mode == 0o700
    names = snaps.listdir()
    assert "molecule-2.5.136.json" in names and "molecule-upgrade.json" in names
    for name in names:
        f = host.file("/var/lib/topsrider/snapshots/" + name)
        assert f.user == "root" and f.mode == 0o600, name
    assert host.file("/var/lib/topsrider/debs.json").mode == 0o600


def test_snapshots_record_previous_state(host):
    up = json.loads(host.file("/var/lib/topsrider/snapshots/molecule-upgrade.json").content_string)
    assert up["status"] == "applied"
    for p in BUNDLE:
        rec = up["packages"][p]
        assert rec["before"] == "2.5.136-1" and rec["before_held"] is True
        assert rec["after"] == "2.5.140-1"
        assert rec["before_deb"]["path"] == "/var/cache/topsrider/2.5.136/%s_2.5.136-1_amd64.deb" % p
    assert [e["event"] for e in up["events"]][-1] == "rolled_back"
    first = json.loads(host.file("/var/lib/topsrider/snapshots/molecule-2.5.136.json").content_string)
    assert all(first["packages"][p]["before"] is None for p in BUNDLE)
    failed = [json.loads(host.file("/var/lib/topsrider/snapshots/" + n).content_string)
              for n in host.file("/var/lib/topsrider/snapshots").listdir()]
    assert "failed-restored" in [s["status"] for s in failed]  # the failing postinst run


def test_deb_index_records_sha256(host):
    idx = json.loads(host.file("/var/lib/topsrider/debs.json").content_string)
    for p in BUNDLE:
        for v, d in (("2.5.136-1", "2.5.136"), ("2.5.140-1", "2.5.140")):
            rec = idx[p][v]
            assert rec["path"] == "/var/cache/topsrider/%s/%s_%s_amd64.deb" % (d, p, v)
            assert host.file(rec["path"]).sha256sum == rec["sha256"]
