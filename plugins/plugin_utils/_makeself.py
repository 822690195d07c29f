# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read a makeself self-extracting archive (the vendor's TopsRider .run) without running it.

Nothing in the archive is ever executed: the shell header is parsed as text
(the variables makeself 2.4.x writes: label, skip, filesizes, totalsize, MD5,
SHA, CRCsum and the decompression command of MS_Decompress), the payload is
checked against makeself's own MD5/SHA256 checksums, and its tar stream is
unpacked with Python's tarfile after checking every member: no absolute
path and no `..` in a name, each member listed once, a hard link only to a
file of the archive (checked here), and nothing written or pointing out of
the tree through a link, no links to absolute paths, no device files or
fifos (tarfile's own ``data`` filter, ``tarfile.data_filter``, decides these
where the Python has it: 3.12, and 3.8.17, 3.9.17, 3.10.12 and 3.11.4 on;
Debian bookworm's 3.11.2 has not, so there the same rules are checked here).
After unpacking, every symlink must still resolve inside the tree (a link
that was dangling when written may lead out once later members exist, which
neither check sees).

Pure Python 3.6+, no ansible imports: scripts/topsrider-manifest loads it by
path on the controller.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import filecmp
import hashlib
import os
import re
import shutil
import tarfile
import tempfile

# The decompression command of the header's MS_Decompress -> tarfile's mode.
DECOMPRESSORS = {
    "gzip -cd": "gz",
    "bzip2 -d": "bz2",
    "xz -d": "xz",
    "cat": "",
}
HEADER_MAX_BYTES = 4 << 20   # a makeself header is ~20 KB (plus a licence text)
_MARK = b"This script was generated using Makeself"
_VAR_RE = re.compile(r'^([A-Za-z_][A-Za-z0-9_]*)="([^"]*)"$')
_DECOMPRESS_RE = re.compile(r'^\s*eval "([^"$]*)"\s*$')
_NO_MD5 = "0" * 32
_NO_SHA = "0" * 64
_DEB_RE = re.compile(r"^([a-z0-9][a-z0-9+.-]+)_([^_]+)_([^_]+)\.deb$")
_WHEEL_RE = re.compile(r"^([^-]+)-([^-]+)(?:-[^-]+)?-([^-]+)-([^-]+)-([^-]+)\.whl$")
_BUF = 1 << 20


class MakeselfError(Exception):
    """The file is not a makeself archive we can read, or fails its checks."""


def read_header(path):
    """Parse the shell header of the makeself archive at `path`, as text.

    Returns a dict: version (of makeself), label, script, skip (header lines),
    offset (bytes before the payload), filesizes (list of ints, one per
    appended tar), totalsize, md5 / sha256 / crc (lists, one per part; None
    where the archive was made without that checksum: --nomd5, no --sha256,
    --nocrc), compression (tarfile's "gz", "bz2", "xz" or "" for none) and
    size (of the whole file). Raises MakeselfError.
    """
    name = os.path.basename(path)
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(HEADER_MAX_BYTES)
    except (IOError, OSError) as e:
        raise MakeselfError("cannot read %s: %s" % (path, e))
    if not head.startswith(b"#!") or _MARK not in head[:4096]:
        raise MakeselfError("%s is not a makeself archive (no 'This script was generated using "
                            "Makeself' header)" % name)
    lines = head.split(b"\n")
    m = re.search(br"generated using Makeself ([0-9][0-9.]*)", head[:4096])
    version = m.group(1).decode("ascii") if m else "unknown"
    texts = [raw.decode("utf-8", "replace") for raw in lines[:-1]]   # the last piece may be cut short
    variables = {}
    for text in texts:
        vm = _VAR_RE.match(text)
        if vm and vm.group(1) not in variables:
            variables[vm.group(1)] = vm.group(2)
        if "skip" in variables:
            break
    decompress = None
    if variables.get("skip", "").isdigit():
        in_function = False
        for text in texts[:int(variables["skip"])]:
            in_function = in_function or text.startswith("MS_Decompress()")
            dm = _DECOMPRESS_RE.match(text) if in_function else None
            if dm:
                decompress = dm.group(1).strip()
                break
    missing = [k for k in ("label", "skip", "filesizes", "MD5", "SHA", "CRCsum") if k not in variables]
    if missing:
        raise MakeselfError("%s: the makeself %s header has no %s (makeself 2.4 or later expected)"
                            % (name, version, ", ".join(missing)))
    if variables.get("decrypt_cmd"):
        raise MakeselfError("%s: the payload is encrypted (decrypt_cmd is set); refusing" % name)
    if decompress is None:
        raise MakeselfError("%s: cannot find the decompression command (MS_Decompress) in the header" % name)
    if decompress not in DECOMPRESSORS:
        raise MakeselfError("%s: payload compressed with '%s'; supported: %s"
                            % (name, decompress, ", ".join(sorted(k for k in DECOMPRESSORS))))
    try:
        skip = int(variables["skip"])
        filesizes = [int(s) for s in variables["filesizes"].split()]
        totalsize = int(variables.get("totalsize") or sum(filesizes))
    except ValueError:
        raise MakeselfError("%s: skip/filesizes/totalsize in the header are not numbers" % name)
    if skip < 1 or not filesizes or len(lines) <= skip:
        raise MakeselfError("%s: header says skip=%d lines, filesizes=%r; not a payload we can find"
                            % (name, skip, variables["filesizes"]))
    offset = sum(len(line) + 1 for line in lines[:skip])
    parts = len(filesizes)

    def _sums(key, none, width):
        values = variables[key].split()
        if len(values) != parts:
            raise MakeselfError("%s: %s lists %d checksums for %d payload parts" % (name, key, len(values), parts))
        out = []
        for v in values:
            if v == none:
                out.append(None)
            elif width and not re.match(r"^[0-9a-f]{%d}$" % width, v):
                raise MakeselfError("%s: %s checksum %r is malformed" % (name, key, v))
            else:
                out.append(v)
        return out

    header = {
        "file": name, "version": version, "label": variables["label"],
        "script": variables.get("script", ""), "skip": skip, "offset": offset,
        "filesizes": filesizes, "totalsize": totalsize,
        "md5": _sums("MD5", _NO_MD5, 32), "sha256": _sums("SHA", _NO_SHA, 64),
        "crc": _sums("CRCsum", "0000000000", 0),
        "compression": DECOMPRESSORS[decompress], "size": size,
    }
    if sum(filesizes) != totalsize:
        raise MakeselfError("%s: filesizes add up to %d, totalsize says %d" % (name, sum(filesizes), totalsize))
    if size - offset != totalsize:
        raise MakeselfError("%s is %d bytes but its header announces %d (%d header + %d payload): %s"
                            % (name, size, offset + totalsize, offset, totalsize,
                               "truncated" if size - offset < totalsize else "trailing bytes"))
    return header


def verify(path, header=None):
    """Check the payload of `path` against the header's checksums (makeself's
    own --check, done here without running the archive).

    Every SHA256 and MD5 the header carries is verified; a part with neither
    (archive made with --nomd5 and without --sha256) is refused, as CRC32 alone
    proves no integrity. Returns {"sha256": of the whole file, "size": bytes,
    "checked": ["sha256", "md5"...]}. Raises MakeselfError.
    """
    header = header or read_header(path)
    name = header["file"]
    for i in range(len(header["filesizes"])):
        if header["md5"][i] is None and header["sha256"][i] is None:
            raise MakeselfError("%s: payload part %d has neither an MD5 nor a SHA256 checksum (made with "
                                "--nomd5 and without --sha256); refusing an archive that cannot be verified"
                                % (name, i + 1))
    whole = hashlib.sha256()
    checked = set()
    with open(path, "rb") as f:
        head = f.read(header["offset"])
        whole.update(head)
        for i, part_size in enumerate(header["filesizes"]):
            md5, sha = hashlib.md5(), hashlib.sha256()
            left = part_size
            while left:
                chunk = f.read(min(_BUF, left))
                if not chunk:
                    raise MakeselfError("%s: truncated inside payload part %d" % (name, i + 1))
                left -= len(chunk)
                whole.update(chunk)
                md5.update(chunk)
                sha.update(chunk)
            for kind, want, got in (("SHA256", header["sha256"][i], sha.hexdigest()),
                                    ("MD5", header["md5"][i], md5.hexdigest())):
                if want is None:
                    continue
                if got != want:
                    raise MakeselfError("%s: %s checksum of payload part %d does not match its header "
                                        "(header %s, payload %s): the archive is corrupt"
                                        % (name, kind, i + 1, want, got))
                checked.add(kind.lower())
        if f.read(1):
            raise MakeselfError("%s: bytes after the payload" % name)
    return {"sha256": whole.hexdigest(), "size": header["size"], "checked": sorted(checked)}


class _Part(object):
    """A read-only stream over `size` bytes of an open file."""

    def __init__(self, f, size):
        self._f = f
        self._left = size

    def read(self, n=-1):
        if n is None or n < 0 or n > self._left:
            n = self._left
        data = self._f.read(n)
        self._left -= len(data)
        return data


def _inside(root, path):
    return path == root or path.startswith(root + os.sep)


def _hand_filter(root, member):
    """What tarfile's data filter refuses, for a Python without it (same rules, our messages)."""
    name = member.name
    if member.ischr() or member.isblk() or member.isfifo() or member.isdev():
        raise MakeselfError("member %r: device or fifo; refusing" % name)
    if not _inside(root, os.path.realpath(os.path.dirname(os.path.join(root, os.path.normpath(name))))):
        raise MakeselfError("member %r: its directory leads out of the archive through a link" % name)
    if member.issym():
        if os.path.isabs(member.linkname):
            raise MakeselfError("member %r: symlink to the absolute path %r" % (name, member.linkname))
        parent = os.path.realpath(os.path.dirname(os.path.join(root, os.path.normpath(name))))
        if not _inside(root, os.path.realpath(os.path.join(parent, member.linkname))):
            raise MakeselfError("member %r: symlink %r points out of the archive" % (name, member.linkname))
    if member.islnk() and (os.path.isabs(member.linkname)
                           or not _inside(root, os.path.realpath(os.path.join(root, member.linkname)))):
        raise MakeselfError("member %r: hard link to %r, not a file of the archive" % (name, member.linkname))


def _data_filter(root, member):
    """tarfile's data filter (PEP 706) decides; its refusal, in the words of _hand_filter."""
    name = member.name
    try:
        DATA_FILTER(member, root)
    except tarfile.SpecialFileError:
        raise MakeselfError("member %r: device or fifo; refusing" % name)
    except tarfile.AbsoluteLinkError:
        raise MakeselfError("member %r: %s to the absolute path %r" % (
            name, "symlink" if member.issym() else "hard link", member.linkname))
    except tarfile.LinkOutsideDestinationError:
        if member.issym():
            raise MakeselfError("member %r: symlink %r points out of the archive" % (name, member.linkname))
        raise MakeselfError("member %r: hard link to %r, not a file of the archive" % (name, member.linkname))
    except tarfile.FilterError as e:   # OutsideDestinationError: a name through a link
        raise MakeselfError("member %r: its directory leads out of the archive through a link (%s)" % (name, e))


# tarfile's data filter where this Python has it (PEP 706), else None: _hand_filter checks the same.
DATA_FILTER = getattr(tarfile, "data_filter", None)


def _check_member(root, member):
    """Refuse a tar member that would write or point outside `root`; its normalised name."""
    name = member.name
    norm = os.path.normpath(name)
    # Stricter than the data filter, which strips a leading / and takes a '..' that stays inside.
    if name.startswith("/") or os.path.isabs(norm) or norm == ".." or norm.startswith(".." + os.sep):
        raise MakeselfError("member %r: absolute path or '..' out of the archive" % name)
    if ".." in name.replace("\\", "/").split("/"):
        raise MakeselfError("member %r: path with '..'" % name)
    if DATA_FILTER is not None:
        _data_filter(root, member)
    else:
        _hand_filter(root, member)
    if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
        raise MakeselfError("member %r: unsupported tar member type %r" % (name, member.type))
    dest = os.path.join(root, norm)
    if os.path.lexists(dest) and not (member.isdir() and os.path.isdir(dest) and not os.path.islink(dest)):
        raise MakeselfError("member %r: listed twice" % name)
    if member.islnk() and not os.path.isfile(os.path.realpath(os.path.join(root, os.path.normpath(member.linkname)))):
        raise MakeselfError("member %r: hard link to %r, not a file of the archive" % (name, member.linkname))
    return norm


def _extract_part(f, size, compression, root):
    try:
        with tarfile.open(fileobj=_Part(f, size), mode="r|" + compression) as tar:
            for member in tar:
                norm = _check_member(root, member)
                dest = os.path.join(root, norm)
                if member.isdir():
                    if not os.path.isdir(dest):
                        os.makedirs(dest, 0o755)
                    continue
                parent = os.path.dirname(dest)
                if not os.path.isdir(parent):
                    os.makedirs(parent, 0o755)
                if member.issym():
                    os.symlink(member.linkname, dest)
                elif member.islnk():
                    os.link(os.path.join(root, os.path.normpath(member.linkname)), dest)
                else:
                    src = tar.extractfile(member)
                    with open(dest, "wb") as out:
                        shutil.copyfileobj(src, out, _BUF)
                    # no set-id bits, no group/world write; owner is whoever extracts
                    os.chmod(dest, (member.mode & 0o755) | 0o600)
    except (IOError, OSError) as e:
        if isinstance(e, tarfile.TarError) or not getattr(e, "filename", None):
            raise MakeselfError("cannot unpack the payload (%s): %s" % (type(e).__name__, e))
        raise MakeselfError("cannot write %s: %s" % (e.filename, e.strerror))
    except Exception as e:   # tarfile.TarError, zlib/lzma errors, EOFError: a damaged stream
        if isinstance(e, MakeselfError):
            raise
        raise MakeselfError("cannot unpack the payload (%s): %s" % (type(e).__name__, e))


def _check_links(root):
    """After extraction: every symlink (dangling ones may have changed meaning) resolves inside `root`."""
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            if os.path.islink(p) and not _inside(root, os.path.realpath(p)):
                raise MakeselfError("member %r: symlink points out of the archive"
                                    % os.path.relpath(p, root))


def extract(path, dest, header=None, verified=None):
    """Verify (unless `verified` is verify()'s result) and unpack the
    archive's payload into `dest`, which must not exist. The tar is unpacked
    into a temporary directory next to `dest` and renamed into place, so a
    refused or failed archive leaves nothing behind. Returns verify()'s dict.
    Raises MakeselfError."""
    header = header or read_header(path)
    result = verified or verify(path, header)
    dest = os.path.abspath(dest)
    if os.path.lexists(dest):
        raise MakeselfError("%s already exists; not extracting over it" % dest)
    parent = os.path.dirname(dest)
    if not os.path.isdir(parent):
        os.makedirs(parent)
    tmp = tempfile.mkdtemp(prefix="." + os.path.basename(dest) + ".tmp-", dir=parent)
    try:
        root = os.path.realpath(tmp)
        with open(path, "rb") as f:
            f.seek(header["offset"])
            for i, part_size in enumerate(header["filesizes"]):
                try:
                    _extract_part(f, part_size, header["compression"], root)
                except MakeselfError as e:
                    raise MakeselfError("%s: payload part %d: %s" % (header["file"], i + 1, e))
        try:
            _check_links(root)
        except MakeselfError as e:
            raise MakeselfError("%s: %s" % (header["file"], e))
        os.chmod(tmp, 0o755)
        os.rename(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return result


def _wheel_python(tag):
    """cp311 / py311 / py3.11 / py3 -> "3.11" (None when not one minor version)."""
    for t in tag.split("."):
        m = re.match(r"^(?:py|cp)3\.?(\d+)$", t)
        if m:
            return "3." + m.group(1)
    return None


def find_release_files(tree):
    """The debs and the wheels of an extracted TopsRider tree, at any depth.

    Returns {"debs": [{"path", "file", "package", "version", "architecture"}],
    "wheels": [{"path", "file", "package", "version", "python"}]}, each sorted
    by file name, with package/version/architecture/python read from the
    Debian and wheel file-name conventions (the manifest tool reads the real
    fields from the files). The same file name twice with the same bytes
    counts once. Raises MakeselfError when there is no deb, when one file name
    appears with different bytes, when one deb package or one wheel (name,
    Python) appears in two versions, or when a name breaks its convention.
    """
    found = {}
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames.sort()
        for n in sorted(filenames):
            p = os.path.join(dirpath, n)
            if not (n.endswith(".deb") or n.endswith(".whl")) or os.path.islink(p) or not os.path.isfile(p):
                continue
            rel = os.path.relpath(p, tree)
            if n in found:
                if not filecmp.cmp(found[n], p, shallow=False):
                    raise MakeselfError("two different files named %s: %s and %s"
                                        % (n, os.path.relpath(found[n], tree), rel))
                continue
            found[n] = p
    debs, wheels, by_key = [], [], {}
    for n in sorted(found):
        if n.endswith(".deb"):
            m = _DEB_RE.match(n)
            if not m:
                raise MakeselfError("%s: not a package_version_architecture.deb file name" % n)
            entry = {"path": found[n], "file": n, "package": m.group(1), "version": m.group(2),
                     "architecture": m.group(3)}
            key, what = ("deb", m.group(1)), "package %s" % m.group(1)
            debs.append(entry)
        else:
            m = _WHEEL_RE.match(n)
            python = _wheel_python(m.group(3)) if m else None
            if not m or not python:
                raise MakeselfError("%s: not a wheel file name for one Python minor version "
                                    "(name-version-py311-abi-platform.whl)" % n)
            entry = {"path": found[n], "file": n, "package": m.group(1), "version": m.group(2),
                     "python": python}
            key, what = ("wheel", m.group(1), python), "wheel %s for Python %s" % (m.group(1), python)
            wheels.append(entry)
        if key in by_key:
            raise MakeselfError("%s comes in two versions: %s and %s" % (what, by_key[key], n))
        by_key[key] = n
    if not debs:
        raise MakeselfError("no .deb in the archive (found %d wheel(s)); not a TopsRider deb installer"
                            % len(wheels))
    return {"debs": debs, "wheels": wheels}
