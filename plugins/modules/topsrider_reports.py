#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: topsrider_reports
short_description: Write a run's report files on the controller, each whole or not at all
version_added: "0.2.0"
description:
  - Writes the files of a run's report (a host's line, the fleet report as JSON, Markdown and JUnit XML, the
    latest of its kind, a Prometheus textfile) on the controller, inside the C(ansible-playbook) process.
  - Each file is written next to itself and renamed into place, so a reader (a dashboard, the node-exporter
    textfile collector, the next run) never sees half a report; mode 0644, its directory made (0755) when
    missing; the text ends with one newline (added when it has none).
  - Every pair is checked before the first file is written; a list with one bad pair writes nothing.
  - Reports C(changed=false), whatever it writes; the run's own output on the controller is not a change to
    the fleet. The playbooks of this collection delegate it to C(localhost), with C(run_once) or once
    per host.
  - Writing a fleet report (a C(<kind>-latest.json) of deploy, rollback or verify) while the callback
    P(gcu.topsrider.fleet_report#callback) is not loaded, it warns that a node lost in the middle of a task
    would leave the run without its printed report, naming the setting that loads it.
author:
  - gcu.topsrider contributors (@gcu-topsrider)
options:
  files:
    description:
      - The files, each a pair C([path, text]) of a path on the controller (a relative one is taken from the
        directory C(ansible-playbook) runs in) and its whole text.
    type: list
    elements: raw
    required: true
  show:
    description:
      - Text printed on the controller's terminal as it is, line for line, after the files are written (the
        report a person reads). It goes through Ansible's display, not the task's result, so it reads the same
        plain lines under any stdout callback and result format (a C(debug) message is one JSON string under
        the stock configuration). Printed in check mode too.
    type: str
extends_documentation_fragment:
  - gcu.topsrider.attributes
attributes:
  action:
    support: full
    description: Runs on the controller only; nothing is sent to a node.
  async:
    support: none
    description: It writes small files at once.
  check_mode:
    support: full
    description: >-
      Writes nothing in check mode; the playbooks run it with check mode off (C(check_mode=false)) so that a
      check run has its report too.
  diff_mode:
    support: none
    description: No diff of the reports is shown.
  platform:
    platforms: posix
    description: The controller.
seealso:
  - module: gcu.topsrider.topsrider_state
'''

EXAMPLES = r'''
- name: The drift report in two forms, and the latest
  gcu.topsrider.topsrider_reports:
    files:
      - ["{{ reports }}/drift-{{ run_id }}.json", "{{ report | to_nice_json }}"]
      - ["{{ reports }}/drift-{{ run_id }}.md", "{{ report | gcu.topsrider.topsrider_drift_markdown }}"]
      - ["{{ reports }}/drift-latest.json", "{{ report | to_nice_json }}"]
    show: "{{ report | gcu.topsrider.topsrider_drift_markdown }}"
  delegate_to: localhost
  run_once: true
  check_mode: false
'''

RETURN = r'''
written:
  description: The paths written, in the order given (none in check mode).
  returned: always
  type: list
  elements: str
  sample: ["/srv/topsrider/reports/drift-20261126T020000Z.json"]
'''
