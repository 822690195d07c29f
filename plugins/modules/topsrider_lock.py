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
  - Takes or releases the node's TopsRider lock, a file that names the run holding it (id, kind, user, controller,
    start time), written whole to a temporary file and hard-linked into place (atomic; a full disk leaves no lock
    file). C(deploy.yml) and C(rollback.yml) take it before they read anything they decide on and release it in
    the play's C(always), so two runs never interleave on a node and a second run waits (up to O(timeout)) or
    fails naming the run that holds it.
  - A lock held by the same run (same O(holder) id and token) is taken again without waiting, so a rescue can
    go on under it; that renews its lease.
  - >-
    A lock whose holder is gone is taken over, and the result says so (RV(took_over), a warning): its action
    records this controller (hostname, boot id, pid namespace) and the run's C(ansible-playbook) process (pid and
    start time) in O(holder), and takes over the lock of a run on the same controller whose process is gone
    (also when its pid now belongs to another process). A holder on another controller is gone when its lease
    (O(lease) seconds from its last acquire, the node's clock) has passed. A lock file that is not readable JSON
    (an older version's writer that died) is stale once it is 60 s old. Anything else is never removed, except
    by O(break_id) naming that run.
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
      - The action adds C(boot_id), C(pidns), C(pid) and C(pid_start) (this controller and its ansible-playbook
        process), which decide whether a later run on the same controller may take the lock over.
    type: dict
    required: true
  lease:
    description:
      - Seconds (60 to 604800) after this run's last acquire of the lock when a run on another controller may take
        it over (this run is then taken to be gone). Recorded in the lock as C(lease_s) with C(renewed), the
        node's time. Pick it longer than the run holds the lock (in C(deploy.yml), the wait for a drained node
        plus the rollout). Unset, the lock has no lease (only O(break_id) removes it from another controller).
    type: int
    version_added: 0.3.0
  takeover:
    description:
      - "The action's judgement that the holder with this C(token) is gone (its C(reason) is said): that lock is
        taken over when it still is that holder's. Set by the action, not by a task."
    type: dict
    version_added: 0.3.0
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
took_over:
  description:
    - "The stale lock this call took over: C(holder) (the previous holder, or the string C(unreadable)), C(reason)
      (why it was judged gone), C(note) (the line of the run's report: C(interrupted deploy run ID found (its
      ansible-playbook (pid N on ctl) is gone))."
  returned: when a stale lock was taken over
  type: dict
'''

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gcu.topsrider.plugins.module_utils._lock import (
    LockError, acquire, check_mode_warning, describe, locked_message, read_holder, release, took_over_line)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            state=dict(type="str", default="acquired", choices=["acquired", "released"]),
            holder=dict(type="dict", required=True),
            timeout=dict(type="int", default=600),
            break_id=dict(type="str"),
            lease=dict(type="int"),
            takeover=dict(type="dict"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if not 0 <= p["timeout"] <= 86400:
        module.fail_json(msg="timeout must be between 0 and 86400 seconds, got %d" % p["timeout"])
    if p["lease"] is not None and not 60 <= p["lease"] <= 604800:
        module.fail_json(msg="lease must be between 60 and 604800 seconds, got %d" % p["lease"])
    holder = dict(p["holder"], **({} if p["lease"] is None else {"lease_s": p["lease"]}))
    if not holder.get("id") or not holder.get("token"):
        module.fail_json(msg="holder needs id and token")
    path = p["path"]
    if module.check_mode:
        current = read_holder(path)
        warning = check_mode_warning(path, current, holder)
        if warning:
            module.warn(warning)
        module.exit_json(changed=False, holder=current)
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o700)
    if p["state"] == "released":
        released, current = release(path, holder)
        if current is not None:
            module.warn("the lock %s is held by %s, not by this run; left in place" % (path, describe(current)))
        module.exit_json(changed=released, holder=current)
    try:
        changed, waited_for, broken, took_over = acquire(path, holder, p["timeout"], p["break_id"],
                                                         takeover=p["takeover"])
    except LockError as e:
        module.fail_json(msg=locked_message(e.args[0], p["timeout"], path), locked=True,
                         holder=e.args[0] if isinstance(e.args[0], dict) else None)
    except OSError as e:
        module.fail_json(msg="The node lock %s could not be written: %s; no lock file was left and nothing was "
                             "changed. Free space in %s and run again." % (path, e.strerror or e, directory))
    if broken is not None:
        module.warn("broke the lock of %s (break_id)" % describe(broken))
    if took_over is not None:
        module.warn(took_over_line(took_over["holder"], took_over["reason"]))
    module.exit_json(changed=changed, holder=holder, waited_for=waited_for, broken=broken, took_over=took_over)


if __name__ == "__main__":
    main()
