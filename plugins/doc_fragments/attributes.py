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

    # Modules that judge an installed torch against a torch_gcu wheel's requirement (module_utils/_torch_rule.py).
    TORCH_RULE = r'''
options: {}
notes:
  - Whether the installed torch satisfies torch_gcu's torch requirement is PEP 440's rule, decided by the C(packaging)
    library as C(pip check) decides it for an installed distribution - C(==2.13.0) takes C(2.13.0+cpu) but
    C(==2.13.0+cpu) does not take C(2.13.0+cu121); an installed pre-release satisfies a range that holds it
    (C(2.14.0rc1) satisfies C(>=2.13.0)) and is never its release (C(2.13.0rc1) does not satisfy C(>=2.13.0)).
  - The node's module interpreter (C(ansible_python_interpreter)) provides C(packaging) - its own C(packaging), else
    pip's vendored copy when pip is installed for it, else the copy in the pip wheel its C(ensurepip) installs into
    new venvs (C(ensurepip/_bundled), or C(/usr/share/python-wheels) from Debian's C(python3-venv),
    C(/usr/share/python3-wheels) on Fedora and RHEL). With none of them the module fails, naming the interpreter and
    the places looked at, before anything changes.
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
