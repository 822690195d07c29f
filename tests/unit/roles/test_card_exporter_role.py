# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The card_exporter role without a node: every setting documented with its
default, the module_utils it installs are exactly what the daemon imports, the
systemd unit it writes (the contract's command line, the user and the
hardening), bad settings refused before anything changes, and that drift.yml
checks the unit this role installs."""
import ast
import os

import jinja2
import pytest
import yaml

from conftest import TOP, run_cases

ROLE = os.path.join(TOP, "roles", "card_exporter")
MODULE_UTILS = os.path.join(TOP, "plugins", "module_utils")
PREFIX = "ansible_collections.gcu.topsrider.plugins.module_utils."


def load(*parts):
    with open(os.path.join(ROLE, *parts)) as f:
        return yaml.safe_load(f)


def test_every_setting_is_documented_with_its_default():
    defaults = load("defaults", "main.yml")
    options = load("meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert set(defaults) == set(options)
    for name, value in defaults.items():
        assert options[name]["description"], name
        if "{{" not in str(value):
            assert options[name]["default"] == value, name
    assert defaults["card_exporter_port"] == 9494
    assert defaults["card_exporter_user"] == "topsrider-exporter"
    assert defaults["card_exporter_install_dir"] == "/usr/local/lib/topsrider-card-exporter"
    assert (defaults["card_exporter_interval"], defaults["card_exporter_vendor"]) == (15, "auto")
    assert defaults["card_exporter_memory_max"] == "128M"


def imports_of(path):
    """The collection module_utils files `path` imports (file names)."""
    with open(path) as f:
        tree = ast.parse(f.read())
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if (node.module or "").startswith(PREFIX):
            found.add(node.module[len(PREFIX):] + ".py")
        elif node.module == PREFIX[:-1]:
            found.update(alias.name + ".py" for alias in node.names)
    return found


def test_the_installed_module_utils_are_the_daemons_import_closure():
    """What the role copies is exactly what _card_metrics.py and the daemon import,
    transitively: nothing missing on the node, nothing extra."""
    listed = load("vars", "main.yml")["card_exporter_module_utils"]
    todo = imports_of(os.path.join(ROLE, "files", "topsrider-card-exporter"))
    assert "_card_metrics.py" in todo
    closure = set()
    while todo:
        name = todo.pop()
        closure.add(name)
        todo |= imports_of(os.path.join(MODULE_UTILS, name)) - closure
    assert sorted(listed) == sorted(closure)
    # and what the exporter's own code says it needs
    from ansible_collections.gcu.topsrider.plugins.module_utils import _card_metrics
    assert sorted(listed) == sorted(n + ".py" for n in _card_metrics.EXPORTER_MODULE_UTILS)


def render_unit(**over):
    values = dict(load("defaults", "main.yml"), **load("vars", "main.yml"))
    values.update(card_exporter_unit_vendor="enflame")
    values.update(over)
    with open(os.path.join(ROLE, "templates", "topsrider-card-exporter.service.j2")) as f:
        return jinja2.Template(f.read(), keep_trailing_newline=True).render(**values)


def unit_keys(text):
    keys = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            k, v = line.split("=", 1)
            keys.setdefault(k, []).append(v)
    return keys


def test_the_unit_runs_the_contracts_command_line_under_the_unprivileged_user():
    keys = unit_keys(render_unit())
    assert keys["User"] == ["topsrider-exporter"] and keys["Group"] == ["topsrider-exporter"]
    assert keys["ExecStart"] == [
        "/usr/bin/python3 -B /usr/local/lib/topsrider-card-exporter/topsrider-card-exporter "
        "--lib /usr/local/lib/topsrider-card-exporter --listen 0.0.0.0:9494 --interval 15 --timeout 10 --vendor enflame "
        "--jobs-dir /run/topsrider/jobs"]
    # no capability: an empty bounding set (and no ambient set), nothing of ptrace anywhere
    assert keys["AmbientCapabilities"] == keys["CapabilityBoundingSet"] == [""]
    assert "PTRACE" not in render_unit() and "DAC_" not in render_unit()
    for key, value in (("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"), ("ProtectHome", "yes"),
                       ("PrivateTmp", "yes"), ("Restart", "on-failure"), ("WantedBy", "multi-user.target"),
                       ("MemoryMax", "128M")):
        assert keys[key] == [value], key
    assert unit_keys(render_unit(card_exporter_memory_max="infinity"))["MemoryMax"] == ["infinity"]
    tool = unit_keys(render_unit(card_exporter_tool="/opt/tops/bin/efsmi", card_exporter_unit_vendor="nvidia",
                                 card_exporter_listen_address="127.0.0.1", card_exporter_port=19494))
    assert tool["ExecStart"][0].endswith("--listen 127.0.0.1:19494 --interval 15 --timeout 10 --vendor nvidia "
                                         "--tool /opt/tops/bin/efsmi --jobs-dir /run/topsrider/jobs")
    web = unit_keys(render_unit(card_exporter_web_config={"basic_auth_users": {"p": "$2b$..."}}))
    assert web["ExecStart"][0].endswith("--jobs-dir /run/topsrider/jobs --web-config /etc/topsrider/card-exporter-web.yml")


def test_drift_checks_the_unit_this_role_installs():
    with open(os.path.join(TOP, "playbooks", "vars", "node_paths.yml")) as f:
        unit = yaml.safe_load(f)["node_card_exporter_unit"]
    role_vars = load("vars", "main.yml")
    assert unit == role_vars["card_exporter_service"] + ".service"
    assert role_vars["card_exporter_unit_path"] == "/etc/systemd/system/" + unit
    from ansible_collections.gcu.topsrider.plugins.module_utils._state import SYSTEMD_UNIT_DIR
    assert os.path.dirname(role_vars["card_exporter_unit_path"]) == SYSTEMD_UNIT_DIR
    with open(os.path.join(TOP, "playbooks", "drift.yml")) as f:
        assert "'services': [node_card_exporter_unit]" in f.read()


BAD_SETTINGS = [
    ({"card_exporter_port": 70000}, "card_exporter_port (1 to 65535)"),
    # the role's argument_specs refuse it first (choices)
    ({"card_exporter_vendor": "amd"}, "card_exporter_vendor must be one of: auto, enflame, nvidia"),
    ({"card_exporter_timeout": 20}, "at most the interval"),
    ({"card_exporter_interval": 0.5, "card_exporter_timeout": 0.5}, "at least 1"),
    ({"card_exporter_listen_address": "::"}, "IPv4"),
    ({"card_exporter_user": "root"}, "not root"),
    ({"card_exporter_install_dir": "/usr/local/lib/../x"}, "card_exporter_install_dir"),
    ({"card_exporter_jobs_dir": "run/jobs"}, "card_exporter_jobs_dir"),
    ({"card_exporter_web_config": "tls please"}, "card_exporter_web_config"),
    ({"card_exporter_memory_max": "128 MB"}, "card_exporter_memory_max (bytes, a number with K, M, G or T, or infinity)"),
    ({"card_exporter_memory_max": "50%"}, "card_exporter_memory_max"),
]
ARG_SPEC_TASK = "Validating arguments against arg spec 'main'"
CHECK_TASK = "Check the card_exporter settings"


@pytest.fixture(scope="module")
def bad_settings_runs(tmp_path_factory):
    """{case index: what the role did} for every BAD_SETTINGS case, all run by one play (run_cases)."""
    seen, _out = run_cases(tmp_path_factory.mktemp("card-exporter-bad"), "gcu.topsrider.card_exporter",
                           [(str(i), settings) for i, (settings, _words) in enumerate(BAD_SETTINGS)])
    return seen


@pytest.mark.parametrize("case", range(len(BAD_SETTINGS)), ids=[w for _s, w in BAD_SETTINGS])
def test_bad_settings_are_refused_before_anything_changes(bad_settings_runs, case):
    result, words = bad_settings_runs[str(case)], BAD_SETTINGS[case][1]
    # refused by the argument_specs' validation (the role's first task) or by the role's own check
    # (its first task after that): a failed task ends its case's block, so nothing after it ran
    assert result["failed"], result
    assert result["task"].startswith(ARG_SPEC_TASK) or result["task"] == CHECK_TASK, result
    assert words in result["msg"], result
    assert result["task"] != CHECK_TASK or "card_exporter: refused, nothing was changed" in result["msg"], result
