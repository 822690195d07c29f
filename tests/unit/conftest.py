"""Make gcu.topsrider importable from the checkout (as ansible_collections.gcu.topsrider)."""
import os
import subprocess
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


def build_release(directory):
    """A release directory with one real .deb, as topsrider-manifest expects them."""
    pkg = directory.parent / "pkg"
    (pkg / "DEBIAN").mkdir(parents=True)
    (pkg / "DEBIAN" / "control").write_text(
        "Package: tops-sdk\nVersion: 9.9.9-1\nArchitecture: amd64\nMaintainer: test <test@example.invalid>\n"
        "Description: stand-in package for the tarball test\n")
    directory.mkdir()
    subprocess.run(["dpkg-deb", "--root-owner-group", "--build", str(pkg), str(directory / "tops-sdk_9.9.9-1_amd64.deb")],
                   check=True, stdout=subprocess.DEVNULL)
