# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The torch_gcu wheel's whole life in a training environment (node side, for
gcu.topsrider.torch_gcu_wheel): check an environment against a bundle,
install the bundle's wheel offline, put back the version a deploy snapshot
recorded (from the cache it came from), or remove it; and the record
(/var/lib/topsrider/torch_gcu.json) of which version came from which file."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import re
import stat

from ansible_collections.gcu.topsrider.plugins.module_utils._atomic import write_atomic
from ansible_collections.gcu.topsrider.plugins.module_utils._pep440 import NoPackagingError, satisfies
from ansible_collections.gcu.topsrider.plugins.module_utils._torch_rule import torch_matches
from ansible_collections.gcu.topsrider.plugins.module_utils._manifest import sha256_file
from ansible_collections.gcu.topsrider.plugins.module_utils._node import C_LOCALE
from ansible_collections.gcu.topsrider.plugins.module_utils._state import read_python

WHEEL_FILE = re.compile(r"^[A-Za-z0-9_.+-]+\.whl\Z")
# pip's own settings for every pip call: no network, no prompts, nothing else
# installed or removed (--no-index/--no-deps are also on the command line).
PIP_ENVIRONMENT = dict(C_LOCALE, PIP_NO_INDEX="1", PIP_NO_DEPS="1", PIP_NO_INPUT="1",
                       PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_ROOT_USER_ACTION="ignore")
# The pip that has install --dry-run.
PIP_DRY_RUN = ">=22.2"


def choose_wheel(manifest, python):
    """(the manifest entry of the torch_gcu wheel for Python `python`, every torch_gcu wheel)."""
    wheels = [f for f in manifest.get("files") or [] if isinstance(f, dict) and f.get("type") == "wheel"
              and f.get("package") in ("torch_gcu", "torch-gcu")]
    return next((w for w in wheels if w.get("python") == python), {}), wheels


def refusal(p, env, staged, manifest, wheel, wheels):
    """The first problem, as the message the operator reads; None when the environment fits the bundle."""
    if not all(str(p[k]).startswith("/") for k in ("bundle_path", "python", "pip", "state_file")):
        return ("torch_gcu: torch_gcu_bundle_path (the staged bundle, bundle_stage_path), torch_gcu_python, "
                "torch_gcu_pip and torch_gcu_state_file must be absolute node paths.")
    if env["error"] is not None or not (os.path.isfile(p["pip"]) and os.access(p["pip"], os.X_OK)):
        return ("torch_gcu: %s on this node, nothing was changed. Set torch_gcu_python to the python of the "
                "environment that trains (a venv's or conda env's bin/python) and torch_gcu_pip to that "
                "environment's pip (default: pip3 next to the python)."
                % (env["error"] if env["error"] is not None else p["pip"] + " does not exist or is not executable"))
    if not staged:
        return ("torch_gcu: %s/manifest.json does not exist on this node, nothing was changed. Stage the bundle "
                "first (role gcu.topsrider.bundle_stage), or pass the manifest as torch_gcu_manifest (e.g. "
                "bundle_stage_manifest, as a check-mode run on a fresh node must)." % p["bundle_path"])
    if not wheel or not WHEEL_FILE.match(str(wheel.get("file") or "")) or not wheel.get("requires_torch"):
        have = ", ".join(sorted(str(w.get("python")) for w in wheels)) or "none"
        return ("torch_gcu: TopsRider %s has no torch_gcu wheel for Python %s (%s), nothing was changed. The bundle "
                "has wheels for Python %s. Point torch_gcu_python at an environment with one of those Pythons (e.g. "
                "a venv made with that python3.X), or deploy a TopsRider release that ships a wheel for Python %s."
                % (manifest.get("version", "?"), env["python"], p["python"], have, env["python"]))
    if not torch_matches(env["torch"], "==" + str(wheel["requires_torch"])):
        want = wheel["requires_torch"]
        return ("torch_gcu: %s needs torch==%s, but %s has %s; nothing was changed. Install torch==%s in that "
                "environment first (e.g. %s install torch==%s); this role never installs or removes torch."
                % (wheel["file"], want, p["python"], "no torch" if env["torch"] is None else "torch " + env["torch"],
                   want, p["pip"], want))
    return None


def read_manifest(module, p):
    """(staged, manifest): the manifest given, else the staged manifest.json (staged False when there is none)."""
    if p["manifest"]:
        return True, p["manifest"]
    path = os.path.join(p["bundle_path"], "manifest.json")
    if not os.path.isfile(path):
        return False, {}
    try:
        with open(path, "rb") as f:
            return True, json.loads(f.read().decode("utf-8"))
    except (IOError, OSError, ValueError) as e:
        module.fail_json(msg="torch_gcu: %s is not readable JSON (%s), nothing was changed. Stage the bundle again "
                             "(role gcu.topsrider.bundle_stage)." % (path, e))


def read_record(module, path):
    """The state file's record ({} when there is none); an unreadable one refuses (it is rollback's input)."""
    if not os.path.exists(path):
        return {}
    try:
        with open(path, "rb") as f:
            record = json.loads(f.read().decode("utf-8"))
        if not isinstance(record, dict):
            raise ValueError("not a JSON object")
        return record
    except (IOError, OSError, ValueError) as e:
        module.fail_json(msg="torch_gcu: the state file %s is not readable JSON (%s), nothing was changed: it is "
                             "what a rollback reinstalls from. Move it aside (keep it) and run again." % (path, e))


def write_record(path, record):
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o700)
    if stat.S_IMODE(os.stat(directory).st_mode) != 0o700:
        os.chmod(directory, 0o700)
    write_atomic(path, json.dumps(record, indent=4, sort_keys=True) + "\n", 0o600, prefix=".torch_gcu.")


def check_staged(module, wheel, wheel_path):
    """The staged wheel is the manifest's (sha256), checked before pip reads it."""
    try:
        have = sha256_file(wheel_path)
    except (IOError, OSError) as e:
        module.fail_json(msg="torch_gcu: cannot read the staged wheel %s (%s), nothing was changed. Stage the bundle "
                             "again (role gcu.topsrider.bundle_stage)." % (wheel_path, e))
    if have != wheel.get("sha256"):
        module.fail_json(msg="torch_gcu: the staged wheel %s does not match the manifest (sha256 %s, the manifest "
                             "says %s), nothing was changed. Stage the bundle again (role gcu.topsrider.bundle_stage)."
                             % (wheel_path, have, wheel.get("sha256")))


def install(module, p, env, wheel_path, installed, version):
    """pip install of the staged wheel (a dry run in check mode, when pip can); what was done, as a message."""
    if module.check_mode and not (os.path.isfile(wheel_path) and satisfies(env["pip"], PIP_DRY_RUN)):
        reason = ("the wheel %s is not staged on this node yet" % wheel_path if not os.path.isfile(wheel_path)
                  else "pip %s has no --dry-run (22.2 or later)" % env["pip"])
        return ("check mode: %s, so pip cannot predict the install; a real run installs torch_gcu %s "
                "(installed now: %s) into %s." % (reason, version, installed, p["python"]))
    run_pip(module, [p["pip"], "install", "--no-index", "--no-deps"] + (["--dry-run"] if module.check_mode else [])
            + [wheel_path])
    return "%s torch_gcu %s into %s (was %s)" % (
        "check mode: pip would install" if module.check_mode else "installed", version, p["python"], installed)


def prove(module, p, env, version):
    """import torch_gcu works, at the wheel's version, with torch untouched; fails naming what is wrong."""
    rc, dummy, err = module.run_command([p["python"], "-c", "import torch_gcu"], environ_update=dict(C_LOCALE), cwd="/")
    after = read_python(module, p["python"])
    if rc == 0 and after["torch_gcu"] == version and after["torch"] == env["torch"]:
        return
    module.fail_json(msg=(
        "torch_gcu: 'import torch_gcu' in %s %s; torch_gcu is %s (wanted %s), torch is %s (was %s)%s. An ImportError "
        "naming libeccl.so means the ECCL library is not on the loader path: run the tops_sdk and eccl_env roles "
        "first (loader config, ldconfig). Previous state: %s." % (
            p["python"], "failed (rc=%d): %s" % (rc, " | ".join((err or "").strip().splitlines()[-3:]))
            if rc != 0 else "works", after["torch_gcu"], version, after["torch"], env["torch"],
            "; the probe failed: " + after["error"] if after["error"] is not None else "", p["state_file"])),
        environment=env, after=after, rc=rc, stderr=err)


def wheel_record(module, p, installed, version, wheel):
    """The record of a change from `installed` to `version` (from the file `wheel`, or None when unknown)."""
    recorded = read_record(module, p["state_file"])
    current = recorded.get("current") if isinstance(recorded.get("current"), dict) else {}
    return {
        "python": p["python"],
        # The wheel the previous version came from, when this module installed it.
        "previous": {"version": installed,
                     "wheel": current.get("wheel") if installed is not None and current.get("version") == installed
                     else None},
        "current": {"version": version, "wheel": wheel},
    }


# pip creates files by the umask it inherits: under a login umask of 0000 the
# training venv's code would be world-writable (any user could change what every
# job imports). Every pip run gets this one, whatever the caller's.
PIP_UMASK = 0o022


def run_pip(module, argv):
    rc, out, err = module.run_command(argv, environ_update=PIP_ENVIRONMENT, cwd="/", umask=PIP_UMASK)
    if rc != 0:
        module.fail_json(msg="torch_gcu: `%s` failed (rc=%d): %s" % (" ".join(argv), rc, " | ".join(
            (err or out or "no output").strip().splitlines()[-3:])), cmd=argv, rc=rc, stdout=out, stderr=err)


def prove_version(module, p, env, version):
    """After a restore or a removal: torch_gcu is `version` (None: not installed), torch untouched."""
    after = read_python(module, p["python"])
    if after["error"] is None and after["torch_gcu"] == version and after["torch"] == env["torch"]:
        return
    module.fail_json(msg="torch_gcu: after the change %s has torch_gcu %s (wanted %s) and torch %s (was %s)%s. "
                         "The record is %s." % (p["python"], after["torch_gcu"], version or "none", after["torch"],
                                                env["torch"], "; the probe failed: " + after["error"]
                                                if after["error"] is not None else "", p["state_file"]),
                     environment=env, after=after)


def restore(module, p, env):
    """state=restored: the version a snapshot recorded (p["version"]; empty: none) back, offline, from
    p["wheel"] (the file it came from) or p["find_links"] (the release's cache). (changed, msg)."""
    want, have = p["version"] or None, env["torch_gcu"]
    if want is None:
        return remove(module, p, env)
    if have == want:
        return False, "torch_gcu %s already in %s" % (want, p["python"])
    if not p["wheel"] and not p["find_links"]:
        module.fail_json(msg="torch_gcu: to put back torch_gcu %s in %s, name the wheel file it came from (wheel) or "
                             "the directory that holds it (find_links); nothing was changed." % (want, p["python"]),
                         environment=env)
    target = p["wheel"] or "torch_gcu==" + want
    argv = [p["pip"], "install", "--no-index", "--no-deps"] + (
        ["--find-links", p["find_links"]] if p["find_links"] else [])
    if module.check_mode:
        if not satisfies(env["pip"], PIP_DRY_RUN):
            return True, ("check mode: pip %s has no --dry-run (22.2 or later), so pip cannot predict it; a real run "
                          "puts back torch_gcu %s (installed now: %s) into %s." % (env["pip"], want, have, p["python"]))
        run_pip(module, argv + ["--dry-run", target])
        return True, "check mode: pip would put back torch_gcu %s into %s (was %s)" % (want, p["python"], have)
    # Before pip runs, as for an install: a failed one still knows what was there.
    write_record(p["state_file"], wheel_record(module, p, have, want, p["wheel"] or None))
    run_pip(module, argv + [target])
    prove_version(module, p, env, want)
    return True, "put back torch_gcu %s into %s (was %s)" % (want, p["python"], have)


def remove(module, p, env):
    """state=absent (or restored to none): no torch_gcu in the environment. (changed, msg)."""
    have = env["torch_gcu"]
    if have is None:
        return False, "no torch_gcu in %s, as wanted" % p["python"]
    if module.check_mode:
        return True, "check mode: would uninstall torch_gcu %s from %s" % (have, p["python"])
    write_record(p["state_file"], wheel_record(module, p, have, None, None))
    run_pip(module, [p["pip"], "uninstall", "--yes", "torch_gcu"])
    prove_version(module, p, env, None)
    return True, "uninstalled torch_gcu %s from %s" % (have, p["python"])


def present(module, p, env):
    """state=checked or present: the bundle's wheel for the environment's Python."""
    staged, manifest = read_manifest(module, p) if str(p["bundle_path"]).startswith("/") else (False, {})
    wheel, wheels = choose_wheel(manifest, env["python"])
    problem = refusal(p, env, staged, manifest, wheel, wheels)
    if problem:
        module.fail_json(msg=problem, environment=env, wheels=wheels)

    version, installed = wheel["version"], env["torch_gcu"]
    result = dict(changed=False, environment=env, wheel=wheel, previous=installed, version=version,
                  needs_change=installed != version)
    if p["state"] == "checked":
        module.exit_json(msg="%s fits %s (torch %s)" % (p["python"], wheel["file"], env["torch"]), **result)

    wheel_path = os.path.join(p["bundle_path"], wheel["file"])
    msg = "torch_gcu %s already in %s" % (version, p["python"])
    if result["needs_change"]:
        record = wheel_record(module, p, installed, version, wheel_path)
        if not module.check_mode or os.path.isfile(wheel_path):
            check_staged(module, wheel, wheel_path)
        if not module.check_mode:
            # Before pip runs, so a failed install still knows what to go back to.
            write_record(p["state_file"], record)
        # The record was written (or would be, in check mode): a change whatever pip says.
        msg = install(module, p, env, wheel_path, installed, version)
        result["changed"] = True
    if not (module.check_mode and result["needs_change"]):
        prove(module, p, env, version)
    module.exit_json(msg=msg, **result)


def run(module):
    """The module's work for every state; exits the module. Every version rule (the torch requirement, pip's
    --dry-run) is packaging's: a node Python without it fails here, before anything changes."""
    try:
        _run(module)
    except NoPackagingError as e:
        module.fail_json(msg="torch_gcu: %s" % e)


def _run(module):
    p = module.params
    if not p["pip"]:
        p["pip"] = os.path.join(os.path.dirname(p["python"]), "pip3")
    absolute = str(p["python"]).startswith("/")
    env = read_python(module, p["python"]) if absolute else dict(path=p["python"], error="not an absolute path")
    if p["state"] in ("checked", "present"):
        present(module, p, env)
        return
    for key in ("python", "pip", "state_file", "find_links"):
        if p.get(key) and not str(p[key]).startswith("/"):
            module.fail_json(msg="torch_gcu: %s must be an absolute node path (%r); nothing was changed." % (key, p[key]))
    if env["error"] is not None or not (os.path.isfile(p["pip"]) and os.access(p["pip"], os.X_OK)):
        module.fail_json(msg="torch_gcu: %s on this node, nothing was changed." % (
            env["error"] if env["error"] is not None else p["pip"] + " does not exist or is not executable"),
            environment=env)
    changed, msg = restore(module, p, env) if p["state"] == "restored" else remove(module, p, env)
    module.exit_json(changed=changed, msg=msg, environment=env, previous=env["torch_gcu"],
                     version=(p["version"] or None) if p["state"] == "restored" else None)
