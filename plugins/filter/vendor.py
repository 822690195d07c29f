# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vendor table (plugins/module_utils/_vendors.py) for YAML: a vendor's
row by its name, the files a job on its nodes needs with the launcher's
message for each (plugins/module_utils/_compare.py), and the collective
backends' rows a job there may use; an unknown name fails the task. Thin
wrappers."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gcu.topsrider.plugins.plugin_utils._filters import deferred, guarded_filters

job_files = deferred("module_utils._compare.job_files")
node_collectives = deferred("module_utils._vendors.node_collectives")
vendor_spec = deferred("module_utils._vendors.vendor_spec")


def topsrider_vendor(name):
    """The row of vendor `name`."""
    return vendor_spec(name)


def topsrider_job_files(name, env_file=None):
    """The files a job on a vendor `name` node needs, with the launcher's message for each."""
    return job_files(name, env_file)


def topsrider_collectives(name):
    """The collective backends' rows a job on a vendor `name` node may use (its own first, then gloo)."""
    return node_collectives(name)


class FilterModule(object):
    def filters(self):
        return guarded_filters({"topsrider_vendor": topsrider_vendor, "topsrider_job_files": topsrider_job_files,
                                "topsrider_collectives": topsrider_collectives})
