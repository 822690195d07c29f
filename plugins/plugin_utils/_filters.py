# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every filter of the collection does around its pure function in
plugins/module_utils or plugins/plugin_utils: plain data in, AnsibleFilterError
out (controller side). A filter plugin is its adaptors and one table:
FilterModule.filters() returns guarded_filters({name: function}, its own
errors), a function of plugins/module_utils or plugin_utils named through
deferred("plugin_utils._fleet_report.build").

deferred imports the helper at the filter's first call, not with the filter
file: ansible-core looks up a collection's filter by
importing every file of plugins/filter (its Jinja2Loader), in each worker
process that templates one, compiling the collection's code from source each
time. A filter file that imported its implementation at the top made every
filter pay for all of them: about 45 ms a task and host before the first
line of the filter ran (docs/performance.md)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import functools
import importlib

from ansible.errors import AnsibleFilterError

# What a pure function raises on data it cannot use (the collection's own
# errors are ValueErrors); callers add their own errors.
BAD_INPUT = (KeyError, TypeError, ValueError)
PLUGINS = "ansible_collections.gcu.topsrider.plugins."


def plain(value):
    """Jinja and ansible-core 2.19 hand over tagged or lazy containers: make plain ones."""
    if isinstance(value, dict):
        return dict((str(k), plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return value


def guarded(func, errors=()):
    """The filter for the pure function func: its arguments made plain, and
    BAD_INPUT or one of errors raised as AnsibleFilterError('<func name>: ...')."""
    caught = BAD_INPUT + tuple(errors)

    @functools.wraps(func)
    def the_filter(*args, **kwargs):
        try:
            return func(*[plain(a) for a in args], **dict((k, plain(v)) for k, v in kwargs.items()))
        except caught as e:
            raise AnsibleFilterError("%s: %s" % (func.__name__, e))
    return the_filter


def deferred(path):
    """The function at `path` under plugins/ ("module_utils._values.value_problems"),
    imported at its first call (see the module's docstring); it has that function's name."""
    module, name = path.rsplit(".", 1)

    def call(*args, **kwargs):
        return getattr(importlib.import_module(PLUGINS + module), name)(*args, **kwargs)
    call.__name__ = call.__qualname__ = name
    return call


def guarded_filters(table, errors=()):
    """A filter plugin's filters(): {name: pure function} -> {name: guarded filter}."""
    return dict((name, guarded(func, errors)) for name, func in table.items())
