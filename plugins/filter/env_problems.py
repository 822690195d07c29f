# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Environment filters: env_problems and env_export_lines, thin wrappers of
plugins/module_utils/_envcheck.py, the collection's one rule for environment
names and values (eccl_env, dist_launch, eccl_probe); eccl_env_problems and
eccl_env_environment over plugins/plugin_utils/_eccl_settings.py. Each is
documented in its own sidecar (<name>.yml beside this file): ansible-doc
reads a .py file's DOCUMENTATION for every filter the file holds."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gcu.topsrider.plugins.plugin_utils._filters import deferred, guarded

env_problems = deferred("module_utils._envcheck.env_problems")
export_line = deferred("module_utils._envcheck.export_line")


def env_export_lines(mapping):
    """The profile's export lines, sorted by name (a mapping env_problems passed)."""
    return [export_line(name, mapping[name]) for name in sorted(mapping)]


class FilterModule(object):
    def filters(self):
        return {"env_problems": env_problems, "env_export_lines": env_export_lines,
                "eccl_env_problems": guarded(deferred("plugin_utils._eccl_settings.settings_problems")),
                "eccl_env_environment": guarded(deferred("plugin_utils._eccl_settings.written_environment"))}
