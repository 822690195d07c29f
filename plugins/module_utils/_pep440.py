# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""PEP 440 for the collection: version rules are the ``packaging`` library's
(the one pip decides with), never hand-written. Python 3.6+.

Where packaging comes from, first found: the interpreter's own
``packaging`` (every controller has it: ansible-core depends on it); pip's
vendored copy ``pip._vendor.packaging`` when pip is installed for that
interpreter; the pip wheel that interpreter's ``ensurepip`` installs into
new venvs (``ensurepip/_bundled``, the ``WHEEL_PKG_DIR`` it was built with,
or the distributions' ``/usr/share/python-wheels`` and
``/usr/share/python3-wheels``: Debian's ``python3-venv`` brings one), read
from the wheel in place. With none of them packaging_source() raises
NoPackagingError, whose message names the interpreter and every place
looked at.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import os
import re
import sys

# Where distributions keep the pip wheel that ensurepip and venv install (Debian and Ubuntu; Fedora and RHEL).
PIP_WHEEL_DIRS = ("/usr/share/python-wheels", "/usr/share/python3-wheels")

_LOADED = []


class NoPackagingError(RuntimeError):
    """Neither packaging nor pip's vendored copy of it can be imported by this Python."""


def _pip_wheel_dirs():
    dirs = []
    try:
        import ensurepip
        dirs.append(os.path.join(os.path.dirname(ensurepip.__file__), "_bundled"))
        for name in ("_WHEEL_PKG_DIR", "_WHEEL_DIR"):
            if isinstance(getattr(ensurepip, name, None), str):
                dirs.append(getattr(ensurepip, name))
    except ImportError:
        pass
    try:
        import sysconfig
        if sysconfig.get_config_var("WHEEL_PKG_DIR"):
            dirs.append(sysconfig.get_config_var("WHEEL_PKG_DIR"))
    except ImportError:
        pass
    out = []
    for d in dirs + list(PIP_WHEEL_DIRS):
        if d not in out:
            out.append(d)
    return out


def _wheel_key(path):
    return tuple(int(n) for n in re.findall(r"\d+", os.path.basename(path).split("-")[1]))


def _from_pip_wheel(dirs):
    """packaging's SpecifierSet and Version from a pip-*.whl in `dirs` (the first dir that has one first, its
    newest first), imported from the zip; or None."""
    if "pip" in sys.modules:
        return None
    wheels = []
    for d in dirs:
        wheels.extend(sorted(glob.glob(os.path.join(d, "pip-*-py3-none-any.whl"))
                             + glob.glob(os.path.join(d, "pip-*-py2.py3-none-any.whl")), key=_wheel_key, reverse=True))
    for wheel in wheels:
        sys.path.append(wheel)
        try:
            from pip._vendor.packaging.specifiers import SpecifierSet
            from pip._vendor.packaging.version import Version
            return SpecifierSet, Version, "pip._vendor.packaging from %s" % wheel
        except ImportError:
            for name in [m for m in sys.modules if m == "pip" or m.startswith("pip.")]:
                del sys.modules[name]
        finally:
            sys.path.remove(wheel)
    return None


def packaging_source():
    """(SpecifierSet, Version, where they came from); NoPackagingError when this Python has none."""
    if _LOADED:
        return _LOADED[0]
    try:
        from packaging.specifiers import SpecifierSet
        from packaging.version import Version
        found = (SpecifierSet, Version, "packaging")
    except ImportError:
        try:
            from pip._vendor.packaging.specifiers import SpecifierSet
            from pip._vendor.packaging.version import Version
            found = (SpecifierSet, Version, "pip._vendor.packaging")
        except ImportError:
            dirs = _pip_wheel_dirs()
            found = _from_pip_wheel(dirs)
            if found is None:
                raise NoPackagingError(
                    "the version rules need PEP 440's packaging library, and the node's Python %s (%s) has "
                    "none: no packaging module, no pip module (pip._vendor.packaging) and no pip wheel (pip-*.whl) "
                    "in %s. Install the distribution's python3-packaging, python3-pip or python3-venv package on "
                    "the node (or point ansible_python_interpreter at a Python that has one of them); nothing was "
                    "changed." % (sys.executable or "?", "%d.%d.%d" % sys.version_info[:3], ", ".join(dirs)))
    _LOADED.append(found)
    return found


def satisfies(version, spec):
    """Does `version` ('2.13.0+cpu') satisfy `spec` ('==2.13.0', '>=2.0,<3')? As pip check asks it of an
    installed distribution: SpecifierSet(spec).contains(version, prereleases=True). False when either does not
    parse as PEP 440 (pip would refuse it too). NoPackagingError where this Python has no packaging."""
    specifier_set, version_class, _source = packaging_source()
    try:
        have = version_class(str(version).strip())
        wanted = specifier_set(str(spec))
    except ValueError:  # InvalidVersion and InvalidSpecifier are ValueErrors
        return False
    return bool(wanted.contains(have, prereleases=True))
