# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/files/write_reports.py: the run's report files, written in one process."""
import importlib.util
import io
import json
import os
import stat
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "playbooks", "files", "write_reports.py")


def run(payload):
    return subprocess.run([sys.executable, SCRIPT], input=json.dumps(payload), text=True,
                          capture_output=True, check=False)


def test_writes_every_file_whole_with_mode_0644(tmp_path):
    old = tmp_path / "drift-latest.json"
    old.write_text("old")
    files = [[str(tmp_path / "drift-1.json"), "{}\n"], [str(old), "new\n"], [str(tmp_path / "d.md"), "# ü\n"]]
    done = run(files)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["written"] == [f[0] for f in files]
    for path, content in files:
        assert open(path, encoding="utf-8").read() == content
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert sorted(os.listdir(str(tmp_path))) == ["d.md", "drift-1.json", "drift-latest.json"]


def test_refuses_what_is_not_a_list_of_path_and_text(tmp_path):
    done = run([[str(tmp_path / "a.json"), {"not": "text"}]])
    assert done.returncode != 0 and "want [[path, text]" in done.stderr
    assert os.listdir(str(tmp_path)) == []


def test_a_missing_directory_is_made(tmp_path):
    done = run([[str(tmp_path / "deploy-1.d" / "node1.json"), "x"]])
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "deploy-1.d" / "node1.json").read_text() == "x\n"
    assert stat.S_IMODE(os.stat(str(tmp_path / "deploy-1.d")).st_mode) == 0o755


def test_a_directory_that_cannot_be_made_fails_and_leaves_nothing(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    done = run([[str(tmp_path / "file" / "a.json"), "x"]])
    assert done.returncode != 0
    assert os.listdir(str(tmp_path)) == ["file"]


def test_every_file_ends_with_one_newline(tmp_path):
    # tasks/finish.yml passes to_nice_json output, which has no final newline.
    files = [[str(tmp_path / "a.json"), '{\n    "a": 1\n}'], [str(tmp_path / "b.json"), "{}\n"]]
    done = run(files)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "a.json").read_text()) == {"a": 1}
    assert (tmp_path / "a.json").read_text().endswith("}\n")
    assert (tmp_path / "b.json").read_text() == "{}\n"


def test_a_directory_another_writer_made_meanwhile_is_used(tmp_path, monkeypatch, capsys):
    """verify.yml's hosts write their lines into the run's new directory at the same
    moment, one controller process each: another makes it between this one's look and
    its own mkdir (seen in make demo: FileExistsError). The line must still land."""
    spec = importlib.util.spec_from_file_location("write_reports_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    directory = tmp_path / "verify-1.d"
    real_mkdir = os.mkdir

    def another_writer_first(path, mode=0o777, **kwargs):
        if os.path.abspath(path) == str(directory):
            real_mkdir(path, 0o755)  # the other host's writer wins the race
        return real_mkdir(path, mode, **kwargs)

    monkeypatch.setattr(module.os, "mkdir", another_writer_first)
    monkeypatch.setattr(module.sys, "stdin", io.StringIO(json.dumps([[str(directory / "node2.json"), "{}"]])))
    module.main()
    assert (directory / "node2.json").read_text() == "{}\n"
    assert json.loads(capsys.readouterr().out)["written"] == [str(directory / "node2.json")]
