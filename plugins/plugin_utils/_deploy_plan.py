# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one host's rollout decides from the node's read, before it acts, and
what it says at the end (tasks/rollout.yml and deploy.yml, on the controller;
filters topsrider_preflight_problem, topsrider_snapshot_plan and
topsrider_deploy_result).

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

import json

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
    """The snapshot decision from the preflight's read (state: files, with
    open_path among them, and system.local, the local facts), the check-mode
    plan of deb_bundle (package_plan: the packages it would change) and the
    training Python's torch_gcu as torch_gcu's preflight read it:
    {id, continues, open, new_release, needed, before: {files, torch_gcu}}."""
    files = state["files"]
    found = files.get(open_path) or {}
    opened = None
    if found.get("exists"):
        try:
            opened = json.loads(found.get("content") or "")
        except ValueError as e:
            raise ValueError("%s, the record of a deploy that never finished here, is not JSON (%s); nothing was changed. "
                             "Put it back from a backup, or remove it when the node's current state is what a rollback "
                             "should return to" % (open_path, e))
        if not isinstance(opened, dict) or not isinstance(opened.get("id"), str) or not opened["id"]:
            raise ValueError("%s, the record of a deploy that never finished here, names no deploy id; nothing was "
                             "changed. Put it back from a backup, or remove it when the node's current state is what a "
                             "rollback should return to" % open_path)
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
