# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's one atomic file writer.

Used on the node by the deb_bundle journal (_journal.write_json_atomic) and
the torch_gcu wheel's record (_wheel), and on the controller by the action
gcu.topsrider.topsrider_reports (every report file, the fleet report's
callback included), the wrappers' run metric (scripts/topsrider_check.py),
the .run check's memo (plugin_utils/_checked_memo.py) and the bench. It
imports nothing but the standard library, so that a plain script can load
this file by its path (scripts/topsrider_check.py does: it runs outside
Ansible's collection loader). A full file system fails the
write and leaves the old file as it was.
Runs on the node: Python 3.6+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import tempfile


def write_atomic(path, text, mode, prefix=".tmp-"):
    """Write text (UTF-8) to path so that a reader sees the old file or the
    new one, never half of one: a temporary file in the same directory with
    the final mode, flushed to disk, renamed over path, then the directory
    synced. The directory must exist; on any failure the temporary file is
    removed and the error raised."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=prefix, dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            os.fchmod(f.fileno(), mode)
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    dfd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
