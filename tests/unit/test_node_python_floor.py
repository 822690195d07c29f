"""Module code runs on the node's Python, which may be as old as 3.6."""
import os
import subprocess
import sys

from conftest import TOP

NODE_SIDE = [os.path.join(TOP, "plugins", "modules"), os.path.join(TOP, "plugins", "module_utils")]


def test_module_code_needs_at_most_python_3_6():
    files = [os.path.join(d, f) for d in NODE_SIDE if os.path.isdir(d)
             for f in sorted(os.listdir(d)) if f.endswith(".py")]
    assert files, "no module code found"
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "vermin"), "--target=3.6-", "--violations", "--no-tips",
         "--eval-annotations", "--backport", "typing"] + files,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert proc.returncode == 0, "code that Python 3.6 cannot run:\n" + proc.stdout
