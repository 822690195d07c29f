# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one torch rule: does an installed torch satisfy what a torch_gcu wheel
requires (its Requires-Dist), and which TopsRider release a torch_gcu
version was built for. eccl_probe's framework level, torch_gcu_wheel and
drift judge torch with it. Python 3.6+.

The judgement is PEP 440's, made by ``packaging`` (_pep440: the node's own
packaging, pip's vendored copy or the one in the pip wheel ensurepip brings),
never by hand: ``SpecifierSet(spec).contains(installed, prereleases=True)``,
what ``pip check`` asks of an installed distribution. So local labels count
as PEP 440 says (``==2.13.0`` takes ``2.13.0+cpu``, ``==2.13.0+cpu`` does not
take ``2.13.0+cu121``), epochs, post-releases, ``~=``, ``===`` and
``==2.13.*`` are packaging's, and an installed pre-release satisfies a
specifier whose range holds it (``2.14.0rc1`` satisfies ``>=2.13.0``) but is
never its release (``1.7.0a0`` is below ``1.7.0``, so ``==1.7.0`` and
``>=1.7.0`` refuse it).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gcu.topsrider.plugins.module_utils._pep440 import satisfies


def release_of(version):
    """'2.13.0+cpu' -> '2.13.0': a version without its local label."""
    return str(version or "").split("+", 1)[0].strip()


def torch_requirement(requires):
    """The torch requirement spec in Requires-Dist lines ('==2.13.0'), or None."""
    for line in requires or []:
        spec = line.split(";", 1)[0].strip()
        m = re.match(r"^torch(?![\w.-])\s*\(?\s*([^)]*)\)?\s*$", spec, re.IGNORECASE)
        if m:
            return m.group(1).replace(" ", "") or None
    return None


def torch_matches(installed, spec):
    """Does torch `installed` (e.g. '2.13.0+cpu') satisfy `spec` ('==2.13.0', '>=2.0,<3')? None when either is
    unknown; False when either does not parse as PEP 440. NoPackagingError where this Python has no packaging."""
    if not installed or not spec:
        return None
    return satisfies(installed, spec)


def stack_of(torch_gcu_version):
    """'2.13.0+2.5.136' -> '2.5.136' (the TopsRider release a torch_gcu wheel was built for), or None."""
    parts = str(torch_gcu_version or "").split("+", 1)
    return parts[1].strip() if len(parts) == 2 and parts[1].strip() else None
