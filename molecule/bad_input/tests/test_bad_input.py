# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Real node state after the bad_input cases: every one was refused before
anything changed, so the node is as the simulator image left it."""
import json

import pytest

testinfra_hosts = ["all"]

VENV_PY = "/opt/venvs/train/bin/python"


def test_no_tops_package_installed(host):
    out = host.run("dpkg-query -W -f='${Package} ${db:Status-Abbrev}\\n' 'tops*' 'topsfactor*'")
    assert out.rc in (0, 1), out.stderr
    installed = [line for line in out.stdout.splitlines() if line.split()[1:2] and line.split()[1][1] not in "nc"]
    assert installed == []


@pytest.mark.parametrize("path", [
    "/etc/profile.d/topsrider.sh",
    "/etc/ld.so.conf.d/topsrider.conf",
    "/var/lib/topsrider/torch_gcu.json",
    "/tmp/pwned",
])
def test_nothing_written(host, path):
    assert not host.file(path).exists


def test_no_hostile_value_reached_a_login_shell(host):
    out = host.run("bash -lc 'env'")
    assert out.rc == 0, out.stderr
    assert "ECCL_" not in out.stdout
    assert not host.file("/tmp/pwned").exists


def test_training_venv_untouched(host):
    code = ("import json, importlib.metadata as m\n"
            "def v(n):\n"
            "    try:\n"
            "        return m.version(n)\n"
            "    except m.PackageNotFoundError:\n"
            "        return None\n"
            "print(json.dumps({'torch': v('torch'), 'torch_gcu': v('torch_gcu')}))")
    out = host.run("%s -c \"%s\"" % (VENV_PY, code))
    assert out.rc == 0, out.stderr
    assert json.loads(out.stdout) == {"torch": "2.13.0+cpu", "torch_gcu": None}


def test_corrupt_bundle_really_is_corrupt_on_the_node(host):
    # The on-node case used this copy; prove it is the corrupt one, so the
    # refusal was for the right reason.
    base = "/var/cache/topsrider/2.5.140-corrupt/"
    manifest = json.loads(host.file(base + "manifest.json").content_string)
    entry = [e for e in manifest["files"] if e["file"] == "topsfactor_2.5.140-1_amd64.deb"][0]
    assert host.file(base + entry["file"]).sha256sum != entry["sha256"]
