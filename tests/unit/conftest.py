"""Make gcu.topsrider importable from the checkout (as ansible_collections.gcu.topsrider)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
COLLECTIONS = os.path.join(TOP, ".cache", "collections")
LINK = os.path.join(COLLECTIONS, "ansible_collections", "gcu", "topsrider")

if not os.path.exists(LINK):
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    os.symlink(os.path.relpath(TOP, os.path.dirname(LINK)), LINK)
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)

FIXTURES = os.path.join(TOP, "tests", "unit", "fixtures")


def load_script(relpath, name):
    """Import a controller script that is not a package module (scripts/bench/*.py)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, os.path.join(TOP, relpath))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
