# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter gcu.topsrider.env_problems as Ansible loads it, and the two role
tasks that use it (eccl_env's preflight, dist_launch's environment check), run
by ansible-playbook on localhost. Both tasks fail before anything is written,
so the refusals change nothing here; the accepted cases write only into
temporary directories. The whole-role cases of eccl_env, and those of
dist_launch, run as one play per role (run_cases: a block per case, its
rescue recording the refusing task and its message), each case in its own
directory. The third user of the rule, the eccl_probe
module, has its trailing-newline cases in tests/unit/plugins/modules/test_eccl_probe.py."""

import pytest

from ansible_collections.gcu.topsrider.plugins.filter import env_problems as plugin
from conftest import run_cases, run_play


def test_filter_is_registered_and_is_the_helper():
    from ansible_collections.gcu.topsrider.plugins.module_utils._envcheck import env_problems
    filters = plugin.FilterModule().filters()
    assert sorted(filters) == ["eccl_env_environment", "eccl_env_problems", "env_export_lines", "env_problems"]
    # The helper itself, imported when the filter first runs (plugin_utils/_filters.py's deferred).
    assert filters["env_problems"].__name__ == "env_problems"
    assert filters["env_problems"]({"A": "1\nx"}) == env_problems({"A": "1\nx"}) != []
    assert filters["env_export_lines"]({"PATH": "/opt/x", "A": 1}) == ['export A=1', 'export PATH="${PATH:+$PATH:}"/opt/x']


def test_filter_in_a_template(tmp_path):
    rc, out = run_play(tmp_path, [
        {"name": "Empty mapping", "ansible.builtin.assert": {"that": "({} | gcu.topsrider.env_problems) == []"}},
        {"name": "Problems", "ansible.builtin.assert": {"that": [
            "(env | gcu.topsrider.env_problems) == expected",
            "(env | gcu.topsrider.env_problems({'mine': env})) == expected_from"]}},
    ], {"env": {"GOOD": "x", "NL": "x\n", "B": True},
        "expected": ['the value of "NL", "x\\n", has characters that are not allowed',
                     'the value of "B" is a boolean, not a string or number'],
        "expected_from": ['the value of "NL" (from mine), "x\\n", has characters that are not allowed',
                          'the value of "B" (from mine) is a boolean, not a string or number']})
    assert rc == 0, out


ECCL_ENV = {"name": "Preflight",
            "ansible.builtin.include_role": {"name": "gcu.topsrider.eccl_env", "tasks_from": "preflight"}}


@pytest.mark.parametrize("extra, expected", [
    # the role's own defaults: the prod profile, no extra variables
    ({}, None),
    ({"eccl_env_vars": {"ECCL_DEBUG": "INFO; touch /tmp/pwned", "ECCL_ALGO": "ring\n", "ECCL-X": "1"},
      "eccl_env_profiles": {"prod": {"ECCL_ASYNC_DISABLE": True}}},
     ["eccl_env: refused, nothing was changed:",
      'the value of "ECCL_ASYNC_DISABLE" (from eccl_env_profiles.prod) is a boolean, not a string or number',
      'the value of "ECCL_DEBUG" (from eccl_env_vars), "INFO; touch /tmp/pwned", has characters that are not allowed',
      'the value of "ECCL_ALGO" (from eccl_env_vars), "ring\\n", has characters that are not allowed',
      'variable name "ECCL-X" (from eccl_env_vars) is not a valid name',
      "Names must match"]),
])
def test_eccl_env_preflight(tmp_path, extra, expected):
    rc, out = run_play(tmp_path, [ECCL_ENV], dict(extra, eccl_env_bundle_path="/nonexistent"))
    if expected is None:
        assert rc == 0, out
        assert "None" not in out.split("TASK [gcu.topsrider.eccl_env : Check the profile, the visible devices and every variable")[1].split("TASK")[0]
    else:
        assert rc != 0, out
        for text in expected:
            assert text in out, text


ECCL_GUARDED = [{"PATH": "/usr/local/tops/bin"}, {"LD_PRELOAD": "/tmp/x.so"}]
# A trailing newline ($ would let it through; every pattern ends in \Z) in an
# environment value or a path: each role refuses before it writes anything.
ECCL_NEWLINE = [
    ({"eccl_env_vars": {"ECCL_DEBUG": "INFO\n"}},
     'the value of "ECCL_DEBUG" (from eccl_env_vars), "INFO\\n", has characters that are not allowed'),
    ({"eccl_env_file": "{tmp}/topsrider.sh\n"}, "eccl_env_file must be an absolute path of plain characters"),
]
# The task eccl_env's preflight refuses in (before the packages' install and the profile).
ECCL_PREFLIGHT_TASK = "Check the profile, the visible devices and every variable name and value before anything changes"


def eccl_env_cases():
    """(case, its variables) of the whole role used alone (its own preflight first): the refusals, then
    the run that writes. {tmp} in a value is the case's own directory."""
    cases = [("guarded-%s" % list(env)[0],
              {"eccl_env_install_packages": False, "eccl_env_vars": env, "eccl_env_file": "{tmp}/topsrider.sh"})
             for env in ECCL_GUARDED]
    # eccl_env_preflight defaults to true
    cases += [("newline-%s" % list(extra)[0], dict(extra, eccl_env_bundle_path="/nonexistent"))
              for extra, _e in ECCL_NEWLINE]
    cases += [("dot-dot", {"eccl_env_file": "{tmp}/a/../topsrider.sh", "eccl_env_bundle_path": "/nonexistent"}),
              ("allowed", {"eccl_env_install_packages": False, "eccl_env_file": "{tmp}/topsrider.sh",
                           "eccl_env_vars": {"PATH": "/usr/local/tops/bin", "LD_BIND_NOW": "1"},
                           "eccl_env_allow_names": ["PATH", "LD_BIND_NOW"]})]
    return cases


@pytest.fixture(scope="module")
def eccl_env_runs(tmp_path_factory):
    """{case: (its directory, what the role did)} for eccl_env_cases(), all run by one play."""
    return run_cases_in_dirs(tmp_path_factory.mktemp("eccl-env-cases"), "gcu.topsrider.eccl_env", eccl_env_cases(),
                             lambda directory, extra: extra)


@pytest.mark.parametrize("env", ECCL_GUARDED)
def test_eccl_env_refuses_guarded_names_and_writes_nothing(eccl_env_runs, env):
    name = list(env)[0]
    case, result = eccl_env_runs["guarded-%s" % name]
    assert result["failed"], result
    assert "eccl_env: refused, nothing was changed: \"%s\" (from eccl_env_vars) is " % name in result["msg"], result
    assert "refused unless eccl_env_allow_names names it" in result["msg"]
    assert not (case / "topsrider.sh").exists()


def test_eccl_env_writes_an_allowed_search_path_as_an_extension(eccl_env_runs):
    case, result = eccl_env_runs["allowed"]
    assert not result["failed"], result
    profile = case / "topsrider.sh"
    text = profile.read_text()
    assert 'export PATH="${PATH:+$PATH:}"/usr/local/tops/bin\n' in text
    assert "export LD_BIND_NOW=1\n" in text and "export ECCL_DEBUG=WARN\n" in text
    import subprocess
    seen = subprocess.run(["sh", "-c", '. "$1" && printf %s "$PATH"', "sh", str(profile)], env={"PATH": "/usr/bin:/bin"},
                          stdout=subprocess.PIPE, check=True, universal_newlines=True).stdout
    assert seen == "/usr/bin:/bin:/usr/local/tops/bin"


def dist_launch_vars(tmp_path, **extra):
    # docs/launch.md's example sets only dist_launch_python; the card count stands in
    # for gcu_devices here (no cards on the controller), the paths keep it in tmp_path.
    base = {"dist_launch_python": "/opt/conda/envs/train/bin/python", "dist_launch_device_count": 2,
            "dist_launch_dir": str(tmp_path / "launch"), "dist_launch_output_dir": str(tmp_path / "out")}
    base.update(extra)
    return base


DIST_LAUNCH = {"name": "Launch tooling", "ansible.builtin.include_role": {"name": "gcu.topsrider.dist_launch"}}


def run_cases_in_dirs(tmp, role, cases, variables_of):
    """run_cases with a directory of its own for each case under tmp ({tmp} in a string value is that
    directory; variables_of(directory, values) gives the case's variables): {case: (its directory, what
    the role did)}."""
    named, dirs = [], {}
    for name, extra in cases:
        dirs[name] = tmp / name
        dirs[name].mkdir()
        extra = dict((k, v.replace("{tmp}", str(dirs[name])) if isinstance(v, str) else v) for k, v in extra.items())
        named.append((name, variables_of(dirs[name], extra)))
    seen, _out = run_cases(tmp, role, named)
    return dict((name, (dirs[name], seen[name])) for name in dirs)


# Every dist_launch case below, run by one play (the role's refusals stop before anything is written).
# Each case has its own directory: {tmp} in a value is that directory.
REFUSED_BEFORE_WRITING = [
    ("enflame", {"ECCL_DEBUG": "INFO\n"},
     ['the value of "ECCL_DEBUG" (from dist_launch_env), "INFO\\n", has characters that are not allowed']),
    ("nvidia", {"NCCL_DEBUG": "$(id)", "bad": "x"},
     ['the value of "NCCL_DEBUG" (from dist_launch_env), "$(id)", has characters that are not allowed',
      'variable name "bad" (from dist_launch_env) is not a valid name']),
]
# A trailing newline ($ would let it through; every pattern ends in \Z) in an
# environment value or a path: each role refuses before it writes anything.
TRAILING_NEWLINE = [
    ("dist_launch_env", {"ECCL_DEBUG": "INFO\n"}, "dist_launch: refused, nothing was written:"),
    ("dist_launch_dir", "{tmp}/launch\n", "Check dist_launch_dir, dist_launch_python"),
    ("dist_launch_python", "/opt/x\n", "Check dist_launch_dir, dist_launch_python"),
    ("dist_launch_env_file", "/opt/x\n", "Check dist_launch_dir, dist_launch_python"),
    ("dist_launch_device_count", "2\n", "No card count"),
]
# A '..' part: the roles' paths follow the collection's one path rule
# (topsrider_value_problems('path')), which the roles' own patterns let through before.
DOT_DOT = [
    ("dist_launch_dir", "{tmp}/launch/../../../etc/topsrider"),
    ("dist_launch_python", "/opt/venv/../../usr/bin/python3"),
    ("dist_launch_env_file", "/etc/profile.d/../../root/x.sh"),
]


def dist_launch_cases():
    """(case, its extra variables): the refusals first, then the runs that write."""
    cases = [("refused-%s" % vendor, {"dist_launch_vendor": vendor, "dist_launch_env": env})
             for vendor, env, _e in REFUSED_BEFORE_WRITING]
    cases += [("newline-%s" % name, {name: value}) for name, value, _e in TRAILING_NEWLINE]
    cases += [("dot-dot-%s" % name, {name: value}) for name, value in DOT_DOT]
    cases += [("guarded", {"dist_launch_env": {"LD_PRELOAD": "/tmp/x.so"}}),
              ("guarded-allowed", {"dist_launch_env": {"LD_PRELOAD": "/tmp/x.so"},
                                   "dist_launch_env_allow_names": ["LD_PRELOAD"]}),
              ("empty-enflame", {})]
    return cases


@pytest.fixture(scope="module")
def dist_launch_runs(tmp_path_factory):
    """{case: (its directory, what the role did)} for dist_launch_cases(), all run by one play."""
    return run_cases_in_dirs(tmp_path_factory.mktemp("dist-launch-cases"), "gcu.topsrider.dist_launch",
                             dist_launch_cases(), lambda directory, extra: dist_launch_vars(directory, **extra))


def test_dist_launch_accepts_the_empty_enflame_environment(dist_launch_runs):
    # The bug: with enflame's empty vendor environment the old Jinja check rendered None and refused.
    case, result = dist_launch_runs["empty-enflame"]
    assert not result["failed"], result
    assert (case / "launch" / "launch-single.sh").is_file()


def test_dist_launch_refuses_a_guarded_name_unless_allowed(dist_launch_runs):
    case, result = dist_launch_runs["guarded"]
    assert result["failed"], result
    assert ('dist_launch: refused, nothing was written: "LD_PRELOAD" (from dist_launch_env) is the dynamic loader\'s '
            "settings (what every program loads): refused unless dist_launch_env_allow_names names it") in result["msg"]
    assert not (case / "launch").exists()
    case, result = dist_launch_runs["guarded-allowed"]
    assert not result["failed"], result
    assert "export LD_PRELOAD=/tmp/x.so" in (case / "launch" / "launch-single.sh").read_text()


@pytest.mark.parametrize("vendor, env, expected", REFUSED_BEFORE_WRITING)
def test_dist_launch_refuses_before_writing(dist_launch_runs, vendor, env, expected):
    case, result = dist_launch_runs["refused-%s" % vendor]
    assert result["failed"], result
    assert "dist_launch: refused, nothing was written:" in result["msg"], result
    for text in expected:
        assert text in result["msg"], (text, result)
    assert not (case / "launch").exists()


@pytest.mark.parametrize("extra, expected", ECCL_NEWLINE)
def test_trailing_newline_refused_by_eccl_env(eccl_env_runs, extra, expected):
    case, result = eccl_env_runs["newline-%s" % list(extra)[0]]
    assert result["failed"], result
    assert expected in result["msg"], result
    # refused by the preflight: the packages' install, after it, never started
    assert result["task"] == ECCL_PREFLIGHT_TASK, result
    assert not (case / "topsrider.sh").exists()


@pytest.mark.parametrize("name, value, expected", TRAILING_NEWLINE)
def test_trailing_newline_refused_by_dist_launch(dist_launch_runs, name, value, expected):
    case, result = dist_launch_runs["newline-%s" % name]
    assert result["failed"], result
    assert expected in result["msg"], result
    assert not (case / "launch").exists()
    assert not (case / "launch\n").exists()


@pytest.mark.parametrize("name, value", DOT_DOT)
def test_dot_dot_refused_by_dist_launch(dist_launch_runs, name, value):
    case, result = dist_launch_runs["dot-dot-%s" % name]
    assert result["failed"], result
    flat = " ".join(result["msg"].split())
    assert "Check dist_launch_dir, dist_launch_python" in flat and "%s " % name in flat and "has a '..' part" in flat, result
    assert not (case / "launch").exists()


def test_dot_dot_refused_by_eccl_env(eccl_env_runs):
    case, result = eccl_env_runs["dot-dot"]
    assert result["failed"] and "eccl_env_file must be an absolute path of plain characters" in result["msg"], result
    assert not (case / "topsrider.sh").exists()


def test_dot_dot_refused_by_tops_sdk(tmp_path):
    rc, out = run_play(tmp_path, [{"name": "SDK", "ansible.builtin.include_role": {"name": "gcu.topsrider.tops_sdk"}}],
                       {"tops_sdk_bundle_path": "/nonexistent", "tops_sdk_lib_dirs": ["/usr/local/tops/../../etc"]})
    assert rc != 0 and "tops_sdk_lib_dirs must be absolute paths" in out, out


def test_dot_dot_refused_by_slurm_node(tmp_path):
    rc, out = run_play(tmp_path, [{"name": "Slurm", "ansible.builtin.include_role": {"name": "gcu.topsrider.slurm_node"}}],
                       {"slurm_node_conf_dir": "/etc/slurm/../cron.d", "slurm_node_output_dir": str(tmp_path / "out")})
    flat = " ".join(out.split())
    assert rc != 0 and "slurm_node: refused, nothing was changed" in flat, out
    assert "slurm_node_conf_dir \"/etc/slurm/../cron.d\" has a '..' part" in flat, out
    assert "Read the node's cards" not in out and not (tmp_path / "out").exists()
