# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write a run's report files on the controller in one process.

stdin: JSON [[path, content], ...]. Each file is written next to itself and
renamed into place (a reader never sees half a report), mode 0644, ending
with a newline (added when the text has none: a Jinja '\\n' inside a YAML
block scalar arrives as two characters, so callers do not append one). One call
instead of a copy-module run per file: the reports of a 16-node drift check
took longer to write than the check itself.
"""
import json
import os
import sys
import tempfile


def write(path, content):
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".report-", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(content if content.endswith("\n") else content + "\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def main():
    files = json.load(sys.stdin)
    for path, content in files:
        if not isinstance(path, str) or not path or not isinstance(content, str):
            sys.exit("write_reports: want [[path, text], ...], got %r" % ([path, type(content).__name__],))
        write(path, content)
    print(json.dumps({"written": [pair[0] for pair in files]}))


if __name__ == "__main__":
    main()
