# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write a run's report files on the controller in one process.

stdin: JSON [[path, content], ...]. Each file is written next to itself and
renamed into place (a reader never sees half a report), mode 0644, in its
directory, made (0755) when missing (a run's first host line makes
<kind>-<run id>.d), ending
with a newline (added when the text has none: a Jinja '\\n' inside a YAML
block scalar arrives as two characters, so callers do not append one). One call
instead of a copy-module run per file: the reports of a 16-node drift check
took longer to write than the check itself.
"""
import importlib.util
import json
import os
import sys

# The collection's one atomic writer, loaded by its path: this script runs
# under ansible_playbook_python, outside Ansible's collection loader, from
# <collection>/playbooks/files/ (a checkout or an installed collection).
ATOMIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "plugins", "module_utils", "_atomic.py")


def load_atomic(path=ATOMIC):
    spec = importlib.util.spec_from_file_location("topsrider_atomic", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    write_atomic = load_atomic().write_atomic
    files = json.load(sys.stdin)
    for path, content in files:
        if not isinstance(path, str) or not path or not isinstance(content, str):
            sys.exit("write_reports: want [[path, text], ...], got %r" % ([path, type(content).__name__],))
        directory = os.path.dirname(os.path.abspath(path))
        # Several hosts write their lines at once (one process each): another may make
        # the run's directory between a look and a mkdir, so an existing one is fine.
        os.makedirs(directory, 0o755, exist_ok=True)
        write_atomic(path, content if content.endswith("\n") else content + "\n", 0o644, prefix=".report-")
    print(json.dumps({"written": [pair[0] for pair in files]}))


if __name__ == "__main__":
    main()
