# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every fenced block of README.md is marked to run in the README test
(tests/readme/run.py, make readme-test) or says why it cannot run here; the
blocks the README test runs are the ones marked. The parser, on samples."""
import ast
import os
import sys

import pytest

from conftest import TOP

sys.path.insert(0, os.path.join(TOP, "tests", "readme"))
import readme_blocks  # noqa: E402  pylint: disable=wrong-import-position


def readme_blocks_of_the_checkout():
    with open(os.path.join(TOP, "README.md")) as f:
        return readme_blocks.parse(f.read())


def test_every_readme_block_is_marked():
    blocks = readme_blocks_of_the_checkout()
    assert len(blocks) >= 10
    assert readme_blocks.problems(blocks) == []


def test_the_role_and_playbook_examples_run():
    runnable = readme_blocks.runnable(readme_blocks_of_the_checkout())
    for block_id in ("checkout", "ansible_cfg", "workdir", "deploy", "deploy_run", "verify", "rollback", "drift",
                     "launch_check", "manifest"):
        assert block_id in runnable, block_id
    # every ansible-playbook line of the README sits in a block that runs (or in a skip with a reason)
    for block in readme_blocks_of_the_checkout():
        if "ansible-playbook" in block.text:
            assert block.kind in readme_blocks.KINDS, block.line


def test_the_runner_runs_exactly_the_marked_blocks():
    """Each id the plan of run.py names is marked in README.md, and each marked id is in the plan."""
    with open(os.path.join(TOP, "tests", "readme", "run.py")) as f:
        tree = ast.parse(f.read())
    plan = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "plan")
    named = set(call.args[0].value for call in ast.walk(plan)
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr in readme_blocks.KINDS and call.args and isinstance(call.args[0], ast.Constant))
    assert named == set(readme_blocks.runnable(readme_blocks_of_the_checkout()))


SAMPLE = """intro

<!-- readme-test: controller id=a -->
```sh
one \\
  --two
# a comment
three
```

<!-- readme-test: node id=b lines=2; line 1 needs the reader's script -->
```sh
train.py
smoke
```

<!-- readme-test: skip; needs kubectl -->
```sh
kubectl apply -f x
```

```yaml
- hosts: t20
```
"""


def test_parse_sample():
    blocks = readme_blocks.parse(SAMPLE)
    assert [(b.kind, b.id, b.lang) for b in blocks] == [
        ("controller", "a", "sh"), ("node", "b", "sh"), ("skip", None, "sh"), (None, None, "yaml")]
    assert blocks[0].commands() == ["one \\\n  --two", "three"]
    assert blocks[0].script() == "one \\\n  --two\n# a comment\nthree\n"
    assert blocks[1].script() == "smoke\n"
    assert blocks[2].reason == "needs kubectl"
    assert readme_blocks.problems(blocks) == [
        "README.md line 22 (```yaml): no readme-test marker; mark it to run, or `skip; <reason>`"]


@pytest.mark.parametrize("marker, problem", [
    ("skip", "skip needs a reason"),
    ("controller", "needs id="),
    ("run id=x", "unknown kind"),
    ("controller id=x lines=1", "leaves lines out"),
    ("controller id=x lines=3; why", "lines=3, but the block has 2"),
    ("play id=x", "kind play runs yaml blocks"),
    ("file id=x", "kind file needs a first line"),
])
def test_marker_problems(marker, problem):
    text = "<!-- readme-test: %s -->\n```sh\na\nb\n```\n" % marker
    found = readme_blocks.problems(readme_blocks.parse(text))
    assert len(found) == 1 and problem in found[0], found


def test_a_file_block_names_its_file():
    text = "<!-- readme-test: file id=cfg -->\n```ini\n# ansible.cfg\n[defaults]\nforks = 16\n```\n"
    blocks = readme_blocks.parse(text)
    assert readme_blocks.problems(blocks) == []
    assert readme_blocks.file_name(blocks[0]) == "ansible.cfg"
    assert readme_blocks.file_name(readme_blocks.parse("<!-- readme-test: file id=x -->\n```ini\n# ../x\n```\n")[0]) is None


def test_the_readme_is_a_front_page():
    """README.md is the operator's page (issue 30): about 200 lines at most; the rest lives in docs/."""
    with open(os.path.join(TOP, "README.md")) as f:
        assert len(f.read().splitlines()) <= 210


def test_marker_syntax_errors():
    with pytest.raises(readme_blocks.MarkerError):
        readme_blocks.parse("<!-- readme-test: controller idx=1 -->\n```sh\na\n```\n")


def test_the_installed_test_runs_the_install_blocks():
    """The README's venv and tarball lines are marked `installed` and tests/installed/run.py runs every
    such block: the venv one verbatim too, so what it installs is enough to build (distlib)."""
    installed = readme_blocks.runnable(readme_blocks_of_the_checkout(), kinds=("installed",))
    assert "tarball" in installed and "ansible-galaxy collection install" in installed["tarball"].text
    assert "venv" in installed and "pip install 'ansible-core" in installed["venv"].text
    assert "distlib" in installed["venv"].text
    with open(os.path.join(TOP, "tests", "installed", "run.py")) as f:
        text = f.read()
    assert 'readme_blocks.runnable(README, kinds=("installed",))' in text


def test_ci_runs_the_readme_s_test_command():
    """The README's front page names the two commands (make demo, make test) and the command CI
    runs; .ci/run runs exactly that command, so neither can change without the other."""
    (block,) = [b for b in readme_blocks_of_the_checkout() if b.id == "commands"]
    assert block.kind == "skip" and block.reason, "the two commands are not run by the README test (make test runs it)"
    commands = [line.split("#", 1)[0].strip() for line in block.commands()]
    assert commands[:2] == ["make demo", "make test"], commands
    (ci_command,) = commands[2:]
    assert ci_command.startswith("make test "), ci_command
    with open(os.path.join(TOP, ".ci", "run")) as f:
        lines = [line.strip() for line in f if line.strip() and not line.lstrip().startswith("#")]
    # Everything but the shell's settings and the cd to the checkout is the one command.
    runs = [line for line in lines if not line.startswith(("set ", "cd ", "#!"))]
    assert runs == [ci_command], runs
    with open(os.path.join(TOP, "README.md")) as f:
        head = "\n".join(f.read().splitlines()[:30])
    assert "make demo" in head and "make test" in head, "the two commands stand near the top of README.md"
