# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils/_inputs.py: a run's inputs on one host as tasks/inputs.yml's
one task judges them (the release's refusals, the node's Python against
ansible-core's floor, the manifest's names, the operator's paths and cache
size, the ECCL settings), the first failing check's sentence, each check
asked for only when the ones before passed, the one shell command that finds
the node's Python, and the action gcu.topsrider.topsrider_inputs in a real
play."""
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gcu.topsrider.plugins.plugin_utils._inputs import (
    core_floor, input_problems, node_input_problems, python_command)
from conftest import run_play

MANIFEST = {"version": "2.5.136",
            "files": [{"file": "tops-sdk_2.5.136-1_amd64.deb"}, {"file": "torch_gcu-2.13.0+2.5.136-py3-none-any.whl"}]}


def settings(**changed):
    out = {"bundle_dir": "/srv/topsrider/2.5.136", "manifest": MANIFEST, "python": "/opt/venvs/train/bin/python",
           "cache_keep": 2, "eccl": {"eccl_env_profile": "prod", "eccl_env_vars": {}, "eccl_env_allow_names": [],
                                     "eccl_env_visible_devices": "all", "eccl_env_file": "/etc/profile.d/topsrider.sh"}}
    out.update(changed)
    return out


def raw(rc, stdout="", stderr=""):
    return {"rc": rc, "stdout": stdout, "stderr": stderr, "changed": False}


def inputs(release=None, raw_result=None, checks=None, **changed):
    return {"checks": checks, "release": release or {"bundle": "/srv/topsrider/2.5.136", "installer": None, "trust": None},
            "python": {"raw": raw_result, "host": "t20-node-1"}, "settings": settings(**changed)}


GOOD_PYTHON = raw(0, "/usr/bin/python3\n3.11.2\n")


def test_sound_inputs_pass():
    assert input_problems(inputs(raw_result=GOOD_PYTHON), "2.19.14") == []
    # Nothing checked where the caller checks less (drift.yml: the release alone).
    assert input_problems({"checks": ["release"], "release": {"installer": None}}, "2.19.14") == []


@pytest.mark.parametrize("core, floor", [("2.19.14", "3.8"), ("2.20.0", "3.9"), ("2.21.1", "3.9"), ("2.18.3", "3.8"),
                                         ("2.20.0rc1", "3.9"), ("2.20.0.dev0", "3.9"), ("2.19.0b2", "3.8")])
def test_the_floor_is_the_running_cores(core, floor):
    assert core_floor(core) == floor


@pytest.mark.parametrize("result, core, sentence", [
    (raw(0, "/usr/bin/python3.6\n3.6.15\n"), "2.19.14",
     "the node's Python /usr/bin/python3.6 is 3.6.15; gcu.topsrider needs Python 3.8 or newer on managed nodes (the floor "
     "of the module code of ansible-core 2.19, which runs this play). Install a newer Python on the node and point "
     "ansible_python_interpreter at it. No module was sent to t20-node-1."),
    (raw(0, "/usr/bin/python3.8\n3.8.20\n"), "2.21.0", "the node's Python /usr/bin/python3.8 is 3.8.20; gcu.topsrider needs Python 3.9"),
    (raw(3, "", "none of /nonexistent/python3 runs\n"), "2.19.14",
     "the node's Python could not be run (none of /nonexistent/python3 runs); gcu.topsrider needs Python 3.8"),
])
def test_a_python_below_the_floor_is_named(result, core, sentence):
    (problem,) = input_problems(inputs(raw_result=result), core)
    assert problem.startswith(sentence), problem


@pytest.mark.parametrize("result", [
    raw(0, "/usr/bin/python3.8\n3.8.20\n"),          # 2.19's floor is 3.8
    raw(0, "/usr/bin/python3.10\n3.10.12\n"),        # 3.10 is not below 3.8 (numbers, not text)
    raw(0, "/usr/bin/python3.14\n3.14.0rc2\n"),      # a pre-release of a newer Python is above the floor
    raw(255, "", "ssh: connect to host: Connection refused"),  # the connection's: reported as unreachable later
    {"skipped": True, "changed": False},            # not checked
    None,
])
def test_a_python_at_the_floor_or_not_judged_passes(result):
    assert input_problems(inputs(raw_result=result), "2.19.14") == []


def test_the_release_comes_first_then_the_python_then_the_settings():
    refused = {"bundle": "TopsRider_t2x_2.5.140_deb_amd64.run", "installer": raw(1, "", "refused: MD5 mismatch\n"), "trust": None}
    old = raw(0, "/usr/bin/python3.6\n3.6.15\n")
    assert input_problems(inputs(release=refused, raw_result=old, cache_keep=1), "2.19.14") == [
        "TopsRider_t2x_2.5.140_deb_amd64.run: MD5 mismatch. Nothing was sent to any node."]
    assert input_problems(inputs(raw_result=old, cache_keep=1), "2.19.14")[0].startswith("the node's Python /usr/bin/python3.6")
    assert input_problems(inputs(raw_result=GOOD_PYTHON, cache_keep=1), "2.19.14")[0].startswith("refused, nothing was changed:")


@pytest.mark.parametrize("trust, sentence", [
    ({"problem": "not signed by a key of the keyring", "msg": "manifest.json.sig: not signed by a key of the keyring"},
     "manifest.json.sig: not signed by a key of the keyring. Nothing was sent to any node."),
    ({"failed": True}, "the signature check did not finish. Nothing was sent to any node."),
])
def test_a_refused_or_unfinished_signature_check_refuses(trust, sentence):
    assert input_problems(inputs(release={"bundle": "/srv/r", "installer": {"skipped": True}, "trust": trust}), "2.19.14") == [sentence]
    assert input_problems(inputs(release={"trust": {"problem": None, "msg": "signed"}}, raw_result=GOOD_PYTHON), "2.19.14") == []


@pytest.mark.parametrize("changed, words", [
    ({"manifest": dict(MANIFEST, version="2.5.136\nrm -rf /")}, ["the manifest version (/srv/topsrider/2.5.136/manifest.json)"]),
    ({"manifest": dict(MANIFEST, files=[{"file": "../../etc/passwd"}])}, ["the manifest file ../../etc/passwd"]),
    ({"python": "/opt/../tmp/python"}, ["topsrider_python"]),
    ({"cache_keep": 1}, ["topsrider_cache_keep 1 is not a whole number of at least 2"]),
    ({"cache_keep": "two"}, ['topsrider_cache_keep "two" is not a whole number of at least 2']),
    ({"cache_keep": True}, ["topsrider_cache_keep true is not"]),
])
def test_a_hostile_name_or_path_or_a_small_cache_is_refused_naming_it(changed, words):
    (problem,) = input_problems(inputs(raw_result=GOOD_PYTHON, **changed), "2.19.14")
    assert problem.startswith("refused, nothing was changed: ") and problem.endswith(
        "Fix the manifest (scripts/topsrider-manifest check /srv/topsrider/2.5.136) or the variable named."), problem
    assert all(w in problem for w in words), problem


def test_a_manifest_version_ending_in_a_newline_is_refused_naming_it():
    """The release's version names its directory in the node's cache: "2.5.140\\n" (what molecule/rollback_truth
    once deployed) is refused with the settings, which deploy.yml checks before any node is compared or changed."""
    (problem,) = input_problems(inputs(raw_result=GOOD_PYTHON, manifest=dict(MANIFEST, version="2.5.140\n")), "2.19.14")
    assert problem.startswith('refused, nothing was changed: the manifest version (/srv/topsrider/2.5.136/manifest.json) '
                              '"2.5.140\\n" has a newline'), problem


def test_the_eccl_settings_come_last_and_name_the_operators_variables():
    eccl = dict(settings()["eccl"], eccl_env_vars={"LD_PRELOAD": "/tmp/x.so"})
    (problem,) = input_problems(inputs(raw_result=GOOD_PYTHON, eccl=eccl), "2.19.14")
    assert problem.startswith("eccl_env: refused, nothing was changed:") and "(from topsrider_env_vars)" in problem, problem
    eccl = dict(settings()["eccl"], eccl_env_profile="fast")
    (problem,) = input_problems(inputs(raw_result=GOOD_PYTHON, eccl=eccl), "2.19.14")
    assert "topsrider_profile must be one of: dev, staging, prod, got: fast" in problem, problem


def test_an_unknown_check_is_an_error():
    with pytest.raises(ValueError, match="checks are some of release, python, settings, got sbom"):
        input_problems({"checks": ["sbom"]}, "2.19.14")


def _script(path, text):
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


def test_the_python_command_answers_with_the_first_interpreter_that_runs(tmp_path):
    old = _script(tmp_path / "py36", "#!/bin/sh\necho 3.6.15\n")
    weird = _script(tmp_path / "it's py", "#!/bin/sh\necho 3.12.1\n")

    def run(candidates):
        proc = subprocess.run(["/bin/sh", "-c", python_command(candidates)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, check=False)
        return proc.returncode, proc.stdout, proc.stderr

    assert run(["/nonexistent/python", sys.executable]) == (
        0, "%s\n%d.%d.%d\n" % ((sys.executable,) + tuple(sys.version_info[:3])), "")
    assert run([old, sys.executable])[:2] == (0, "%s\n3.6.15\n" % old)
    # A name with a quote is one word, not shell syntax.
    assert run([weird])[:2] == (0, "%s\n3.12.1\n" % weird)
    assert run(["/nonexistent/python", "$(touch %s)" % (tmp_path / "ran")]) == (
        3, "", "none of /nonexistent/python, $(touch %s) runs\n" % (tmp_path / "ran"))
    assert not (tmp_path / "ran").exists()


def test_each_check_is_asked_for_only_when_the_ones_before_passed():
    asked = []

    def run_python(result):
        return lambda: asked.append("python") or result

    def settings_of(value):
        return lambda: asked.append("settings") or value

    refused = {"bundle": "x.run", "installer": {"rc": 1, "stderr": "refused: bad checksum"}}
    problems = node_input_problems(None, refused, run_python(GOOD_PYTHON), "n1", settings_of(settings()), "2.19.14")
    assert problems == ["x.run: bad checksum. Nothing was sent to any node."] and asked == []
    old = raw(0, "/usr/bin/python3.6\n3.6.15\n")
    problems = node_input_problems(None, {}, run_python(old), "n1", settings_of(settings(cache_keep=1)), "2.19.14")
    assert "Python /usr/bin/python3.6 is 3.6.15" in problems[0] and asked == ["python"]
    del asked[:]
    problems = node_input_problems(None, {}, run_python(GOOD_PYTHON), "n1", settings_of(settings(cache_keep=1)),
                                   "2.19.14")
    assert "topsrider_cache_keep 1 is not" in problems[0] and asked == ["python", "settings"]
    del asked[:]
    assert node_input_problems(["release"], {}, run_python(old), "n1", settings_of(settings(cache_keep=1))) == []
    assert asked == []
    assert node_input_problems(None, {}, run_python(GOOD_PYTHON), "n1", settings_of(settings()), "2.19.14") == []
    with pytest.raises(ValueError, match="got sbom"):
        node_input_problems(["release", "sbom"], {}, run_python(GOOD_PYTHON), "n1", settings_of(settings()))


def test_the_action_in_a_play(tmp_path):
    """gcu.topsrider.topsrider_inputs on localhost: each case's message, the Python check's command only for a
    release that passed, the settings templated only for a host whose Python passed."""
    marker = tmp_path / "contacted"
    old = _script(tmp_path / "py36", "#!/bin/sh\ntouch %s\necho 3.6.15\n" % marker)

    def case(name, args, settings_expr="{{ good }}"):
        return {"name": "Case " + name, "block": [
            {"name": "Check " + name, "gcu.topsrider.topsrider_inputs": dict({"settings_var": "case_settings"}, **args),
             "vars": {"case_settings": settings_expr}},
            {"name": "Record " + name, "ansible.builtin.set_fact": {"seen": "{{ seen | combine({'%s': 'passed'}) }}" % name}}],
            "rescue": [{"name": "Record the refusal of " + name, "ansible.builtin.set_fact": {
                "seen": "{{ seen | combine({'%s': ansible_failed_result.msg}) }}" % name}}]}

    rc, out = run_play(tmp_path, [
        {"name": "Nothing yet", "ansible.builtin.set_fact": {"seen": {}}},
        case("good", {"python": [sys.executable]}),
        # The settings would not template (no such file): never asked, the Python's sentence is the answer.
        case("old_python", {"python": ["/nonexistent/python", old]},
             "{{ lookup('ansible.builtin.file', '/nonexistent/manifest.json') }}"),
        case("no_python", {"python": ["/nonexistent/python"]}),
        case("settings", {"python": [sys.executable]}, "{{ bad }}"),
        {"name": "The Python check never ran for the refused release", "ansible.builtin.file": {
            "path": str(marker), "state": "absent"}},
        case("release", {"python": [old], "release": {"bundle": "x.run", "installer": {"rc": 1, "stderr": "refused: bad"}}}),
        {"name": "Keep what each case said", "ansible.builtin.copy": {
            "content": "{{ seen | to_json }}", "dest": str(tmp_path / "seen.json")}},
    ], {"good": settings(), "bad": settings(cache_keep=1)})
    assert rc == 0, out
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["good"] == "passed", seen
    assert seen["old_python"].startswith("the node's Python %s is 3.6.15; gcu.topsrider needs Python" % old), seen
    assert seen["no_python"].startswith("the node's Python could not be run (none of /nonexistent/python runs)"), seen
    assert "topsrider_cache_keep 1 is not a whole number" in seen["settings"], seen
    assert seen["release"] == "x.run: bad. Nothing was sent to any node.", seen
    assert not os.path.exists(str(marker)), "the refused release reached the node"


def test_no_check_asked_is_no_check():
    assert input_problems({"checks": [], "python": {"raw": raw(0, "/usr/bin/python3.6\n3.6.15\n")}}, "2.19.14") == []
