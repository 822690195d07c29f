# SIMULATOR and test controller (test speed only): Python compiles each piece
# of module code that Ansible sends once per source, not once per task.
#
# Ansible runs every module from a zip (AnsiballZ) that Python imports with
# zipimport, which compiles every file of it from source on every run (a zip
# has no __pycache__): about a third of a simple module's CPU, which the test
# pool pays thousands of times on the simulated nodes and on the controller
# (tasks on localhost). This hook, loaded at start-up by
# topsrider_sim_pyc.pth, keeps the compiled code of a file of such a zip in
# CACHE, keyed by a hash of the Python's bytecode magic and optimization
# level, the file's path inside the zip and its source bytes: the same source
# gives the same code object, so nothing a module does changes (the file
# names in its tracebacks are this run's). Any other import, and any error
# of the cache itself, takes Python's own path. It is not the collection's
# code: the simulated nodes' image has it (sim/node/rootfs) and
# scripts/venv-bytecode.sh puts it in the test venvs; no real node and no
# operator's venv has it (docs/testing.md).
import os
import sys

# A venv (the test controller's): beside it; a node's system Python: /var/cache.
# TOPSRIDER_SIM_PYC_CACHE names another directory, or, empty, turns the hook
# off (to measure without it).
CACHE = os.environ.get("TOPSRIDER_SIM_PYC_CACHE",
                       sys.prefix + "/ansiballz-pyc" if sys.prefix != sys.base_prefix
                       else "/var/cache/topsrider-sim/ansiballz-pyc")


def _install(cache):
    import zipimport

    compile_source = getattr(zipimport, "_compile_source", None)
    if compile_source is None:
        return

    def renamed(code, filename):
        consts = tuple(renamed(c, filename) if isinstance(c, type(code)) else c for c in code.co_consts)
        return code.replace(co_filename=filename, co_consts=consts)

    def cached_compile(pathname, source):
        inner = pathname.partition("_payload.zip/")[2]
        if not inner or "/ansible_" not in pathname or not isinstance(source, bytes):
            return compile_source(pathname, source)
        import hashlib
        import importlib.util
        import marshal

        # -O or -OO compiles otherwise (no asserts, no docstrings): part of the key.
        key = hashlib.sha256(importlib.util.MAGIC_NUMBER + b"%d\0" % sys.flags.optimize + inner.encode() + b"\0"
                             + source).hexdigest()
        path = os.path.join(cache, key)
        try:
            with open(path, "rb") as f:
                code = marshal.loads(f.read())
        except (OSError, ValueError, EOFError, TypeError):
            code = None
        if isinstance(code, type(renamed.__code__)):
            return renamed(code, pathname)
        code = compile_source(pathname, source)
        tmp = "%s.%d.tmp" % (path, os.getpid())
        try:
            os.makedirs(cache, exist_ok=True)
            with open(tmp, "wb") as f:
                f.write(marshal.dumps(code))
            os.replace(tmp, path)
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        return code

    zipimport._compile_source = cached_compile


if CACHE:
    _install(CACHE)
