# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a training job needs on a node: the one list (the vendor table's
job_files), the launcher's shell rule and its Python twin judging alike, and
the library's identity in the drift check's own words."""
import os
import subprocess

import pytest

from ansible_collections.gcu.topsrider.plugins.module_utils import _compare
from ansible_collections.gcu.topsrider.plugins.module_utils._vendors import VendorError

ENV = "/etc/profile.d/topsrider.sh"


def test_the_enflame_list_and_its_messages():
    files = _compare.job_files("enflame")
    assert [f["path"] for f in files] == [ENV, "/etc/ld.so.conf.d/topsrider.conf",
                                          "/etc/ansible/facts.d/topsrider.fact"]
    assert [f["env_file"] for f in files] == [True, False, False]
    assert files[0]["message"] == ("/etc/profile.d/topsrider.sh is missing or unreadable: the collective library's "
                                   "environment is not deployed (run playbooks/deploy.yml; the eccl_env role writes it)")
    assert all(f["test"] == _compare.SHELL_RULE for f in files)
    # dist_launch_env_file: another path, or none
    assert _compare.job_files("enflame", "/opt/env.sh")[0]["path"] == "/opt/env.sh"
    assert "/opt/env.sh is missing" in _compare.job_files("enflame", "/opt/env.sh")[0]["message"]
    assert ENV not in [f["path"] for f in _compare.job_files("enflame", "")]
    assert _compare.job_files("nvidia") == []
    with pytest.raises(VendorError):
        _compare.job_files("ascend")


def test_the_shell_rule_and_usable_agree(tmp_path):
    """The launcher's test and verify's read judge every kind of path alike."""
    (tmp_path / "file").write_text(u"x\n")
    (tmp_path / "dir").mkdir()
    os.symlink(str(tmp_path / "file"), str(tmp_path / "link"))
    os.symlink(str(tmp_path / "gone"), str(tmp_path / "dangling"))
    for name in ("file", "dir", "link", "dangling", "gone"):
        path = str(tmp_path / name)
        shell = subprocess.run(["bash", "-c", _compare.SHELL_RULE], env={"f": path}, check=False).returncode == 0
        assert shell == _compare.usable(path), name
    assert _compare.usable(str(tmp_path / "file")) and not _compare.usable(str(tmp_path / "dir"))


def test_job_problems_files_first_then_the_library():
    state = {"library": {"name": "libeccl.so", "package": "tops-eccl", "error": None,
                         "resolved": [{"path": "/usr/lib/x86_64-linux-gnu/libeccl.so",
                                       "realpath": "/usr/lib/x86_64-linux-gnu/libeccl.so"}],
                         "owned": [{"path": "/usr/local/tops/lib/libeccl.so",
                                    "realpath": "/usr/local/tops/lib/libeccl.so"}]},
             "packages": {"tops-eccl": {"version": "2.5.136-1"}},
             "package_files": {"error": None, "packages": {"tops-eccl": []}}}
    got = _compare.job_problems("enflame", state, check=lambda path: path != ENV)
    assert [p["check"] for p in got] == [ENV, "libeccl.so resolves"]
    assert got[1]["message"] == "libeccl.so resolves: not from tops-eccl: /usr/lib/x86_64-linux-gnu/libeccl.so"
    assert _compare.job_problems("enflame", {"library": None}, check=lambda path: True) == []
