"""The fleet story, checked per node from the captures taken during the run
(side_effect) and from the node's real state now."""
import json
import os
import re

EPH = os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]
BROKEN = "topsrider-fleet-node4"
# A training process holds /dev/gcu0 there through the upgrade and the rollback (no scheduler).
BUSY = "topsrider-fleet-node3"
# node_disk.yml: its bundle cache and state directory are small file systems of their own;
# it ends upgraded to 2.5.140.
DISK = "topsrider-fleet-node2"


def state_files(name):
    with open(os.path.join(EPH, "state-%s-%s.txt" % (name, BUSY))) as f:
        return f.read()


def capture(name, node):
    with open(os.path.join(EPH, "capture-%s-%s.txt" % (name, node))) as f:
        return f.read()


def packages(text):
    return dict(line.split()[:2] for line in text.splitlines() if line.startswith("tops"))


def report(kind):
    with open(os.path.join(EPH, "%s-report.json" % kind)) as f:
        return {h["host"]: h for h in json.load(f)["hosts"]}


def node(host):
    return host.backend.get_hostname()


def test_before_the_upgrade_every_node_has_2_5_136(host):
    assert packages(capture("before-upgrade", node(host))) == {
        "tops-sdk": "2.5.136-1", "topsfactor": "2.5.136-1", "tops-eccl": "2.5.136-1"}


def test_upgrade_result_per_node(host):
    n = node(host)
    row = report("upgrade")[n]
    after = packages(capture("after-upgrade", n))
    if n == BUSY:
        # Deferred, naming the process that holds the card; nothing on the node changed.
        assert row["result"] == "deferred" and row["changed"] is False and row["version"] == "2.5.136", row
        assert re.search(r"^deferred, nothing was changed: in use: pid \d+ \(root: /opt/venvs/train/bin/python -c "
                         r"import time, torch, torch_gcu; torch\.gcu\.set_device\(0\); .*\) holds gcu0$",
                         row["detail"]), row["detail"]
        assert capture("after-upgrade", n) == capture("before-upgrade", n)
        assert state_files("after-upgrade") == state_files("before-upgrade")
        assert "/var/cache/topsrider/2.5.140" not in state_files("after-upgrade")
    elif n == BROKEN:
        assert row["result"] == "failed"
        assert "restored" in row["detail"]
        assert "tops-eccl" in row["detail"] or "postinst" in row["detail"].lower()
        # Restored exactly: packages, env file hash, loader file hash, pip freeze.
        assert capture("after-upgrade", n) == capture("before-upgrade", n)
    else:
        assert row["result"] == "ok" and row["changed"] is True
        assert row["version"] == "2.5.140"
        assert after == {"tops-sdk": "2.5.140-1", "topsfactor": "2.5.140-1", "tops-eccl": "2.5.140-1"}
        # pip freeze names the wheel it came from: torch_gcu @ file:///var/cache/topsrider/2.5.140/...
        wheel = [line for line in capture("after-upgrade", n).splitlines() if line.startswith(("torch_gcu", "torch-gcu"))]
        assert len(wheel) == 1 and "2.5.140" in wheel[0] and "2.5.136" not in wheel[0]


def test_rollback_returns_upgraded_nodes_exactly(host):
    n = node(host)
    if n == BUSY:
        # Still busy: the rollback defers it too, and nothing on it changed.
        row = report("rollback")[n]
        assert row["result"] == "deferred" and "holds gcu0" in row["detail"], row
        assert capture("after-rollback", n) == capture("before-upgrade", n)
        assert state_files("after-rollback") == state_files("before-upgrade")
    elif n == BROKEN:
        # node4 was left out of the rollback (it never upgraded) and is unchanged.
        assert n not in report("rollback")
        assert capture("after-rollback", n) == capture("before-upgrade", n)
    else:
        assert report("rollback")[n]["result"] == "ok"
        assert capture("after-rollback", n) == capture("before-upgrade", n)


def test_node_is_at_its_last_release_now(host):
    release = "2.5.140" if node(host) == DISK else "2.5.136"
    for pkg in ("tops-sdk", "topsfactor", "tops-eccl"):
        assert host.package(pkg).version == release + "-1"
    fact = json.loads(host.file("/etc/ansible/facts.d/topsrider.fact").content_string)
    assert fact["version"] == release


def test_junit_of_the_upgrade_and_the_rollback_validates(host):
    import xmlschema
    schema = xmlschema.XMLSchema(os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], "tests", "unit", "fixtures",
                                              "junit.xsd"))
    n = node(host)
    for kind in ("upgrade", "rollback"):
        path = os.path.join(EPH, "%s-report.xml" % kind)
        schema.validate(path)
        cases = dict((c["@name"], c) for c in schema.to_dict(path)["testsuite"][0]["testcase"])
        if kind == "rollback" and n == BROKEN:
            assert n not in cases
        elif n == BUSY:
            assert cases[n]["skipped"]["@message"].startswith("deferred, nothing was changed: in use: pid ")
        elif kind == "upgrade" and n == BROKEN:
            assert "restored" in cases[n]["failure"]["@message"]
        else:
            assert not set(cases[n]) & {"failure", "error", "skipped"}


def test_the_failed_upgrade_prints_its_report_unwrapped(host):
    """The run that failed on node4 prints the fleet report as plain text: one
    whole line per host (printed as they are by the reports action), none folded."""
    with open(os.path.join(EPH, "upgrade.log")) as f:
        log = re.sub(r"\x1b\[[0-9;]*m", "", f.read())  # molecule forces colour
    assert "TopsRider deploy " in log
    n = node(host)
    rows = [line.strip() for line in log.splitlines()
            if line.strip().startswith(n + " ") and line.split()[1] in ("ok", "failed", "unreachable", "not", "deferred")]
    assert rows, "no report line for %s in the upgrade's output" % n
    row = rows[-1].split()
    # node4 failed, node3 was deferred: the run's status is failed (a failure outranks a deferral)
    assert "Status: failed" in log and "1 deferred" in log
    if n == BUSY:
        assert row[1:3] == ["deferred", "2.5.136"] and "holds gcu0" in rows[-1]
    elif n == BROKEN:
        assert row[1] == "failed" and "restored" in rows[-1]
    else:
        assert row[1:3] == ["ok", "2.5.140"]
    assert not [line for line in log.splitlines() if line.strip() == "|"]


def test_the_controller_sent_each_bundle_once_and_the_nodes_fed_each_other(host):
    """Peer staging (issue 16): a host that needs the bundle fetches it over HTTP from a host that
    holds it (the servers' request logs), the controller sending it only where no host has it.
    2.5.136 in converge: node1, 3 and 4 start at it (the pre-deployed image), node2 (its cache,
    state and facts on file systems of its own, empty at start) fetches it from node1. 2.5.140:
    node1 -> node2; node3 was in use (deferred: nothing sent to it); node4's other bundle (another
    manifest) came from the controller. (A chain through three batches is molecule/staging's.)"""
    log = host.file("/var/cache/topsrider/.serve.log")
    served = re.findall(r'"GET /manifest\.json HTTP/1\.[01]" 200', log.content_string) if log.exists else []
    assert len(served) == {"topsrider-fleet-node1": 2}.get(node(host), 0)
    # Every server of the run was stopped at its end.
    assert not host.file("/var/cache/topsrider/.serve.json").exists
    assert host.run("pgrep -f topsrider-bundle-serv[e]").rc == 1


def test_the_upgrade_printed_staging_progress_with_its_source():
    with open(os.path.join(EPH, "upgrade.log")) as f:
        text = f.read()
    for peer, source in (("topsrider-fleet-node2", "topsrider-fleet-node1"),):
        assert re.search(r"^%s: 2\.5\.140 from %s \(http://127\.0\.0\.1:\d+\): "
                         r"[\d.]+ KiB of [\d.]+ KiB \(100%%\)$" % (peer, source), text, re.M), peer
    # node4's broken bundle is a release of its own: the controller copied it (bundle_push's lines), no peer
    # served it; node3 was busy and got nothing.
    assert re.search(r"^topsrider-fleet-node4: 2\.5\.140 from the controller: file \d+ of \d+, ", text, re.M)
    assert "topsrider-fleet-node4: 2.5.140 from topsrider-" not in text
    assert "topsrider-fleet-node3: 2.5.140 from" not in text


def test_the_runs_status_tells_not_done_yet_from_broken():
    """The upgrade had a failed node (status failed); the rollback's only
    unfinished node was the busy one (status deferred, and ansible-playbook
    itself succeeded: a deferred node is not a failure)."""
    with open(os.path.join(EPH, "upgrade-report.json")) as f:
        upgrade = json.load(f)
    with open(os.path.join(EPH, "rollback-report.json")) as f:
        rollback = json.load(f)
    assert upgrade["status"] == "failed" and upgrade["summary"]["deferred"] == 1
    assert rollback["status"] == "deferred" and rollback["summary"]["deferred"] == 1
    assert rollback["summary"]["ok"] == 2 and rollback["summary"]["failed"] == 0


def test_verify_runs_no_collective_on_busy_cards():
    """verify.yml at the collective level on node3 while its training process holds gcu0: the node is
    proven at the framework level, and its line says why the collective level did not run."""
    with open(os.path.join(EPH, "busy-verify-report.json")) as f:
        (row,) = json.load(f)["hosts"]
    assert row["host"] == BUSY and row["result"] == "ok", row
    assert row["detail"].startswith("8 cards healthy, ECCL ok at level framework; collective level not run: "
                                    "the cards are in use (pid "), row["detail"]
    assert row["detail"].endswith(") holds gcu0)") and row["in_use"], row


# ---- issue 31: a node that loses power mid-install (power_loss.yml) --------
POWER_LOST = "topsrider-fleet-node1"


def eph_json(name):
    with open(os.path.join(EPH, name)) as f:
        return json.load(f)


def eph_text(name):
    with open(os.path.join(EPH, name)) as f:
        return f.read()


def rows_of(report):
    return {h["host"]: h for h in report["hosts"]}


def test_while_a_batch_installs_its_node_is_in_progress_in_the_report():
    rows = rows_of(eph_json("power-inprogress-report.json"))
    assert rows[POWER_LOST]["result"] == "in progress", rows
    assert rows[POWER_LOST]["detail"].startswith("in progress (started 20"), rows
    assert rows["topsrider-fleet-node2"]["result"] == "not started", rows


def test_a_node_lost_mid_install_is_named_unreachable_in_the_written_and_printed_report():
    log = eph_text("power-lost.log")
    # 2: the docker connection reports a stopped container as a failure (over SSH: 4, unreachable).
    assert log.startswith("rc=2\n")
    report = eph_json("power-lost-report.json")
    rows = rows_of(report)
    assert sorted(rows) == [POWER_LOST, "topsrider-fleet-node2"]
    # What a node that stopped answering mid-install holds is unknown: no version, not the one before.
    assert rows[POWER_LOST]["result"] == "unreachable" and rows[POWER_LOST]["version"] is None, rows
    assert rows[POWER_LOST]["detail"].startswith("unreachable: the node stopped answering during 'Install the bundle"), rows
    assert rows["topsrider-fleet-node2"]["result"] == "not started", rows
    assert report["unreachable_hosts"] == [POWER_LOST] and report["status"] == "failed"
    assert "Unreachable: %s." % POWER_LOST in log and "0 ok, 0 failed, 1 unreachable, 1 changed, 1 not started." in log


def test_the_plain_rerun_names_the_one_remedy_and_with_it_the_deploy_completes():
    """node1 came back with dpkg's run cut in its postinst: the plain re-run
    changes nothing and names the switch that repairs it; with it, the
    deploy finishes and proves node1 at 2.5.140."""
    log = eph_text("power-again.log")
    assert log.startswith("rc=2\n")
    row = rows_of(eph_json("power-again-report.json"))[POWER_LOST]
    assert row["result"] == "failed" and "interrupted" in row["detail"], row
    # The lost run's lock was taken over without topsrider_lock_break, and the line says what was found.
    assert row["detail"].startswith("interrupted deploy run power1 found (its ansible-playbook (pid "), row
    assert "-e topsrider_recover_interrupted=true" in log
    assert eph_text("power-remedy.log").startswith("rc=0\n")
    row = rows_of(eph_json("power-remedy-report.json"))[POWER_LOST]
    assert row["result"] == "ok" and row["version"] == "2.5.140", row


def test_a_full_reports_directory_fails_the_run_naming_it_and_keeps_the_old_report():
    directory = eph_text("full-dir.txt").strip()
    log = eph_text("full-run.log")
    assert log.startswith("rc=2\n")
    assert re.search(r"topsrider_reports: the file system of %s/deploy-[^ ]+\.d is full \(No space left on device\)"
                     % re.escape(directory), log), log
    before, after, again = (eph_json("full-%s.json" % n) for n in ("before", "after", "again"))
    # The failed run's own directory (deploy-<id>.d) is not left behind, empty: only the first run's is there.
    left = eph_text("full-listing.txt").split()
    assert [n for n in left if n.endswith(".d")] == ["deploy-%s.d" % before["id"]], left
    assert after == before
    assert again["status"] == "ok" and again["id"] != before["id"]
    assert rows_of(again)[POWER_LOST]["result"] == "ok"


def test_a_full_bundle_cache_refuses_the_upgrade_before_anything_changes():
    log = eph_text("disk-cache.log")
    assert log.startswith("rc=2\n")
    row = rows_of(eph_json("disk-cache-report.json"))[DISK]
    assert row["result"] == "failed" and row["changed"] is False and row["version"] == "2.5.136", row
    assert re.search(r"not enough disk for TopsRider 2\.5\.140 under /var/cache/topsrider \(the file system of "
                     r"/var/cache/topsrider\): needed \d+ bytes .* free \d+ bytes .*Nothing was sent or changed\.",
                     row["detail"]), row["detail"]
    assert eph_text("capture-disk-cache-%s.txt" % DISK) == eph_text("capture-disk-before-%s.txt" % DISK)


def test_a_full_state_directory_fails_the_upgrade_naming_it_with_nothing_changed_or_half_written():
    """One page free: the node lock is taken, the deploy's snapshot is not written;
    the run fails naming the full file system, the node is as it was, the lock is
    given back, and no half-written or temporary file is left."""
    log = eph_text("disk-lib.log")
    assert log.startswith("rc=2\n")
    row = rows_of(eph_json("disk-lib-report.json"))[DISK]
    assert row["result"] == "failed" and row["changed"] is False and row["version"] == "2.5.136", row
    assert re.search(r"the file system of /var/lib/topsrider(/deploys)? is full \(No space left on device\): "
                     r"/var/lib/topsrider/\S+ was not written and is as it was", row["detail"]), row["detail"]
    assert "One or more items failed" not in row["detail"] and "/root/.ansible/tmp" not in row["detail"]
    assert eph_text("capture-disk-lib-%s.txt" % DISK) == eph_text("capture-disk-before-%s.txt" % DISK)
    left = eph_text("disk-lib-files.txt").split()
    assert "/var/lib/topsrider/run.lock" not in left and "/var/lib/topsrider/open-deploy.json" not in left, left
    assert not [p for p in left if "tmp" in os.path.basename(p)], left


def test_a_full_local_facts_file_system_fails_the_upgrade_after_its_install_and_is_restored():
    """The facts are written last (after the install and the probe): the write fails, the
    run restores what it changed and proves it, and the facts file is the old one, whole."""
    log = eph_text("disk-facts.log")
    assert log.startswith("rc=2\n")
    row = rows_of(eph_json("disk-facts-report.json"))[DISK]
    assert row["result"] == "failed" and row["version"] == "2.5.136" and "restored" in row["detail"], row
    assert re.search(r"the file system of /etc/ansible/facts\.d is full \(No space left on device\): "
                     r"/etc/ansible/facts\.d/topsrider\.fact was not written and is as it was", row["detail"]), row["detail"]
    assert eph_text("capture-disk-facts-%s.txt" % DISK) == eph_text("capture-disk-before-%s.txt" % DISK)
    assert json.loads(eph_text("disk-facts.fact"))["version"] == "2.5.136"


def test_once_freed_a_plain_upgrade_succeeds_without_waiting_for_a_lock():
    log = eph_text("disk-again.log")
    assert log.startswith("rc=0\n")
    row = rows_of(eph_json("disk-again-report.json"))[DISK]
    assert row["result"] == "ok" and row["version"] == "2.5.140" and row["detail"] == "deployed 2.5.140", row
    assert not re.search(r"waiting|locked by|took over|interrupted", log), log[-4000:]
