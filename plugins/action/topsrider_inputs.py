# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action of gcu.topsrider.topsrider_inputs (documented in plugins/modules/topsrider_inputs.py).

A run's inputs on one host in one task, judged by plugin_utils/_inputs.py:
the release's checks (made once per run on the controller, handed in), the
node's Python (one raw command, only when the release passed; no module is
sent) and the operator's settings (the variable named by settings_var,
templated only when the release and the Python passed). The first failing
check's sentence fails the host. It was a raw task and an assert: one task
per host less on every deploy and drift check."""
from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.gcu.topsrider.plugins.plugin_utils._inputs import CHECKS, node_input_problems, python_command

ARGUMENT_SPEC = {"checks": {"type": "list", "elements": "str", "default": list(CHECKS)},
                 "release": {"type": "dict", "default": {}},
                 "python": {"type": "list", "elements": "str", "default": []},
                 "settings_var": {"type": "str"}}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    # Read-only: the raw command and the judgement run in check mode too.
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        if "python" in args["checks"] and not args["python"]:
            raise AnsibleActionFail("topsrider_inputs: python (the interpreters to try) is needed for the python check")
        if "settings" in args["checks"] and not args["settings_var"]:
            raise AnsibleActionFail("topsrider_inputs: settings_var is needed for the settings check")
        found = {}

        def run_python():
            found.update(self._low_level_execute_command(python_command(args["python"]), sudoable=True))
            return found

        try:
            problems = node_input_problems(
                args["checks"], args["release"], run_python, (task_vars or {}).get("inventory_hostname"),
                lambda: self._templar.resolve_variable_expression(args["settings_var"]))
        except ValueError as e:
            raise AnsibleActionFail("topsrider_inputs: %s" % e)
        result.update(changed=False, python={"rc": found.get("rc"), "stdout": found.get("stdout"),
                                             "stderr": found.get("stderr")} if found else None)
        if problems:
            result.update(failed=True, msg=problems[0])
        return result
