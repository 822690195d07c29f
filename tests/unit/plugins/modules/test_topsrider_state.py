# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gcu.topsrider.topsrider_state with faked commands: one pass, read-only,
unreadable parts reported as data, bad commands failing with rc/stdout/stderr."""
import json
import os

import pytest

from ansible.module_utils import basic
from ansible_collections.gcu.topsrider.plugins.module_utils import _state_read
from ansible_collections.gcu.topsrider.plugins.modules import topsrider_state

from utils import AnsibleExitJson, AnsibleFailJson, exit_json, fail_json, set_module_args

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.abspath(os.path.join(HERE, "..", "..", "fixtures", "efsmi"))
LDCONFIG = ("2 libs found in cache `/etc/ld.so.cache'\n"
            "\tlibeccl.so (libc6,x86-64) => /usr/local/tops/lib/libeccl.so\n"
            "\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6\n")
QUERY = "tops-eccl\tamd64\t2.5.136-1\thi \t\ttops-sdk (= 2.5.136-1)\t\n"


def efsmi_fixture(name):
    with open(os.path.join(FIX, name)) as f:
        return f.read()


@pytest.fixture
def run(monkeypatch, tmp_path):
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path",
                        lambda self, name, required=False, opt_dirs=None: "/usr/bin/" + name)
    monkeypatch.setattr(_state_read, "PCI_ROOT", str(tmp_path / "no-pci"))

    def go(args, table):
        calls = []

        def fake(self, argv, **kwargs):
            assert isinstance(argv, list)
            assert kwargs.get("environ_update") == {"LC_ALL": "C", "LANG": "C"}
            calls.append(argv)
            key = os.path.basename(argv[0])
            key = key if key in ("dpkg-query", "dpkg", "ldconfig", "true") else "python"
            key = tuple([key] + [a for a in argv[1:] if not a.startswith("-f=") and a != "-c"][:3])
            for k, v in table.items():
                if key[:len(k)] == k:
                    return v
            raise AssertionError("unexpected command %r" % (argv,))

        monkeypatch.setattr(basic.AnsibleModule, "run_command", fake)
        with set_module_args(args):
            try:
                topsrider_state.main()
            except (AnsibleExitJson, AnsibleFailJson) as e:
                return e.args[0], calls
        raise AssertionError("the module neither exited nor failed")
    return go


def test_everything_in_one_pass(run, tmp_path):
    env = tmp_path / "topsrider.sh"
    env.write_text(u"export A=1\n")
    python = tmp_path / "python"
    python.write_text(u"#!/bin/sh\n")
    os.chmod(str(python), 0o755)
    probe = json.dumps({"python": "3.11", "executable": str(python), "torch": "2.13.0", "torch_gcu": None,
                        "pip": "23.0.1"})
    result, calls = run(
        {"packages": ["tops-eccl", "tops-sdk"], "files": [str(env), str(tmp_path / "gone")], "python": str(python),
         "library": "libeccl.so", "library_package": "tops-eccl", "devices": True, "efsmi_path": "/bin/true"},
        {("dpkg-query", "-W", "--", "tops-eccl"): (1, QUERY, "dpkg-query: no packages found matching tops-sdk\n"),
         ("dpkg-query", "-L", "--"): (0, "/usr/local/tops\n/usr/local/tops/lib/libeccl.so\n", ""),
         ("ldconfig", "-p"): (0, LDCONFIG, ""),
         ("python",): (0, probe + "\n", ""),
         ("true", "-q"): (1, "", "Error: open /dev/gcuctl failed\n"),
         ("true",): (0, efsmi_fixture("t20-summary-8card-idle.txt"), "")})
    state = result["state"]
    assert result["changed"] is False
    assert state["packages"] == {
        "tops-eccl": {"version": "2.5.136-1", "status": "installed", "want": "hold", "held": True},
        "tops-sdk": {"version": None, "status": "not-installed", "want": "unknown", "held": False}}
    assert state["files"][str(env)]["content"] == "export A=1\n"
    assert state["files"][str(tmp_path / "gone")] == {"exists": False}
    assert state["python"] == {"path": str(python), "python": "3.11", "executable": str(python), "torch": "2.13.0",
                               "torch_gcu": None, "torch_gcu_url": None, "pip": "23.0.1", "error": None}
    assert [c["path"] for c in state["library"]["resolved"]] == ["/usr/local/tops/lib/libeccl.so"]
    assert [c["path"] for c in state["library"]["owned"]] == ["/usr/local/tops/lib/libeccl.so"]
    assert state["devices"]["count"] == 8 and state["devices"]["source"] == "summary"
    assert state["devices"]["pci_count"] is None
    assert len(calls) == 6


def test_nothing_asked_runs_nothing(run):
    result, calls = run({}, {})
    assert calls == [] and result["state"] == {"packages": {}, "package_files": None, "files": {}, "python": None,
                                               "library": None, "job": None, "devices": None, "dpkg_lock": None, "space": None,
                                               "system": None, "holders": None, "slurm": None,
                                               "services": None, "records": {}}


def test_records_are_parsed_on_the_node_and_a_bad_one_is_data(run, tmp_path):
    (tmp_path / "open-deploy.json").write_text(u'{"id": "D1", "to_version": "2.5.140"}')
    (tmp_path / "D1.json").write_text(u'{"cut off')
    paths = [str(tmp_path / n) for n in ("open-deploy.json", "D1.json", "gone.json")]
    result, calls = run({"records": paths}, {})
    assert calls == [] and result["changed"] is False
    assert result["state"]["records"][paths[0]] == {"exists": True, "problem": None,
                                                    "value": {"id": "D1", "to_version": "2.5.140"}}
    assert result["state"]["records"][paths[1]]["value"] is None
    assert result["state"]["records"][paths[1]]["problem"].startswith(paths[1] + " is not JSON: ")
    assert result["state"]["records"][paths[2]] == {"exists": False, "value": None, "problem": None}


def test_system_part_reads_the_os_and_the_local_facts_without_a_command(run, tmp_path):
    (tmp_path / "topsrider.fact").write_text(u'{"version": "2.5.136"}')
    result, calls = run({"system": True, "facts_dir": str(tmp_path)}, {})
    system = result["state"]["system"]
    assert calls == [] and system["local"] == {"topsrider": {"version": "2.5.136"}}
    assert system["architecture"] == os.uname()[4] and system["os_family"] is not None


def test_preflight_parts_dpkg_lock_and_space(run, monkeypatch, tmp_path):
    monkeypatch.setattr(_state_read, "dpkg_lock_busy", lambda: "/var/lib/dpkg/lock-frontend")
    result, calls = run({"dpkg_lock": True, "space": str(tmp_path / "cache" / "topsrider")}, {})
    assert calls == [] and result["changed"] is False
    assert result["state"]["dpkg_lock"] == {"busy": "/var/lib/dpkg/lock-frontend", "error": None}
    assert result["state"]["space"]["checked"] == str(tmp_path) and result["state"]["space"]["free"] > 0

    def denied():
        raise OSError(13, "Permission denied")
    monkeypatch.setattr(_state_read, "dpkg_lock_busy", denied)
    result, calls = run({"dpkg_lock": True}, {})
    assert result["state"]["dpkg_lock"]["busy"] is None and "Permission denied" in result["state"]["dpkg_lock"]["error"]


def test_unreadable_parts_are_data_not_failures(run, tmp_path):
    result, dummy = run({"python": str(tmp_path / "nopython"), "devices": True, "efsmi_path": "/bin/true"},
                        {("true", "-q"): (1, "", "no driver\n"), ("true",): (1, "", "no driver\n")})
    assert "does not exist" in result["state"]["python"]["error"]
    assert "rc=1: no driver" in result["state"]["devices"]["error"]
    assert result["state"]["devices"]["count"] is None


def test_dpkg_query_failure_fails_with_the_command(run):
    result, dummy = run({"packages": ["tops-eccl"]}, {("dpkg-query",): (2, "", "database locked\n")})
    assert result["failed"] and result["rc"] == 2 and "dpkg-query" in result["cmd"]
    assert "database locked" in result["msg"]


@pytest.mark.parametrize("args,msg", [
    ({"files": ["relative/path"]}, "files must be absolute paths, got: relative/path"),
    ({"records": ["open-deploy.json"]}, "records must be absolute paths, got: open-deploy.json"),
    ({"library": "/usr/lib/libeccl.so"}, "file name"),
    ({"library_package": "tops-eccl"}, "library"),
    ({"job": "ascend"}, "unknown vendor 'ascend'"),
    ({"job_env_file": "/etc/x.sh"}, "job_env_file needs job"),
    ({"job": "enflame", "job_env_file": "x.sh"}, "absolute path"),
])
def test_bad_arguments(run, args, msg):
    result, calls = run(args, {})
    assert result["failed"] and msg in result["msg"] and calls == []


def _desired(tmp_path, **extra):
    env = tmp_path / "topsrider.sh"
    env.write_text(u"export A=1\n")
    manifest = {"version": "2.5.136", "files": [
        {"type": "deb", "package": "tops-eccl", "version": "2.5.136-1", "file": "tops-eccl_2.5.136-1_amd64.deb",
         "sha256": "11" * 32}]}
    desired = {"node": "t20-node-1", "manifest": manifest, "hold": True, "python": None, "library": None,
               "expected_count": 8, "require_healthy": True,
               "files": {str(env): {"content": "export A=2\n", "mode": "0644", "owner": None, "group": None}}}
    desired.update(extra)
    return desired


def test_desired_reads_what_it_names_and_compares_in_the_same_call(run, tmp_path):
    from ansible_collections.gcu.topsrider.plugins.filter import drift
    stage = tmp_path / "stage"
    desired = _desired(tmp_path, stage_path=str(stage), manifest_sha256="22" * 32,
                       facts_file=str(tmp_path / "topsrider.fact"))
    result, calls = run(
        {"desired": desired, "efsmi_path": "/bin/true"},
        {("dpkg-query", "-W", "--", "tops-eccl"): (0, QUERY, ""),
         ("true", "-q"): (1, "", "Error: open /dev/gcuctl failed\n"),
         ("true",): (0, efsmi_fixture("t20-summary-8card-idle.txt"), "")})
    assert result["changed"] is False and len(calls) == 3
    # every deb of the manifest, the managed file, the local facts and every staged file were read
    assert sorted(result["state"]["files"]) == sorted(
        [str(tmp_path / "topsrider.sh"), str(tmp_path / "topsrider.fact"),
         str(stage / "tops-eccl_2.5.136-1_amd64.deb"), str(stage / "manifest.json")])
    assert result["state"]["devices"]["count"] == 8
    assert [(f["node"], f["category"]) for f in result["findings"]] == [("t20-node-1", "env")]
    # the one comparison: the module's findings are the filter's on the same state
    assert result["findings"] == drift.FilterModule().filters()["topsrider_drift_findings"](
        result["state"], "t20-node-1", desired)
    assert result["pending"][0].startswith("env %s" % (tmp_path / "topsrider.sh"))
    assert any("do not record this manifest" in r for r in result["pending"])
    assert any("staged bundle: %s" % (stage / "manifest.json") in r for r in result["pending"])


def test_a_drift_check_desired_state_has_findings_but_no_pending(run, tmp_path):
    result, calls = run({"desired": _desired(tmp_path, expected_count=None), "efsmi_path": "/bin/true"},
                        {("dpkg-query", "-W", "--", "tops-eccl"): (0, QUERY, ""),
                         ("true", "-q"): (1, "", "no driver\n"), ("true",): (1, "", "no driver\n")})
    assert result["pending"] is None
    assert [f["category"] for f in result["findings"]] == ["env", "device"]


@pytest.mark.parametrize("desired,msg", [
    ({"manifest": None, "files": {}}, "bundle manifest"),
    ({"manifest": {"files": []}, "files": {"etc/x": {}}}, "not an absolute path"),
    ({"manifest": {"files": []}, "stage_path": "/var/cache/topsrider/2.5.136"}, "go together"),
])
def test_an_unusable_desired_state_fails_before_anything_is_read(run, desired, msg):
    result, calls = run({"desired": desired}, {})
    assert result["failed"] and msg in result["msg"] and calls == []


QUERY3 = (QUERY + "tops-sdk\tamd64\t2.5.136-1\thi \t\t\t\n"
          + "topsfactor\tamd64\t2.5.136-1\thi \t\t\t\n")
VERIFY = ("??5??????   /usr/local/tops/lib/libeccl.so\n"
          "missing   c /etc/tops/eccl.conf\n"
          "dpkg: warning: something dpkg says besides\n")


def test_package_files_one_verify_call_then_whose_file_it_is(run):
    result, calls = run(
        {"package_files": ["tops-eccl", "tops-sdk", "topsfactor", "gone"]},
        {("dpkg-query", "-W", "--", "tops-eccl"): (1, QUERY3, "dpkg-query: no packages found matching gone\n"),
         ("dpkg", "--verify", "--verify-format=rpm", "--"): (1, VERIFY, ""),
         ("dpkg-query", "-L", "--", "tops-eccl"): (0, "/usr/local/tops/lib/libeccl.so\n/etc/tops/eccl.conf\n", ""),
         ("dpkg-query", "-L", "--"): (0, "/usr/local/tops/lib/libtopsrt.so\n", "")})
    verify = [c for c in calls if c[0].endswith("/dpkg")]
    # one dpkg --verify for every installed package (not the one dpkg does not know)
    assert verify == [["/usr/bin/dpkg", "--verify", "--verify-format=rpm", "--", "tops-eccl", "tops-sdk", "topsfactor"]]
    files = result["state"]["package_files"]
    assert files["error"] is None
    assert files["packages"] == {
        "tops-eccl": [{"path": "/usr/local/tops/lib/libeccl.so", "problem": "changed", "conffile": False,
                       "attrs": "??5??????"},
                      {"path": "/etc/tops/eccl.conf", "problem": "missing", "conffile": True, "attrs": "missing"}],
        "tops-sdk": [], "topsfactor": []}
    # the versions are read with them (the reinstall hint names them)
    assert result["state"]["packages"]["tops-eccl"]["version"] == "2.5.136-1"


def test_package_files_of_a_clean_node_is_one_dpkg_call_and_nothing_else(run):
    result, calls = run({"package_files": ["tops-eccl", "tops-sdk", "topsfactor"]},
                        {("dpkg-query", "-W", "--", "tops-eccl"): (0, QUERY3, ""),
                         ("dpkg", "--verify"): (0, "", "")})
    assert len(calls) == 2 and result["state"]["package_files"] == {
        "error": None, "packages": {"tops-eccl": [], "tops-sdk": [], "topsfactor": []}}


def test_package_files_that_dpkg_cannot_verify_is_an_error_in_the_state(run):
    result, dummy = run({"package_files": ["tops-eccl"]},
                        {("dpkg-query", "-W", "--", "tops-eccl"): (0, QUERY, ""),
                         ("dpkg", "--verify"): (2, "", "dpkg: error: unknown option --verify-format\n")})
    assert not result.get("failed")
    assert "unknown option" in result["state"]["package_files"]["error"]


def test_job_names_the_launchers_missing_file_in_its_words_and_the_librarys_changed_file(run, monkeypatch):
    from ansible_collections.gcu.topsrider.plugins.module_utils import _compare
    monkeypatch.setattr(_compare, "usable", lambda path: path != "/etc/profile.d/topsrider.sh")
    result, calls = run(
        {"job": "enflame"},
        {("dpkg-query", "-W", "--", "tops-eccl"): (0, QUERY, ""),
         ("dpkg", "--verify"): (1, "??5??????   /usr/local/tops/lib/libeccl.so\n", ""),
         ("dpkg-query", "-L", "--"): (0, "/usr/local/tops\n/usr/local/tops/lib/libeccl.so\n", ""),
         ("ldconfig", "-p"): (0, LDCONFIG, "")})
    job = result["state"]["job"]
    launcher = [f for f in _compare.job_files("enflame") if f["path"] == "/etc/profile.d/topsrider.sh"][0]
    assert job["files"] == ["/etc/profile.d/topsrider.sh", "/etc/ld.so.conf.d/topsrider.conf",
                            "/etc/ansible/facts.d/topsrider.fact"]
    assert [p["check"] for p in job["problems"]] == ["/etc/profile.d/topsrider.sh", "tops-eccl /usr/local/tops/lib/libeccl.so"]
    # the launcher's own exit-72 message, word for word
    assert job["problems"][0]["message"] == launcher["message"]
    assert job["problems"][0]["message"].startswith("/etc/profile.d/topsrider.sh is missing or unreadable: ")
    assert "run playbooks/deploy.yml" in job["problems"][0]["message"]
    assert job["problems"][1]["message"].startswith(
        "tops-eccl: /usr/local/tops/lib/libeccl.so changed (md5 differs from what dpkg installed); reinstall tops-eccl "
        "2.5.136-1")


def test_services_asks_systemctl_only_about_a_unit_whose_file_is_installed(run, tmp_path, monkeypatch):
    """drift.yml's services check (the card_exporter role's unit): a unit file in the unit directory
    and not active is a finding of category service; a unit never deployed there is not asked about."""
    units = tmp_path / "units"
    units.mkdir()
    (units / "topsrider-card-exporter.service").write_text(u"[Service]\n")
    monkeypatch.setattr(_state_read, "SYSTEMD_UNIT_DIR", str(units))
    desired = _desired(tmp_path, expected_count=None, files={},
                       services=["topsrider-card-exporter.service", "other.service"])
    result, calls = run({"desired": desired, "efsmi_path": "/bin/true"},
                        {("dpkg-query", "-W", "--", "tops-eccl"): (0, QUERY, ""),
                         ("true", "-q"): (0, efsmi_fixture("t20-query-1card-new-keys.txt"), ""),
                         ("python", "is-active", "--", "topsrider-card-exporter.service"): (3, "failed\n", "")})
    assert ["/usr/bin/systemctl", "is-active", "--", "topsrider-card-exporter.service"] in calls
    assert not any("other.service" in a for argv in calls for a in argv)
    assert result["state"]["services"] == {
        "topsrider-card-exporter.service": {"deployed": True, "active": "failed", "error": None},
        "other.service": {"deployed": False, "active": None, "error": None}}
    svc = [f for f in result["findings"] if f["category"] == "service"]
    assert [(f["check"], f["expected"], f["actual"]) for f in svc] == [
        ("topsrider-card-exporter.service running", "active", "failed")]


def test_an_active_service_is_no_finding(run, tmp_path, monkeypatch):
    units = tmp_path / "units"
    units.mkdir()
    (units / "topsrider-card-exporter.service").write_text(u"[Service]\n")
    monkeypatch.setattr(_state_read, "SYSTEMD_UNIT_DIR", str(units))
    desired = _desired(tmp_path, expected_count=None, files={}, services=["topsrider-card-exporter.service"])
    result, calls = run({"desired": desired, "efsmi_path": "/bin/true"},
                        {("dpkg-query", "-W", "--", "tops-eccl"): (0, QUERY, ""),
                         ("true", "-q"): (0, efsmi_fixture("t20-query-1card-new-keys.txt"), ""),
                         ("python", "is-active"): (0, "active\n", "")})
    assert result["state"]["services"]["topsrider-card-exporter.service"]["active"] == "active"
    assert [f for f in result["findings"] if f["category"] == "service"] == []
