# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):
    """The attributes the gcu.topsrider modules share.

    A module lists gcu.topsrider.attributes (the platform) and, when it only
    reads, gcu.topsrider.attributes.read_only (check and diff mode) under
    extends_documentation_fragment; its own attributes block keeps only what
    differs (ansible-doc merges the module's keys over the fragment's).
    """

    # Every module: Linux nodes.
    DOCUMENTATION = r'''
options: {}
attributes:
  platform:
    support: full
    platforms: posix
    description: Linux nodes managed by gcu.topsrider.
'''

    # Modules that only read the node.
    READ_ONLY = r'''
options: {}
attributes:
  check_mode:
    support: full
    description: The module only reads; check mode runs it unchanged.
  diff_mode:
    support: none
    description: Nothing is changed, so there is no diff.
'''
