# Read-only probe run by the gcu.topsrider torch_gcu role in the target
# interpreter: prints one JSON line with the Python version and the installed
# torch, torch_gcu and pip versions. Imports neither torch nor torch_gcu.
# Python 3.6+ (importlib.metadata from 3.8, importlib_metadata or
# pkg_resources before that).
import json
import sys


def _version(names):
    try:
        from importlib.metadata import version, PackageNotFoundError  # novm (3.8+, guarded)
    except ImportError:
        try:
            from importlib_metadata import version, PackageNotFoundError
        except ImportError:
            version = None
    if version is None:
        import pkg_resources
        for name in names:
            try:
                return pkg_resources.get_distribution(name).version
            except pkg_resources.DistributionNotFound:
                pass
        return None
    for name in names:
        try:
            return version(name)
        except PackageNotFoundError:
            pass
    return None


print(json.dumps({
    "python": "%d.%d" % sys.version_info[:2],
    "python_full": "%d.%d.%d" % sys.version_info[:3],
    "executable": sys.executable,
    "prefix": sys.prefix,
    "torch": _version(["torch"]),
    "torch_gcu": _version(["torch_gcu", "torch-gcu"]),
    "pip": _version(["pip"]),
}))
