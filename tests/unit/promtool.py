# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prometheus's own promtool (Debian's prometheus package, installed by make
setup) and the rules of a rule file, for the tests of contrib/prometheus and
the dashboards that read those rules."""
import shutil
import subprocess

import yaml


def promtool(*args, cwd=None):
    """promtool ARGS... in `cwd`; its completed process (stdout and stderr together), never raising on its exit."""
    path = shutil.which("promtool")
    assert path, "promtool not found: make setup installs Debian's prometheus package (scripts/ensure-docker.sh)"
    return subprocess.run([path] + list(args), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)


def rule_list(path):
    """Every rule of every group of a Prometheus rule file, in order."""
    with open(path) as f:
        return [r for g in yaml.safe_load(f)["groups"] for r in g["rules"]]
