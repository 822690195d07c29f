# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The README's fenced blocks and their readme-test markers (pure; used by
tests/readme/run.py and the unit test tests/unit/test_readme_markers.py).

Every fenced block of README.md has, on the last non-blank line before it, a
marker that says how the README test runs it, or why it cannot run here:

    <!-- readme-test: <kind> id=<id> [lines=<n>,...][; <why the other lines do not run>] -->
    <!-- readme-test: skip; <why this block cannot run here> -->

kinds:
  controller  a sh block run with bash on the controller, from the project root
  node        a sh block run with bash on a simulated node
  play        a yaml block that is a playbook (written to the file its first
              comment names, e.g. `# site-launch.yml`, and run with ansible-playbook)
  tasks       a yaml block of tasks, run as the tasks of a play against a node
  file        a file the reader writes (any language): its first line is a comment
              naming it (`# ansible.cfg`), and it is written there, unchanged, in
              the work directory the other blocks run in
  installed   a sh block that tests/installed/run.py runs (make installed-test), with
              bash in a copy of the checkout, as the operator it installs for

lines= picks the logical lines (continuations joined, comments and blank lines
not counted) that run, in their order; the others need the reason after `;`.
The text that runs is the README's, unchanged.
"""
import re

MARKER_RE = re.compile(r"^<!--\s*readme-test:\s*(?P<body>.*?)\s*-->\s*$")
FENCE_RE = re.compile(r"^```(?P<lang>[A-Za-z0-9_-]*)\s*$")
KINDS = ("controller", "node", "play", "tasks", "file", "installed")
# The kinds tests/readme/run.py runs (installed: tests/installed/run.py).
README_TEST_KINDS = ("controller", "node", "play", "tasks", "file")


class MarkerError(Exception):
    pass


class Block(object):
    def __init__(self, line, lang, text, marker):
        self.line, self.lang, self.text, self.marker = line, lang, text, marker
        self.kind = self.id = self.reason = None
        self.lines = None
        if marker is not None:
            self._parse(marker)

    def _parse(self, body):
        head, _sep, reason = body.partition(";")
        self.reason = reason.strip() or None
        words = head.split()
        if not words:
            raise MarkerError("line %d: empty readme-test marker" % self.line)
        self.kind = words[0]
        for word in words[1:]:
            key, eq, value = word.partition("=")
            if not eq or key not in ("id", "lines"):
                raise MarkerError("line %d: unknown marker word %r" % (self.line, word))
            if key == "id":
                self.id = value
            else:
                if not re.match(r"^[0-9]+(,[0-9]+)*\Z", value):
                    raise MarkerError("line %d: lines= takes numbers, got %r" % (self.line, value))
                self.lines = [int(n) for n in value.split(",")]

    def commands(self):
        """Logical lines of a sh block: continuations joined, blank and comment-only lines dropped."""
        out, current = [], ""
        for raw in self.text.splitlines():
            if not current and (not raw.strip() or raw.lstrip().startswith("#")):
                continue
            if raw.rstrip().endswith("\\"):
                current += raw + "\n"
                continue
            out.append(current + raw)
            current = ""
        if current:
            out.append(current.rstrip("\n"))
        return out

    def script(self):
        """The README text that runs: the whole block, or the picked logical lines, unchanged."""
        if self.lines is None:
            return self.text
        commands = self.commands()
        return "\n".join(commands[n - 1] for n in self.lines) + "\n"


def parse(text):
    """Every fenced block of a Markdown text, in order, with its marker (or None)."""
    blocks, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE_RE.match(lines[i])
        if not m:
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        body = "\n".join(lines[start + 1:j]) + "\n"
        k = start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        marker = MARKER_RE.match(lines[k]) if k >= 0 else None
        blocks.append(Block(start + 1, m.group("lang"), body, marker.group("body") if marker else None))
        i = j + 1
    return blocks


def problems(blocks):
    """What is wrong with the markers: a block without one, a skip or a partial run without a reason,
    an unknown kind, a runnable block without an id or a duplicate id, lines= out of range."""
    out, seen = [], set()
    for b in blocks:
        where = "README.md line %d (```%s)" % (b.line, b.lang)
        if b.marker is None:
            out.append("%s: no readme-test marker; mark it to run, or `skip; <reason>`" % where)
            continue
        if b.kind == "skip":
            if not b.reason:
                out.append("%s: skip needs a reason after ';'" % where)
            continue
        if b.kind not in KINDS:
            out.append("%s: unknown kind %r (one of %s, skip)" % (where, b.kind, ", ".join(KINDS)))
            continue
        if not b.id:
            out.append("%s: a runnable block needs id=" % where)
        elif b.id in seen:
            out.append("%s: id %s used twice" % (where, b.id))
        seen.add(b.id)
        if b.kind in ("controller", "node", "installed") and b.lang != "sh":
            out.append("%s: kind %s runs sh blocks" % (where, b.kind))
        if b.kind in ("play", "tasks") and b.lang != "yaml":
            out.append("%s: kind %s runs yaml blocks" % (where, b.kind))
        if b.kind == "file" and not file_name(b):
            out.append("%s: kind file needs a first line `# <file name>`" % where)
        if b.lines is not None:
            count = len(b.commands())
            if any(n < 1 or n > count for n in b.lines):
                out.append("%s: lines=%s, but the block has %d command line(s)" % (
                    where, ",".join(map(str, b.lines)), count))
            if len(b.lines) < count and not b.reason:
                out.append("%s: lines= leaves lines out; say why after ';'" % where)
    return out


def file_name(block):
    """The file a `file` block names on its first line (`# ansible.cfg`), or None."""
    first = block.text.splitlines()[0] if block.text.strip() else ""
    m = re.match(r"^# ([A-Za-z0-9_.-]+)\s*$", first)
    return m.group(1) if m and m.group(1) not in (".", "..") else None


def runnable(blocks, kinds=README_TEST_KINDS):
    """id -> block of every block marked to run as one of `kinds` (the README test's, unless named)."""
    return dict((b.id, b) for b in blocks if b.kind in kinds and b.id)
