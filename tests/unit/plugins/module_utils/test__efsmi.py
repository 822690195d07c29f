# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/_efsmi.py: every fixture, plus variants."""
import json
import os
import re
import subprocess
import sys

import pytest

from ansible_collections.gcu.topsrider.plugins.module_utils import _efsmi as E
from ansible_collections.gcu.topsrider.plugins.module_utils._card_checks import check_expectations, format_indexes

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
FIX = os.path.join(TOP, "tests", "unit", "fixtures", "efsmi")
SIM_EFSMI = os.path.join(TOP, "sim", "node", "rootfs", "usr", "sbin", "efsmi")
SIM_CTL = os.path.join(TOP, "sim", "node", "rootfs", "usr", "local", "bin", "simctl")

T20_SERIALS = ["W28001150301", "W28001110508", "W28001170208", "W28001180500",
               "W28001010806", "W28001250206", "W28001060610", "W28001150105"]
T20_BUS = ["0000:3d:00.0", "0000:3e:00.0", "0000:40:00.0", "0000:41:00.0",
           "0000:b1:00.0", "0000:b2:00.0", "0000:b4:00.0", "0000:b5:00.0"]


def fixture(name):
    with open(os.path.join(FIX, name), "rb") as f:
        return f.read().decode("utf-8")


def parse(name):
    text = fixture(name)
    return E.parse_query(text) if "-query-" in name else E.parse_summary(text)


# name, count, efsmi version, driver version, utilization per card
FIXTURES = [
    ("t20-summary-8card-idle.txt", 8, "1.20.0", "2.4.20230829", [0.0] * 8),
    ("t20-summary-8card-one-busy.txt", 8, "1.20.0", "2.4.20230829", [85.0] + [0.0] * 7),
    ("t20-summary-8card-all-busy.txt", 8, "1.20.0", "2.4.20230829", [85.0] * 8),
    ("s60-summary-2card.txt", 2, "1.2.0.301", "1.2.0.301", [0.0, 0.0]),
    ("s60-query-2card.txt", 2, None, "1.4.3.4", [0.0, 97.5]),
    ("t20-summary-16card-three-busy.txt", 16, "1.20.0", "2.4.20230829",
     [97.5 if i in (0, 10, 15) else 0.0 for i in range(16)]),
    ("t20-query-7card-old-keys-unhealthy.txt", 7, None, "2.4.20230829",
     [0.0, 0.0, 0.0, 0.0, 0.0, None, 0.0]),
    ("t20-query-1card-new-keys.txt", 1, None, "2.4.20230829", [42.0]),
    ("pipe-summary-3card-wide-na.txt", 3, "1.3.1.12", "1.3.1.12", [0.0, None, 100.0]),
]


@pytest.mark.parametrize("name,count,efsmi_ver,driver_ver,util", FIXTURES)
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_fixtures(name, count, efsmi_ver, driver_ver, util, newline):
    text = fixture(name).replace("\n", newline)
    res = E.parse_query(text) if "-query-" in name else E.parse_summary(text)
    assert len(res["cards"]) == count
    assert res["efsmi_version"] == efsmi_ver
    assert res["driver_version"] == driver_ver
    assert [c["utilization_pct"] for c in res["cards"]] == util
    extra = E.QUERY_EXTRA_KEYS if "-query-" in name else ()
    for card in res["cards"]:
        assert sorted(card) == sorted(E.CARD_KEYS + extra)


def test_t20_idle_every_field():
    cards = parse("t20-summary-8card-idle.txt")["cards"]
    assert [c["index"] for c in cards] == list(range(8))
    assert [c["serial"] for c in cards] == T20_SERIALS
    assert [c["bus_id"] for c in cards] == T20_BUS
    assert cards[4] == {
        "index": 4, "model": "T20", "bus_id": "0000:b1:00.0", "serial": "W28001010806",
        "uuid": None, "firmware": "10.19.3", "device_id": None, "memory_total_mib": 32768,
        "memory_used_mib": None, "temperature_c": 30, "power_w": 48.0, "power_cap_w": 300.0,
        "utilization_pct": 0.0, "dpm": "Sleep", "ecc": "Enable", "health": None,
    }


def test_s60_summary_fields():
    res = parse("s60-summary-2card.txt")
    assert res["style"] == "pipe"
    c0, c1 = res["cards"]
    assert (c0["temperature_c"], c0["memory_total_mib"], c0["bus_id"], c0["serial"], c0["ecc"]) == \
        (39, 49120, "0000:01:00.0", "A073640510015", "Disable")
    assert (c1["temperature_c"], c1["memory_total_mib"], c1["firmware"], c1["dpm"], c1["power_w"]) == \
        (46, 42976, "33.6.5", "Active", 128.0)


def test_s60_query_fields():
    c0, c1 = parse("s60-query-2card.txt")["cards"]
    assert c0 == {
        "index": 0, "model": "S60", "bus_id": "0000:17:00.0", "serial": "A0A1650510676",
        "uuid": "TR6Y46010302", "firmware": None, "device_id": "c035", "memory_total_mib": 42976,
        "memory_used_mib": 0, "temperature_c": 35, "power_w": 96.0, "power_cap_w": 300.0,
        "utilization_pct": 0.0, "dpm": "Sleep", "ecc": "Enable", "health": True, "ecc_errors_uncorrected": 0,
    }
    assert (c1["memory_used_mib"], c1["temperature_c"], c1["power_w"], c1["dpm"]) == (20480, 61, 281.0, "Active")


def test_query_old_keys_unhealthy_and_na():
    cards = parse("t20-query-7card-old-keys-unhealthy.txt")["cards"]
    assert [c["index"] for c in cards] == list(range(7))
    assert [c["health"] for c in cards] == [True, True, True, False, True, True, True]
    assert cards[0]["memory_total_mib"] == 32768 and cards[0]["memory_used_mib"] == 0
    assert (cards[5]["temperature_c"], cards[5]["power_w"], cards[5]["utilization_pct"]) == (None, None, None)
    assert cards[3]["bus_id"] == "0000:41:00.0" and cards[3]["device_id"] == "0021"


def test_query_new_keys_one_card():
    (card,) = parse("t20-query-1card-new-keys.txt")["cards"]
    assert (card["memory_total_mib"], card["memory_used_mib"], card["dpm"]) == (32768, 20480, "Active")


def test_wide_pipe_table_with_na_units_and_two_digit_index():
    c0, c1, c10 = parse("pipe-summary-3card-wide-na.txt")["cards"]
    assert (c0["temperature_c"], c0["power_w"], c0["memory_total_mib"], c0["bus_id"]) == (30, 48.5, 32768, "0000:3d:00.0")
    assert c1 == dict(E._empty_card(1), model="T20", bus_id="0000:3e:00.0", memory_total_mib=32768)
    assert (c10["index"], c10["temperature_c"], c10["memory_used_mib"], c10["memory_total_mib"]) == (10, 71, 2048, 32768)
    assert c10["utilization_pct"] == 100.0 and c10["serial"] == "W28001170208"


def _respace(text, extra):
    """Widen every run of 2+ spaces inside table lines: other column widths."""
    return "\n".join(re.sub(r"(?<=\S)( {2,})(?=\S)", lambda m: m.group(1) + " " * extra, line)
                     for line in text.split("\n"))


@pytest.mark.parametrize("extra", [1, 4, 9])
@pytest.mark.parametrize("name", ["t20-summary-8card-one-busy.txt", "s60-summary-2card.txt"])
def test_other_column_widths(name, extra):
    base = parse(name)
    wide = E.parse_summary(_respace(fixture(name), extra))
    assert wide["cards"] == base["cards"]


@pytest.mark.parametrize("temp,expected", [
    ("30C", 30), ("39 C", 39), (u"35 \u2103", 35), ("30 'C", 30), (u"41.5\u00b0C", 41.5),
    ("-5C", -5), ("N/A", None), ("n/a", None), ("72", 72),
])
def test_temperature_forms(temp, expected):
    assert E.parse_temperature(temp) == expected


@pytest.mark.parametrize("temp", ["30 C", "39 'C", u"35 \u2103", "44C", "N/A"])
def test_temperature_forms_in_t20_table(temp):
    text = fixture("t20-summary-8card-idle.txt").replace("* 30C    Sleep", "* %-7sSleep" % temp, 1)
    card = E.parse_summary(text)["cards"][0]
    assert card["temperature_c"] == E.parse_temperature(temp)


@pytest.mark.parametrize("value,mib", [
    ("32G", 32768), ("64G", 65536), ("49120MiB", 49120), ("42976 MiB", 42976), ("32 GB", 32768),
    ("32GiB", 32768), ("512 MB", 512), ("1T", 1048576), ("N/A", None),
])
def test_memory_units(value, mib):
    assert E.parse_memory_mib(value) == mib


@pytest.mark.parametrize("fn,value", [
    (E.parse_memory_mib, "32768"), (E.parse_memory_mib, "lots"), (E.parse_temperature, "hot"),
    (E.parse_power, "300"), (E.parse_percent, "85"), (E.parse_bool, "maybe"), (E.normalize_bus_id, "3d"),
])
def test_bad_values_raise(fn, value):
    with pytest.raises(ValueError):
        fn(value)


@pytest.mark.parametrize("value,expected", [
    ("00:3d:0.0", "0000:3d:00.0"), ("00:01:00.0", "0000:01:00.0"), ("0000:b5:00.0", "0000:b5:00.0"),
    ("3d:00.1", "0000:3d:00.1"), ("N/A", None),
])
def test_bus_ids(value, expected):
    assert E.normalize_bus_id(value) == expected


def _t20_table(n):
    """A T20 table of n cards built from the fixture's own rows."""
    text = fixture("t20-summary-8card-idle.txt")
    head = text.partition("* 0      T20")[0]
    lines = []
    for i in range(n):
        lines.append("*-------------------------------------------------------------------------*")
        lines.append("* %-7s%-20s| 10.19.3         | 00:%02x:0.0  Enable        *" % (i, "T20", 0x10 + i))
        lines.append("* 30C    Sleep   48.0W  300W | 32G      Disable|   0.0%%     W2800115%04d  *" % i)
        lines.append("*-------------------------------------------------------------------------*")
    return head.rstrip("*-\n") + "*\n" + "\n".join(lines[1:]) + "\n"


@pytest.mark.parametrize("n", [1, 2, 7, 8, 9, 10, 15, 16])
def test_card_counts(n):
    res = E.parse_summary(_t20_table(n))
    assert [c["index"] for c in res["cards"]] == list(range(n))
    assert res["cards"][-1]["bus_id"] == "0000:%02x:00.0" % (0x10 + n - 1)


GARBAGE = [
    ("garbage.txt", "not an efsmi summary table"),
    ("", "no output"),
]


@pytest.mark.parametrize("name,needle", GARBAGE)
def test_garbage_summary(name, needle):
    text = fixture(name) if name else ""
    with pytest.raises(E.EfsmiParseError) as exc:
        E.parse_summary(text)
    assert needle in str(exc.value)
    if name:
        assert "Segmentation fault" in str(exc.value)


def test_garbage_query_quotes_first_lines():
    with pytest.raises(E.EfsmiParseError) as exc:
        E.parse_query(fixture("garbage.txt"))
    assert "no 'DEV ID n' block" in str(exc.value) and "Segmentation fault (core dumped)" in str(exc.value)


def test_summary_fed_to_query_parser_fails():
    with pytest.raises(E.EfsmiParseError):
        E.parse_query(fixture("t20-summary-8card-idle.txt"))


def test_query_fed_to_summary_parser_fails():
    with pytest.raises(E.EfsmiParseError):
        E.parse_summary(fixture("s60-query-2card.txt"))


BROKEN_TABLES = [
    # a card whose second row is missing: never count it
    ("missing-row2", lambda t: t.replace("* 30C    Sleep   48.0W  300W | 32G      Disable|   0.0%     W28001180500  *\n", ""),
     "has no second row"),
    # a garbled cell: refuse rather than skip the card
    ("bad-power", lambda t: t.replace("Sleep   48.0W  300W", "Sleep   48.0X  300W", 1), "cannot read line"),
    ("bad-memory", lambda t: t.replace("32G      Disable", "32       Disable", 1), "cannot read line"),
    ("extra-column", lambda t: t.replace("| 10.19.3         |", "| 10.19.3 | x |", 1), "expected 3 columns"),
    ("duplicate-index", lambda t: t.replace("* 1      T20", "* 0      T20"), "twice"),
    ("truncated", lambda t: t[:t.index("* 30C    Sleep   48.0W  300W | 32G      Disable|   0.0%     W28001010806")],
     "has no second row"),
]


@pytest.mark.parametrize("name,mutate,needle", BROKEN_TABLES, ids=[b[0] for b in BROKEN_TABLES])
def test_broken_tables_fail_clearly(name, mutate, needle):
    text = mutate(fixture("t20-summary-8card-idle.txt"))
    with pytest.raises(E.EfsmiParseError) as exc:
        E.parse_summary(text)
    assert needle in str(exc.value)
    assert "Enflame System Management Interface" in str(exc.value)  # quotes the first lines


def test_query_block_without_device_fields_fails():
    text = fixture("s60-query-2card.txt") + "DEV ID 2\n    Something\n        Else : 1\n"
    with pytest.raises(E.EfsmiParseError) as exc:
        E.parse_query(text)
    assert "DEV ID 2" in str(exc.value)


def test_query_bad_value_names_block():
    text = fixture("s60-query-2card.txt").replace("Cur Power               : 281 W", "Cur Power               : lots")
    with pytest.raises(E.EfsmiParseError) as exc:
        E.parse_query(text)
    assert "DEV ID 1" in str(exc.value) and "lots" in str(exc.value)


def test_query_memory_usage_percent():
    text = fixture("t20-query-1card-new-keys.txt").replace("Used Size               : 20480 MiB",
                                                           "Used Size               : 50 %")
    assert E.parse_query(text)["cards"][0]["memory_used_mib"] == 16384


def test_merge_summary_into_query():
    q = E.parse_query(fixture("t20-query-7card-old-keys-unhealthy.txt"))
    s = E.parse_summary(fixture("t20-summary-8card-idle.txt"))
    # different card sets: only the efsmi version is taken
    merged = E.merge_summary_into_query(q, s)
    assert merged["efsmi_version"] == "1.20.0" and merged["cards"][0]["firmware"] is None
    s7 = dict(s, cards=s["cards"][:7])
    merged = E.merge_summary_into_query(q, s7)
    assert [c["firmware"] for c in merged["cards"]] == ["10.19.3"] * 7
    assert [c["health"] for c in merged["cards"]] == [c["health"] for c in q["cards"]]


def test_pci_view():
    entries = [("0000:3d:00.0", "0x1e36\n", "0x0021\n"), ("0000:00:1f.0", "0x8086", "0xa123"),
               ("0000:3e:00.0", "0x1E36", "0x0022"), ("0000:17:00.0", None, None)]
    assert E.pci_view(entries, "1e36") == {"count": 2, "device_ids": ["0021", "0022"],
                                           "bus_ids": ["0000:3d:00.0", "0000:3e:00.0"]}
    assert E.pci_view([], "1e36") == {"count": 0, "device_ids": [], "bus_ids": []}


@pytest.mark.parametrize("idx,text", [([1, 2, 3, 4, 5, 6, 7], "1-7"), ([0, 2, 3, 7], "0, 2-3, 7"), ([], ""), ([5], "5")])
def test_format_indexes(idx, text):
    assert format_indexes(idx) == text


PCI8 = {"count": 8, "device_ids": ["0021"] * 8, "bus_ids": T20_BUS}

CHECKS = [
    # (fixture, kwargs, pci, substrings of problems (one list per problem), note substrings)
    ("t20-summary-8card-idle.txt", {"expected_count": 8}, PCI8, [], []),
    ("t20-summary-8card-idle.txt", {"expected_count": 16}, PCI8,
     [["expected 16 GCUs, the driver sees 8", "PCI sees 8 too"]], []),
    ("t20-summary-8card-one-busy.txt", {"min_utilization": 50}, PCI8,
     [["7 of 8 GCUs not busy", "cards 1-7 sleeping", "only card(s) 0 working", "one process per card"]], []),
    ("t20-summary-8card-all-busy.txt", {"min_utilization": 50, "max_temperature": 60}, PCI8, [], []),
    ("t20-summary-8card-all-busy.txt", {"max_temperature": 50}, PCI8,
     [["above 50 C", "GCU 0 (0000:3d:00.0, serial W28001150301) at 52 C", "cooling"]], []),
    ("t20-query-7card-old-keys-unhealthy.txt", {"require_healthy": True}, PCI8,
     [["GCU 3 (0000:41:00.0, serial W28001180500) report Health: False", "RMA"]],
     ["PCI sees 8 Enflame device(s), the driver sees 7", "0000:b5:00.0"]),
    ("t20-query-7card-old-keys-unhealthy.txt", {"expected_count": 8}, PCI8,
     [["expected 8 GCUs, the driver sees 7", "PCI sees 8 Enflame device(s), the driver sees 7",
       "not seen by the driver: 0000:b5:00.0", "dmesg"]], []),
    ("t20-query-7card-old-keys-unhealthy.txt", {"min_utilization": 10.0}, PCI8,
     [["7 of 7 GCUs not busy", "cards 0-6 sleeping"]], ["PCI sees 8"]),
    ("t20-summary-8card-idle.txt", {"require_healthy": True}, PCI8, [], ["health not reported", "0-7"]),
    ("s60-query-2card.txt", {"require_healthy": True, "min_utilization": 90, "expected_count": 2},
     {"count": None, "device_ids": [], "bus_ids": []}, [["1 of 2 GCUs not busy", "cards 0 sleeping"]], []),
]


@pytest.mark.parametrize("name,kwargs,pci,problems,notes", CHECKS)
def test_check_expectations(name, kwargs, pci, problems, notes):
    got, got_notes = check_expectations(parse(name)["cards"], pci, **kwargs)
    assert len(got) == len(problems), got
    for text, needles in zip(got, problems):
        for needle in needles:
            assert needle in text
    for needle in notes:
        assert any(needle in n for n in got_notes), got_notes
    if not notes:
        assert got_notes == []


# ------------------------------------------------- the simulator's efsmi --

def _run_sim(tmp_path, simctl_args_list, efsmi_args):
    env = dict(os.environ, SIM_STATE=str(tmp_path / "state.json"), SIM_PCI_ROOT=str(tmp_path / "pci"),
               SIM_CARDS="8", SIM_MODEL="T20")
    (tmp_path / "pci").mkdir(exist_ok=True)
    for args in [["init"]] + simctl_args_list:
        subprocess.check_call([sys.executable, SIM_CTL] + args, env=env)
    p = subprocess.Popen([sys.executable, SIM_EFSMI] + efsmi_args, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate()
    return p.returncode, out.decode("utf-8"), err.decode("utf-8")


def _without_date(text):
    return [line for n, line in enumerate(text.split("\n")) if n != 5]


@pytest.mark.parametrize("simctl,fixture_name", [
    ([], "t20-summary-8card-idle.txt"),
    ([["busy", "0"]], "t20-summary-8card-one-busy.txt"),
    ([["busy", "all"]], "t20-summary-8card-all-busy.txt"),
])
def test_simulator_matches_t20_fixtures_line_for_line(tmp_path, simctl, fixture_name):
    rc, out, err = _run_sim(tmp_path, simctl, [])
    assert rc == 0, err
    expected = fixture(fixture_name)
    assert _without_date(out) == _without_date(expected)
    assert out.split("\n")[5].startswith("*") and out.split("\n")[5].endswith("-*")
    assert E.parse_summary(out)["cards"] == E.parse_summary(expected)["cards"]


def test_simulator_pipe_table_and_query_shapes(tmp_path):
    steps = [["reset", "--cards", "2", "--model", "S60"],
             ["set", "table_style=pipe", "query_memory_keys=new", "efsmi_version=1.2.0.301",
              "driver_version=1.2.0.301"]]
    rc, out, err = _run_sim(tmp_path, steps, [])
    assert rc == 0, err
    expected = fixture("s60-summary-2card.txt").split("\n")
    got = out.split("\n")
    # same frame, header and column layout as the real newer table
    assert len(got) == len(expected)
    for n in (0, 1, 2, 3, 6, 7, 8, 9, 10, 11, 14, 15):
        assert got[n] == expected[n]
    assert [len(line) for line in got] == [len(line) for line in expected]
    assert len(E.parse_summary(out)["cards"]) == 2
    rc, out, err = _run_sim(tmp_path, [], ["-q"])
    assert rc == 0, err
    exp_keys = [line.split(":")[0] for line in fixture("s60-query-2card.txt").split("\n")]
    assert [line.split(":")[0] for line in out.split("\n")] == exp_keys
    cards = E.parse_query(out)["cards"]
    assert [c["memory_total_mib"] for c in cards] == [49120, 49120]


def test_simulator_state_changes_reach_the_parser(tmp_path):
    steps = [["card", "2", "health=false"], ["remove", "7"], ["busy", "0", "--util", "91"]]
    rc, out, err = _run_sim(tmp_path, steps, ["-q"])
    assert rc == 0, err
    cards = E.parse_query(out)["cards"]
    assert len(cards) == 7
    assert [c["health"] for c in cards] == [True, True, False, True, True, True, True]
    assert cards[0]["utilization_pct"] == 91.0
    assert sorted(os.listdir(str(tmp_path / "pci"))) == T20_BUS
    pci = E.pci_view([(n, open(str(tmp_path / "pci" / n / "vendor")).read(),
                       open(str(tmp_path / "pci" / n / "device")).read()) for n in T20_BUS], "1e36")
    problems = check_expectations(cards, pci, expected_count=8)[0]
    assert "not seen by the driver: 0000:b5:00.0" in problems[0]


def test_simulator_driver_not_loaded(tmp_path):
    rc, out, err = _run_sim(tmp_path, [["set", "driver_loaded=false"]], ["-q"])
    assert rc != 0 and out == "" and "driver is not loaded" in err


def test_simulator_state_is_the_contract(tmp_path):
    _run_sim(tmp_path, [], ["-v"])
    with open(str(tmp_path / "state.json")) as f:
        state = json.load(f)
    assert state["driver_loaded"] is True and state["table_style"] in ("star", "pipe")
    assert "SIMULATED" in state["simulator"]
    assert [c["serial"] for c in state["cards"]] == T20_SERIALS
    for c in state["cards"]:
        assert c["present"] is True and c["health"] is True and c["device_id"] == "0021"


def test_repeated_index():
    assert E.repeated_index([]) is None
    assert E.repeated_index([{"index": 0}, {"index": 1}]) is None
    assert E.repeated_index([{"index": 2}, {"index": 0}, {"index": 2}, {"index": 0}]) == 2


def test_query_reads_total_dbe_as_uncorrected_ecc_errors():
    text = fixture("s60-query-2card.txt")
    head, sep, tail = text.partition("DEV ID 1")
    c0, c1 = E.parse_query(head + sep + tail.replace("Total DBE               : 0", "Total DBE               : 7"))["cards"]
    assert (c0["ecc_errors_uncorrected"], c1["ecc_errors_uncorrected"]) == (0, 7)
    (card,) = E.parse_query(head.replace("Total DBE               : 0", "Total DBE               : N/A"))["cards"]
    assert card["ecc_errors_uncorrected"] is None
    with pytest.raises(E.EfsmiParseError, match="unrecognised count"):
        E.parse_query(head.replace("Total DBE               : 0", "Total DBE               : lots"))
    # The summary table has no such column: its cards have no such key.
    assert "ecc_errors_uncorrected" not in parse("s60-summary-2card.txt")["cards"][0]
