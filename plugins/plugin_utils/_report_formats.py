# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every report of the collection shares (drift, fabric, the fleet report
of deploy, verify and rollback): the exit codes, a Markdown table cell, the
Prometheus text format, an XML document, and the run id a report file is
named by. Controller side (filters only); pure; Python 3.6+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from xml.etree import ElementTree

from ansible_collections.gcu.topsrider.plugins.module_utils._values import run_id as checked_run_id

EXIT_CLEAN = 0
EXIT_DRIFT = 3
EXIT_FAILED = 4


class ReportError(ValueError):
    """A report cannot be made from what it was given."""


def exit_code_for(status):
    """0 clean, 3 drift found, 4 the run failed or a node was unreachable."""
    return {"clean": EXIT_CLEAN, "drift": EXIT_DRIFT}.get(status, EXIT_FAILED)


def short_text(value):
    """A value as short text: none, a comma list, or str()."""
    if value is None:
        return "none"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) or "none"
    return str(value)


def md_cell(text):
    """A value as one Markdown table cell (| escaped, one line)."""
    return short_text(text).replace("|", "\\|").replace("\n", " ")


_LABEL_ESCAPES = (("\\", "\\\\"), ("\n", "\\n"), ('"', '\\"'))


def _label(value):
    value = str(value)
    for a, b in _LABEL_ESCAPES:
        value = value.replace(a, b)
    return value


def prometheus_text(families):
    """Prometheus text exposition format (node_exporter's textfile collector)
    from [(name, help, [(((label, value), ...), sample), ...]), ...]: every
    family a gauge; a sample without labels is written without braces."""
    out = []
    for name, help_text, samples in families:
        out.append("# HELP %s %s" % (name, help_text))
        out.append("# TYPE %s gauge" % name)
        for labels, value in samples:
            text = ",".join('%s="%s"' % (k, _label(v)) for k, v in labels)
            out.append("%s{%s} %s" % (name, text, value) if text else "%s %s" % (name, value))
    return "\n".join(out) + "\n"


def xml_document(root):
    """An ElementTree element as a UTF-8 XML document text (JUnit reports)."""
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(root, encoding="unicode") + "\n"


def safe_run_id(run_id):
    """Run ids become file names: the collection's one name rule (_values.run_id); ReportError otherwise."""
    if run_id is None or run_id == "":
        raise ReportError("a report needs its run's id")
    try:
        return checked_run_id(run_id)
    except ValueError as e:
        raise ReportError(str(e))
