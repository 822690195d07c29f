# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The peer-staging plan of bundle_stage (logic: plugins/plugin_utils/_staging.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gcu.topsrider.plugins.plugin_utils._filters import deferred, guarded_filters


class FilterModule(object):
    def filters(self):
        return guarded_filters({
            # needs | topsrider_stage_plan(serving) -> {controller, sources, start, urls}
            "topsrider_stage_plan": deferred("plugin_utils._staging.stage_plan"),
        })
