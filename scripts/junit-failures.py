#!/usr/bin/env python3
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Print the failed and erroring tests of a pytest JUnit XML file, each with
the first lines of its message: scripts/molecule-all.sh calls it when a
scenario fails, so that the last lines of a CI log name the test and why
(molecule's destroy output comes after pytest's own summary).

  junit-failures.py FILE [--lines N]
Exit 0 always (a diagnostic, never the verdict); says so when FILE is absent."""
from __future__ import annotations

import argparse
import os
import sys
import xml.etree.ElementTree as ET


def failures(path, lines=12):
    """[(test id, kind, message lines)] of the failed or erroring test cases in `path`."""
    found = []
    for case in ET.parse(path).getroot().iter("testcase"):
        for kind in ("failure", "error"):
            node = case.find(kind)
            if node is None:
                continue
            test = "%s::%s" % (case.get("classname", "?"), case.get("name", "?"))
            text = (node.get("message") or "").strip()
            body = (node.text or "").strip().splitlines()
            # The assertion's own lines ("E   ...") say most; the message when there are none.
            detail = [line for line in body if line.startswith("E ")] or text.splitlines() or body
            found.append((test, kind, detail[:lines]))
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--lines", type=int, default=12)
    args = parser.parse_args(argv)
    if not os.path.exists(args.file):
        print("junit-failures: %s not written (the scenario failed before its tests ran)" % args.file)
        return 0
    try:
        found = failures(args.file, args.lines)
    except ET.ParseError as exc:
        print("junit-failures: %s: %s" % (args.file, exc))
        return 0
    if not found:
        print("junit-failures: no failed test in %s (the scenario failed outside its tests)" % args.file)
    for test, kind, detail in found:
        print("%s %s" % ("FAILED" if kind == "failure" else "ERROR", test))
        for line in detail:
            print("    " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
