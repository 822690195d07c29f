# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection as users get it: the tarball `ansible-galaxy collection build`
makes, installed into an empty collections path, with nothing of the checkout
in reach (an empty ansible.cfg, only that path). It holds collection content
and the operator tools, not the development files; ansible-doc lists its
plugins; topsrider-manifest and topsrider-drift work from there (drift runs
the installed playbook by its FQCN against this machine, which has no
TopsRider: drift found, exit 3)."""
import json
import os
import subprocess
import sys
import tarfile

import pytest

from conftest import build_release

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.path.dirname(sys.executable)

SHIPPED = ("scripts/topsrider-manifest", "scripts/topsrider-drift", "scripts/topsrider-fabric",
           "contrib/cron/topsrider-drift", "contrib/systemd/topsrider-drift.service", "contrib/default/topsrider-drift",
           "contrib/execution-environment.yml", "contrib/prometheus/topsrider-alerts.yml", "playbooks/drift.yml", "plugins/modules/deb_bundle.py",
           "roles/tops_sdk/tasks/main.yml", "changelogs/changelog.yaml", "CHANGELOG.md", "README.md")
LEFT_OUT = ("molecule/", "sim/", "tests/", "scripts/bench/", "scripts/molecule-all.sh", "scripts/sanity.sh",
            "scripts/demo.sh", "docs/performance.json", "docs/performance-mitogen.json", "docs/performance-large.json",
            "Makefile",
            "ansible.cfg", "requirements/", "changelogs/.plugin-cache.yaml", ".sim/", ".cache/")


def run(argv, env, cwd, check=True):
    proc = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=300, check=False)
    if check:
        assert proc.returncode == 0, "%s: rc %d\n%s" % (" ".join(argv), proc.returncode, proc.stdout)
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tarball")
    config = tmp / "empty.cfg"
    config.write_text("")
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith("ANSIBLE_"))
    env.update(PATH=BIN + os.pathsep + env.get("PATH", ""), ANSIBLE_CONFIG=str(config),
               ANSIBLE_COLLECTIONS_PATH=str(tmp / "collections"), ANSIBLE_HOME=str(tmp / "home"),
               ANSIBLE_LOCAL_TEMP=str(tmp / "ansible-tmp"), ANSIBLE_NOCOLOR="1")
    run(["ansible-galaxy", "collection", "build", "--output-path", str(tmp / "dist"), TOP], env, str(tmp))
    (tarball,) = list((tmp / "dist").iterdir())
    run(["ansible-galaxy", "collection", "install", str(tarball), "-p", str(tmp / "collections")], env, str(tmp))
    root = tmp / "collections" / "ansible_collections" / "gcu" / "topsrider"
    return {"tmp": tmp, "env": env, "tarball": tarball, "root": root}


def test_the_tarball_holds_collection_content_and_the_tools_only(installed):
    with tarfile.open(str(installed["tarball"])) as tf:
        names = set(tf.getnames())
    for name in SHIPPED:
        assert name in names, name
    for prefix in LEFT_OUT:
        assert not [n for n in names if n == prefix.rstrip("/") or n.startswith(prefix)], prefix
    for tool in ("topsrider-manifest", "topsrider-drift", "topsrider-fabric"):
        assert os.access(str(installed["root"] / "scripts" / tool), os.X_OK), tool


def test_ansible_doc_lists_the_installed_plugins(installed):
    out = run(["ansible-doc", "-l", "gcu.topsrider"], installed["env"], str(installed["tmp"])).stdout
    for module in ("deb_bundle", "eccl_probe", "gcu_devices", "topsrider_lock", "topsrider_state"):
        assert "gcu.topsrider.%s " % module in out, out
    # Only the installed copy is in reach: its path, not the checkout's.
    out = run(["ansible-doc", "gcu.topsrider.gcu_devices"], installed["env"], str(installed["tmp"])).stdout
    assert str(installed["root"]) in out and TOP + "/plugins" not in out


def test_the_installed_tools_work(installed):
    env, tmp, scripts = installed["env"], installed["tmp"], installed["root"] / "scripts"
    release = tmp / "release"
    build_release(release)
    run([str(scripts / "topsrider-manifest"), "create", str(release), "--version", "9.9.9"], env, str(tmp))
    out = run([str(scripts / "topsrider-manifest"), "check", str(release)], env, str(tmp)).stdout
    assert "1 files match the manifest (TopsRider 9.9.9)" in out
    with open(str(release / "tops-sdk_9.9.9-1_amd64.deb"), "ab") as f:
        f.write(b"x")
    assert run([str(scripts / "topsrider-manifest"), "check", str(release)], env, str(tmp), check=False).returncode == 1
    run([str(scripts / "topsrider-manifest"), "create", str(release), "--version", "9.9.9"], env, str(tmp))

    # The drift wrapper runs the installed playbook (gcu.topsrider.drift) against this machine.
    proc = run([str(scripts / "topsrider-drift"), "--reports-dir", str(tmp / "reports"), "-i", "localhost,",
                "-c", "local", "-e", "topsrider_hosts=localhost", "-e", "topsrider_bundle_dir=%s" % release,
                "-e", "ansible_python_interpreter=%s" % sys.executable], env, str(tmp), check=False)
    assert proc.returncode == 3, proc.stdout
    assert str(installed["root"] / "playbooks" / "drift.yml") in proc.stdout
    with open(str(tmp / "reports" / "drift-latest.json")) as f:
        report = json.load(f)
    assert report["status"] == "drift"
    assert report["desired"]["version"] == "9.9.9"
    checks = dict((f["check"], f) for f in report["findings"] if f["node"] == "localhost")
    assert checks["tops-sdk version"]["expected"] == "9.9.9-1", report
