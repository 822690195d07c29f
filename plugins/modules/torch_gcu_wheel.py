#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: torch_gcu_wheel
short_description: Check a training environment against a TopsRider bundle, and install its torch_gcu wheel offline
version_added: "0.2.0"
description:
  - The work of the C(gcu.topsrider.torch_gcu) role in one call. Reads the interpreter O(python) with the collection's
    one node probe (the code of C(gcu.topsrider.topsrider_state) - its C(major.minor) and its torch, torch_gcu and
    pip versions from package metadata, without importing torch), and checks, in this order, naming the first problem
    and its remedy before anything changes - the settings are absolute paths; the interpreter answers and O(pip)
    exists; the bundle's manifest is given or staged; it has a torch_gcu wheel for that C(major.minor); the torch
    installed there is that wheel's C(requires_torch) (a local label such as C(+cpu) ignored, a pre-release is not
    its release).
  - With O(state=checked) that is all (a deploy's preflight, on every node before any role changes anything).
  - With O(state=present), when the installed torch_gcu is not the wheel's version - records the previous and new
    version in O(state_file) (before pip runs, so a failed install still knows what to go back to), then, once the
    staged wheel file's sha256 is the manifest's, runs O(pip) C(install --no-index --no-deps) on it - no network, and torch and everything else stay
    untouched. Then, installed now or already, C(import torch_gcu) must work in O(python), torch_gcu must be the
    wheel's version and torch the version it was.
  - Uses pip directly rather than C(ansible.builtin.pip), which needs C(packaging) or C(pkg_resources) importable by
    the node's module interpreter (Debian's python3 has neither by default).
author:
  - gcu.topsrider contributors (@gcu-topsrider)
options:
  python:
    description: The interpreter of the environment that trains (a venv's or conda env's C(bin/python)). Absolute.
    type: str
    required: true
  pip:
    description: That environment's pip. Absolute. Default C(pip3) next to O(python).
    type: str
  bundle_path:
    description: Node directory of the staged bundle, its wheels and its C(manifest.json). Absolute.
    type: str
    required: true
  manifest:
    description:
      - The bundle manifest (format of C(docs/manifest.md)); empty - read C(manifest.json) in O(bundle_path).
      - A check-mode run on a node where the bundle is not staged yet needs it passed.
    type: dict
    default: {}
  state_file:
    description:
      - JSON record (0600 root, directory 0700) of C(python), C(previous) and C(current) torch_gcu C({version, wheel}),
        written when the version changes, before pip runs. C(previous.wheel) is null when this module did not install
        the previous version. Absolute.
    type: str
    default: /var/lib/topsrider/torch_gcu.json
  state:
    description: V(checked) only checks; V(present) installs the wheel when the installed version differs.
    type: str
    choices: [checked, present]
    default: present
notes:
  - In check mode with O(state=present) and a version to change, pip runs with C(--dry-run) when it is 22.2 or later
    and the wheel is staged; otherwise the result's C(msg) says that pip cannot predict the install. The import
    check runs in check mode only when nothing would change.
extends_documentation_fragment:
  - gcu.topsrider.attributes
attributes:
  check_mode:
    support: full
    description: Predicts the change; pip runs with C(--dry-run) where it can.
  diff_mode:
    support: none
    description: The result's C(previous) and C(version) say what changes.
'''

EXAMPLES = r'''
- name: Preflight, on every node before anything changes
  gcu.topsrider.torch_gcu_wheel:
    python: /opt/venvs/train/bin/python
    bundle_path: /var/cache/topsrider/2.5.136
    manifest: "{{ bundle_manifest }}"
    state: checked

- name: The staged wheel for the training Python
  gcu.topsrider.torch_gcu_wheel:
    python: /opt/venvs/train/bin/python
    bundle_path: /var/cache/topsrider/2.5.136
'''

RETURN = r'''
environment:
  description: The interpreter as the probe read it before any change (C(gcu.topsrider.topsrider_state)'s C(python)).
  returned: always
  type: dict
  sample: {"path": "/opt/venvs/train/bin/python", "python": "3.11", "executable": "/opt/venvs/train/bin/python",
           "torch": "2.13.0+cpu", "torch_gcu": null, "pip": "23.0.1", "error": null}
wheel:
  description: The manifest entry of the wheel chosen for the interpreter's Python.
  returned: success
  type: dict
  sample: {"file": "torch_gcu-2.13.0+2.5.136-py311-none-any.whl", "type": "wheel", "package": "torch_gcu",
           "version": "2.13.0+2.5.136", "python": "3.11", "requires_torch": "2.13.0"}
previous:
  description: The torch_gcu version installed before (null - none).
  returned: success
  type: str
version:
  description: The wheel's torch_gcu version.
  returned: success
  type: str
needs_change:
  description: The installed torch_gcu is not the wheel's version (O(state=present) installs it).
  returned: success
  type: bool
msg:
  description: What was done or, in check mode, what would be.
  returned: always
  type: str
'''

import json
import os
import re
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gcu.topsrider.plugins.module_utils._atomic import write_atomic
from ansible_collections.gcu.topsrider.plugins.module_utils._eccl import torch_matches
from ansible_collections.gcu.topsrider.plugins.module_utils._manifest import sha256_file
from ansible_collections.gcu.topsrider.plugins.module_utils._node import C_LOCALE
from ansible_collections.gcu.topsrider.plugins.module_utils._state import read_python

WHEEL_FILE = re.compile(r"^[A-Za-z0-9_.+-]+\.whl\Z")
# pip's own settings for every pip call: no network, no prompts, nothing else
# installed or removed (--no-index/--no-deps are also on the command line).
PIP_ENVIRONMENT = dict(C_LOCALE, PIP_NO_INDEX="1", PIP_NO_DEPS="1", PIP_NO_INPUT="1",
                       PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_ROOT_USER_ACTION="ignore")
PIP_DRY_RUN = (22, 2)


def version_tuple(text):
    return tuple(int(p) for p in re.findall(r"\d+", str(text or ""))[:3])


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
    if module.check_mode and not (os.path.isfile(wheel_path) and version_tuple(env["pip"]) >= PIP_DRY_RUN):
        reason = ("the wheel %s is not staged on this node yet" % wheel_path if not os.path.isfile(wheel_path)
                  else "pip %s has no --dry-run (22.2 or later)" % env["pip"])
        return ("check mode: %s, so pip cannot predict the install; a real run installs torch_gcu %s "
                "(installed now: %s) into %s." % (reason, version, installed, p["python"]))
    argv = [p["pip"], "install", "--no-index", "--no-deps"] + (["--dry-run"] if module.check_mode else []) + [wheel_path]
    rc, out, err = module.run_command(argv, environ_update=PIP_ENVIRONMENT, cwd="/")
    if rc != 0:
        module.fail_json(msg="torch_gcu: `%s` failed (rc=%d): %s" % (" ".join(argv), rc, " | ".join(
            (err or out or "no output").strip().splitlines()[-3:])), cmd=argv, rc=rc, stdout=out, stderr=err)
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


def main():
    module = AnsibleModule(
        argument_spec=dict(
            python=dict(type="str", required=True),
            pip=dict(type="str"),
            bundle_path=dict(type="str", required=True),
            manifest=dict(type="dict", default={}),
            state_file=dict(type="str", default="/var/lib/topsrider/torch_gcu.json"),
            state=dict(type="str", choices=["checked", "present"], default="present"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if not p["pip"]:
        p["pip"] = os.path.join(os.path.dirname(p["python"]), "pip3")
    absolute = str(p["python"]).startswith("/")
    env = read_python(module, p["python"]) if absolute else dict(path=p["python"], error="not an absolute path")
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
        recorded = read_record(module, p["state_file"])
        current = recorded.get("current") if isinstance(recorded.get("current"), dict) else {}
        record = {
            "python": p["python"],
            # The wheel the previous version came from, when this module installed it.
            "previous": {"version": installed,
                         "wheel": current.get("wheel") if installed is not None and current.get("version") == installed
                         else None},
            "current": {"version": version, "wheel": wheel_path},
        }
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


if __name__ == "__main__":
    main()
