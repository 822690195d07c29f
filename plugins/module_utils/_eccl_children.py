# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The child-process probe scripts of gcu.topsrider.eccl_probe.

Plain source strings: the module hands them to the target interpreter with
``python -c``, so they must run on Python 3.6+ with the standard library
(plus torch / torch_gcu, which they probe). Each prints one line, the
report marker followed by JSON, which ``_eccl.parse_report`` reads.
Neither can import the vendor table, so each gets its backend's row as JSON
(plugins/module_utils/_vendors.py; what the fields mean: COLLECTIVE_FIELDS).

LIBRARY_SCRIPT: argv = the backend row's ``library`` (JSON), then the
candidate copies' paths; loads the soname and each copy with ctypes and
reports loadability and version: the text of the row's string call, else
the number of its int call in its units; the number itself
(``version_number``) only beside a string call, for the parent to prefer.
FRAMEWORK_SCRIPT: argv = the backend's row (``collective_spec``, JSON);
imports torch (and the row's torch_module, torch_gcu for eccl) and reports
versions, devices, the backend's registration and the collective library
the interpreter mapped.

The mapped-library lookup in FRAMEWORK_SCRIPT is the same loop as
``_collective_rank.mapped_library``, and the version units the same rule as
``_collective_rank.format_version``; they are written out here because the
child runs alone (``python -c``, no module_utils on its path).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

LIBRARY_SCRIPT = r'''
import ctypes, json, sys
MARK = "@@ECCL_PROBE_REPORT@@"
spec = json.loads(sys.argv[1])

def mapped(fragment):
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6 and fragment in parts[5]:
                    return parts[5].strip()
    except (IOError, OSError):
        pass
    return None

def int_version(lib, name):
    # The int a `int name(int *)` version call returns, or None.
    try:
        fn = getattr(lib, name)
    except AttributeError:
        return None
    v = ctypes.c_int(0)
    fn.argtypes = [ctypes.POINTER(ctypes.c_int)]
    fn.restype = ctypes.c_int
    return v.value if fn(ctypes.byref(v)) == 0 else None

def formatted(n):
    for least, major, minor in spec["version_units"]:
        if n >= least:
            return "%d.%d.%d" % (n // major, (n % major) // minor, n % minor)
    return None

def version_of(lib):
    n = int_version(lib, spec["version_call"])
    if not spec["version_string_call"]:
        return {"version_number": None, "version_string": formatted(n) if n is not None else None}
    out = {"version_number": n, "version_string": None}
    try:
        fs = getattr(lib, spec["version_string_call"])
    except AttributeError:
        fs = None
    if fs is not None:
        fs.restype = ctypes.c_char_p
        s = fs()
        out["version_string"] = s.decode("ascii", "replace") if s else None
    return out

soname = spec["soname"]
report = {"soname": soname, "by_soname": {}, "copies": []}
# By soname first, in a fresh process: that is what the framework (torch_gcu) does.
try:
    lib = ctypes.CDLL(soname)
    entry = {"loadable": True, "error": None, "path": mapped(soname)}
    entry.update(version_of(lib))
except OSError as exc:
    entry = {"loadable": False, "error": str(exc), "path": None}
report["by_soname"] = entry
for path in sys.argv[2:]:
    try:
        lib = ctypes.CDLL(path)
        entry = {"path": path, "loadable": True, "error": None}
        entry.update(version_of(lib))
    except OSError as exc:
        entry = {"path": path, "loadable": False, "error": str(exc)}
    report["copies"].append(entry)
sys.stdout.write("\n" + MARK + json.dumps(report) + "\n")
'''

FRAMEWORK_SCRIPT = r'''
import importlib, json, os, platform, sys, traceback, warnings
MARK = "@@ECCL_PROBE_REPORT@@"
spec = json.loads(sys.argv[1])
backend = spec["backend"]
plugin = spec["torch_module"]
kind = spec["device_type"]
r = {"python": sys.executable, "python_version": platform.python_version(),
     "torch_version": None, "torch_error": None, "torch_location": None,
     "torch_gcu_version": None, "torch_gcu_installed": None, "torch_gcu_missing": False, "torch_gcu_error": None,
     "torch_gcu_location": None, "torch_gcu_warnings": [], "torch_gcu_requires": [],
     "api_generation": None, "is_available": None, "device_count": None,
     "distributed_available": None, "backend": backend, "backend_registered": None,
     "backend_error": None, "loaded_library": None, "cuda_version": None}

def err(exc):
    return "%s: %s" % (type(exc).__name__, exc)

def attribute(dotted):
    # module.attr.attr... of a module this process has imported, or None.
    parts = dotted.split(".")
    obj = sys.modules.get(parts[0])
    for part in parts[1:]:
        obj = getattr(obj, part, None)
    return obj

def requires_of(pkg_dir):
    # Requires-Dist of the installed plugin distribution, next to the package first.
    dirs = [os.path.dirname(pkg_dir)] + [p for p in sys.path if p and os.path.isdir(p)]
    for d in dirs:
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for n in names:
            low = n.lower()
            if low.replace("-", "_").startswith(plugin + "_") and low.endswith((".dist-info", ".egg-info")):
                for meta in ("METADATA", "PKG-INFO"):
                    p = os.path.join(d, n, meta)
                    if os.path.isfile(p):
                        with open(p) as f:
                            return [l.split(":", 1)[1].strip() for l in f.read().splitlines()
                                    if l.lower().startswith("requires-dist:")]
                req = os.path.join(d, n, "requires.txt")
                if os.path.isfile(req):
                    with open(req) as f:
                        return [l.strip() for l in f if l.strip() and not l.startswith("[")]
    return []

if plugin:
    try:
        import importlib.util
        r["torch_gcu_installed"] = importlib.util.find_spec(plugin) is not None
    except Exception:
        pass

torch = None
try:
    import torch
    r["torch_version"] = str(torch.__version__)
    r["torch_location"] = os.path.dirname(getattr(torch, "__file__", "") or "")
except Exception as exc:
    r["torch_error"] = err(exc)

tg = None
if torch is not None and plugin:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            tg = importlib.import_module(plugin)
        except ImportError as exc:
            if getattr(exc, "name", None) == plugin:
                r["torch_gcu_missing"] = True
            else:
                r["torch_gcu_error"] = err(exc)
            tg = None
        except Exception as exc:
            r["torch_gcu_error"] = err(exc)
            tg = None
    r["torch_gcu_warnings"] = ["%s: %s" % (w.category.__name__, w.message) for w in caught
                               if plugin in str(w.message) or kind in str(w.filename)]

if tg is not None:
    r["torch_gcu_version"] = str(getattr(tg, "__version__", "") or "") or None
    r["torch_gcu_location"] = os.path.dirname(getattr(tg, "__file__", "") or "")
    r["torch_gcu_requires"] = requires_of(r["torch_gcu_location"])

# The device module (torch.<device_type>), else the plugin's own older API.
if torch is not None and kind != "cpu" and (not plugin or tg is not None):
    api = None
    module = getattr(torch, kind, None)
    if module is not None and hasattr(module, "device_count"):
        api = (spec["api"], module)
    elif spec["plugin_api"] and hasattr(tg, "device_count"):
        api = (spec["plugin_api"]["api"], tg)
    if api is not None:
        r["api_generation"] = api[0]
        try:
            if spec["runtime"]:
                # Devices only where torch has the runtime (a CPU-only torch has none).
                r["is_available"] = bool(api[1].is_available())
                r["device_count"] = int(api[1].device_count()) if r["is_available"] else 0
            else:
                r["device_count"] = int(api[1].device_count())
                r["is_available"] = bool(api[1].is_available()) if hasattr(api[1], "is_available") \
                    else r["device_count"] > 0
            if spec["runtime_version"]:
                r["cuda_version"] = getattr(torch.version, spec["runtime_version"]["attribute"], None)
        except Exception as exc:
            r["device_error"] = err(exc)

# The collective library this interpreter has loaded now (torch_gcu loads libeccl
# at import; a CUDA torch loads libnccl with its CUDA libraries).
library = spec["library"]
if library:
    prefix = library["mapped"]
    r["loaded_library"] = {"name": prefix, "path": None, "version": None}
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6 and os.path.basename(parts[5].strip()).startswith(prefix):
                    r["loaded_library"]["path"] = parts[5].strip()
                    break
    except (IOError, OSError):
        pass
    call = attribute(spec["loaded_version_call"]) if spec["loaded_version_call"] else None
    if call is not None:
        if not spec["runtime"] or r["is_available"]:
            try:
                v = call()
                r["loaded_library"]["version"] = ".".join(str(x) for x in v) if isinstance(v, tuple) else v
            except Exception:
                pass
    elif library["version_string_call"] and r["loaded_library"]["path"]:
        import ctypes
        try:
            fs = getattr(ctypes.CDLL(r["loaded_library"]["path"]), library["version_string_call"])
            fs.restype = ctypes.c_char_p
            v = fs()
            r["loaded_library"]["version"] = v.decode("ascii", "replace") if v else None
        except (OSError, AttributeError):
            pass

if torch is not None:
    try:
        import torch.distributed as dist
        r["distributed_available"] = bool(dist.is_available())
    except Exception as exc:
        r["distributed_available"] = False
        r["backend_error"] = err(exc)
    if r["distributed_available"]:
        if hasattr(dist, "is_backend_available"):
            # torch 2.x: Backend(name) accepts any name; the registry is Backend.backend_list.
            try:
                r["backend_registered"] = bool(dist.is_backend_available(backend))
            except Exception as exc:
                r["backend_registered"] = False
                r["backend_error"] = err(exc)
            if not r["backend_registered"] and not r["backend_error"]:
                r["backend_error"] = "backend '%s' is not available in torch.distributed (known: %s)" % (
                    backend, ", ".join(str(b) for b in getattr(dist.Backend, "backend_list", []) if b))
        else:
            # torch 1.x: Backend(name) raises ValueError("Invalid backend: 'name'").
            try:
                dist.Backend(backend)
                r["backend_registered"] = True
            except Exception as exc:
                r["backend_registered"] = False
                r["backend_error"] = str(exc)
    else:
        r["backend_registered"] = False

sys.stdout.write("\n" + MARK + json.dumps(r) + "\n")
'''
