# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/bench/bench_stats.py: the callback of make bench and the perf check,
fed with stand-in result objects shaped like ansible-core 2.19's."""
import json
import os

import pytest

from conftest import load_script

ROOT = "/srv/bundles"


bench_stats = load_script("scripts/bench/bench_stats.py", "bench_stats")


class FakeHost:
    def __init__(self, name):
        self.name = name

    def get_name(self):
        return self.name


class FakeTask:
    def __init__(self, name, action):
        self.name = name
        self.action = action
        self.resolved_action = action if "." in action else "ansible.builtin." + action

    def get_name(self):
        return self.name


class FakeResult:
    """What a callback gets: host, task, task_fields (templated args) and the result."""

    def __init__(self, host, task, data, args=None, check_mode=False):
        self.host = FakeHost(host)
        self.task = task
        self.result = data
        self.task_fields = {"action": task.action, "args": args or {}, "check_mode": check_mode, "name": task.name}
        self.task_name = task.name


def copy_item(host, task, src, changed, size=1000, check_mode=False):
    data = {"changed": changed, "item": os.path.basename(src), "dest": "/var/cache/x/" + os.path.basename(src)}
    if size is not None:
        data["size"] = size
    return FakeResult(host, task, data, args={"src": src, "dest": data["dest"]}, check_mode=check_mode)


@pytest.fixture(name="cb")
def fixture_cb(tmp_path):
    return bench_stats.CallbackModule(stats_file=str(tmp_path / "stats.json"), bundle_root=ROOT)


def test_plain_results_count_once_per_task(cb):
    ping = FakeTask("Ping", "ansible.builtin.ping")
    cmd = FakeTask("Run", "ansible.builtin.command")
    cb.v2_runner_on_ok(FakeResult("a", ping, {"changed": False, "ping": "pong"}))
    cb.v2_runner_on_ok(FakeResult("a", cmd, {"changed": True}))
    cb.v2_runner_on_skipped(FakeResult("a", cmd, {"skipped": True}))
    cb.v2_runner_on_failed(FakeResult("a", cmd, {"failed": True}), ignore_errors=True)
    cb.v2_runner_on_failed(FakeResult("b", cmd, {"failed": True, "changed": False}))
    cb.v2_runner_on_unreachable(FakeResult("c", ping, {"unreachable": True, "changed": False}))
    hosts = cb.summary()["hosts"]
    assert hosts["a"]["tasks"] == 3 and hosts["a"]["skipped"] == 1
    assert hosts["a"]["changed"] == 1 and hosts["a"]["changed_tasks"] == ["Run"]
    assert hosts["a"]["ignored"] == 1 and hosts["a"]["failed"] == 0
    assert hosts["b"]["tasks"] == 1 and hosts["b"]["failed"] == 1
    assert hosts["c"]["tasks"] == 1 and hosts["c"]["unreachable"] == 1 and hosts["c"]["changed"] == 0
    assert cb.summary()["totals"]["tasks"] == 5


def test_a_loop_counts_once_and_its_items_carry_the_bytes(cb):
    task = FakeTask("Copy the bundle files", "ansible.builtin.copy")
    items = [copy_item("a", task, ROOT + "/2.5.136/tops-sdk.deb", True, 4000),
             copy_item("a", task, ROOT + "/2.5.136/torch_gcu.whl", False, 9000),   # same checksum: nothing sent
             copy_item("a", task, ROOT + "/2.5.136/manifest.json", True, 300)]
    for item in items:
        cb.v2_runner_item_on_ok(item)
    # the loop's final result: untemplated args, the items' results again
    final = FakeResult("a", task, {"changed": True, "results": [i.result for i in items]},
                       args={"src": "{{ bundle_stage_dir }}/{{ item }}"})
    cb.v2_runner_on_ok(final)
    host = cb.summary()["hosts"]["a"]
    assert host["tasks"] == 1 and host["changed"] == 1
    assert host["bundle_bytes_sent"] == 4300


def test_loop_changed_from_items_when_the_final_result_has_no_changed_key(cb):
    task = FakeTask("Loop", "ansible.builtin.file")
    cb.v2_runner_on_ok(FakeResult("a", task, {"results": [{"changed": False}, {"changed": True}]}))
    cb.v2_runner_on_ok(FakeResult("b", task, {"results": [{"changed": False}, "squashed"]}))
    hosts = cb.summary()["hosts"]
    assert hosts["a"]["changed"] == 1 and hosts["b"]["changed"] == 0


def test_only_changed_copies_from_under_the_bundle_root_count(cb):
    copy = FakeTask("Copy", "copy")
    legacy = FakeTask("Copy legacy", "ansible.legacy.copy")
    template = FakeTask("Template", "ansible.builtin.template")
    cb.v2_runner_on_ok(copy_item("a", copy, ROOT + "/2.5.140/a.deb", True, 100))        # counts
    cb.v2_runner_on_ok(copy_item("a", legacy, ROOT + "/2.5.140/b.deb", True, 10))       # counts
    cb.v2_runner_on_ok(copy_item("a", copy, ROOT + "/2.5.140/c.deb", False, 5000))      # unchanged
    cb.v2_runner_on_ok(copy_item("a", copy, "/etc/other/file", True, 7000))             # not a bundle file
    cb.v2_runner_on_ok(copy_item("a", copy, "/srv/bundles-old/x.deb", True, 7000))      # prefix, not under
    cb.v2_runner_on_ok(copy_item("a", copy, ROOT + "/../elsewhere/x", True, 7000))      # escapes the root
    cb.v2_runner_on_ok(copy_item("a", copy, "relative/x.deb", True, 7000))              # role files/
    cb.v2_runner_on_ok(copy_item("a", copy, ROOT + "/2.5.140/d.deb", True, 7000, check_mode=True))
    cb.v2_runner_on_ok(copy_item("a", copy, ROOT + "/2.5.140/e.deb", True, None))       # no size reported
    cb.v2_runner_on_ok(copy_item("a", template, ROOT + "/2.5.140/f.j2", True, 7000))    # not a copy
    cb.v2_runner_on_failed(copy_item("a", copy, ROOT + "/2.5.140/g.deb", True, 7000))   # failed
    assert cb.summary()["hosts"]["a"]["bundle_bytes_sent"] == 110


def test_the_root_itself_and_a_symlinked_root(tmp_path):
    real = tmp_path / "real"
    (real / "1.0").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    cb = bench_stats.CallbackModule(stats_file=str(tmp_path / "s.json"), bundle_root=str(link))
    copy = FakeTask("Copy", "ansible.builtin.copy")
    cb.v2_runner_item_on_ok(copy_item("a", copy, str(real / "1.0" / "x.deb"), True, 42))
    assert cb.summary()["hosts"]["a"]["bundle_bytes_sent"] == 42
    assert not bench_stats.path_under("/x", "")


def test_includes_are_not_tasks(cb):
    inc = FakeTask("Include", "ansible.builtin.include_tasks")
    role = FakeTask("Role", "include_role")
    cb.v2_runner_on_ok(FakeResult("a", inc, {"include": "x.yml"}))
    cb.v2_runner_on_ok(FakeResult("a", role, {"include_args": {}}))
    host = cb.summary()["hosts"]["a"]
    assert host["tasks"] == 0 and host["includes"] == 2


def test_older_result_shape_is_read_too(cb):
    class Old:
        def __init__(self):
            self._host = FakeHost("a")
            self._task = FakeTask("Old", "ansible.builtin.copy")
            self._result = {"changed": True, "size": 5}
            self._task_fields = {"action": "ansible.builtin.copy", "args": {"src": ROOT + "/v/x"}}

    cb.v2_runner_on_ok(Old())
    host = cb.summary()["hosts"]["a"]
    assert host["tasks"] == 1 and host["bundle_bytes_sent"] == 5 and host["changed_tasks"] == ["Old"]


def test_the_file_is_written_at_the_end(cb, tmp_path):
    class Stats:
        processed = {"a": 1}

        @staticmethod
        def summarize(name):
            return {"ok": 1, "changed": 0, "host": name}

    cb.v2_runner_on_ok(FakeResult("a", FakeTask("Ping", "ansible.builtin.ping"), {"changed": False}))
    cb.v2_playbook_on_stats(Stats())
    doc = json.loads((tmp_path / "stats.json").read_text())
    assert doc["hosts"]["a"]["tasks"] == 1 and doc["recap"]["a"]["ok"] == 1
    assert doc["bundle_root"] == ROOT and doc["totals"]["tasks"] == 1
    assert not [p for p in os.listdir(str(tmp_path)) if p.startswith(".bench_stats.")]


def test_the_plugin_declares_itself_as_an_aggregate_callback():
    assert bench_stats.CallbackModule.CALLBACK_TYPE == "aggregate"
    assert bench_stats.CallbackModule.CALLBACK_NAME == "bench_stats"
    assert bench_stats.CallbackModule.CALLBACK_NEEDS_ENABLED
    assert "name: bench_stats" in bench_stats.DOCUMENTATION


def test_bundle_push_counts_the_bytes_it_sent_from_under_the_root(cb):
    push = FakeTask("Copy the files this host lacks from the controller", "gcu.topsrider.bundle_push")
    sent = {"changed": True, "sent_bytes": 300, "copies": [{"changed": True, "size": 300}, {"changed": False}]}
    cb.v2_runner_on_ok(FakeResult("a", push, sent, args={"src_dir": ROOT + "/2.5.140"}))                # counts
    cb.v2_runner_on_ok(FakeResult("a", push, sent, args={"src_dir": "/srv/elsewhere"}))                 # not under
    cb.v2_runner_on_ok(FakeResult("a", push, dict(sent, changed=False, sent_bytes=0), args={"src_dir": ROOT}))
    cb.v2_runner_on_ok(FakeResult("a", push, sent, args={"src_dir": ROOT}, check_mode=True))             # check mode
    assert cb.summary()["hosts"]["a"]["bundle_bytes_sent"] == 300
