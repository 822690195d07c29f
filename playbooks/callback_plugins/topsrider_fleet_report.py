# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gcu.topsrider.fleet_report for runs of these playbooks by path from a checkout.

Ansible loads a playbook's adjacent callback_plugins/ by itself, so a run from
a checkout needs no setting. It does not for a collection's playbooks (by FQCN
or by their installed path): there, enable gcu.topsrider.fleet_report
(plugins/callback/fleet_report.py, the one implementation).
"""
from __future__ import annotations

DOCUMENTATION = r'''
name: topsrider_fleet_report
type: aggregate
short_description: gcu.topsrider.fleet_report, enabled by itself for runs from a checkout
description:
  - The playbooks' adjacent copy of P(gcu.topsrider.fleet_report#callback); see that callback.
'''

from ansible_collections.gcu.topsrider.plugins.callback.fleet_report import CallbackModule as _FleetReport


class CallbackModule(_FleetReport):
    CALLBACK_NAME = "topsrider_fleet_report"
    CALLBACK_NEEDS_ENABLED = False
