# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""deb_bundle's run: DebBundle takes one run of the module through its steps
(select what the run is about, decide, act under the dpkg lock with a
journal, prove), and check_params says what the argument spec cannot. The
module file is its documentation and the argument spec; dpkg's data is
_dpkg.py, its I/O _dpkg_io.py, the journal _journal.py, manifests
_manifest.py.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import datetime
import os

from ansible_collections.gcu.topsrider.plugins.module_utils._dpkg import (
    VERSION_ACTIONS, DpkgError, QUERY_FORMAT, architecture_ok, audit_problems, check_transaction, deb_info,
    installed_version, is_held, parse_dpkg_query, plan_absent, plan_present, plan_restore, split_plan)
from ansible_collections.gcu.topsrider.plugins.module_utils._dpkg_io import (
    acquire_dpkg_lock, deb_candidates, release_dpkg_lock)
from ansible_collections.gcu.topsrider.plugins.module_utils._journal import (
    JournalError, add_event, indexed_deb, latest_restorable, list_snapshots, load_index,
    load_snapshot, merge_snapshot, new_snapshot_id, record_debs, restore_targets, save_index,
    save_snapshot, snapshot_path)
from ansible_collections.gcu.topsrider.plugins.module_utils._manifest import (
    ManifestError, describe_problems, entries, load as load_manifest, sha256_file,
    validate as validate_manifest, verify as verify_files)
from ansible_collections.gcu.topsrider.plugins.module_utils._node import C_LOCALE
from ansible_collections.gcu.topsrider.plugins.module_utils._signature import check_release

# The node's record of the newest revocation list it accepted, in journal_dir.
REVOCATIONS_SEEN = "revocations-seen.json"


def _utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0, tzinfo=None)


def _iso(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


class DebBundle(object):
    """One run of the module, in steps: select (what the run is about), decide
    (the plan, with nothing changed), report (the plan and the diff), apply
    (the dpkg transaction, journalled, put back on failure)."""

    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.dpkg = module.get_bin_path("dpkg", required=True)
        self.dpkg_deb = module.get_bin_path("dpkg-deb", required=True)
        self.dpkg_query = module.get_bin_path("dpkg-query", required=True)
        self.lock_fd = None
        self.names = []
        self.result = {"changed": False, "plan": [], "snapshot": None, "packages": {},
                       "held": [], "recovered": False}

    def main(self):
        debs, snap = self.select()
        if not self.module.check_mode:
            self.take_lock()
        self.audit()
        installed = self.query()
        plan, debs_for = self.decide(installed, debs, snap)
        self.report_plan(installed, plan)
        if self.module.check_mode or not plan:
            self.exit()
        if snap is not None:
            self.apply_rollback(snap, debs_for)
        else:
            self.apply_change(installed, plan, debs_for)
        packages, held = self.report_now()
        self.result.update(packages=packages, held=held)
        self.exit()

    # -- commands, lock and exits -------------------------------------------

    def run(self, argv, data=None, mutating=False, check_rc=True, what=None):
        env = dict(C_LOCALE)
        if mutating:
            # We hold /var/lib/dpkg/lock-frontend ourselves (acquire_dpkg_lock),
            # for the whole transaction including a rollback; this tells dpkg
            # not to try to take it again (it would wait on us), as apt does.
            env["DPKG_FRONTEND_LOCKED"] = "1"
            env["DEBIAN_FRONTEND"] = "noninteractive"
        rc, out, err = self.module.run_command(argv, data=data, environ_update=env,
                                               binary_data=data is not None)
        if check_rc and rc != 0:
            self.fail("%s failed (rc=%d)%s" % (" ".join(argv), rc, (": " + what) if what else ""),
                      cmd=" ".join(argv), rc=rc, stdout=out, stderr=err)
        return rc, out, err

    def fail(self, msg, **kwargs):
        self.release_lock()
        result = dict(self.result)
        result.update(kwargs)
        self.module.fail_json(msg=msg, **result)

    def exit(self):
        self.release_lock()
        self.module.exit_json(**self.result)

    def release_lock(self):
        fd, self.lock_fd = self.lock_fd, None
        release_dpkg_lock(fd)

    def take_lock(self):
        timeout = self.p["lock_timeout"]
        fd, busy = acquire_dpkg_lock(timeout)
        if fd is None:
            self.fail("could not get the dpkg lock %s within lock_timeout=%ds: another package "
                      "manager (apt, unattended-upgrades, dpkg) is running; nothing was changed"
                      % (busy, timeout), lock=busy)
        self.lock_fd = fd

    def query(self):
        rc, out, err = self.run([self.dpkg_query, "-W", "-f=" + QUERY_FORMAT])
        return parse_dpkg_query(out)

    def read_deb(self, path):
        rc, out, err = self.run([self.dpkg_deb, "--field", path], what="cannot read %s" % path)
        try:
            return deb_info(out)
        except DpkgError as e:
            self.fail("%s: %s" % (path, e))

    def architectures(self):
        native = self.run([self.dpkg, "--print-architecture"])[1].strip()
        foreign = self.run([self.dpkg, "--print-foreign-architectures"])[1].split()
        return native, foreign

    # -- select: what this run is about -----------------------------------

    def select(self):
        """Sets self.names (the packages this run manages); returns (the bundle's
        debs to install, the snapshot to restore): ([], None) for state=absent."""
        p = self.p
        if p["state"] == "present":
            debs = self.prepare_present()
            self.names = [d["package"] for d in debs]
            return debs, None
        if p["state"] == "absent":
            manifest = self.load_manifest()
            if manifest is not None:
                self.names = [d["package"] for d in self.selected_debs(manifest)]
            else:
                self.names = list(p["packages"] or [])
            if not self.names:
                self.fail("state=absent needs packages, or a manifest with debs")
            return [], None
        snap = self.find_snapshot()
        self.names = sorted(snap.get("packages", {}))
        if p["packages"] is not None:
            unknown = sorted(set(p["packages"]) - set(self.names))
            if unknown:
                self.fail("snapshot %s does not record %s" % (snap["id"], ", ".join(unknown)))
            self.names = sorted(p["packages"])
        return [], snap

    def manifest_path(self):
        """The manifest file this run reads (None without path and manifest)."""
        p = self.p
        path = p["manifest"]
        if path is None and p["path"] is None:
            return None
        if path is None:
            path = "manifest.json"
        if not os.path.isabs(path):
            if p["path"] is None:
                self.fail("manifest %s is relative: give path too" % path)
            path = os.path.join(p["path"], path)
        return path

    def check_signature(self):
        """docs/signing.md, the node's own check: with a keyring, the manifest
        this node holds must be signed by a key of it and not revoked by the
        revocation list sent with it (no older than the newest this node has
        seen, recorded in journal_dir); before anything else is read or changed."""
        p = self.p
        if not p["keyring"]:
            return
        if p["manifest_content"] is not None:
            self.fail("keyring needs the signed manifest file (path or manifest), not manifest_content; nothing was changed")
        seen = p["revocations_seen"] or os.path.join(p["journal_dir"], REVOCATIONS_SEEN)
        checked = check_release(self.manifest_path(), p["keyring"], p["revocations"], seen,
                                record=not self.module.check_mode)
        found = dict((k, checked[k]) for k in ("key_id", "fingerprint", "revocations_serial", "recorded", "revoked"))
        if not checked["ok"]:
            self.fail("refused, nothing was changed: %s" % checked["problem"], signature=dict(found, code=checked["code"]))
        self.result["signature"] = found
        if checked["recorded"]:
            # This node's record of the newest revocation list (predicted in check mode).
            self.result["changed"] = True

    def load_manifest(self):
        p = self.p
        if p["manifest_content"] is not None:
            try:
                return validate_manifest(p["manifest_content"])
            except ManifestError as e:
                self.fail("manifest_content: %s" % e)
        path = self.manifest_path()
        if path is None:
            return None
        try:
            return load_manifest(path)
        except ManifestError as e:
            self.fail(str(e))

    def selected_debs(self, manifest):
        debs = entries(manifest, "deb")
        names = self.p["packages"]
        if names is None:
            return debs
        known = set(d["package"] for d in debs)
        unknown = sorted(set(names) - known)
        if unknown:
            self.fail("packages not in the manifest's debs: %s (it has: %s)"
                      % (", ".join(unknown), ", ".join(sorted(known))))
        return [d for d in debs if d["package"] in names]

    def prepare_present(self):
        p = self.p
        if p["path"] is None:
            self.fail("state=present needs path")
        self.check_signature()
        manifest = self.load_manifest()
        problems = verify_files(p["path"], manifest)
        if problems:
            self.fail("bundle files in %s do not match the manifest, nothing was changed: %s"
                      % (p["path"], "; ".join(describe_problems(problems))), mismatches=problems)
        self.result["verified"] = [e["file"] for e in manifest["files"]]
        native, foreign = self.architectures()
        debs = []
        bad = []
        for entry in self.selected_debs(manifest):
            path = os.path.join(p["path"], entry["file"])
            info = self.read_deb(path)
            for key in ("package", "version", "architecture"):
                if info[key] != entry[key]:
                    bad.append("%s: the deb says %s %s, the manifest %s"
                               % (entry["file"], key, info[key], entry[key]))
            if not architecture_ok(info["architecture"], native, foreign):
                bad.append("%s: architecture %s does not run on this node (%s%s)"
                           % (entry["file"], info["architecture"], native,
                              "".join(", " + f for f in foreign)))
            info["path"] = path
            info["sha256"] = entry["sha256"]
            debs.append(info)
        if bad:
            self.fail("the bundle does not fit this node, nothing was changed: " + "; ".join(bad))
        return debs

    def find_snapshot(self):
        jd = self.p["journal_dir"]
        try:
            if self.p["snapshot"]:
                snap = load_snapshot(jd, self.p["snapshot"])
                if snap is None:
                    self.fail("no snapshot %s in %s" % (self.p["snapshot"], jd))
                if snap.get("status") == "pending":
                    self.module.warn("snapshot %s was never completed (status pending)" % snap["id"])
                return snap
            snap = latest_restorable(list_snapshots(jd))
        except JournalError as e:
            self.fail(str(e))
        if snap is None:
            self.fail("no snapshot to roll back to in %s" % jd)
        return snap

    def audit(self):
        """Check for a half-finished dpkg run; repair it when asked."""
        out = audit_problems(self.run([self.dpkg, "--audit"])[1])
        if not out:
            return
        if not self.p["recover_interrupted"]:
            self.fail("dpkg reports an interrupted or half-finished earlier run; nothing was changed. "
                      "Set recover_interrupted=true to repair it with 'dpkg --configure -a'. "
                      "dpkg --audit said: " + out, audit=out)
        self.result["recovered"] = True
        self.result["changed"] = True
        if self.module.check_mode:
            self.module.warn("check mode: dpkg --configure -a would run first to repair: " + out)
            return
        self.run([self.dpkg, "--configure", "-a"], mutating=True,
                 what="repairing the interrupted dpkg run")
        left = audit_problems(self.run([self.dpkg, "--audit"])[1])
        if left:
            self.fail("dpkg --configure -a did not repair the dpkg database; dpkg --audit still says: "
                      + left, audit=left)

    # -- decide: the plan, nothing changed --------------------------------

    def decide(self, installed, debs, snap):
        """(plan, {name: {"path", "sha256"}} of the debs the plan installs); fails,
        with nothing changed, on a refused downgrade, a missing deb or unmet dependencies."""
        if snap is not None:
            return self.plan_rollback(snap, installed)
        plan, by_name = self.plan_for(installed, debs)
        return plan, dict((n, {"path": d["path"], "sha256": d["sha256"]}) for n, d in by_name.items())

    def plan_for(self, installed, debs):
        p = self.p
        state = p["state"]
        if state == "present":
            plan = plan_present(debs, installed, p["hold"])
            downgrades = [e for e in plan if e["action"] == "downgrade"]
            if downgrades and not p["allow_downgrade"]:
                self.fail("refusing to downgrade, nothing was changed: %s. Set allow_downgrade=true, "
                          "or use state=rolled_back to return to a snapshot"
                          % "; ".join("%s installed %s is newer than the bundle's %s"
                                      % (e["package"], e["before"], e["after"]) for e in downgrades),
                          plan=plan)
            by_name = dict((d["package"], d) for d in debs)
            changes = dict((e["package"], by_name[e["package"]]) for e in plan if e["action"] in VERSION_ACTIONS)
            self.check_dependencies(installed, changes)
            return plan, by_name
        if state == "absent":
            plan = plan_absent(self.names, installed)
            self.check_dependencies(installed, dict((e["package"], None) for e in plan))
            return plan, {}
        raise AssertionError(state)

    def plan_rollback(self, snap, installed):
        targets = restore_targets(snap, self.names)
        plan = plan_restore(targets, installed)
        index = self.safe_index()
        debs_for = {}
        missing = []
        changes = {}
        for e in plan:
            if e["action"] == "remove":
                changes[e["package"]] = None
            if e["action"] not in VERSION_ACTIONS:
                continue
            name, version = e["package"], e["after"]
            rec = snap["packages"][name].get("before_deb")
            arch = (installed.get(name) or {}).get("architecture") or None
            deb = self.locate_deb(name, version, arch, rec, index)
            if deb is None:
                where = [rec["path"]] if rec and rec.get("path") else []
                missing.append("%s %s (looked for %s in %s)" % (
                    name, version, ", ".join(where) or "a recorded deb",
                    ", ".join(self.p["cache_dirs"])))
                continue
            debs_for[name] = deb
            changes[name] = self.read_deb(deb["path"])
        if missing:
            self.fail("cannot roll back to snapshot %s, the deb needed is gone: %s; nothing was changed"
                      % (snap["id"], "; ".join(missing)), plan=plan)
        self.check_dependencies(installed, changes)
        self.result["snapshot"] = snap["id"]
        return plan, debs_for

    def check_dependencies(self, installed, changes):
        try:
            unmet = check_transaction(installed, changes)
        except DpkgError as e:
            self.fail("cannot check dependencies: %s" % e)
        if unmet:
            lines = ["%s %s needs %s" % (u["package"], u["version"], u["requires"]) for u in unmet]
            self.fail("unmet dependencies, nothing was changed: " + "; ".join(lines), unmet=unmet)

    def safe_index(self):
        try:
            return load_index(self.p["journal_dir"])
        except JournalError as e:
            self.module.warn("ignoring the deb index: %s" % e)
            return {}

    def locate_deb(self, package, version, arch, recorded, index):
        """A verified deb file for package=version: the recorded one, the one in the
        index, or one found in cache_dirs. Returns {"path", "sha256"} or None."""
        for path, sha in deb_candidates(self.p["cache_dirs"], package, version, arch, recorded,
                                        indexed_deb(index, package, version)):
            digest = sha256_file(path)
            if sha and digest != sha:
                self.module.warn("%s does not match the sha256 recorded for %s %s; not using it"
                                 % (path, package, version))
                continue
            rc, out, err = self.run([self.dpkg_deb, "--field", path], check_rc=False)
            if rc != 0:
                continue
            try:
                info = deb_info(out)
            except DpkgError:
                continue
            if info["package"] == package and info["version"] == version:
                return {"path": path, "sha256": digest}
        return None

    # -- report: the plan, the diff, what dpkg has now --------------------

    def report_plan(self, installed, plan):
        before_pkgs, before_held = self.managed_state(installed, self.names)
        after_pkgs, after_held = self.predicted_state(installed, self.names, plan)
        self.result.update(plan=plan, packages=after_pkgs, held=after_held)
        self.result["diff"] = {"before": {"packages": before_pkgs, "held": before_held},
                               "after": {"packages": after_pkgs, "held": after_held}}
        if plan:
            self.result["changed"] = True

    def report_now(self):
        """The managed packages and holds dpkg has now, as the diff's after; returned too."""
        packages, held = self.managed_state(self.query(), self.names)
        self.result["diff"]["after"] = {"packages": packages, "held": held}
        return packages, held

    def managed_state(self, installed, names):
        packages = dict((n, installed_version(installed.get(n))) for n in sorted(names))
        held = sorted(n for n in names if is_held(installed.get(n)) and packages[n] is not None)
        return packages, held

    def predicted_state(self, installed, names, plan):
        packages, held = self.managed_state(installed, names)
        held = set(held)
        for e in plan:
            if e["action"] == "hold":
                held.add(e["package"])
            elif e["action"] == "unhold":
                held.discard(e["package"])
            else:
                packages[e["package"]] = e["after"]
                if e["after"] is None:
                    held.discard(e["package"])
        return packages, sorted(held)

    # -- apply: the dpkg transaction, journalled --------------------------

    def apply_change(self, installed, plan, debs_for):
        install, remove, hold_names, unhold_names = split_plan(plan)
        touched = sorted(set(install) | set(remove) | set(hold_names) | set(unhold_names))
        index = self.safe_index()
        records, previous_debs = self.before_records(installed, touched, set(install) | set(remove), index)
        snap, existing = self.journal_start(records, plan)
        failed = self.apply_versions([debs_for[n]["path"] for n in install], remove, purge=self.p["purge"])
        if failed is None:
            self.finish_applied(snap, index, install, debs_for)
        else:
            self.undo_failed(failed, snap, existing, records, previous_debs)

    def before_records(self, installed, touched, versions_change, index):
        """The snapshot's record of each touched package (before and after this run),
        and the deb that can put each back ({name: {"path", "sha256"} or None})."""
        records = {}
        previous_debs = {}
        for name in touched:
            entry = installed.get(name)
            before = installed_version(entry)
            before_deb = None
            if before is not None:
                before_deb = self.locate_deb(name, before, entry.get("architecture") or None, None, index)
                if before_deb is None and name in versions_change:
                    self.module.warn("no deb of %s %s found in the journal or in %s: a rollback to this "
                                     "snapshot cannot reinstall it" % (name, before, ", ".join(self.p["cache_dirs"])))
            previous_debs[name] = before_deb
            records[name] = {"before": before, "before_held": is_held(entry), "before_deb": before_deb,
                             "after": self.result["packages"].get(name), "after_held": name in self.result["held"]}
        return records, previous_debs

    def journal_start(self, records, plan):
        """Write the snapshot (merged into an existing one of that id) with its start
        event, before anything changes. Returns (snapshot, the existing one or None)."""
        p = self.p
        jd = p["journal_dir"]
        now = _utcnow()
        try:
            snapshot_id = p["snapshot"]
            if not snapshot_id:
                existing_ids = set(s.get("id") for s in list_snapshots(jd))
                snapshot_id = new_snapshot_id(now, existing_ids)
            existing = load_snapshot(jd, snapshot_id)
            snap = merge_snapshot(existing, snapshot_id, _iso(now), p["state"], records)
            snap = add_event(snap, _iso(now), "start", {"plan": plan})
            save_snapshot(jd, snap)
        except (JournalError, OSError, IOError) as e:
            self.fail("cannot write the journal in %s, nothing was changed: %s" % (jd, e))
        self.result["snapshot"] = snapshot_id
        self.result["journal"] = snapshot_path(jd, snapshot_id)
        return snap, existing

    def finish_applied(self, snap, index, install, debs_for):
        """The versions are in: set the holds, mark the snapshot applied, index the debs installed."""
        p = self.p
        jd = p["journal_dir"]
        managed = self.names if p["state"] == "present" else []
        self.set_holds(dict((n, p["hold"]) for n in managed))
        snap = add_event(snap, _iso(_utcnow()), "applied")
        if snap.get("status") != "applied":
            snap["status"] = "applied"
        save_snapshot(jd, snap)
        save_index(jd, record_debs(index, [
            {"package": n, "version": self.result["packages"][n], "path": debs_for[n]["path"],
             "sha256": debs_for[n]["sha256"]} for n in install]))

    def undo_failed(self, failed, snap, existing, records, previous_debs):
        """The transaction failed: put back what this run changed, journal it and fail."""
        argv, rc, out, err = failed
        targets = dict((n, {"version": r["before"], "held": r["before_held"]}) for n, r in records.items())
        ok, problems = self.restore(targets, dict((n, d) for n, d in previous_debs.items() if d))
        packages, held = self.report_now()
        if existing is None:
            snap["status"] = "failed-restored" if ok else "failed"
        elif not ok:
            snap["status"] = "failed"
        if existing is not None and ok:
            # the packages this run added to an existing snapshot are back as they were
            snap["packages"] = existing.get("packages", {})
        snap = add_event(snap, _iso(_utcnow()), "failed", {
            "cmd": " ".join(argv), "rc": rc, "restored": ok, "problems": problems})
        save_snapshot(self.p["journal_dir"], snap)
        if ok:
            state_msg = "the node was put back to its previous versions: %s" % _describe(packages, held)
        else:
            state_msg = ("putting the node back did not complete (%s); the node is left with: %s"
                         % ("; ".join(problems), _describe(packages, held)))
        self.result["changed"] = not ok
        # The reason first (the output's tail), the whole command line in cmd.
        self.fail("%s failed (rc=%d): %s. %s" % (_short(argv), rc, _tail(err or out), state_msg),
                  cmd=" ".join(argv), rc=rc, stdout=out, stderr=err, restored=ok,
                  packages=packages, held=held, restore_problems=problems)

    def apply_rollback(self, snap, debs_for):
        targets = restore_targets(snap, self.names)
        ok, problems = self.restore(targets, debs_for)
        snap = add_event(snap, _iso(_utcnow()), "rolled_back" if ok else "rollback-failed",
                         {"packages": sorted(targets), "problems": problems})
        save_snapshot(self.p["journal_dir"], snap)
        if not ok:
            packages, held = self.report_now()
            self.fail("rollback to snapshot %s did not complete: %s. The node is left with: %s"
                      % (snap["id"], "; ".join(problems), _describe(packages, held)),
                      packages=packages, held=held, restored=False)

    def apply_versions(self, install_paths, remove_names, purge):
        """One dpkg transaction for the installs, one for the removals.
        Returns None or (argv, rc, out, err) of the step that failed."""
        if install_paths:
            argv = [self.dpkg, "--install", "--"] + install_paths
            rc, out, err = self.run(argv, mutating=True, check_rc=False)
            if rc != 0:
                return argv, rc, out, err
        if remove_names:
            argv = [self.dpkg, "--purge" if purge else "--remove", "--"] + sorted(remove_names)
            rc, out, err = self.run(argv, mutating=True, check_rc=False)
            if rc != 0:
                return argv, rc, out, err
        return None

    def set_holds(self, want_held):
        """want_held: {name: bool}; dpkg -i resets a hold, so this always runs
        against the current database."""
        installed = self.query()
        lines = []
        for name in sorted(want_held):
            if installed_version(installed.get(name)) is None:
                continue
            if want_held[name] and not is_held(installed.get(name)):
                lines.append("%s hold\n" % name)
            elif not want_held[name] and is_held(installed.get(name)):
                lines.append("%s install\n" % name)
        if lines:
            self.run([self.dpkg, "--set-selections"], data="".join(lines), mutating=True,
                     what="setting holds")

    def restore(self, targets, debs_for):
        """Put packages back to targets ({name: {version, held}}); debs_for:
        {name: {"path", "sha256"}} for the versions to reinstall. Returns
        (restored, problems)."""
        installed = self.query()
        plan = plan_restore(targets, installed)
        install, remove, _hold, _unhold = split_plan(plan)
        problems = []
        paths = []
        for name in install:
            deb = debs_for.get(name)
            if not deb:
                problems.append("no deb for %s %s" % (name, targets[name]["version"]))
            else:
                paths.append(deb["path"])
        failed = self.apply_versions(paths, remove, purge=True)
        if failed:
            argv, rc, out, err = failed
            problems.append("%s failed (rc=%d): %s" % (" ".join(argv), rc, (err or out).strip()[-2000:]))
        self.set_holds(dict((n, t["held"]) for n, t in targets.items()))
        after = self.query()
        for name, t in sorted(targets.items()):
            entry = after.get(name)
            if installed_version(entry) != t["version"] or (
                    t["version"] is not None and entry["status"] != "installed"):
                problems.append("%s is %s %s, wanted %s" % (
                    name, installed_version(entry), entry["status"] if entry else "absent", t["version"]))
        return not problems, problems


def _short(argv):
    """dpkg's name and its action ("dpkg --install"), not every .deb's path."""
    return " ".join([os.path.basename(argv[0])] + [a for a in argv[1:] if a.startswith("--") and a != "--"][:1])


def _tail(text, lines=8):
    text = (text or "").strip().splitlines()
    return " | ".join(text[-lines:])


def _describe(packages, held):
    return ", ".join("%s %s%s" % (n, v if v is not None else "absent", " (held)" if n in held else "")
                     for n, v in sorted(packages.items())) or "no packages"


def check_params(module):
    """What the argument spec cannot say."""
    if not 0 <= module.params["lock_timeout"] <= 3600:
        module.fail_json(msg="lock_timeout must be between 0 and 3600 seconds, got %d"
                         % module.params["lock_timeout"])
    if module.params["revocations"] and not module.params["keyring"]:
        module.fail_json(msg="revocations needs keyring: a revocation list is trusted only with the keyring that checks "
                             "its signature; nothing was changed")
    if module.params["keyring"] and module.params["state"] != "present":
        module.fail_json(msg="keyring is for state=present (the release about to be installed); nothing was changed")
    if module.params["snapshot"] is not None:
        try:
            snapshot_path("/", module.params["snapshot"])
        except JournalError as e:
            module.fail_json(msg=str(e))
