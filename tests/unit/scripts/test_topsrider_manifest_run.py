# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/topsrider-manifest extract: the vendor's .run (made here by Debian's
real makeself) in, a checked bundle with manifest.json and its origin out,
cached by the .run's sha256; refused archives leave nothing behind."""
import hashlib
import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
import time
import types

import pytest

from conftest import TOP
import makeself_fakes as fakes

TOOL = os.path.join(TOP, "scripts", "topsrider-manifest")
RUN_NAME = "TopsRider_t2x_2.5.136_deb_amd64.run"


# A check is remembered only for files changed at least this long before it
# (plugin_utils/_checked_memo.py); the tests' files are all new.
SETTLE = {"TOPSRIDER_CHECKED_SETTLE_S": "0"}


def tool(*args, env=None):
    return subprocess.run([sys.executable, TOOL] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, env=dict(os.environ if env is None else env, **SETTLE),
                          check=False)


def make(tmp_path, options=(), **tree_args):
    base = tmp_path / "src"
    base.mkdir()
    tree = fakes.release_tree(str(base), **tree_args)
    return fakes.make_run(tree, str(tmp_path / RUN_NAME), *options)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.mark.parametrize("options", [(), ("--xz", "--sha256")])
def test_extract_writes_a_bundle_with_its_origin_then_extracts_nothing(tmp_path, options):
    run = make(tmp_path, options)
    cache = tmp_path / "cache"
    proc = tool("extract", run, "--cache", str(cache), "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    digest = sha256(run)
    bundle = str(cache / digest)
    assert result == {"bundle": bundle, "extracted": True, "version": "2.5.136", "checked": "now",
                      "origin": {"type": "makeself", "file": RUN_NAME, "sha256": digest,
                                 "size": os.path.getsize(run)}}
    assert sorted(os.listdir(bundle)) == [
        "manifest.json", "tops-sdk_2.5.136-1_amd64.deb", "topsfactor_2.5.136-1_amd64.deb",
        "torch_gcu-2.13.0+2.5.136-py310-none-any.whl", "torch_gcu-2.13.0+2.5.136-py311-none-any.whl"]
    with open(os.path.join(bundle, "manifest.json")) as f:
        data = json.load(f)
    assert data["origin"] == result["origin"]
    assert data["version"] == "2.5.136"
    assert [(e["type"], e.get("package"), e.get("python")) for e in data["files"]] == [
        ("deb", "tops-sdk", None), ("deb", "topsfactor", None),
        ("wheel", "torch_gcu", "3.10"), ("wheel", "torch_gcu", "3.11")]
    assert tool("check", bundle).returncode == 0
    assert sorted(os.listdir(str(cache))) == [digest]                # no temporary leftovers
    assert not (tmp_path / "src" / fakes.RAN_MARKER).exists(), "the archive's install.sh was executed"

    mtime = os.stat(os.path.join(bundle, "manifest.json")).st_mtime_ns
    again = tool("extract", run, "--cache", str(cache))
    assert again.returncode == 0, again.stderr
    assert "nothing extracted" in again.stdout
    # That full check is remembered (the bundle was not new any more): the next run reads nothing.
    assert sorted(os.listdir(str(cache))) == [".checked", digest]
    assert [n for n in os.listdir(str(cache / ".checked")) if not n.endswith(".json")] == []
    assert "neither has changed since the full check at" in tool("extract", run, "--cache", str(cache)).stdout
    quick = json.loads(tool("extract", run, "--cache", str(cache), "--json").stdout)
    assert quick["extracted"] is False and quick["checked"].startswith("unchanged since ")
    assert dict(quick, checked="now", extracted=True) == result
    recheck = json.loads(tool("extract", run, "--cache", str(cache), "--json", "--recheck").stdout)
    assert recheck == dict(result, extracted=False)
    assert os.stat(os.path.join(bundle, "manifest.json")).st_mtime_ns == mtime


def test_default_cache_and_explicit_directory(tmp_path):
    run = make(tmp_path)
    env = dict(os.environ, TOPSRIDER_CACHE_DIR=str(tmp_path / "envcache"))
    proc = tool("extract", run, "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["bundle"] == str(tmp_path / "envcache" / sha256(run))
    env = dict(os.environ, HOME=str(tmp_path / "home"))
    env.pop("TOPSRIDER_CACHE_DIR", None)
    env.pop("XDG_CACHE_HOME", None)
    proc = tool("extract", run, "--json", env=env)
    assert json.loads(proc.stdout)["bundle"] == str(tmp_path / "home" / ".cache" / "topsrider" / "runs" / sha256(run))

    target = tmp_path / "bundle"
    assert tool("extract", run, str(target)).returncode == 0
    assert "nothing extracted" in tool("extract", run, str(target)).stdout
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    proc = tool("extract", run, str(other))
    assert proc.returncode == 2
    assert "is not the intact bundle of this .run" in proc.stderr
    assert os.listdir(str(other)) == ["keep.txt"]


def test_a_damaged_cache_entry_is_extracted_again(tmp_path):
    run = make(tmp_path)
    cache = tmp_path / "cache"
    assert tool("extract", run, "--cache", str(cache)).returncode == 0
    deb = cache / sha256(run) / "tops-sdk_2.5.136-1_amd64.deb"
    deb.write_bytes(b"damaged")
    proc = tool("extract", run, "--cache", str(cache), "--json")
    assert proc.returncode == 0, proc.stderr
    assert "stale or damaged; extracting again" in proc.stderr
    assert json.loads(proc.stdout)["extracted"] is True
    assert tool("check", str(cache / sha256(run))).returncode == 0


def _refused(tmp_path, run, needle, rc=1):
    cache = tmp_path / "cache"
    proc = tool("extract", run, "--cache", str(cache))
    assert proc.returncode == rc, proc.stdout + proc.stderr
    assert needle in proc.stderr
    assert not cache.exists() or os.listdir(str(cache)) == []       # nothing half-extracted
    assert not (tmp_path / "src" / fakes.RAN_MARKER).exists()
    return proc.stderr


def test_corrupt_payload_refused(tmp_path):
    run = make(tmp_path, ("--xz", "--sha256"))
    fakes.flip_payload_byte(run)
    err = _refused(tmp_path, run, "SHA256 checksum of payload part 1 does not match its header")
    assert err.startswith("refused: " + RUN_NAME)


def test_truncated_refused(tmp_path):
    run = make(tmp_path)
    fakes.truncate(run, 100)
    _refused(tmp_path, run, "truncated")


def test_not_a_makeself_file_refused(tmp_path):
    path = tmp_path / RUN_NAME
    path.write_text("#!/bin/sh\necho I am an installer\n")
    _refused(tmp_path, str(path), "is not a makeself archive")


def test_dotdot_member_refused(tmp_path):
    run = fakes.repack(make(tmp_path), [(fakes.member("sdk/tops-sdk_2.5.136-1_amd64.deb"), b"deb"),
                                        (fakes.member("../escaped"), b"x")])
    _refused(tmp_path, run, "'..' out of the archive")
    assert not (tmp_path / "escaped").exists()


def test_no_debs_refused(tmp_path):
    run = make(tmp_path, debs=())
    _refused(tmp_path, run, "no .deb in the archive")


def test_two_versions_of_a_package_refused(tmp_path):
    run = make(tmp_path, debs=(("tops-sdk", "2.5.136-1"), ("tops-sdk", "2.5.130-1")))
    _refused(tmp_path, run, "package tops-sdk comes in two versions")


def test_version_from_name_or_option(tmp_path):
    run = make(tmp_path)
    renamed = tmp_path / "installer.run"
    os.rename(run, str(renamed))
    _refused(tmp_path, str(renamed), "pass --version", rc=2)
    proc = tool("extract", str(renamed), "--version", "2.5.136", "--cache", str(tmp_path / "cache"), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["origin"]["file"] == "installer.run"


# --------------------------------------- the memo of a full check that passed --

def _script():
    """The tool as a module, to run in this process (its checks can then be replaced)."""
    loader = importlib.machinery.SourceFileLoader("topsrider_manifest_under_test", TOOL)
    module = types.ModuleType(loader.name)
    module.__file__ = TOOL
    loader.exec_module(module)
    return module


def test_an_unchanged_run_and_bundle_are_not_read_again(tmp_path, monkeypatch, capsys):
    run = make(tmp_path, ("--xz", "--sha256"))
    cache = tmp_path / "cache"
    first = json.loads(tool("extract", run, "--cache", str(cache), "--json").stdout)
    assert tool("extract", run, "--cache", str(cache)).returncode == 0     # the full check remembered
    script = _script()

    def read_again(*args, **kwargs):
        raise AssertionError("read again though nothing changed")
    monkeypatch.setattr(script.makeself, "verify", read_again)
    monkeypatch.setattr(script.makeself, "read_header", read_again)
    monkeypatch.setattr(script.manifest, "verify", read_again)
    assert script.main(["extract", run, "--cache", str(cache), "--json"]) == 0
    quick = json.loads(capsys.readouterr().out)
    assert dict(quick, checked="now", extracted=True) == first
    # --recheck reads them: here, the replaced checks say so.
    with pytest.raises(AssertionError, match="read again"):
        script.main(["extract", run, "--cache", str(cache), "--json", "--recheck"])


def test_a_run_corrupted_with_its_mtime_put_back_is_refused_after_a_memo(tmp_path):
    run = make(tmp_path, ("--xz", "--sha256"))
    cache = tmp_path / "cache"
    assert tool("extract", run, "--cache", str(cache)).returncode == 0
    assert tool("extract", run, "--cache", str(cache)).returncode == 0
    assert "neither has changed" in tool("extract", run, "--cache", str(cache)).stdout
    before = os.stat(run)
    time.sleep(0.01)
    fakes.flip_payload_byte(run)
    os.utime(run, ns=(before.st_atime_ns, before.st_mtime_ns))    # size and mtime as they were; ctime moved
    proc = tool("extract", run, "--cache", str(cache))
    assert proc.returncode == 1, proc.stdout
    assert "SHA256 checksum of payload part 1 does not match its header" in proc.stderr


def test_a_bundle_file_touched_or_a_run_replaced_is_checked_in_full_again(tmp_path):
    run = make(tmp_path)
    cache = tmp_path / "cache"
    digest = sha256(run)
    assert tool("extract", run, "--cache", str(cache)).returncode == 0
    assert tool("extract", run, "--cache", str(cache)).returncode == 0
    deb = cache / digest / "tops-sdk_2.5.136-1_amd64.deb"
    shutil.copy2(str(deb), str(deb) + ".new")
    os.rename(str(deb) + ".new", str(deb))                     # same bytes and mtime, another inode
    again = json.loads(tool("extract", run, "--cache", str(cache), "--json").stdout)
    assert (again["checked"], again["extracted"]) == ("now", False)
    # The full check found it intact and is remembered again.
    assert json.loads(tool("extract", run, "--cache", str(cache), "--json").stdout)["checked"].startswith("unchanged")

    copy = tmp_path / "copy.run"
    shutil.copy2(run, str(copy))
    os.rename(str(copy), run)                                  # the same .run downloaded again
    assert json.loads(tool("extract", run, "--cache", str(cache), "--json").stdout)["checked"] == "now"


@pytest.mark.parametrize("memo_text", ["not json", "[]", '{"format": 1, "subject": "/x", "bundle": "/"}',
                                       '{"format": 1}'])
def test_a_foreign_or_garbled_memo_only_means_a_full_check(tmp_path, memo_text):
    run = make(tmp_path)
    cache = tmp_path / "cache"
    assert tool("extract", run, "--cache", str(cache)).returncode == 0
    assert tool("extract", run, "--cache", str(cache)).returncode == 0
    (memos,) = list((cache / ".checked").iterdir())
    memos.write_text(memo_text)
    proc = tool("extract", run, "--cache", str(cache), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["checked"] == "now"
    assert json.loads(memos.read_text())["record"]["origin"]["sha256"] == sha256(run)


def test_an_explicit_directory_keeps_no_memo(tmp_path):
    run = make(tmp_path)
    env = dict(os.environ, TOPSRIDER_CACHE_DIR=str(tmp_path / "envcache"))
    target = tmp_path / "bundle"
    assert tool("extract", run, str(target), env=env).returncode == 0
    assert json.loads(tool("extract", run, str(target), "--json", env=env).stdout)["checked"] == "now"
    assert not (tmp_path / "envcache").exists()


def test_files_changed_just_before_a_check_are_not_remembered(tmp_path):
    """Timestamps are coarse: the default (2 s) keeps the run that extracted a
    bundle, and a check right after it, from trusting files that could still
    be changed within the same tick; a check of settled files is remembered."""
    run = make(tmp_path)
    cache = tmp_path / "cache"
    env = dict(os.environ)
    env.pop("TOPSRIDER_CHECKED_SETTLE_S", None)
    default = [sys.executable, TOOL, "extract", run, "--cache", str(cache), "--json"]

    def checked():
        proc = subprocess.run(default, stdout=subprocess.PIPE, universal_newlines=True, env=env, check=True)
        return json.loads(proc.stdout)["checked"]
    assert checked() == "now"
    assert checked() == "now"
    assert not (cache / ".checked").exists()
    time.sleep(2.1)
    assert checked() == "now"
    assert checked().startswith("unchanged since ")
