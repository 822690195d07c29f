"""Peer staging's failures (issue 16), from the runs' outputs and reports and the nodes' real state."""
import hashlib
import json
import os
import re

EPH = os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]
BUNDLE = os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], ".cache", "bundles", "2.5.136")
NODE1 = "topsrider-staging-node1"


def run(name):
    with open(os.path.join(EPH, "run-%s.log" % name)) as f:
        # molecule forces colour on (ANSIBLE_FORCE_COLOR wins over NOCOLOR): plain text for the patterns.
        text = re.sub(r"\x1b\[[0-9;]*m", "", f.read())
    rc = int(text.split("\n", 1)[0].split("=", 1)[1])
    return rc, text


def recap(text):
    return dict((m.group(1), dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))))
                for m in re.finditer(r"^(topsrider-staging-node\d)\s+:\s+(.*)$", text, re.M))


def node(host):
    return host.backend.get_hostname()


def test_an_unreachable_source_fails_its_clients_naming_it_and_changes_nothing(host):
    rc, text = run("unreachable")
    assert rc == 2
    with open(os.path.join(EPH, "report-unreachable.json")) as f:
        rows = {h["host"]: h for h in json.load(f)["hosts"]}
    assert rows[NODE1]["result"] == "ok"
    n = node(host)
    if n == "topsrider-staging-node2":
        assert rows[n]["result"] == "failed"
        detail = rows[n]["detail"]
        assert "could not stage 2.5.136 from %s (http://127.0.0.1:23871)" % NODE1 in detail, detail
        assert "nothing had changed" in detail
        # The failing host's line in the printed report: at most a terminal's 160 columns (the JSON above
        # has the whole detail), and the failure itself printed whole by Ansible.
        row = re.search(r"^\s*%s\s+failed\s.*$" % n, text, re.M)
        assert row and len(row.group(0)) <= 160 and "nothing had changed" in row.group(0), row
        assert "could not stage 2.5.136 from %s (http://127.0.0.1:23871)" % NODE1 in text
    elif n == "topsrider-staging-node3":
        # A batch that fails whole ends the playbook (Ansible), so node3 was never reached.
        assert rows[n]["result"] == "not started"


def test_nothing_came_from_the_controller_after_the_first_seed():
    # Run 1: node1 was the seed (a copy from the controller). Run 2: no copy changed anything.
    dummy, first = run("unreachable")
    assert re.search(r"^%s: 2\.5\.136 from the controller: file \d+ of \d+, tops-sdk_2\.5\.136-1_amd64\.deb, "
                     r"sent [\d.]+ KiB of [\d.]+ KiB; " % NODE1, first, re.M)
    rc, second = run("repaired")
    assert rc == 0
    copies = [part.split("TASK [")[0] for part in second.split("Copy the files this host lacks from the controller")[1:]]
    assert len(copies) == 2 and not any("changed:" in part for part in copies)
    assert " from the controller: " not in second
    # node2 from node1 (already at the release, found by the fast path), node3 from node2 or node1.
    assert re.search(r"^topsrider-staging-node2: 2\.5\.136 from %s \(http://127\.0\.0\.1:23871\): "
                     r"[\d.]+ KiB of [\d.]+ KiB \(100%%\)$" % NODE1, second, re.M)
    assert re.search(r"^topsrider-staging-node3: 2\.5\.136 from topsrider-staging-node[12] ", second, re.M)


def test_the_repaired_run_deployed_and_the_next_changed_nothing():
    dummy, second = run("repaired")
    counts = recap(second)
    assert counts[NODE1]["changed"] == 0 and counts[NODE1]["failed"] == 0
    for n in ("topsrider-staging-node2", "topsrider-staging-node3"):
        assert counts[n]["failed"] == 0 and counts[n]["changed"] > 0
    rc, third = run("again")
    assert rc == 0
    assert all(c["changed"] == 0 and c["failed"] == 0 for c in recap(third).values()), recap(third)
    # topsrider_deploy_reprobe: every node already at the release was probed at the framework level
    # (deploy.yml's second play), passed, and stayed there: no rollout play ran a task.
    probe = re.search(r"^TASK \[Prove ECCL works in the training Python \(topsrider_deploy_reprobe\)\] \**\n(.*?)\n\n",
                      third, re.M | re.S)
    assert probe, third
    assert sorted(re.findall(r"^ok: \[(topsrider-staging-node\d)\]$", probe.group(1), re.M)) == [
        "topsrider-staging-node1", "topsrider-staging-node2", "topsrider-staging-node3"], probe.group(1)
    assert len(re.findall(r"^topsrider-staging-node\d\s+ok\s+2\.5\.136\s.*already at 2\.5\.136$", third, re.M)) == 3, third
    assert "TASK [Lock | Take the node lock" not in third, third


def test_every_staged_file_has_the_manifest_sha256_and_no_junk_is_left(host):
    with open(os.path.join(BUNDLE, "manifest.json"), "rb") as f:
        manifest_bytes = f.read()
    manifest = json.loads(manifest_bytes)
    for entry in manifest["files"]:
        staged = host.file("/var/cache/topsrider/2.5.136/" + entry["file"])
        assert staged.sha256sum == entry["sha256"], entry["file"]
        assert staged.mode == 0o600 and staged.user == "root"
    assert host.file("/var/cache/topsrider/2.5.136/manifest.json").sha256sum == hashlib.sha256(manifest_bytes).hexdigest()
    assert not host.file("/var/cache/topsrider/.partial").exists
    assert host.package("tops-sdk").version == "2.5.136-1"


def test_no_server_is_left_running(host):
    assert not host.file("/var/cache/topsrider/.serve.json").exists
    assert host.run("pgrep -f topsrider-bundle-serv[e]").rc == 1
