#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: topsrider_lock
short_description: One deploy, rollback or restore at a time per node
version_added: "0.1.0"
description:
  - Takes or releases the node's TopsRider lock, a file created atomically (C(O_CREAT|O_EXCL)) that names the
    run holding it (id, kind, user, controller, start time). C(deploy.yml) and C(rollback.yml) take it before
    they read anything they decide on and release it in the play's C(always), so two runs never interleave on a
    node and a second run waits (up to O(timeout)) or fails naming the run that holds it.
  - A lock held by the same run (same O(holder) id and token) is taken again without waiting, so a rescue can
    go on under it. A lock held by another run is never removed, except by O(break_id) naming that run.
  - >-
    While it waits for another run it prints a line on the controller every few seconds (up to 10), such as
    C(t20-node-2: waiting for the node lock, held by deploy run 20261126T050639Z (ops@ctl, since
    2026-11-26T05:06:39Z); 12 s of 600 s): its action polls the node with O(timeout=0).
author:
  - gcu.topsrider contributors (@gcu-topsrider)
options:
  path:
    description: The lock file on the node. Its directory is created (mode C(0700)) when missing.
    type: path
    required: true
  state:
    description: V(acquired) takes the lock, waiting for another run to release it; V(released) gives it back.
    type: str
    choices: [acquired, released]
    default: acquired
  holder:
    description:
      - Who takes the lock, written into the file. C(id) (the run id) and C(token) (unique per run) identify
        the run; C(kind), C(user), C(controller) and C(since) are for the messages.
    type: dict
    required: true
  timeout:
    description: Seconds to wait for another run's lock (0 to 86400).
    type: int
    default: 600
  break_id:
    description:
      - Remove the lock first when it is held by the run with this id, for a run that was killed and can no
        longer release it. Never needed for a run that ended normally.
    type: str
notes:
  - In check mode the lock is not taken; a lock held by another run is reported as a warning, since what check
    mode reads may change under it.
extends_documentation_fragment:
  - gcu.topsrider.attributes
attributes:
  action:
    support: full
    description: The action polls the node (the module with O(timeout=0)) while it waits, printing a line per poll.
  async:
    support: none
    description: The wait is the action's own polls; it is never a background job.
  check_mode:
    support: full
    description: Changes nothing; warns when another run holds the lock.
  diff_mode:
    support: none
    description: The lock file is bookkeeping of the run, not node state to diff.
'''

EXAMPLES = r'''
- name: One change at a time on this node
  gcu.topsrider.topsrider_lock:
    path: /var/lib/topsrider/run.lock
    holder: {id: "{{ topsrider_run_id }}", token: "{{ run_token }}", kind: deploy}
    timeout: 600

- name: Give it back
  gcu.topsrider.topsrider_lock:
    path: /var/lib/topsrider/run.lock
    state: released
    holder: {id: "{{ topsrider_run_id }}", token: "{{ run_token }}"}
'''

RETURN = r'''
locked:
  description: True when the call failed because another run held the lock for the whole O(timeout).
  returned: on that failure
  type: bool
holder:
  description: The run that holds the lock after this call (null when nobody does).
  returned: always
  type: dict
waited_for:
  description: The other run this call waited for, when it had to wait.
  returned: state=acquired
  type: dict
broken:
  description: The holder removed through O(break_id).
  returned: when a lock was broken
  type: dict
'''

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gcu.topsrider.plugins.module_utils._lock import (
    LockError, acquire, describe, locked_message, read_holder, release)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            state=dict(type="str", default="acquired", choices=["acquired", "released"]),
            holder=dict(type="dict", required=True),
            timeout=dict(type="int", default=600),
            break_id=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if not 0 <= p["timeout"] <= 86400:
        module.fail_json(msg="timeout must be between 0 and 86400 seconds, got %d" % p["timeout"])
    holder = dict(p["holder"])
    if not holder.get("id") or not holder.get("token"):
        module.fail_json(msg="holder needs id and token")
    path = p["path"]
    if module.check_mode:
        current = read_holder(path)
        if current is not None and current != holder and not (
                isinstance(current, dict) and current.get("token") == holder.get("token")):
            module.warn("another run is changing this node: %s; what check mode reads may change under it"
                        % describe(current))
        module.exit_json(changed=False, holder=current if current is not None else None)
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o700)
    if p["state"] == "released":
        released, current = release(path, holder)
        if current is not None:
            module.warn("the lock %s is held by %s, not by this run; left in place" % (path, describe(current)))
        module.exit_json(changed=released, holder=current)
    try:
        changed, waited_for, broken = acquire(path, holder, p["timeout"], p["break_id"])
    except LockError as e:
        held = e.args[0]
        module.fail_json(msg=locked_message(held, p["timeout"], path), locked=True,
                         holder=held if isinstance(held, dict) else None)
    if broken is not None:
        module.warn("broke the lock of %s (break_id)" % describe(broken))
    module.exit_json(changed=changed, holder=holder, waited_for=waited_for, broken=broken)


if __name__ == "__main__":
    main()
