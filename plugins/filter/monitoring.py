# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Monitoring filters: the Prometheus file_sd scrape targets of a group's
hosts (playbooks/monitoring_targets.yml), and where the drift and fabric
checks write their node_exporter textfile. The decisions live in
plugins/plugin_utils/_monitoring.py (pure, unit-tested); this file only picks
the few host variables they read out of hostvars."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gcu.topsrider.plugins.plugin_utils._filters import deferred, guarded_filters, plain

textfile_path = deferred("plugin_utils._monitoring.textfile_path")


def topsrider_scrape_targets(hosts, hostvars, group, card_defaults, node_exporter=True):
    """hostvars is Ansible's (lazy, every variable of every host): read only HOST_KEYS of the hosts."""
    # Imported at the first call, as deferred() does (see plugin_utils/_filters.py).
    from ansible_collections.gcu.topsrider.plugins.plugin_utils._monitoring import HOST_KEYS, scrape_targets
    if not isinstance(hosts, list):
        raise ValueError("the input is a list of inventory host names (groups[...]), got %s" % type(hosts).__name__)
    picked = {}
    for host in hosts:
        hv = hostvars[host]
        picked[host] = dict((k, plain(hv[k])) for k in HOST_KEYS if k in hv)
    return scrape_targets(hosts, picked, group, card_defaults, node_exporter)


def topsrider_textfile_path(explicit, kind, textfile_dir=None):
    """The textfile of the drift or fabric check: topsrider_<kind>_textfile, or one in topsrider_textfile_dir."""
    return textfile_path(kind, explicit, textfile_dir)


class FilterModule(object):
    def filters(self):
        return guarded_filters({"topsrider_scrape_targets": topsrider_scrape_targets,
                                "topsrider_textfile_path": topsrider_textfile_path})
