# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils/_inputs.py: a run's inputs on one host as tasks/inputs.yml's
one assert judges them (the release's refusals, the node's Python against
ansible-core's floor, the manifest's names, the operator's paths and cache
size, the ECCL settings), the first failing check's sentence, and the filter
gcu.topsrider.topsrider_input_problems in a real play."""

import pytest

from ansible_collections.gcu.topsrider.plugins.plugin_utils._inputs import core_floor, input_problems
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


@pytest.mark.parametrize("core, floor", [("2.19.14", "3.8"), ("2.20.0", "3.9"), ("2.21.1", "3.9"), ("2.18.3", "3.8")])
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


def test_the_filter_in_a_play(tmp_path):
    rc, out = run_play(tmp_path, [
        {"name": "Sound", "ansible.builtin.assert": {"that": "(good | gcu.topsrider.topsrider_input_problems) == []"}},
        {"name": "Refused", "ansible.builtin.assert": {"that": [
            "(bad | gcu.topsrider.topsrider_input_problems) | length == 1",
            "'topsrider_cache_keep 1 is not' in (bad | gcu.topsrider.topsrider_input_problems)[0]"]}},
    ], {"good": inputs(raw_result=GOOD_PYTHON), "bad": inputs(raw_result=GOOD_PYTHON, cache_keep=1)})
    assert rc == 0, out


def test_no_check_asked_is_no_check():
    assert input_problems({"checks": [], "python": {"raw": raw(0, "/usr/bin/python3.6\n3.6.15\n")}}, "2.19.14") == []
