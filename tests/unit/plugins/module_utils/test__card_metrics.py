# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""_card_metrics: readings of either vendor -> snapshot -> the Prometheus text
format, read back with prometheus_client's own parser (the format a real
Prometheus reads); absent values are absent series, hostile label values are
escaped, and the metric names are exactly the contract's (issue 33)."""
import os
import subprocess
import sys

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import FIXTURES, TOP

from ansible_collections.gcu.topsrider.plugins.module_utils import _card_metrics as M
from ansible_collections.gcu.topsrider.plugins.module_utils import _efsmi, _nvsmi
from ansible_collections.gcu.topsrider.plugins.module_utils._vendors import vendor_spec

ROOTFS = os.path.join(TOP, "sim", "node", "rootfs")
SIMCTL = os.path.join(ROOTFS, "usr", "local", "bin", "simctl")
EFSMI = os.path.join(ROOTFS, "usr", "sbin", "efsmi")
NVIDIA_SMI = os.path.join(ROOTFS, "usr", "local", "lib", "topsrider-sim", "nvidia-smi")

# The names of /work/i33-contract.md ("Metric names"), with their types and labels.
CONTRACT = {
    "topsrider_card_info": ("gauge", ("card", "bus_id", "vendor", "model", "serial", "uuid", "firmware")),
    "topsrider_card_healthy": ("gauge", ("card", "bus_id")),
    "topsrider_card_temperature_celsius": ("gauge", ("card", "bus_id")),
    "topsrider_card_power_watts": ("gauge", ("card", "bus_id")),
    "topsrider_card_power_limit_watts": ("gauge", ("card", "bus_id")),
    "topsrider_card_utilization_ratio": ("gauge", ("card", "bus_id")),
    "topsrider_card_memory_used_bytes": ("gauge", ("card", "bus_id")),
    "topsrider_card_memory_total_bytes": ("gauge", ("card", "bus_id")),
    "topsrider_card_ecc_corrected_errors_total": ("counter", ("card", "bus_id")),
    "topsrider_card_ecc_uncorrected_errors_total": ("counter", ("card", "bus_id")),
    "topsrider_card_pcie_link_width": ("gauge", ("card", "bus_id")),
    "topsrider_card_pcie_link_width_max": ("gauge", ("card", "bus_id")),
    "topsrider_card_pcie_link_speed_gts": ("gauge", ("card", "bus_id")),
    "topsrider_card_pcie_link_speed_max_gts": ("gauge", ("card", "bus_id")),
    "topsrider_card_holder_info": ("gauge", ("card", "bus_id", "slurm_job", "user")),
    "topsrider_card_processes": ("gauge", ("card", "bus_id")),
    "topsrider_card_reading_age_seconds": ("gauge", ("card", "bus_id")),
    "topsrider_card_missing_info": ("gauge", ("card", "bus_id")),
    "topsrider_node_driver_info": ("gauge", ("vendor", "driver_version", "tool", "tool_version")),
    "topsrider_exporter_reads_total": ("counter", ()),
    "topsrider_exporter_read_errors_total": ("counter", ("reason",)),
    "topsrider_exporter_read_duration_seconds": ("gauge", ()),
    "topsrider_exporter_last_success_timestamp_seconds": ("gauge", ()),
    "topsrider_exporter_interval_seconds": ("gauge", ()),
}
STATS = {"reads": 3, "errors": {"timeout": 1}, "duration": 0.25, "last_success": 1700000000.5, "interval": 15.0}
EFSMI_SPEC = vendor_spec("enflame")
NVIDIA_SPEC = vendor_spec("nvidia")


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts), "rb") as f:
        return f.read().decode("utf-8")


def sim(tmp_path, tool, *args):
    env = dict(os.environ, SIM_STATE=str(tmp_path / "state.json"), SIM_PCI_ROOT=str(tmp_path / "pci"),
               SIM_DEV_ROOT=str(tmp_path / "dev"), SIM_SYSMODULE_ROOT=str(tmp_path / "mod"))
    for d in ("pci", "dev", "mod"):
        (tmp_path / d).mkdir(exist_ok=True)
    proc = subprocess.run([sys.executable, tool] + list(args), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def families(text):
    """{family name: family} as prometheus_client's parser reads the text (it
    names a counter's family without _total)."""
    return dict((f.name, f) for f in text_string_to_metric_families(text))


def samples(text, name):
    """{(card, ...): value} of one metric's samples, by its labels."""
    fams = families(text)
    fam = fams[name[:-len("_total")] if name.endswith("_total") and name[:-6] in fams else name]
    return dict((tuple(sorted(s.labels.items())), s.value) for s in fam.samples if s.name == name)


def by_card(text, name):
    return dict((dict(k)["card"], v) for k, v in samples(text, name).items())


def render_reading(spec, reading, pci_root, jobs=None, now=1700000010.0):
    links = dict((c["bus_id"], M.read_link(str(pci_root), c["bus_id"])) for c in reading["cards"])
    snap = M.snapshot(spec, reading, links, jobs)
    return M.render(snap["node"], [(e, now - 2.5) for e in snap["cards"]], STATS, now)


def test_metrics_table_is_the_contract():
    assert dict((m["name"], (m["type"], m["labels"])) for m in M.METRICS) == CONTRACT
    assert all(m["help"] and "\n" not in m["help"] for m in M.METRICS)
    assert M.DEFAULT_PORT == 9494 and M.CONTENT_TYPE.startswith("text/plain; version=0.0.4")


def test_16_enflame_cards_from_the_simulated_efsmi(tmp_path):
    sim(tmp_path, SIMCTL, "reset", "--cards", "16")
    sim(tmp_path, SIMCTL, "busy", "2,5", "--util", "97.5")
    sim(tmp_path, SIMCTL, "card", "5", "temperature_c=91", "ecc_uncorrected=3", "link_width=8", "health=false")
    reading = M.parse_reading(EFSMI_SPEC, sim(tmp_path, EFSMI, "-q"), sim(tmp_path, EFSMI))
    jobs = [{"job_id": "17", "user": "alice", "cards": [2, 5]}, {"job_id": "18", "user": "bob", "cards": [5]}]
    text = render_reading(EFSMI_SPEC, reading, tmp_path / "pci", jobs)
    fams = families(text)
    # every family but the corrected ECC count, which efsmi does not report, and the
    # process count: efsmi lists no processes per card; and no card is missing
    assert set(fams) == set(n[:-6] if CONTRACT[n][0] == "counter" else n for n in CONTRACT) - {
        "topsrider_card_ecc_corrected_errors", "topsrider_card_processes", "topsrider_card_missing_info"}
    cards = [str(i) for i in range(16)]
    for name in CONTRACT:
        if name.startswith("topsrider_card_") and name not in ("topsrider_card_ecc_corrected_errors_total",
                                                               "topsrider_card_processes",
                                                               "topsrider_card_missing_info"):
            assert sorted(by_card(text, name), key=int) == cards, name
    assert "topsrider_card_ecc_corrected_errors_total" not in text  # efsmi has no such count
    assert by_card(text, "topsrider_card_temperature_celsius")["5"] == 91
    assert by_card(text, "topsrider_card_utilization_ratio")["2"] == 0.975
    assert by_card(text, "topsrider_card_healthy") == dict((c, 0 if c == "5" else 1) for c in cards)
    assert by_card(text, "topsrider_card_ecc_uncorrected_errors_total")["5"] == 3
    assert by_card(text, "topsrider_card_memory_used_bytes")["2"] == 20480 * 1024 * 1024
    assert by_card(text, "topsrider_card_memory_total_bytes")["0"] == 32768 * 1024 * 1024
    assert (by_card(text, "topsrider_card_pcie_link_width")["5"],
            by_card(text, "topsrider_card_pcie_link_width_max")["5"]) == (8, 16)
    assert by_card(text, "topsrider_card_pcie_link_speed_gts")["0"] == 16.0
    assert by_card(text, "topsrider_card_reading_age_seconds")["0"] == 2.5
    info = dict((dict(k)["card"], dict(k)) for k in samples(text, "topsrider_card_info"))
    assert info["15"] == {"card": "15", "bus_id": "0000:c5:00.0", "vendor": "enflame", "model": "T20",
                          "serial": "W28001150115", "uuid": "W28001150115", "firmware": "10.19.3"}
    holder = dict((dict(k)["card"], dict(k)) for k in samples(text, "topsrider_card_holder_info"))
    assert (holder["5"]["slurm_job"], holder["5"]["user"]) == ("17,18", "alice,bob")
    assert (holder["2"]["slurm_job"], holder["2"]["user"]) == ("17", "alice")
    assert (holder["0"]["slurm_job"], holder["0"]["user"]) == ("", "")
    assert "pids" not in text
    (drv,) = samples(text, "topsrider_node_driver_info")
    assert dict(drv) == {"vendor": "enflame", "driver_version": "2.4.20230829", "tool": "efsmi",
                         "tool_version": "1.20.0"}
    errors = dict((dict(k)["reason"], v) for k, v in samples(text, "topsrider_exporter_read_errors_total").items())
    assert errors == {"timeout": 1, "exit": 0, "parse": 0, "missing_tool": 0, "jobs": 0, "too_large": 0,
                      "out_of_range": 0, "internal": 0}
    assert samples(text, "topsrider_exporter_reads_total") == {(): 3}
    assert samples(text, "topsrider_exporter_interval_seconds") == {(): 15.0}


def test_16_nvidia_gpus_from_the_stand_in(tmp_path):
    sim(tmp_path, SIMCTL, "reset", "--cards", "16", "--model", "H100")
    sim(tmp_path, SIMCTL, "card", "3", "ecc_corrected=12", "ecc_uncorrected=1", "link_speed_gts=16")
    cmds = M.tool_commands(NVIDIA_SPEC, NVIDIA_SMI)
    reading = M.parse_reading(NVIDIA_SPEC, sim(tmp_path, *cmds["query"]), apps=sim(tmp_path, *cmds["apps"]))
    text = render_reading(NVIDIA_SPEC, reading, tmp_path / "pci", jobs=[])
    assert sorted(by_card(text, "topsrider_card_ecc_corrected_errors_total"), key=int) == [str(i) for i in range(16)]
    assert by_card(text, "topsrider_card_ecc_corrected_errors_total")["3"] == 12
    assert by_card(text, "topsrider_card_ecc_uncorrected_errors_total")["3"] == 1
    assert by_card(text, "topsrider_card_healthy")["3"] == 0  # nvidia: unhealthy on uncorrected errors
    assert (by_card(text, "topsrider_card_pcie_link_speed_gts")["3"],
            by_card(text, "topsrider_card_pcie_link_speed_max_gts")["3"]) == (16.0, 32.0)
    assert by_card(text, "topsrider_card_power_limit_watts")["0"] == 700.0
    (drv,) = samples(text, "topsrider_node_driver_info")
    assert dict(drv)["tool"] == "nvidia-smi" and dict(drv)["driver_version"] == "580.159.04"


def test_an_hgx_capture_with_its_processes(tmp_path):
    """gcu_devices' query of 8 GPUs and its compute apps: the tool's process list makes the process count,
    the job files the job label."""
    parsed = _nvsmi.parse_query_gpu(fixture("nvidia-smi", "synth-hgx8-query-one-busy.csv"))
    apps = _nvsmi.parse_compute_apps(fixture("nvidia-smi", "synth-hgx8-apps-one-busy.csv"))
    cards, unmatched = _nvsmi.attach_processes(parsed["cards"], apps)
    assert unmatched == []
    listed = [(a["pid"], c["index"], a["process_name"]) for c in cards for a in c["processes"]]
    reading = {"cards": cards, "driver_version": parsed["driver_version"], "tool_version": None, "listed": listed}
    text = render_reading(NVIDIA_SPEC, reading, tmp_path, [{"job_id": "5_3", "user": "carol", "cards": [0]}])
    holder = dict((dict(k)["card"], dict(k)) for k in samples(text, "topsrider_card_holder_info"))
    assert (holder["0"]["slurm_job"], holder["0"]["user"]) == ("5_3", "carol")
    assert [holder[str(i)]["slurm_job"] for i in range(1, 8)] == [""] * 7
    assert by_card(text, "topsrider_card_processes") == dict((str(i), 1 if i == 0 else 0) for i in range(8))
    assert by_card(text, "topsrider_card_utilization_ratio")["0"] == 1.0
    # gcu_devices' query has no corrected count, and there is no PCI view here: absent, not 0
    series = [line for line in text.splitlines() if not line.startswith("#")]
    assert [line for line in series if "ecc_corrected" in line or "pcie" in line] == []


def test_absent_values_are_absent_series(tmp_path):
    """A value the tool cannot read ([Not Supported], N/A) or a PCI attribute
    that is not there has no series at all; what is there still is."""
    parsed = _nvsmi.parse_query_gpu(fixture("nvidia-smi", "synth-rtx-query-not-supported.csv"), _nvsmi.QUERY_GPU_FIELDS)
    reading = {"cards": parsed["cards"], "driver_version": parsed["driver_version"], "tool_version": None,
               "listed": None}
    (tmp_path / "0000:01:00.0").mkdir()
    (tmp_path / "0000:01:00.0" / "current_link_width").write_text("8\n")
    (tmp_path / "0000:01:00.0" / "max_link_speed").write_text("Unknown\n")
    text = render_reading(NVIDIA_SPEC, reading, tmp_path, jobs=None)
    present = set(s.name for f in text_string_to_metric_families(text) for s in f.samples)
    for name in ("topsrider_card_temperature_celsius", "topsrider_card_power_watts",
                 "topsrider_card_power_limit_watts", "topsrider_card_healthy",
                 "topsrider_card_ecc_uncorrected_errors_total", "topsrider_card_ecc_corrected_errors_total",
                 "topsrider_card_pcie_link_width_max", "topsrider_card_pcie_link_speed_gts",
                 "topsrider_card_pcie_link_speed_max_gts",
                 # job files unknown (their directory unreadable), processes not asked: no series either
                 "topsrider_card_holder_info", "topsrider_card_processes"):
        assert name not in present, name
    assert by_card(text, "topsrider_card_pcie_link_width") == {"0": 8}
    assert by_card(text, "topsrider_card_memory_total_bytes") == {"0": 24564 * 1024 * 1024}
    assert by_card(text, "topsrider_card_utilization_ratio") == {"0": 0.03}
    # Before the first good reading: the exporter's own series only.
    text = M.render(None, [], {"reads": 1, "errors": {"missing_tool": 1}, "duration": None, "last_success": None,
                               "interval": 15.0}, 0)
    assert sorted(families(text)) == ["topsrider_exporter_interval_seconds", "topsrider_exporter_read_errors",
                                      "topsrider_exporter_reads"]


def test_hostile_label_values_are_escaped():
    hostile = 'a\\b"c\nd} x{y="z"'
    card = {"index": 0, "bus_id": "0000:01:00.0", "model": hostile, "serial": "\\", "uuid": '"', "firmware": "\n",
            "temperature_c": 40, "health": True}
    entry = M.card_entry(card, "enflame", jobs=[{"job_id": 'job"1\\', "user": hostile, "cards": [0]}])
    node = {"vendor": "enflame", "driver_version": hostile, "tool": "efsmi", "tool_version": ""}
    text = M.render(node, [(entry, 100.0)], STATS, 101.0)
    (info,) = samples(text, "topsrider_card_info")
    assert dict(info)["model"] == hostile and dict(info)["serial"] == "\\" and dict(info)["uuid"] == '"'
    assert dict(info)["firmware"] == "\n"
    (holder,) = samples(text, "topsrider_card_holder_info")
    assert (dict(holder)["user"], dict(holder)["slurm_job"]) == (hostile, 'job"1\\')
    (drv,) = samples(text, "topsrider_node_driver_info")
    assert dict(drv)["driver_version"] == hostile
    # every sample is one line: no raw newline inside a label value
    assert len([line for line in text.splitlines() if line.startswith("topsrider_card_info")]) == 1
    assert M.escape_label('a\\"\n') == 'a\\\\\\"\\n'


@pytest.mark.parametrize("text, width, speed", [
    ("16\n", 16, None), ("8", 8, None), ("", None, None), ("x16", None, None),
    ("16.0 GT/s PCIe\n", None, 16.0), ("2.5 GT/s PCIe", None, 2.5), ("8 GT/s", None, 8.0),
    ("Unknown", None, None), ("Unknown speed", None, None),
])
def test_link_attributes_as_the_kernel_prints_them(text, width, speed):
    assert M.parse_link_width(text) == width
    assert M.parse_link_speed(text) == speed


def test_find_tool(tmp_path, monkeypatch):
    tool = tmp_path / "efsmi"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    spec, path = M.find_tool(path_env=str(tmp_path))
    assert (spec["name"], path) == ("enflame", str(tool))
    assert M.find_tool("enflame", str(tool))[0]["name"] == "enflame"
    assert M.find_tool(None, str(tool))[0]["name"] == "enflame"  # named by its file name
    with pytest.raises(ValueError, match="name the vendor"):
        M.find_tool(None, str(tmp_path / "mytool"))
    with pytest.raises(M.ToolMissing, match="not an executable"):
        M.find_tool("nvidia", str(tmp_path / "nvidia-smi"))
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setattr(M, "vendor_spec", lambda name: dict(vendor_spec(name), tool_dirs=[str(empty)]))
    with pytest.raises(M.ToolMissing, match="nvidia-smi not found in PATH or %s" % empty):
        M.find_tool("nvidia", path_env=str(empty))


def test_parse_reading_errors_are_parse_errors():
    with pytest.raises(M.PARSE_ERRORS):
        M.parse_reading(EFSMI_SPEC, fixture("efsmi", "garbage.txt"))
    with pytest.raises(M.PARSE_ERRORS):
        M.parse_reading(NVIDIA_SPEC, "0, 1\n")
    assert issubclass(_efsmi.EfsmiParseError, M.PARSE_ERRORS)


@pytest.mark.parametrize("metric, value, expected", [
    ("topsrider_card_temperature_celsius", 44, 44.0),
    ("topsrider_card_temperature_celsius", -300, None),
    ("topsrider_card_temperature_celsius", float("nan"), None),
    ("topsrider_card_temperature_celsius", float("inf"), None),
    ("topsrider_card_utilization_ratio", 1, 1.0),
    ("topsrider_card_utilization_ratio", 2.5, None),
    ("topsrider_card_utilization_ratio", -0.01, None),
    ("topsrider_card_memory_total_bytes", 2 ** 53, float(2 ** 53)),
    ("topsrider_card_memory_total_bytes", 2 ** 53 + 1, None),  # beyond a float's exact integers: out of range
    ("topsrider_card_memory_total_bytes", -1, None),
    ("topsrider_card_ecc_uncorrected_errors_total", int("9" * 321), None),
    ("topsrider_card_ecc_uncorrected_errors_total", -int("9" * 400), None),
    ("topsrider_card_ecc_uncorrected_errors_total", 0, 0.0),
    ("topsrider_card_pcie_link_width", 33, None),
    ("topsrider_card_pcie_link_speed_gts", 32.0, 32.0),
    ("topsrider_card_power_watts", -1.0, None),
    ("topsrider_card_healthy", True, None),  # card_entry gives 1 or 0, never a bool
    ("topsrider_card_healthy", "1", None),
])
def test_checked_value(metric, value, expected):
    assert M.checked_value(metric, value) == expected


def test_every_card_metric_has_a_range():
    card_metrics = [m["name"] for m in M.METRICS if m["name"].startswith("topsrider_card_")
                    and not m["name"].endswith("_info") and m["name"] != M.AGE]
    assert sorted(M.VALUE_RANGES) == sorted(card_metrics)


def promtool_lint(text):
    lint = subprocess.run(["promtool", "check", "metrics"], input=text, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert lint.returncode == 0, lint.stdout


@pytest.mark.parametrize("field, value, metric", [
    ("ecc_errors_uncorrected", int("1" * 321), "topsrider_card_ecc_uncorrected_errors_total"),
    ("memory_total_mib", int("1" * 400), "topsrider_card_memory_total_bytes"),
    ("temperature_c", -300, "topsrider_card_temperature_celsius"),
    ("utilization_pct", 250.0, "topsrider_card_utilization_ratio"),
    ("utilization_pct", int("7" * 400), "topsrider_card_utilization_ratio"),
    ("power_w", float("nan"), "topsrider_card_power_watts"),
])
def test_a_value_out_of_range_is_named_and_never_served(field, value, metric):
    card = {"index": 1, "bus_id": "0000:3e:00.0", "temperature_c": 40, "utilization_pct": 50.0,
            "memory_total_mib": 32768, "ecc_errors_uncorrected": 0, "power_w": 100.0, "health": True}
    card[field] = value
    entry = M.card_entry(card, "enflame")
    assert [m for m, _v in entry["bad"]] == [metric]
    assert metric not in entry["values"] and entry["key"] == "0000:3e:00.0"
    text = M.render(None, [(entry, 100.0)], STATS, 101.0)
    assert metric not in text
    promtool_lint(text)
    assert entry["values"]["topsrider_card_healthy"] == 1  # the card's other values are in range
    if isinstance(value, int) and value > 10 ** 20:
        assert M.short_number(value) == "a %d-digit integer" % len(str(value))


def test_a_400_digit_memory_size_from_efsmi_raises_an_arithmetic_error_only(tmp_path):
    """The parser of efsmi's memory size (a float times its unit) overflows on a
    400-digit number: an ArithmeticError, which the exporter counts as out_of_range."""
    with pytest.raises(ArithmeticError):
        _efsmi.parse_memory_mib("1" * 400 + " MiB")


def test_cards_are_kept_by_bus_id_and_a_missing_one_is_said():
    a = M.card_entry({"index": 0, "bus_id": "0000:01:00.0", "temperature_c": 30}, "enflame")
    b = M.card_entry({"index": 1, "bus_id": "0000:02:00.0", "temperature_c": 31}, "enflame")
    assert (a["key"], b["key"]) == ("0000:01:00.0", "0000:02:00.0")
    assert M.card_key({"index": 3, "bus_id": ""}) == "index:3"
    text = M.render(None, [(a, 90.0), (dict(b, missing=True), 50.0)], STATS, 100.0)
    promtool_lint(text)
    assert samples(text, "topsrider_card_missing_info") == {(("bus_id", "0000:02:00.0"), ("card", "1")): 1}
    assert samples(text, "topsrider_card_reading_age_seconds") == {
        (("bus_id", "0000:01:00.0"), ("card", "0")): 10.0, (("bus_id", "0000:02:00.0"), ("card", "1")): 50.0}


def test_format_value_writes_what_prometheus_reads():
    assert [M.format_value(v) for v in (3, True, 0.5, float("nan"), float("inf"), float("-inf"))] == [
        "3", "1", "0.5", "NaN", "+Inf", "-Inf"]
