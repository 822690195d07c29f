# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one host's rollout decides from the node's read, before it acts, and
what it says at the end (tasks/rollout.yml and deploy.yml, on the controller;
filters topsrider_preflight_problem, topsrider_snapshot_plan and
topsrider_deploy_result), and what a restore of a snapshot reads and must
end in (tasks/restore_plan.yml; filter topsrider_restore_plan), and which
snapshot a rollback restores (rollback.yml; filter topsrider_rollback_choice).

The preflight: from the one read-only topsrider_state call (space, dpkg_lock,
devices, system) and the release's manifest, the first check that fails, as
the sentence the deploy refuses the host with; nothing on the node has
changed yet. In this order: a Debian-family node on amd64, room for the
bundle cache, no other package manager running, the cards the inventory
expects.

The snapshot: whether this deploy continues an open one (an earlier deploy
that never finished left open-deploy.json: its snapshot, taken when the node
was last whole, is the one a rollback returns to) or records its own, whether
the release is new, whether anything is to be recorded at all, and what the
managed files and the wheel were before.

The result: the host's report line once the rollout proved it."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gcu.topsrider.plugins.module_utils._values import value_problems
from ansible_collections.gcu.topsrider.plugins.plugin_utils._truth import restore_desired

MIB = 1024 * 1024
# What dpkg and the cache need beyond the bundle and its unpacked debs.
HEADROOM = 100 * MIB
ARCHITECTURES = ("x86_64", "amd64")


def _mib(value):
    return round(value / float(MIB), 1)


def room_needed(manifest, cache_keep):
    """(needed, bundle, unpacked) in bytes: the cache keeps cache_keep versions of
    the bundle, and dpkg unpacks each deb's Installed-Size (installed_size in the
    manifest, recorded by scripts/topsrider-manifest; none for a manifest
    written before it did), plus HEADROOM."""
    files = manifest["files"]
    bundle = sum(int(f["size"]) for f in files)
    unpacked = sum(int(f["installed_size"]) for f in files if f.get("type") == "deb" and f.get("installed_size") is not None)
    return bundle * int(cache_keep) + unpacked + HEADROOM, bundle, unpacked


def preflight_problem(state, host, manifest, cache_keep, cache_root, expected_count=None):
    """'' when the node may be deployed, else the refusal: the first failing check's
    sentence. state: the preflight's topsrider_state result's state (system,
    space, dpkg_lock, devices); expected_count: topsrider_expected_count, or None."""
    system, space, lock = state["system"], state["space"], state["dpkg_lock"]
    if system.get("os_family") != "Debian" or system.get("architecture") not in ARCHITECTURES:
        return ("%s is %s on %s; TopsRider for T20 ships amd64 .debs for Debian/Ubuntu only. Remove the host from the "
                "t20 group." % (host, system.get("os_family"), system.get("architecture")))
    need, bundle, unpacked = room_needed(manifest, cache_keep)
    free = int(space.get("free") or 0)
    if space.get("error") is not None or free < need:
        return ("%s: not enough disk for TopsRider %s under %s (the file system of %s): needed %d bytes (%s MiB: the "
                "bundle, %s MiB, times topsrider_cache_keep %d, plus %s MiB that dpkg unpacks, plus 100 MiB), free %d "
                "bytes (%s MiB). Nothing was sent or changed. Free space under %s (old versions) or on its file system.%s"
                % (host, manifest["version"], cache_root, space.get("checked"), need, _mib(need), _mib(bundle),
                   int(cache_keep), _mib(unpacked), free, _mib(free), cache_root,
                   " (%s)" % space["error"] if space.get("error") is not None else ""))
    if lock.get("busy") is not None:
        return ("%s is held by another process: another apt/dpkg run (unattended-upgrades?) is active on %s. Wait for it "
                "to finish, or stop it, and deploy again." % (lock["busy"], host))
    if lock.get("error") is not None:
        return "%s: %s; nothing was changed." % (host, lock["error"])
    if expected_count is not None:
        cards = state["devices"]
        if cards.get("error") is not None or cards.get("count") != int(expected_count):
            seen = ("cannot count them: %s" % cards["error"] if cards.get("error") is not None
                    else "the driver sees %s (PCI sees %s)" % (cards.get("count"), cards.get("pci_count") or "?"))
            return ("%s: expected %d GCUs (topsrider_expected_count), %s; nothing was changed. Check the cards and the "
                    "driver (efsmi), or set topsrider_expected_count for this host." % (host, int(expected_count), seen))
    return ""


def file_sums(files, paths):
    """{path: sha256, or None where the file does not exist} for `paths`, from a
    topsrider_state read's files."""
    return dict((path, (files.get(path) or {}).get("sha256") if (files.get(path) or {}).get("exists") else None)
                for path in paths)


def snapshot_plan(state, deploy_id, managed_files, open_path, manifest_sha256, package_plan, torch_gcu):
    """The snapshot decision from the preflight's read (state: files, the
    open-deploy mark at open_path among its records, and system.local, the
    local facts), the check-mode plan of deb_bundle (package_plan: the
    packages it would change) and the training Python's torch_gcu as
    torch_gcu's preflight read it:
    {id, continues, open, new_release, needed, before: {files, torch_gcu}}."""
    files = state["files"]
    mark = _record(state.get("records"), open_path)
    if mark["problem"]:
        raise ValueError(_open_mark_refusal(open_path, "cannot be used (%s)" % mark["problem"]))
    opened = mark["value"]
    if mark["exists"] and (not isinstance(opened.get("id"), str) or not opened["id"]):
        raise ValueError(_open_mark_refusal(open_path, "names no deploy id"))
    facts = ((state.get("system") or {}).get("local") or {}).get("topsrider") or {}
    new_release = (facts.get("manifest_sha256") or "") != manifest_sha256
    return {
        "id": opened["id"] if opened else deploy_id,
        "continues": opened is not None,
        "open": opened,
        "new_release": new_release,
        "needed": new_release or len(package_plan or []) > 0,
        "before": {"files": file_sums(files, managed_files), "torch_gcu": torch_gcu},
    }


def deploy_result(version, snapshot, files_now, managed_files, wheel_changed):
    """The host's report line once its rollout finished: snapshot is
    snapshot_plan's result, files_now the end-state read's files (None in check
    mode, which wrote nothing: the files are as they were). Changed: a new
    release or packages, a managed file, the wheel."""
    now = snapshot["before"]["files"] if files_now is None else file_sums(files_now, managed_files)
    changed = bool(snapshot["needed"] or now != snapshot["before"]["files"] or wheel_changed)
    verb = "deployed" if snapshot["new_release"] else "repaired at" if changed else "already at"
    return {"result": "ok", "version": version, "changed": changed, "detail": "%s %s" % (verb, version)}


def _open_mark_refusal(open_path, fault):
    """The refusal of a deploy or a rollback over an open-deploy mark that cannot be used."""
    return ("%s, the record of a deploy that never finished here, %s; nothing was changed. Put it back from a "
            "backup, or remove it when the node is in the state a rollback should return to" % (open_path, fault))


def _record(records, path):
    """topsrider_state's reading of one record (state.records[path]); a path it was not asked for reads as absent."""
    return (records or {}).get(path) or {"exists": False, "value": None, "problem": None}


def restore_plan(records, snapshot_id, state_dir, facts_file, host, require_journal=True):
    """What a restore of deploy snapshot `snapshot_id` reads and must end in,
    from one topsrider_state read of its three records (`records`, its
    state.records: the snapshot, its package journal, the open-deploy mark):
    {problem: '' or the refusal, snapshot, journal (None: none), journal_path,
    desired (topsrider_state's desired state afterwards), pip (next to the
    training Python), closes (whether the open-deploy mark names this
    snapshot: the restore undoes that deploy)}."""
    snapshot_path = "%s/deploys/%s.json" % (state_dir, snapshot_id)
    journal_path = "%s/snapshots/%s.json" % (state_dir, snapshot_id)
    open_path = "%s/open-deploy.json" % state_dir
    plan = {"problem": "", "snapshot": None, "journal": None, "journal_path": journal_path, "desired": None,
            "pip": None, "closes": False}
    snap, jour = _record(records, snapshot_path), _record(records, journal_path)
    if not snap["exists"]:
        plan["problem"] = ("%s has no deploy snapshot %s; nothing was changed. List the snapshots with 'ls %s/deploys' "
                           "on the node and name one with -e topsrider_snapshot=<id>." % (host, snapshot_path, state_dir))
        return plan
    unusable = ["the %s cannot be used: %s" % (what, rec["problem"])
                for what, rec in (("deploy snapshot %s" % snapshot_id, snap), ("package journal", jour)) if rec["problem"]]
    if unusable:
        plan["problem"] = "%s: %s; nothing was changed." % (host, "; ".join(unusable))
        return plan
    snapshot, journal = snap["value"], jour["value"]
    if journal is None and snapshot.get("packages_journalled") and require_journal:
        plan["problem"] = (
            "snapshot %s says its packages were journalled, but %s is missing, so the package versions and holds "
            "before %s cannot be put back; nothing was changed. Put the file back from a backup and run again, or "
            "deploy the release you want instead (deploy.yml -e topsrider_bundle_dir=<release %s> "
            "-e topsrider_allow_downgrade=true)." % (snapshot_id, journal_path, snapshot.get("to_version") or "that deploy",
                                                     snapshot.get("from_version") or "?"))
        return plan
    opened = _record(records, open_path)["value"] or {}
    python = (snapshot.get("torch_gcu") or {}).get("python") or ""
    plan.update(snapshot=snapshot, journal=journal, desired=restore_desired(snapshot, journal, facts_file, host),
                pip="%s/pip3" % python.rsplit("/", 1)[0] if "/" in python else "pip3",
                closes=opened.get("id") == snapshot_id)
    return plan


def rollback_choice(records, state_dir, requested, facts, facts_file):
    """Which deploy snapshot a rollback restores, from topsrider_state's read of
    the open-deploy mark (`records`, its state.records) and the local facts
    (`facts`, ansible_local's topsrider, or None): the operator's `requested`
    id (topsrider_snapshot) when given, else the open deploy's (an unfinished
    deploy is undone first: its snapshot is the last state that was whole),
    else the one the local facts name. {id, from (what the node is rolled back
    from, for the report), problem ('' or the refusal; nothing has changed)}."""
    open_path = "%s/open-deploy.json" % state_dir
    mark = _record(records, open_path)
    facts = facts if isinstance(facts, dict) else {}
    if mark["problem"]:
        return {"id": "", "from": "", "problem": _open_mark_refusal(open_path, "cannot be used (%s)" % mark["problem"])}
    opened = mark["value"] or {}
    chosen = requested or opened.get("id") or facts.get("snapshot") or ""
    undoes_open = bool(opened) and chosen == opened.get("id")
    choice = {"id": chosen, "problem": "",
              "from": ("the unfinished deploy of %s" % (opened.get("to_version") or "?")) if undoes_open
              else facts.get("version") or "?"}
    if not chosen:
        choice["problem"] = ("no deploy is recorded in %s, so there is no snapshot to roll back to; nothing was changed. "
                             "Name one with -e topsrider_snapshot=<id> (ls %s/deploys)." % (facts_file, state_dir))
    else:
        problems = value_problems({"topsrider_snapshot": chosen}, "name")
        if problems:
            choice["problem"] = "%s; nothing was changed. Name one with -e topsrider_snapshot=<id> (ls %s/deploys)." % (
                "; ".join(problems), state_dir)
    return choice
