# Read-only: which Python this is and which torch / torch_gcu it has, as JSON.
# Runs on the node's training interpreter, which may be as old as 3.6.
import json
import sys


def version_of(dist):
    try:
        from importlib import metadata  # Python 3.8+
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None
    except ImportError:
        import pkg_resources
        try:
            return pkg_resources.get_distribution(dist).version
        except pkg_resources.DistributionNotFound:
            return None


print(json.dumps({
    "python": "%d.%d" % sys.version_info[:2],
    "executable": sys.executable,
    "torch": version_of("torch"),
    "torch_gcu": version_of("torch_gcu") or version_of("torch-gcu"),
}))
