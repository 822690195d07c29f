"""Issue 14, checked from what the runs said (run-*.log) and from node states
captured without the collection (capture-*.txt: dpkg-query with holds, dpkg
--audit, sha256 of the env/loader/facts files, pip freeze)."""
import json
import os
import re

EPH = os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]
N1, N2 = "topsrider-rt-node1", "topsrider-rt-node2"


def read(name):
    with open(os.path.join(EPH, name)) as f:
        return f.read()


def capture(name, node):
    return read("capture-%s-%s.txt" % (name, node))


def run(name):
    text = read("run-%s.log" % name)
    rc = int(text.split("\n", 1)[0].split("=", 1)[1])
    return rc, text


def row(text, host):
    """The last line of `host` in the fleet report a run printed (plain text, one
    aligned line per host: host, result, version, changed, seconds, detail):
    (result, detail)."""
    import re
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    found = re.findall(r"^[ \t]*%s[ \t]+(ok|failed|unreachable|not started|pending)[ \t]+\S+[ \t]+(?:yes|no)[ \t]+\S+(?:[ \t]+(.*))?$"
                       % re.escape(host), text, re.M)
    assert found, "no report line for %s" % host
    return found[-1][0], found[-1][1].strip()


def without_facts(text):
    return "\n".join(line for line in text.splitlines() if "topsrider.fact" not in line)


def node(host):
    return host.backend.get_hostname()


def test_start_is_2_5_136_held():
    for n in (N1, N2):
        text = capture("s136", n)
        for pkg in ("tops-sdk", "topsfactor", "tops-eccl"):
            assert "%s 2.5.136-1 hold ok installed" % pkg in text
        assert "audit: 0" in text


def test_case1_the_kill_left_dpkg_half_done_and_the_run_said_so():
    rc, text = run("case1-interrupted")
    assert rc == 2
    for n in (N1, N2):
        assert "audit: 0" not in capture("case1-interrupted", n)
    assert "recover_interrupted" in text


def test_case1_rollback_without_recovery_is_refused_naming_the_switch():
    rc, text = run("case1-rollback-refused")
    assert rc == 2
    assert "topsrider_recover_interrupted=true" in text
    result, detail = row(text, N2)
    assert result == "failed" and not re.search(r"back from [0-9.]+ to ", detail)


def test_case1_recover_switch_of_the_role_reaches_every_call_and_the_deploy_is_proven():
    rc, text = run("case1-recover-deploy")
    assert rc == 0, text[-3000:]
    assert "deployed 2.5.140" in text


def test_case1_both_nodes_end_exactly_at_2_5_136():
    for n in (N1, N2):
        assert capture("case1-back", n) == capture("s136", n)
    for name in ("case1-rollback-recover", "case1-rollback-after-recover"):
        rc, text = run(name)
        assert rc == 0 and "to 2.5.136" in text and "proven" in text


def test_case3_second_deploy_fails_naming_the_first_or_waits_and_changes_nothing():
    rc, text = run("case3-b-short")
    assert rc == 2
    assert "locked by deploy run case3a" in text
    rc, text = run("case3-a")
    assert rc == 0 and "deployed 2.5.140" in text
    rc, text = run("case3-b-wait")
    assert rc == 0
    # it waited for A's lock (side_effect released A only after this line) and then changed nothing
    assert "topsrider-rt-node1: waiting for the node lock, held by deploy run case3a" in text
    assert "deployed 2.5.140" not in text
    facts = json.loads(read("facts-case3.json"))
    assert facts["snapshot"] == "case3a" and facts["version"] == "2.5.140"
    assert facts["previous_version"] == "2.5.136"


def test_case4_failed_deploy_is_restored_and_removes_nothing():
    rc, text = run("case4-deploy")
    assert rc == 2 and "restored" in text and "proven" in text
    assert capture("case4-failed", N1) == capture("case3", N1)
    assert "2.5.136" in read("cache-case4.txt").split()


def test_case4_rollback_reaches_2_5_136_exactly():
    rc, text = run("case4-rollback")
    assert rc == 0, text[-3000:]
    assert "back from 2.5.140 to 2.5.136" in text


def test_case5_rollback_that_put_back_only_the_wheel_changed_the_node():
    rc, text = run("case5-rollback")
    assert rc == 0, text[-3000:]
    hosts = dict((h["host"], h) for h in json.loads(read("report-case5-rollback.json"))["hosts"])
    assert hosts[N1]["result"] == "ok" and hosts[N1]["changed"] is True, hosts[N1]
    assert "back from 2.5.136 to 2.5.136 (snapshot " in hosts[N1]["detail"], hosts[N1]
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text)
    put_back = re.search(r"Restore \| The torch_gcu that was there[^\n]*\n(?:(?!TASK \[)[^\n]*\n)*?changed: \[%s\]"
                         % re.escape(N1), plain)
    assert put_back, "the wheel was not put back"


def test_case2_missing_journal_refused_before_anything_changes():
    rc, text = run("case2-rollback")
    assert rc == 2
    assert "/var/lib/topsrider/snapshots/case2.json is missing" in text
    result, detail = row(text, N2)
    assert result == "failed" and not re.search(r"back from [0-9.]+ to ", detail)
    assert capture("case2-refused", N2) == capture("case2-before", N2)
    assert "2.5.140-1 hold ok installed" in capture("case2-before", N2)


def test_case2_remedy_allow_downgrade_through_the_role_variable():
    rc, text = run("case2-downgrade")
    assert rc == 0, text[-3000:]
    assert without_facts(capture("end", N2)) == without_facts(capture("s136", N2))


def test_node1_ends_exactly_where_it_started():
    assert capture("end", N1) == capture("s136", N1)


def test_fast_path_refuses_a_bad_environment_value():
    rc, text = run("small-env")
    assert rc == 2
    assert "ECCL_ALGO" in text
    for n in (N1, N2):
        result, detail = row(text, n)
        assert result == "failed" and detail.startswith("refused") and "already at" not in detail
    for n in (N1, N2):
        assert capture("small", n) == capture("end", n)


def test_halted_rollout_names_the_unreachable_node_and_prints_the_summary():
    rc, text = run("small-halted")
    assert rc in (2, 4)
    report = json.loads(read("reports/deploy-halted.json"))
    rows = {r["host"]: r for r in report["hosts"]}
    assert rows[N1]["result"] == "unreachable"
    assert rows[N2]["result"] == "not started"
    assert report["unreachable_hosts"] == [N1]
    assert "Unreachable: %s." % N1 in text
    assert "1 not started" in text


def wall_s(text):
    """The run's wall time (tasks/play.yml's second line, h:mm:ss.s) in seconds."""
    h, m, sec = text.split("\n", 2)[1].split("=", 1)[1].split(":")
    return int(h) * 3600 + int(m) * 60 + float(sec)


def report_rows(name):
    return dict((h["host"], h) for h in json.loads(read("report-%s.json" % name))["hosts"])


def stopped_controller(name):
    """Issue 31: the upgrade stopped while node2 installs, then the same command again, plain."""
    lock = json.loads(read("lock-%s.json" % name))
    pid = int(read("pid-%s.txt" % name))
    # The lock names the stopped ansible-playbook process and this controller.
    assert lock["pid"] == pid and lock["pid_start"] and lock["boot_id"] and lock["pidns"], lock
    assert lock["kind"] == "deploy" and lock["lease_s"] >= 3600 and lock["renewed"], lock
    rc, text = run("%s-stopped" % name)
    assert rc != 0, text[-3000:]
    # Stopped mid-batch: node1 done, node2's packages at 2.5.140 (its dpkg went on), its facts not yet.
    assert "tops-sdk 2.5.140-1 hold ok installed" in capture("%s-stopped" % name, N1)
    assert capture("%s-stopped" % name, N2) != capture("%s-done" % name, N2)
    rc, text = run("%s-rerun" % name)
    assert rc == 0, text[-3000:]
    assert "waiting for the node lock" not in text
    text = " ".join(text.split())  # a warning may be wrapped at the terminal's width
    said = "took over the lock of deploy run %s (" % lock["id"]
    assert said in text and "its ansible-playbook (pid %d on %s) is gone" % (pid, lock["controller"]) in text
    rows = report_rows("%s-rerun" % name)
    assert rows[N2]["result"] == "ok", rows[N2]
    assert rows[N2]["detail"].startswith(
        "interrupted deploy run %s found (its ansible-playbook (pid %d on %s) is gone), completed: "
        % (lock["id"], pid, lock["controller"])), rows[N2]
    assert rows[N1]["result"] == "ok" and "interrupted" not in rows[N1]["detail"], rows[N1]
    # Both nodes at 2.5.140, alike but for the node's own facts (the snapshot id names each node's run).
    for n in (N1, N2):
        done = capture("%s-done" % name, n)
        assert "tops-sdk 2.5.140-1 hold ok installed" in done and "audit: 0" in done
    assert without_facts(capture("%s-done" % name, N1)) == without_facts(capture("%s-done" % name, N2))


def test_ctrl_c_mid_batch_then_a_plain_rerun_completes_on_every_node():
    stopped_controller("sigint")


def test_kill_9_mid_batch_then_a_plain_rerun_completes_on_every_node():
    stopped_controller("sigkill")


def test_rollback_after_each_stopped_upgrade_is_exact():
    for name in ("sigint-rollback", "sigkill-rollback"):
        rc, text = run(name)
        assert rc == 0, text[-3000:]
    for n in (N1, N2):
        assert capture("sigint-back", n) == capture("end", n)
        assert capture("sigkill-back", n) == capture("end", n)


def test_an_unreadable_lock_file_is_taken_over_without_waiting():
    rc, text = run("sigkill-rollback")
    assert rc == 0, text[-3000:]
    assert "waiting for the node lock" not in text
    assert wall_s(text) < 300, "the rollback took %.0f s (topsrider_lock_timeout is 600 s)" % wall_s(text)
    text = " ".join(text.split())  # a warning may be wrapped at the terminal's width
    assert "took over the lock of an unknown run (the lock file is not readable JSON)" in text
    rows = report_rows("sigkill-rollback")
    assert rows[N1]["result"] == "ok" and rows[N1]["detail"].startswith(
        "an unreadable node lock found (the lock file is not readable JSON and is "), rows[N1]
    assert ", taken over, completed: " in rows[N1]["detail"], rows[N1]
    assert "found" not in rows[N2]["detail"], rows[N2]


def test_no_lock_or_open_deploy_is_left(host):
    assert not host.file("/var/lib/topsrider/run.lock").exists
    assert not host.file("/var/lib/topsrider/open-deploy.json").exists
