# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""eccl_probe's run: its options checked, then the library, framework and
collective levels in turn (each in child processes with a timeout), the
problems collected and judged. What differs by backend is its row of the
vendor table (``_vendors.collective_spec``), handed to the children as JSON.
The module file is its documentation and the argument spec; the checks'
vocabulary is _eccl.py, the library search _eccl_library.py, the child
scripts _eccl_children.py, the rank code _collective_rank.py.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import pkgutil
import shutil
import socket
import sys
import tempfile
import time

from ansible_collections.gcu.topsrider.plugins.module_utils._children import Child, run_probe, wait_all
from ansible_collections.gcu.topsrider.plugins.module_utils import _collective_rank
from ansible_collections.gcu.topsrider.plugins.module_utils._envcheck import broken_rules, env_problems, extended_value
from ansible_collections.gcu.topsrider.plugins.module_utils._eccl import (
    classify_collective, classify_framework, failure_message, last_stage, parse_report, problem, tail,
)
from ansible_collections.gcu.topsrider.plugins.module_utils._eccl_library import (
    classify_library, find_copies, read_ld_so_conf, search_dirs,
)
from ansible_collections.gcu.topsrider.plugins.module_utils._eccl_children import FRAMEWORK_SCRIPT, LIBRARY_SCRIPT
from ansible_collections.gcu.topsrider.plugins.module_utils._node import C_LOCALE, parse_ldconfig_cache
from ansible_collections.gcu.topsrider.plugins.module_utils._pep440 import NoPackagingError
from ansible_collections.gcu.topsrider.plugins.module_utils._vendors import VendorError, collective_spec

LEVELS = ("library", "framework", "collective")


def free_port():
    """A free TCP port on 127.0.0.1 (bound then released)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
    finally:
        sock.close()


def child_env(environment):
    env = dict(os.environ)
    env.update(C_LOCALE)
    env.update({"PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"})
    # A search path (PATH, LD_LIBRARY_PATH, ...) extends the module's own value, never replaces it.
    env.update(dict((k, extended_value(k, env.get(k), v)) for k, v in environment.items()))
    return env


def probe_failed(what, argv, rc, out, err, timed_out, timeout):
    if timed_out:
        msg = "%s probe timed out after %ss (%s)" % (what, timeout, argv[0])
    else:
        msg = "%s probe `%s -c <script>` failed: rc=%s stdout=%s stderr=%s" % (
            what, argv[0], rc, tail(out, 5), tail(err, 10))
    return problem("PROBE_FAILED", msg)


def resolve_python(module, python):
    """Path of the training interpreter, or None when it does not exist."""
    if not python:
        return module.get_bin_path("python3", required=True)
    if os.path.sep in python:
        return python if os.path.isfile(python) and os.access(python, os.X_OK) else None
    return module.get_bin_path(python, required=False)


def probe_library(module, params, env, workdir):
    """The collective library of the backend (its row's library): libeccl.so for eccl, the
    system's NCCL for nccl (not required: torch's CUDA wheels carry their own), none for gloo."""
    spec = collective_spec(params["backend"])
    library = spec["library"]
    if library is None:
        return {"name": None, "path": None, "version": None, "loadable": None, "error": None, "copies": [],
                "search_dirs": [], "skipped": spec["no_library"]}, []
    name = library["name"]
    cache_paths = []
    ldconfig = module.get_bin_path("ldconfig", required=False, opt_dirs=["/sbin", "/usr/sbin"])
    if ldconfig:
        cmd = [ldconfig, "-p"]
        rc, out, err = module.run_command(cmd, environ_update=C_LOCALE)
        if rc != 0:
            module.fail_json(msg="%s failed" % " ".join(cmd), cmd=cmd, rc=rc, stdout=out, stderr=err)
        cache_paths = parse_ldconfig_cache(out, name)
    dirs = search_dirs(params["library_dirs"], read_ld_so_conf(), env.get("LD_LIBRARY_PATH"), library["dirs"])
    copies = find_copies(dirs, cache_paths, name)
    argv = [sys.executable, "-c", LIBRARY_SCRIPT, json.dumps(library)] + [c["path"] for c in copies]
    rc, out, err, timed_out = run_probe(argv, env, params["timeout"], workdir, "library")
    report = parse_report(out)
    result, problems = classify_library(copies, report, library)
    result["search_dirs"] = [d for d, _sources in dirs]
    if not library["required"]:
        # No system copy, or several, is normal where the framework brings its own (a CUDA
        # torch wheel's NCCL): the framework and collective levels report the one really loaded.
        problems = [p for p in problems if p["code"] == "LIBRARY_UNLOADABLE"]
    if report is None:
        problems.append(probe_failed("library", argv, rc, out, err, timed_out, params["timeout"]))
    return result, problems


def probe_framework(params, python, env, workdir):
    argv = [python, "-c", FRAMEWORK_SCRIPT, json.dumps(collective_spec(params["backend"]))]
    rc, out, err, timed_out = run_probe(argv, env, params["timeout"], workdir, "framework")
    report = parse_report(out)
    if report is None:
        return None, [probe_failed("framework", argv, rc, out, err, timed_out, params["timeout"])]
    return classify_framework(report, params["backend"])


def collective_blocker(framework, problems, backend):
    """Why the collective level cannot run, or None."""
    if framework is None:
        return "the framework probe gave no report"
    if not framework.get("torch_version"):
        return "torch is missing"
    if framework.get("distributed_available") is False:
        return "torch.distributed is not available"
    codes = set(p["code"] for p in problems)
    for code in collective_spec(backend)["blocking"]:
        if code in codes:
            return "of %s" % code
    return None


def rank_script_source():
    """The text of module_utils/_collective_rank.py, which each rank runs as a script."""
    data = pkgutil.get_data("ansible_collections.gcu.topsrider.plugins.module_utils", "_collective_rank.py")
    if data is None:
        with open(_collective_rank.__file__, "rb") as f:
            data = f.read()
    return data


def world_size_for(params, framework):
    """(ranks to start, None) or (None, problem). Device backends: the visible
    device count by default and never more; a backend whose row has a
    default_world_size (gloo: 2) that, bounded by no device."""
    devices = (framework or {}).get("device_count")
    default = collective_spec(params["backend"])["default_world_size"]
    if default is not None:
        return (params["world_size"] or default), None
    if params["world_size"] is None:
        return devices, None
    if devices is not None and params["world_size"] > devices:
        return None, problem("WORLD_SIZE_TOO_LARGE", "world_size %d asked for, but %s sees %d device(s) for "
                             "backend %s" % (params["world_size"], (framework or {}).get("python"), devices,
                                             params["backend"]))
    return params["world_size"], None


def probe_collective(params, python, env, workdir, world_size):
    port = params["master_port"] or free_port()
    job_world = params["job_world_size"] or world_size
    offset = params["rank_offset"]
    script = os.path.join(workdir, "topsrider_rank.py")
    with open(script, "wb") as f:
        f.write(rank_script_source())
    args = json.dumps({"collective": collective_spec(params["backend"]), "sizes": params["sizes"],
                       "iterations": params["iterations"], "warmup": params["warmup"], "timeout": params["timeout"]})
    children = []
    started = time.time()
    try:
        for local in range(world_size):
            rank_env = dict(env)
            rank_env.update({"RANK": str(offset + local), "LOCAL_RANK": str(local), "WORLD_SIZE": str(job_world),
                             "LOCAL_WORLD_SIZE": str(world_size), "MASTER_ADDR": params["master_addr"],
                             "MASTER_PORT": str(port)})
            children.append(Child([python, script, args], rank_env, workdir, "rank%d" % local))
    except OSError:
        for c in children:
            c.kill("aborted")
        raise
    timed_out = wait_all(children, params["timeout"])
    outcomes = []
    for local, c in enumerate(children):
        rc, out, err = c.output()
        outcomes.append({"rank": offset + local, "pid": c.pid, "rc": rc, "report": parse_report(out),
                         "last_stage": last_stage(out), "stderr": err, "killed": c.killed})
    fields, problems = classify_collective(outcomes, world_size, timed_out, params["timeout"], job_world)
    result = {"backend": params["backend"], "world_size": world_size, "job_world_size": job_world,
              "rank_offset": offset, "master_addr": params["master_addr"], "master_port": port,
              "elapsed_s": round(time.time() - started, 2)}
    result.update(fields)
    return result, problems


def validate(module, params):
    try:
        collective_spec(params["backend"])
    except VendorError as exc:
        module.fail_json(msg="backend: %s" % exc)
    bad = env_problems(params["environment"], "environment", params["allow_names"], "allow_names")
    if bad:
        rules = broken_rules(params["environment"])
        module.fail_json(msg="environment: %s" % " ".join(bad + ([rules] if rules else [])))
    if params["timeout"] <= 0:
        module.fail_json(msg="timeout must be a positive number of seconds, got %s" % params["timeout"])
    if params["warmup"] < 0:
        module.fail_json(msg="warmup must be 0 or more, got %s" % params["warmup"])
    if params["iterations"] <= 0:
        module.fail_json(msg="iterations must be at least 1, got %s" % params["iterations"])
    if not params["sizes"] or any(s < 4 for s in params["sizes"]):
        module.fail_json(msg="sizes must be a non-empty list of byte counts of at least 4, got %s" % params["sizes"])
    if params["world_size"] is not None and params["world_size"] < 1:
        module.fail_json(msg="world_size must be at least 1, got %s" % params["world_size"])
    if params["master_port"] is not None and not 0 < params["master_port"] < 65536:
        module.fail_json(msg="master_port must be in 1..65535, got %s" % params["master_port"])
    if params["rank_offset"] < 0:
        module.fail_json(msg="rank_offset must be 0 or more, got %s" % params["rank_offset"])
    if params["job_world_size"] is not None:
        local = params["world_size"]
        if local is None:
            module.fail_json(msg="job_world_size needs world_size (this node's share of the job)")
        if params["job_world_size"] < params["rank_offset"] + local:
            module.fail_json(msg="job_world_size %d is smaller than rank_offset %d + world_size %d" % (
                params["job_world_size"], params["rank_offset"], local))
    elif params["rank_offset"]:
        module.fail_json(msg="rank_offset needs job_world_size (the ranks of the whole job)")


def run(module):
    """The whole probe, with the module's params; exits or fails the module."""
    params = module.params
    validate(module, params)
    level = LEVELS.index(params["level"])
    env = child_env(params["environment"])
    result = dict(changed=False, healthy=False, problems=[], library=None, framework=None, collective=None)
    problems = []
    workdir = tempfile.mkdtemp(prefix="eccl_probe-")
    try:
        result["library"], found = probe_library(module, params, env, workdir)
        problems.extend(found)
        if level >= 1:
            python = resolve_python(module, params["python"])
            if python is None:
                problems.append(problem("PYTHON_MISSING", "training interpreter %s not found or not executable"
                                        % params["python"]))
            elif level >= 2 and not params["framework_check"]:
                # Repeated jobs after a full probe (the fabric check): the ranks are the check.
                result["collective"], found = probe_collective(params, python, env, workdir, params["world_size"])
                problems.extend(found)
            else:
                try:
                    result["framework"], found = probe_framework(params, python, env, workdir)
                except NoPackagingError as e:
                    module.fail_json(msg="eccl_probe: %s" % e)
                problems.extend(found)
                if level >= 2:
                    blocker = collective_blocker(result["framework"], problems, params["backend"])
                    world_size, too_many = world_size_for(params, result["framework"])
                    if too_many is not None:
                        problems.append(too_many)
                        blocker = blocker or "of WORLD_SIZE_TOO_LARGE"
                    if blocker is None:
                        result["collective"], found = probe_collective(params, python, env, workdir, world_size)
                        problems.extend(found)
                    else:
                        result["collective_skipped"] = "collective level not run because %s" % blocker
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result["problems"] = problems
    result["healthy"] = not problems
    if problems:
        result["msg"] = failure_message(problems)
        if params["fail_on_problem"]:
            module.fail_json(**result)
    else:
        result["msg"] = "eccl_probe: healthy up to level %s" % params["level"]
    module.exit_json(**result)
