# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/bench/bench_report.py (medians and ratios, the table, the goals, the
perf check's verdict) and the parts of scripts/bench/bench.py that need no
fleet (the iptables listing, cgroup CPU files, the run plan, the output files)."""
import json
import os
import stat
import sys

import pytest

from conftest import TOP, load_script

# bench.py imports bench_report from its own directory, as `python scripts/bench/bench.py` does.
sys.path.insert(0, os.path.join(TOP, "scripts", "bench"))
import bench_report as report  # noqa: E402  pylint: disable=wrong-import-position

bench = load_script("scripts/bench/bench.py", "bench")

LISTING = """Chain TOPSRIDER_BENCH (1 references)
    pkts      bytes target     prot opt in     out     source               destination
     412   170412            6    --  *      lo      0.0.0.0/0            0.0.0.0/0            tcp dpts:22401:22464
"""


# ---- iptables -------------------------------------------------------------------
def test_iptables_listing_is_read():
    assert bench.parse_iptables(LISTING) == {"packets": 412, "bytes": 170412}


def test_iptables_rules_are_summed_and_an_empty_chain_is_zero():
    two = LISTING + "       3      180            6    --  *      lo      0.0.0.0/0            0.0.0.0/0\n"
    assert bench.parse_iptables(two) == {"packets": 415, "bytes": 170592}
    assert bench.parse_iptables("\n".join(LISTING.splitlines()[:2])) == {"packets": 0, "bytes": 0}


@pytest.mark.parametrize("text", [
    "",
    "iptables: No chain/target/match by that name.\n",
    LISTING.replace("170412", "170K"),          # -x missing: abbreviated numbers
    "Chain X (0 references)\n target prot opt source destination\n",   # -v missing
])
def test_iptables_output_not_understood_is_none(text):
    assert bench.parse_iptables(text) is None


# ---- medians, ratios ---------------------------------------------------------------
def test_spread():
    assert report.spread([3.0, 1.0, 2.0]) == {"median": 2.0, "min": 1.0, "max": 3.0, "n": 3}
    assert report.spread([4, 1, 2, 3]) == {"median": 2.5, "min": 1, "max": 4, "n": 4}
    assert report.spread([5, 1, 3])["median"] == 3 and isinstance(report.spread([5, 1, 3])["median"], int)
    assert report.spread([None, 2, None]) == {"median": 2, "min": 2, "max": 2, "n": 1}
    assert report.spread([None]) is None and report.spread([]) is None


def run(size, op, wall, rnd=1, recorded=True, **kw):
    record = {"size": size, "op": op, "round": rnd, "recorded": recorded, "wall_s": wall, "cpu_s": wall / 2,
              "node_cpu_s": wall / 4, "cpu_bound_s": report.cpu_bound_s(wall / 2, wall / 4, 2),
              "tasks_max": 10, "tasks_mean": 10.0, "changed": 0, "bundle_bytes_sent": 0, "net_bytes": 1000}
    record.update(kw)
    return record


def test_summarize_medians_and_ratio_to_the_floor_of_the_same_size():
    runs = [run(1, "floor", w, r) for r, w in enumerate((2.0, 1.0, 3.0), 1)]
    runs += [run(1, "rerun", w, r, tasks_max=t) for r, (w, t) in enumerate(((10.0, 20), (14.0, 22), (12.0, 21)), 1)]
    runs += [run(4, "floor", 4.0), run(4, "rerun", 10.0)]
    runs += [run(4, "fresh", 99.0, recorded=False)]        # a prerequisite: not in the results
    res = report.summarize(runs)
    assert list(res) == ["1", "4"]
    assert res["1"]["floor"]["wall_s"]["median"] == 2.0 and res["1"]["floor"]["ratio_to_floor"] == 1.0
    assert res["1"]["rerun"]["wall_s"] == {"median": 12.0, "min": 10.0, "max": 14.0, "n": 3}
    assert res["1"]["rerun"]["ratio_to_floor"] == 6.0
    assert res["1"]["rerun"]["tasks_max"]["max"] == 22 and res["1"]["rerun"]["rounds"] == 3
    assert res["4"]["rerun"]["ratio_to_floor"] == 2.5
    assert "fresh" not in res["4"]


def test_summarize_orders_sizes_numerically_and_ops_as_run():
    res = report.summarize([run(16, "rollback", 1.0), run(16, "floor", 1.0), run(4, "floor", 1.0)])
    assert list(res) == ["4", "16"] and list(res["16"]) == ["floor", "rollback"]


def test_no_floor_no_ratio_and_missing_net_bytes():
    res = report.summarize([run(1, "drift", 5.0, net_bytes=None)])
    assert res["1"]["drift"]["ratio_to_floor"] is None and res["1"]["drift"]["net_bytes"] is None


def test_stats_metrics_from_the_callback_file():
    doc = {"hosts": {"a": {"tasks": 10, "changed": 1, "bundle_bytes_sent": 5, "changed_tasks": ["X"]},
                     "b": {"tasks": 13, "changed": 0, "bundle_bytes_sent": 7, "changed_tasks": []}}}
    m = report.stats_metrics(doc)
    assert m["tasks_max"] == 13 and m["tasks_mean"] == 11.5 and m["changed"] == 1
    assert m["bundle_bytes_sent"] == 12 and m["changed_tasks"] == {"a": ["X"]} and m["hosts"] == 2
    empty = report.stats_metrics(None)
    assert empty["hosts"] == 0 and empty["tasks_max"] is None and empty["bundle_bytes_sent"] is None


def test_plan_brings_prerequisites_unrecorded():
    assert bench.plan(list(report.OPS)) == [(op, True) for op in report.OPS]
    assert bench.plan(["rerun"]) == [("fresh", False), ("rerun", True)]
    assert bench.plan(["drift", "floor"]) == [("floor", True), ("fresh", False), ("upgrade", False),
                                              ("drift", True)]


# ---- the goals -------------------------------------------------------------------------
def full_results(rerun_wall=8.0, rerun_tasks=15, rerun_bytes=0, drift_wall=4.0, fresh1=30.0, fresh16=60.0):
    runs = []
    for size, fresh in ((1, fresh1), (16, fresh16)):
        runs += [run(size, "floor", 1.0), run(size, "fresh", fresh),
                 run(size, "rerun", rerun_wall, tasks_max=rerun_tasks, tasks_mean=float(rerun_tasks),
                     bundle_bytes_sent=rerun_bytes),
                 run(size, "drift", drift_wall)]
    return report.summarize(runs)


def goals_by_id(results):
    return {g["id"]: g for g in report.check_goals(results)}


def test_goals_met():
    goals = goals_by_id(full_results())
    assert all(g["ok"] for g in goals.values()) and all(g["size"] == 16 for g in goals.values())
    assert goals["fresh_scaling"]["value"] == 2.0
    assert goals["fresh_scaling"]["cpu_bound_ratio"] == 0.75 and goals["fresh_scaling"]["baseline_size"] == 1
    assert goals["fresh_scaling"]["goal"] == "fresh deploy of 16 <= 3x fresh deploy of 1"


@pytest.mark.parametrize("kw,missed", [
    ({"rerun_wall": 8.5}, "rerun_vs_floor"),
    ({"rerun_tasks": 21}, "rerun_tasks"),
    ({"rerun_bytes": 1}, "rerun_bundle_bytes"),
    ({"drift_wall": 5.1}, "drift_vs_floor"),
    ({"fresh16": 91.0}, "fresh_scaling"),
])
def test_each_goal_can_be_missed(kw, missed):
    goals = goals_by_id(full_results(**kw))
    assert [gid for gid, g in goals.items() if not g["ok"]] == [missed]


def test_goals_at_the_limit_are_met():
    goals = goals_by_id(full_results(rerun_wall=8.0, rerun_tasks=20, drift_wall=5.0, fresh16=90.0))
    assert all(g["ok"] for g in goals.values())


def test_bytes_in_any_round_miss_the_goal():
    runs = [run(1, "floor", 1.0)] + [run(1, "rerun", 2.0, r, bundle_bytes_sent=b) for r, b in ((1, 0), (2, 0), (3, 9))]
    assert goals_by_id(report.summarize(runs))["rerun_bundle_bytes"]["ok"] is False


def test_no_cpu_bound_without_node_cpu():
    runs = [run(1, "fresh", 30.0), run(16, "fresh", 90.0, node_cpu_s=None, cpu_bound_s=None)]
    goals = goals_by_id(report.summarize(runs))
    assert goals["fresh_scaling"]["value"] == 3.0 and goals["fresh_scaling"]["cpu_bound_ratio"] is None
    assert "Fresh-deploy scaling" not in report.render_table(dict(DOC, results=report.summarize(runs),
                                                                  goals=list(goals.values())))


def test_goals_not_measured():
    goals = goals_by_id(report.summarize([run(1, "floor", 1.0)]))
    assert all(g["ok"] is None for g in goals.values())
    assert "needs two sizes" in goals["fresh_scaling"]["goal"]
    assert report.check_goals({}) == []
    assert "[n/a ]" in report.format_goals(list(goals.values()))


# ---- the table --------------------------------------------------------------------
DOC = {
    "machine": {"date": "2026-11-22 06:00 UTC", "hostname": "vm", "nproc": 2, "cpu_model": "AMD EPYC",
                "memory_gib": 23.5, "kernel": "6.1", "python": "3.11.7", "ansible_core": "2.19.14",
                "git_commit": "0123456789abcdef", "git_dirty": True},
    "params": {"rounds": 3, "strategy": "linear"},
}


def test_render_table():
    doc = dict(DOC, results=full_results(), goals=report.check_goals(full_results()))
    text = report.render_table(doc)
    lines = text.splitlines()
    assert "2 cores (AMD EPYC)" in lines[0] and "ansible-core 2.19.14" in lines[0]
    assert "commit 0123456789ab (with uncommitted changes)" in lines[0] and "3 round(s)" in lines[0]
    rows = [line for line in lines if line.startswith("| 16 |")]
    assert [r.split(" | ")[1] for r in rows] == ["floor (1 ping, no facts)", "fresh deploy 2.5.136",
                                                 "no-change re-run", "drift check"]
    rerun = [r for r in rows if "no-change" in r][0]
    assert rerun == "| 16 | no-change re-run | 8.0 (8.0-8.0) | 8.0 | 15 | 0 | 0 B | 1000 B | 4.0 | 2.0 | 3.0 |"
    assert "| fresh deploy of 16 <= 3x fresh deploy of 1 | 2.00 | yes |" in lines
    # fresh16 60 s: controller 30 + nodes 15 CPU s on 2 cores = 22.5 s, 0.75x the 1-node wall of 30 s
    assert any(line.startswith("Fresh-deploy scaling on 2 cores: the 16-node fresh deploy used CPU time for 22.5 s")
               and "0.75x the 1-node" in line for line in lines)
    assert text.endswith("\n")


def test_render_table_marks_missing_numbers_and_iptables_note():
    doc = dict(DOC, results=report.summarize([run(1, "floor", 1.0, net_bytes=None, tasks_mean=1.0, tasks_max=1)]),
               goals=[], iptables_note="not measured (iptables accounting did not work here: x)")
    text = report.render_table(doc)
    assert "Bytes to nodes: not measured" in text
    assert "| 1 | floor (1 ping, no facts) | 1.0 (1.0-1.0) | 1.0 | 1 | 0 | 0 B | n/a | 0.5 | 0.2 | 0.4 |" in text
    assert "goal (issue 9)" not in text


def test_tasks_mean_shown_when_nodes_differ():
    res = report.summarize([run(4, "fresh", 10.0, tasks_max=90, tasks_mean=87.5)])
    text = report.render_table(dict(DOC, results=res, goals=[]))
    assert "| 90 (mean 87.5) |" in text


@pytest.mark.parametrize("value,text", [(None, "n/a"), (0, "0 B"), (1023, "1023 B"), (1536, "1.5 KiB"),
                                        (5 * 1024 * 1024, "5.0 MiB"), (3 * 1024 ** 4, "3072.0 GiB")])
def test_human_bytes(value, text):
    assert report.human_bytes(value) == text


def test_replace_section_keeps_the_prose_around_it():
    text = "# Performance\n\nprose before\n\n<!-- bench:begin -->\nold table\n<!-- bench:end -->\n\nprose after\n"
    out = report.replace_section(text, "<!-- bench:begin -->", "<!-- bench:end -->", "new table\n")
    assert out == "# Performance\n\nprose before\n\n<!-- bench:begin -->\nnew table\n<!-- bench:end -->\n\nprose after\n"
    assert report.replace_section(out, "<!-- bench:begin -->", "<!-- bench:end -->", "new table") == out


def test_replace_section_appends_when_the_markers_are_missing():
    out = report.replace_section("# Performance\nprose", "<!-- bench-mitogen:begin -->", "<!-- bench-mitogen:end -->",
                                 "mitogen table\n")
    assert out == ("# Performance\nprose\n\n<!-- bench-mitogen:begin -->\nmitogen table\n"
                   "<!-- bench-mitogen:end -->\n")
    both = report.replace_section(out, "<!-- bench:begin -->", "<!-- bench:end -->", "t\n")
    assert both.count("mitogen table") == 1 and both.endswith("<!-- bench:begin -->\nt\n<!-- bench:end -->\n")


def test_write_outputs_creates_the_markdown_with_a_header(tmp_path):
    doc = dict(DOC, results=full_results(), goals=[])
    md = tmp_path / "performance.md"
    bench.write_outputs(doc, str(tmp_path / "p.json"), str(md), "linear")
    text = md.read_text()
    assert text.startswith("# Performance\n") and text.count("<!-- bench:begin -->") == 1
    md.write_text(text.replace("# Performance\n", "# Performance\n\nThe lead's prose.\n"))
    bench.write_outputs(doc, str(tmp_path / "p.json"), str(md), "linear")
    assert "The lead's prose." in md.read_text() and md.read_text().count("| 16 | floor") == 1
    assert json.loads((tmp_path / "p.json").read_text()) == json.loads(json.dumps(doc))
    assert (tmp_path / "p.json").read_text().endswith("}\n")
    assert sorted(os.listdir(str(tmp_path))) == ["p.json", "performance.md"]
    assert [stat.S_IMODE(os.stat(str(tmp_path / n)).st_mode) for n in ("p.json", "performance.md")] == [0o644] * 2


def test_the_runner_uses_the_report_code_and_the_one_atomic_writer():
    assert bench.summarize is report.summarize and bench.render_table is report.render_table
    assert bench.load_atomic().__file__ == os.path.join(TOP, "plugins", "module_utils", "_atomic.py")


def test_result_lines():
    lines = report.result_lines(dict(DOC, results=full_results()))
    assert len(lines) == 8 and lines[0].startswith("   1 nodes  floor (1 ping, no facts)")
    assert lines[-1].startswith("  16 nodes  drift check ")
    assert "wall     4.0 s  x4.0   tasks/host 10   changed 0    bundle 0 B" in lines[-1]
    assert report.result_lines({}) == []


# ---- the perf check's verdict ---------------------------------------------------
FRESH = {"hosts": 1, "changed": 40, "bundle_bytes_sent": 123456, "changed_tasks": {"t20-node-1": ["a"]}}
CLEAN = {"hosts": 1, "changed": 0, "bundle_bytes_sent": 0, "changed_tasks": {}}
BUNDLES = "/srv/bench/bundles"


FULL = report.OP_TITLES["rerun_full"]


def reruns(fast=None, full=None):
    return [(report.OP_TITLES["rerun"], fast or CLEAN), (FULL, full or CLEAN)]


def test_perf_verdict_passes_a_real_no_change():
    assert report.perf_verdict(FRESH, reruns(), BUNDLES) == []


def test_perf_verdict_names_the_changed_task_and_host():
    rerun = dict(CLEAN, changed=1, changed_tasks={"t20-node-1": ["Write the ECCL environment"]})
    assert report.perf_verdict(FRESH, reruns(fast=rerun), BUNDLES) == [
        "no-change re-run: 'Write the ECCL environment' reported changed on t20-node-1"]
    assert report.perf_verdict(FRESH, reruns(full=rerun), BUNDLES) == [
        FULL + ": 'Write the ECCL environment' reported changed on t20-node-1"]


def test_perf_verdict_resent_bytes():
    problems = report.perf_verdict(FRESH, reruns(fast=dict(CLEAN, bundle_bytes_sent=4096)), BUNDLES)
    assert problems == ["no-change re-run re-sent 4096 bundle bytes"]
    problems = report.perf_verdict(FRESH, reruns(full=dict(CLEAN, bundle_bytes_sent=10)), BUNDLES)
    assert problems == [FULL + " re-sent 10 bundle bytes"]


def test_perf_verdict_a_measurement_that_cannot_see_a_transfer_fails():
    problems = report.perf_verdict(dict(FRESH, bundle_bytes_sent=0), reruns(), BUNDLES)
    assert len(problems) == 1 and "fresh deploy sent 0 bundle bytes" in problems[0]
    assert "from under /srv/bench/bundles?" in problems[0]
    problems = report.perf_verdict({"hosts": 0}, reruns({"hosts": 0}, {"hosts": 0}), BUNDLES)
    assert len(problems) == 3 and all("callback not loaded" in p for p in problems)


# ---- CPU the nodes used -------------------------------------------------------------
def test_cgroup_cpu_files_are_read():
    assert bench.parse_cgroup_cpu("cpuacct.usage", "2500000000\n") == 2.5
    assert bench.parse_cgroup_cpu("cpu.stat", "usage_usec 1500000\nuser_usec 1000000\n") == 1.5
    assert bench.parse_cgroup_cpu("cpu.stat", "user_usec 1\n") is None
    assert bench.parse_cgroup_cpu("cpuacct.usage", "max\n") is None
    assert bench.parse_cgroup_cpu("memory.current", "1\n") is None


@pytest.mark.parametrize("rel,name,text", [
    ("cpuacct/docker/{cid}", "cpuacct.usage", "3000000000"),                 # cgroup v1, cgroupfs driver
    ("cpuacct/system.slice/docker-{cid}.scope", "cpuacct.usage", "3000000000"),   # v1, systemd driver
    ("system.slice/docker-{cid}.scope", "cpu.stat", "usage_usec 3000000\n"),  # v2, systemd driver
    ("docker/{cid}", "cpu.stat", "usage_usec 3000000\n"),                    # v2, cgroupfs driver
])
def test_container_cpu_from_each_cgroup_layout(tmp_path, rel, name, text):
    cid = "ab" * 32
    folder = tmp_path / rel.format(cid=cid)
    folder.mkdir(parents=True)
    (folder / name).write_text(text)
    assert bench.container_cpu_s(cid, str(tmp_path)) == 3.0
    assert bench.container_cpu_s("cd" * 32, str(tmp_path)) is None


def test_cpu_bound():
    assert report.cpu_bound_s(148.0, 52.0, 2) == 100.0
    assert report.cpu_bound_s(148.0, None, 2) is None and report.cpu_bound_s(1.0, 1.0, 0) is None


# ---- make bench-large (issue 16): the bundle at real size ---------------------------
GIB = 1024 ** 3
MIB = 1024 ** 2


def large_doc(base_wall=100.0, base_net=16 * GIB + 16 * 10 * MIB, fresh_wall=80.0, fresh_net=GIB + 16 * 10 * MIB,
              size=16, nproc=2):
    runs = [run(size, "copy_baseline", base_wall, cpu_s=20.0, net_bytes=base_net),
            run(size, "copy_baseline_cleanup", 3.0, recorded=False),
            run(size, "fresh", fresh_wall, cpu_s=160.0, net_bytes=fresh_net)]
    doc = {"machine": {"nproc": nproc, "date": "2026-11-23 21:00 UTC"},
           "params": {"rounds": 1, "bundle_mib": 1024},
           "bundle": {"run": ".cache/bundles-large/1024M/TopsRider_t2x_2.5.136_deb_amd64.run", "run_bytes": GIB,
                      "payload_mib": 1024},
           "runs": runs}
    doc["results"] = report.summarize(runs)
    return doc


def test_copy_baseline_is_not_a_default_operation():
    assert "copy_baseline" in report.OPS and "copy_baseline" not in report.DEFAULT_OPS
    assert bench.parse_args([]).ops == list(report.DEFAULT_OPS)
    assert bench.plan(["fresh", "copy_baseline"]) == [("copy_baseline", True), ("fresh", True)]


def test_bundle_mib_writes_its_own_json_and_is_refused_where_it_does_not_apply():
    args = bench.parse_args(["--bundle-mib", "8", "--sizes", "2", "--ops", "fresh", "copy_baseline"])
    assert args.bundle_mib == 8 and args.json.endswith(os.path.join("docs", "performance-large.json"))
    assert bench.parse_args([]).json.endswith(os.path.join("docs", "performance.json"))
    for argv in (["--bundle-mib", "0"], ["--bundle-mib", "8", "--strategy", "mitogen"],
                 ["--bundle-mib", "8", "--perf-check"]):
        with pytest.raises(SystemExit):
            bench.parse_args(argv)


def test_playbook_args_deploy_the_large_run_and_copy_it_for_the_baseline():
    large = {"dir": "/x/1024M", "run": "/x/1024M/TopsRider_t2x_2.5.136_deb_amd64.run"}
    fresh = bench.playbook_args("fresh", large)
    assert "topsrider_bundle=/x/1024M/TopsRider_t2x_2.5.136_deb_amd64.run" in fresh
    assert "topsrider_bundle_cache=/x/1024M/runs" in fresh
    assert not any(a.startswith("topsrider_bundle_dir=") for a in fresh)
    assert "bench_baseline_run=/x/1024M/TopsRider_t2x_2.5.136_deb_amd64.run" in bench.playbook_args(
        "copy_baseline", large)
    assert "bench_baseline_state=absent" in bench.playbook_args("copy_baseline_cleanup", large)
    small = bench.playbook_args("fresh")
    assert any(a.startswith("topsrider_bundle_dir=") and a.endswith("2.5.136") for a in small)
    # 2.5.140 stays the small sample in both
    assert bench.playbook_args("upgrade", large) == bench.playbook_args("upgrade")


def test_egress_ratio():
    assert report.egress_ratio(3 * GIB, GIB) == 3.0
    assert report.egress_ratio(None, GIB) is None and report.egress_ratio(5, 0) is None


def test_project_the_runbook_copy_scales_with_the_nodes():
    p = report.project(16, 100.0, 20.0, 16 * GIB, GIB, False, 16 * GIB / 100.0, 2)
    assert p[64]["net_bytes"] == 64 * GIB and p[64]["x_bundle"] == 64.0
    assert p[1000]["x_bundle"] == 1000.0 and p[1000]["cpu_s"] == 1250.0
    # egress at the measured rate: 1000 copies take 1000/16 x the measured 100 s
    assert p[1000]["wall_lb_s"] == 6250.0


def test_project_peer_staging_sends_the_seed_once_plus_the_per_node_traffic():
    rate = 16 * GIB / 100.0
    p = report.project(16, 80.0, 160.0, GIB + 16 * 10 * MIB, GIB, True, rate, 2)
    assert p[64]["net_bytes"] == GIB + 64 * 10 * MIB
    assert p[1000]["x_bundle"] == round((GIB + 1000 * 10 * MIB) / GIB, 2)
    # the controller's CPU (10 s a node over 2 cores) bounds it, not its egress
    assert p[1000]["cpu_s"] == 10000.0 and p[1000]["wall_lb_s"] == 5000.0
    # a staging that still copies to every node projects like the baseline
    q = report.project(16, 80.0, 160.0, 16 * GIB, GIB, True, rate, 2)
    assert q[1000]["net_bytes"] == GIB + 1000 * 15 * GIB // 16


def test_project_without_numbers():
    p = report.project(16, None, None, None, GIB, True, None, 2)
    assert p[64] == {"net_bytes": None, "x_bundle": None, "cpu_s": None, "wall_lb_s": None}


def test_large_comparison_and_goals_met():
    doc = large_doc()
    row = report.large_comparison(doc)["16"]
    assert row["copy_baseline"]["x_bundle"] == 16.16 and row["fresh"]["x_bundle"] == 1.16
    assert row["faster"] is True and row["baseline_rate"] == int((16 * GIB + 160 * MIB) / 100.0)
    goals = {g["id"]: g for g in report.check_large_goals(doc)}
    assert goals["fresh_egress"]["ok"] and goals["fresh_egress"]["value"] == 1.16
    assert goals["fresh_vs_baseline"]["ok"] and goals["fresh_vs_baseline"]["limit"] == 100.0


@pytest.mark.parametrize("kw,missed", [
    ({"fresh_net": 2 * GIB + 1}, "fresh_egress"),
    ({"fresh_wall": 100.0}, "fresh_vs_baseline"),
])
def test_large_goals_can_be_missed(kw, missed):
    goals = report.check_large_goals(large_doc(**kw))
    assert [g["id"] for g in goals if not g["ok"]] == [missed]


def test_large_goals_need_both_operations():
    doc = large_doc()
    doc["results"] = report.summarize([r for r in doc["runs"] if r["op"] != "copy_baseline"])
    assert report.large_comparison(doc) == {} and report.check_large_goals(doc) == []
    assert "No fleet size was measured with both" in report.render_large(doc)


def test_render_large_side_by_side_and_scaling_note():
    text = report.render_large(large_doc())
    assert "1.0 GiB (1073741824 bytes; 1024 MiB of incompressible payload" in text
    assert "| 16 | baseline: copy the .run to every node | 100.0 | 16.2 GiB | 16.16x | 20.0 |" in text
    assert "| 16 | fresh deploy 2.5.136 | 80.0 | 1.2 GiB | 1.16x | 160.0 |" in text
    assert "| 16-node fresh deploy: controller egress <= 2x the bundle | 1.16 | 2 | yes |" in text
    assert "| 1000 | baseline: copy the .run to every node | 1009.8 GiB | 1009.8x | 1250.0 | 1.7 h |" in text
    assert "| 1000 | fresh deploy 2.5.136 | 10.8 GiB | 10.8x | 10000.0 | 1.4 h |" in text
    assert "goal (issue 9)" not in text and "not the controller's egress" in text


def test_large_section_leaves_the_small_table_alone(tmp_path):
    md = tmp_path / "performance.md"
    small = "# P\n\n<!-- bench:begin -->\nsmall table\n<!-- bench:end -->\n\nprose\n"
    md.write_text(small)
    doc = large_doc()
    bench.write_outputs(doc, str(tmp_path / "large.json"), str(md), "large")
    text = md.read_text()
    assert text.startswith(small) and "<!-- bench-large:begin -->" in text and "16.16x" in text
    bench.write_outputs(large_doc(fresh_net=GIB), str(tmp_path / "large.json"), str(md), "large")
    again = md.read_text()
    assert again.startswith(small) and again.count("<!-- bench-large:begin -->") == 1 and "| 1.00x |" in again


def test_result_lines_show_egress_over_the_bundle_for_the_large_bench():
    lines = report.result_lines(large_doc())
    assert lines[0].endswith("egress/bundle 16.16") and lines[1].endswith("egress/bundle 1.16")
    assert "egress/bundle" not in "".join(report.result_lines({"results": large_doc()["results"]}))
