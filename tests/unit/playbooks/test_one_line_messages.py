# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A failure message is one line in Ansible's stock output: a line break in a
fail or assert message prints as a literal \\n there (the result is shown as
JSON). YAML's folded scalar (>-) keeps the line break before and after a
more-indented line, so an expression's continuation lines indented deeper
than the message put one into the text."""
import glob
import os
import re

import pytest
import yaml

from conftest import TOP, run_play

_TAG = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.S)
# Jinja's whitespace control: '{%-' / '{{-' eat the white space before, '-%}' / '-}}' the white space after.
_TRIM_BEFORE = re.compile(r"\s*(\{[{%#])-")
_TRIM_AFTER = re.compile(r"-([}%#]\})\s*")
_ACTIONS = ("ansible.builtin.fail", "fail", "ansible.builtin.assert", "assert")


def _messages(node):
    if isinstance(node, dict):
        for action in _ACTIONS:
            args = node.get(action)
            if isinstance(args, dict):
                for key in ("msg", "fail_msg", "success_msg"):
                    if isinstance(args.get(key), str):
                        yield node.get("name"), key, args[key]
        for value in node.values():
            yield from _messages(value)
    elif isinstance(node, list):
        for value in node:
            yield from _messages(value)


def _text_outside_tags(template):
    """The template's literal text as Jinja prints it, its tags left out."""
    return _TAG.sub("", _TRIM_AFTER.sub(r"\1", _TRIM_BEFORE.sub(r"\1", template)))


MESSAGES = [(os.path.relpath(path, TOP), name, key, text)
            for path in sorted(glob.glob(os.path.join(TOP, "playbooks", "**", "*.yml"), recursive=True)
                               + glob.glob(os.path.join(TOP, "roles", "**", "*.yml"), recursive=True))
            for name, key, text in _messages(yaml.safe_load(open(path)))]


def test_the_scan_finds_the_messages():
    assert len(MESSAGES) > 30
    assert any(path == "playbooks/deploy.yml" and name == "Fail this host" for path, name, dummy, dummy2 in MESSAGES)


def test_a_line_break_outside_a_tag_is_seen():
    folded = yaml.safe_load("m: >-\n  a {{ x\n     if y }}.\n  Failure: b\n")["m"]
    assert "\n" in _text_outside_tags(folded)
    assert "\n" not in _text_outside_tags("a\n{%- if x -%}\nb{%- endif %}")


@pytest.mark.parametrize("path, name, key, text", MESSAGES, ids=["%s:%s:%s" % (m[0], m[1], m[2]) for m in MESSAGES])
def test_every_fail_and_assert_message_is_one_line(path, name, key, text):
    assert "\n" not in _text_outside_tags(text), "%s: '%s' %s has a line break outside its Jinja tags" % (path, name, key)


def _deploy_task(name):
    with open(os.path.join(TOP, "playbooks", "deploy.yml")) as f:
        plays = yaml.safe_load(f)
    return [task for task in _walk_tasks(plays) if task.get("name") == name][0]


def _walk_tasks(node):
    if isinstance(node, dict):
        if "name" in node and any(a in node for a in _ACTIONS):
            yield node
        for value in node.values():
            yield from _walk_tasks(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk_tasks(value)


@pytest.mark.parametrize("written, failure, words", [
    (True, "Install the bundle's packages: dpkg failed", "restored to snapshot s1 (proven). Failure: Install"),
    (False, "refused, nothing was changed: revoked", "left as it was. Failure: refused"),
    (False, "Stage: no answer", "left as it was (nothing had changed). Failure: Stage"),
])
def test_a_failed_deploys_message_is_one_line_in_stock_output(tmp_path, written, failure, words):
    (tmp_path / "stock.cfg").write_text("")  # Ansible's stock settings: the default stdout callback
    rc, out = run_play(tmp_path, [_deploy_task("Fail this host")], config=str(tmp_path / "stock.cfg"), extra_vars={
        "desired_manifest": {"version": "2.5.140"}, "deploy_snapshot_written": written, "deploy_snapshot": {"id": "s1"},
        "deploy_failure": failure})
    assert rc == 2, out
    (fatal,) = [line for line in out.splitlines() if line.startswith("fatal: [localhost]: FAILED!")]
    assert "Deploy of 2.5.140 failed on localhost and the host was " + words in fatal
    assert "\\n" not in fatal
