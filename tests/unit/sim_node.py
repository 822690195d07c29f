# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A simulated node's state for the units: simctl and the simulator's efsmi
with every path (state, PCI tree, device files, driver version file)
redirected into a test's tmp_path."""
import os
import subprocess
import sys

from conftest import TOP

ROOTFS = os.path.join(TOP, "sim", "node", "rootfs")
SIMCTL = os.path.join(ROOTFS, "usr", "local", "bin", "simctl")
EFSMI = os.path.join(ROOTFS, "usr", "sbin", "efsmi")


class Node(object):
    """A simulated node's state (simctl with every path redirected into tmp_path)."""

    def __init__(self, tmp_path, cards=4):
        self.tmp = tmp_path
        self.env = dict(os.environ, SIM_STATE=str(tmp_path / "state.json"), SIM_PCI_ROOT=str(tmp_path / "pci"),
                        SIM_DEV_ROOT=str(tmp_path / "dev"), SIM_SYSMODULE_ROOT=str(tmp_path / "mod"))
        for d in ("pci", "dev", "mod"):
            (tmp_path / d).mkdir(exist_ok=True)
        self.simctl("reset", "--cards", str(cards))
        # the fake tool: the simulator's efsmi for this state file
        self.tool = tmp_path / "efsmi"
        self.tool.write_text("#!/bin/sh\nSIM_STATE='%s' exec '%s' '%s' \"$@\"\n" % (
            self.env["SIM_STATE"], sys.executable, EFSMI))
        self.tool.chmod(0o755)

    def simctl(self, *args):
        proc = subprocess.run([sys.executable, SIMCTL] + list(args), env=self.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, check=False)
        assert proc.returncode == 0, proc.stderr
