"""gcu.topsrider.eccl_probe: the module end to end with real child processes on fake torch/torch_gcu."""
import os
import sys
import time

import pytest

from ansible.module_utils import basic
from ansible_collections.gcu.topsrider.plugins.module_utils import _eccl_probe, _vendors
from ansible_collections.gcu.topsrider.plugins.modules import eccl_probe

from utils import AnsibleExitJson, AnsibleFailJson, exit_json, fail_json, set_module_args

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "module_utils"))
import eccl_fakes  # noqa: E402

LDCONFIG = "/sbin/ldconfig"


@pytest.fixture(scope="module")
def libdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("eccl-lib")
    eccl_fakes.build_libeccl(d)
    return str(d)


@pytest.fixture
def node(monkeypatch):
    """Patch the module's view of the node: no host ld.so.conf or default dirs, a fake ldconfig cache."""
    state = {"ldconfig_out": "0 libs found in cache `/etc/ld.so.cache'\n", "commands": []}
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return {"ldconfig": LDCONFIG, "python3": sys.executable}.get(name)

    def run_command(self, args, **kwargs):
        state["commands"].append(args)
        assert args == [LDCONFIG, "-p"]
        assert kwargs["environ_update"] == {"LC_ALL": "C", "LANG": "C"}
        return 0, state["ldconfig_out"], ""

    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", get_bin_path)
    monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(_eccl_probe, "read_ld_so_conf", lambda: [])
    for row in _vendors.VENDORS:  # the vendor table's default library directories
        monkeypatch.setitem(row["collective"]["library"], "dirs", [])
    return state


def run(args):
    with set_module_args(args):
        try:
            eccl_probe.main()
        except AnsibleExitJson as e:
            return False, e.args[0]
        except AnsibleFailJson as e:
            return True, e.args[0]
    raise AssertionError("module neither exited nor failed")


def codes(result):
    return [p["code"] for p in result["problems"]]


def alive(pid):
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    # A zombie is dead for our purpose only if reaped; a killed grandchild is reparented and reaped by init.
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split()[2] != "Z"
    except IOError:
        return False


# ---------------------------------------------------------------- library level

def test_library_healthy(node, libdir):
    failed, r = run({"level": "library", "environment": {"LD_LIBRARY_PATH": libdir}})
    assert not failed and r["healthy"] and r["changed"] is False
    lib = r["library"]
    assert lib["loadable"] and lib["path"] == os.path.join(libdir, "libeccl.so") and lib["version"] == "2.5.136"
    assert len(lib["copies"]) == 1 and lib["copies"][0]["found_in"] == ["LD_LIBRARY_PATH"]
    assert r["framework"] is None and r["collective"] is None
    assert node["commands"] == [[LDCONFIG, "-p"]]


def test_library_found_through_ldconfig_cache(node, libdir):
    node["ldconfig_out"] = "\tlibeccl.so (libc6,x86-64) => %s/libeccl.so\n" % libdir
    failed, r = run({"level": "library", "fail_on_problem": False})
    # In the cache but the loader path of this process does not have it: the cache is stale.
    assert r["library"]["copies"][0]["in_loader_cache"] is True
    assert codes(r) == ["LIBRARY_NOT_ON_LOADER_PATH"]


def test_library_missing_fails_with_code_in_msg(node):
    failed, r = run({"level": "library"})
    assert failed and not r["healthy"]
    assert codes(r) == ["LIBRARY_MISSING"]
    assert "LIBRARY_MISSING" in r["msg"] and r["problems"][0]["hint"]


def test_library_not_on_loader_path(node, libdir):
    failed, r = run({"level": "library", "library_dirs": [libdir]})
    assert failed and codes(r) == ["LIBRARY_NOT_ON_LOADER_PATH"]
    assert libdir in r["problems"][0]["hint"]
    assert r["library"]["copies"][0]["loadable"] is True


def test_library_duplicate_and_unloadable(node, libdir, tmp_path):
    other = tmp_path / "other"
    eccl_fakes.build_libeccl(other, version=2005140)
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "libeccl.so").write_text("garbage\n" * 500)
    failed, r = run({"level": "library", "library_dirs": [str(other), str(junk)],
                     "environment": {"LD_LIBRARY_PATH": libdir}})
    assert failed and sorted(codes(r)) == ["LIBRARY_DUPLICATE", "LIBRARY_UNLOADABLE"]
    versions = sorted(str(c["version"]) for c in r["library"]["copies"])
    assert versions == ["2.5.136", "2.5.140", "None"]
    assert r["library"]["path"] == os.path.join(libdir, "libeccl.so")


# ---------------------------------------------------------------- framework level

@pytest.mark.parametrize("gcu,env,api,devices", [
    ("2.x", {}, "2.x", 8),
    ("1.x", {"FAKE_TORCH_VERSION": "1.10.0"}, "1.x", 8),
    ("2.x", {"FAKE_GCU_DEVICES": "3"}, "2.x", 3),
])
def test_framework_healthy(node, libdir, tmp_path, gcu, env, api, devices):
    site = eccl_fakes.make_site(tmp_path, gcu=gcu, requires="1.10.0" if gcu == "1.x" else "2.13.0")
    environment = dict(env, PYTHONPATH=site, LD_LIBRARY_PATH=libdir)
    failed, r = run({"python": sys.executable, "environment": environment})
    assert not failed and r["healthy"], r["problems"]
    fw = r["framework"]
    assert fw["api_generation"] == api and fw["device_count"] == devices
    assert fw["backend_registered"] is True and fw["torch_matches"] is True
    assert fw["python"] and r["collective"] is None


def test_framework_defaults_to_node_python3(node, libdir, tmp_path):
    site = eccl_fakes.make_site(tmp_path, gcu=None)
    failed, r = run({"environment": {"PYTHONPATH": site, "LD_LIBRARY_PATH": libdir}, "fail_on_problem": False})
    assert not failed and not r["healthy"]
    assert codes(r) == ["TORCH_GCU_MISSING", "BACKEND_NOT_REGISTERED"]
    assert "backend 'eccl' is not available in torch.distributed" in r["problems"][1]["message"]


def test_framework_torch_1x_says_invalid_backend(node, libdir, tmp_path):
    site = eccl_fakes.make_site(tmp_path, gcu=None)
    failed, r = run({"environment": {"PYTHONPATH": site, "LD_LIBRARY_PATH": libdir, "FAKE_TORCH_VERSION": "1.10.0"},
                     "python": sys.executable})
    assert failed and codes(r) == ["TORCH_GCU_MISSING", "BACKEND_NOT_REGISTERED"]
    assert "Invalid backend: 'eccl'" in r["problems"][1]["message"]


def test_python_missing(node, libdir):
    failed, r = run({"python": "/nonexistent/bin/python", "environment": {"LD_LIBRARY_PATH": libdir}})
    assert failed and codes(r) == ["PYTHON_MISSING"]
    assert "/nonexistent/bin/python" in r["problems"][0]["message"]


def test_framework_probe_crash_is_probe_failed(node, libdir, tmp_path):
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("import os\nos._exit(3)\n")
    failed, r = run({"python": sys.executable, "environment": {"PYTHONPATH": str(site), "LD_LIBRARY_PATH": libdir}})
    assert failed and codes(r) == ["PROBE_FAILED"]
    assert "framework probe" in r["problems"][0]["message"] and "rc=3" in r["problems"][0]["message"]
    assert r["framework"] is None and r["library"]["loadable"] is True


def test_library_probe_crash_is_probe_failed_only(node, libdir, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import os\nos._exit(4)\n")
    failed, r = run({"level": "library", "environment": {"PYTHONPATH": str(site), "LD_LIBRARY_PATH": libdir}})
    assert failed and codes(r) == ["PROBE_FAILED"]
    assert "library probe" in r["problems"][0]["message"] and "rc=4" in r["problems"][0]["message"]
    assert r["library"]["loadable"] is None and len(r["library"]["copies"]) == 1


def test_trailing_newline_in_the_python_path_is_never_run(node, libdir):
    # "/path/python\n" is not the interpreter: refused (PYTHON_MISSING), no child process started.
    failed, r = run({"python": sys.executable + "\n", "level": "framework", "environment": {"LD_LIBRARY_PATH": libdir}})
    assert failed and r["framework"] is None
    assert [p["code"] for p in r["problems"]] == ["PYTHON_MISSING"]
    assert node["commands"] == [[LDCONFIG, "-p"]]


def test_check_mode_runs_the_same_read_only_probe(node, libdir, tmp_path):
    site = eccl_fakes.make_site(tmp_path, gcu="2.x")
    failed, r = run({"python": sys.executable, "_ansible_check_mode": True,
                     "environment": {"PYTHONPATH": site, "LD_LIBRARY_PATH": libdir}})
    assert not failed and r["healthy"] and r["changed"] is False
    assert r["framework"]["device_count"] == 8


@pytest.mark.parametrize("args,fragment", [
    ({"environment": {"bad-name": "1"}}, 'variable name "bad-name" (from environment) is not a valid name'),
    ({"environment": {"lower": "1"}}, 'variable name "lower" (from environment) is not a valid name'),
    # The one environment rule (module_utils/_envcheck): a trailing newline never passes.
    ({"environment": {"ECCL_DEBUG": "INFO\n"}}, '"INFO\\n", has characters that are not allowed'),
    ({"environment": {"ECCL_DEBUG\n": "INFO"}}, 'variable name "ECCL_DEBUG\\n" (from environment) is not a valid name'),
    ({"environment": {"ECCL_DEBUG": "INFO; touch /tmp/pwned"}}, "has characters that are not allowed"),
    # A name the loader acts on: refused unless allow_names names it (the default names only two search paths).
    ({"environment": {"LD_PRELOAD": "/tmp/x.so"}},
     '"LD_PRELOAD" (from environment) is the dynamic loader\'s settings (what every program loads): '
     'refused unless allow_names names it'),
    ({"environment": {"PATH": "/opt/x"}}, '"PATH" (from environment) is the shell\'s search path for commands'),
    ({"environment": {"LD_LIBRARY_PATH": "lib"}, "allow_names": ["LD_LIBRARY_PATH"]},
     'is a search path whose entry "lib" is not absolute'),
    ({"timeout": 0}, "timeout"),
    ({"sizes": [2]}, "sizes"),
    ({"sizes": []}, "sizes"),
    ({"world_size": 0}, "world_size"),
    ({"master_port": 70000}, "master_port"),
    ({"iterations": 0}, "iterations"),
    ({"level": "everything"}, "level"),
    ({"backend": "mpi"}, "backend"),
])
def test_bad_arguments(node, args, fragment):
    failed, r = run(args)
    assert failed and fragment in r["msg"]
    assert node["commands"] == []


@pytest.mark.parametrize("environment, rules", [
    ({"bad-name": "1"}, ["Names must match"]),
    ({"ECCL_DEBUG": "INFO; touch /tmp/pwned"}, ["Values must be"]),
    ({"LD_PRELOAD": "/tmp/x.so"}, []),
])
def test_an_environment_refusal_states_only_the_rule_it_breaks(node, environment, rules):
    failed, r = run({"environment": environment})
    assert failed
    for rule in ("Names must match", "Values must be"):
        assert (rule in r["msg"]) == (rule in rules), (rule, r["msg"])


def test_a_backend_the_vendor_table_lacks_is_refused_by_name(node):
    # Never another backend's values (NVIDIA's included): the module stops before any probe.
    failed, r = run({"backend": "hccl", "level": "library"})
    assert failed and r["msg"] == ("backend: unknown collective backend 'hccl': the collection knows eccl, nccl, gloo "
                                   "(plugins/module_utils/_vendors.py)")
    assert node["commands"] == []


def test_child_environment_extends_search_paths(monkeypatch):
    # A search path the caller gives is appended to the module's own value, never replaces it.
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    env = _eccl_probe.child_env({"PATH": "/opt/tops/bin", "LD_LIBRARY_PATH": "/opt/tops/lib", "ECCL_DEBUG": "INFO"})
    assert env["PATH"] == "/usr/bin:/bin:/opt/tops/bin"
    assert env["LD_LIBRARY_PATH"] == "/opt/tops/lib"
    assert env["ECCL_DEBUG"] == "INFO"


# ---------------------------------------------------------------- collective level

def collective(node, libdir, tmp_path, env=None, gcu="2.x", requires="2.13.0", **args):
    site = eccl_fakes.make_site(tmp_path / "site", gcu=gcu, requires=requires)
    environment = dict(env or {}, PYTHONPATH=site, LD_LIBRARY_PATH=libdir, FAKE_PID_DIR=str(tmp_path))
    params = {"level": "collective", "python": sys.executable, "environment": environment, "fail_on_problem": False,
              "sizes": [4096, 65536], "iterations": 2}
    params.update(args)
    return run(params)


def test_collective_healthy(node, libdir, tmp_path):
    failed, r = collective(node, libdir, tmp_path, env={"FAKE_GCU_DEVICES": "3"})
    assert not failed and r["healthy"], r["problems"]
    c = r["collective"]
    assert c["world_size"] == 3 and c["ranks_reported"] == 3 and c["backend"] == "eccl"
    assert 0 < c["master_port"] < 65536
    assert [x["size_bytes"] for x in c["results"]] == [4096, 65536]
    for x in c["results"]:
        assert x["correct"] and x["ranks"] == 3 and x["latency_us"] > 0 and x["busbw_gbps"] > 0
    assert all(not alive(rk["pid"]) for rk in c["ranks"])


def test_collective_world_size_is_the_device_count_and_never_more(node, libdir, tmp_path):
    # One card: one rank (a device backend needs a card per rank; 1 is valid).
    failed, r = collective(node, libdir, tmp_path, env={"FAKE_GCU_DEVICES": "1"})
    assert r["healthy"] and r["collective"]["world_size"] == 1, r["problems"]
    assert r["collective"]["devices"] == ["gcu:0"] and r["collective"]["api"] == "2.x"
    failed, r = collective(node, libdir, tmp_path, env={"FAKE_GCU_DEVICES": "4"}, world_size=2, master_port=29877)
    assert r["healthy"] and r["collective"]["world_size"] == 2 and r["collective"]["master_port"] == 29877
    failed, r = collective(node, libdir, tmp_path, env={"FAKE_GCU_DEVICES": "1"}, world_size=4)
    assert codes(r) == ["WORLD_SIZE_TOO_LARGE"] and r["collective"] is None
    assert "world_size 4 asked for" in r["problems"][0]["message"] and "1 device(s)" in r["problems"][0]["message"]


def test_collective_places_tensors_on_the_device_1x(node, libdir, tmp_path):
    failed, r = collective(node, libdir, tmp_path, gcu="1.x", requires="1.10.0",
                           env={"FAKE_GCU_DEVICES": "2", "FAKE_TORCH_VERSION": "1.10.0"})
    assert r["healthy"], r["problems"]
    assert r["collective"]["devices"] == ["xla:0", "xla:1"] and r["collective"]["api"] == "1.x"


def test_collective_reports_the_library_each_rank_loaded(node, libdir, tmp_path):
    failed, r = collective(node, libdir, tmp_path, env={"FAKE_GCU_DEVICES": "2"})
    assert r["healthy"], r["problems"]
    assert "busbw = algbw * 2(n-1)/n" in r["collective"]["bandwidth"]
    # The fake torch_gcu does not load libeccl, so the ranks report none mapped.
    assert r["collective"]["libraries"] == [{"name": "libeccl", "path": None, "version": None}]


def test_collective_wrong_result(node, libdir, tmp_path):
    failed, r = collective(node, libdir, tmp_path, env={"FAKE_GCU_DEVICES": "2", "FAKE_DIST_MODE": "wrong"})
    assert set(codes(r)) == {"WRONG_RESULT"}
    assert all(not x["correct"] for x in r["collective"]["results"])


def test_collective_rank_failed_aborts_the_others(node, libdir, tmp_path):
    failed, r = collective(node, libdir, tmp_path, env={"FAKE_GCU_DEVICES": "2", "FAKE_DIST_MODE": "crash"},
                           fail_on_problem=True)
    assert failed and "RANK_FAILED" in codes(r)
    assert "device lost on rank 1" in r["problems"][0]["message"]


def test_collective_timeout_kills_every_child(node, libdir, tmp_path):
    started = time.time()
    failed, r = collective(node, libdir, tmp_path, env={"FAKE_GCU_DEVICES": "3", "FAKE_DIST_MODE": "hang"},
                           timeout=4, fail_on_problem=True)
    elapsed = time.time() - started
    assert failed and codes(r) == ["RANK_TIMEOUT"]
    c = r["collective"]
    assert c["timed_out"] is True and c["ranks_reported"] == 2
    hung = [rk for rk in c["ranks"] if not rk["reported"]]
    assert [rk["rank"] for rk in hung] == [1] and hung[0]["killed"] == "timeout"
    assert "rank 1 in all_reduce 4096" in r["problems"][0]["message"]
    assert elapsed < 30
    # No rank and no grandchild a rank forked survives the timeout.
    grandchild = int((tmp_path / "grandchild.1").read_text())
    deadline = time.time() + 5
    while alive(grandchild) and time.time() < deadline:
        time.sleep(0.1)
    assert not alive(grandchild)
    assert all(not alive(rk["pid"]) for rk in c["ranks"])


def test_collective_skipped_when_torch_gcu_missing(node, libdir, tmp_path):
    failed, r = collective(node, libdir, tmp_path, gcu=None)
    assert codes(r) == ["TORCH_GCU_MISSING", "BACKEND_NOT_REGISTERED"]
    assert r["collective"] is None and "TORCH_GCU_MISSING" in r["collective_skipped"]


def test_collective_gloo_runs_without_torch_gcu(node, libdir, tmp_path):
    failed, r = collective(node, libdir, tmp_path, gcu=None, backend="gloo", world_size=2)
    # gloo checks no torch_gcu and no collective library: the comparison run works in host memory.
    assert codes(r) == [] and r["library"]["skipped"] and r["collective"]["devices"] == ["cpu"]
    assert r["collective"]["ranks_reported"] == 2 and all(x["correct"] for x in r["collective"]["results"])
