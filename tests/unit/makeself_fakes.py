# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small TopsRider-shaped makeself archives for the tests, made with Debian's
real `makeself` (scripts/ensure-docker.sh installs it), and ways to damage them."""
import hashlib
import io
import os
import re
import shutil
import subprocess
import tarfile
import zipfile

MAKESELF = shutil.which("makeself")
# The archive's install.sh leaves this file behind if anything ever runs it.
RAN_MARKER = "install-sh-ran"


def _require_makeself():
    assert MAKESELF, "these tests need Debian's makeself on PATH (apt-get install makeself; make docker does it)"


def make_deb(directory, package, version, arch="amd64"):
    """A real (tiny) deb built with dpkg-deb; returns its path."""
    root = os.path.join(directory, ".deb-%s-%s" % (package, version))
    os.makedirs(os.path.join(root, "DEBIAN"))
    with open(os.path.join(root, "DEBIAN", "control"), "w") as f:
        f.write("Package: %s\nVersion: %s\nArchitecture: %s\nMaintainer: test <t@example.invalid>\n"
                "Description: test package\n" % (package, version, arch))
    path = os.path.join(directory, "%s_%s_%s.deb" % (package, version, arch))
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", root, path],
                   check=True, stdout=subprocess.DEVNULL)
    shutil.rmtree(root)
    return path


def make_wheel(directory, python, version="2.13.0+2.5.136", torch="2.13.0"):
    """A torch_gcu stand-in wheel for one Python minor; returns its path."""
    tag = "py3" + python.split(".")[1]
    path = os.path.join(directory, "torch_gcu-%s-%s-none-any.whl" % (version, tag))
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("torch_gcu-%s.dist-info/METADATA" % version,
                    "Metadata-Version: 2.1\nName: torch_gcu\nVersion: %s\nRequires-Python: ==%s.*\n"
                    "Requires-Dist: torch==%s\n" % (version, python, torch))
    return path


def release_tree(base, debs=(("tops-sdk", "2.5.136-1"), ("topsfactor", "2.5.136-1")),
                 pythons=("3.11", "3.10")):
    """The installer layout: debs under sdk/, wheels under framework/, an install.sh that
    must never run (it leaves base/RAN_MARKER and exits 1)."""
    tree = os.path.join(base, "TopsRider_t2x_2.5.136_deb_amd64")
    os.makedirs(os.path.join(tree, "sdk"))
    os.makedirs(os.path.join(tree, "framework"))
    for package, version in debs:
        make_deb(os.path.join(tree, "sdk"), package, version)
    for py in pythons:
        make_wheel(os.path.join(tree, "framework"), py)
    with open(os.path.join(tree, "install.sh"), "w") as f:
        f.write("#!/bin/sh\ntouch '%s'\necho never run me >&2\nexit 1\n" % os.path.join(base, RAN_MARKER))
    os.chmod(os.path.join(tree, "install.sh"), 0o755)
    return tree


def make_run(tree, path, *options):
    """makeself OPTIONS TREE PATH (label and startup script as the vendor's); returns path."""
    _require_makeself()
    subprocess.run([MAKESELF, "--quiet"] + list(options) + [tree, path, "ENFLAME TOPSRIDER PACKAGE",
                                                            "./install.sh"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return path


def _split(path):
    with open(path, "rb") as f:
        data = f.read()
    skip = int(re.search(br'^skip="(\d+)"$', data, re.M).group(1))
    lines = data.split(b"\n")
    header = b"\n".join(lines[:skip]) + b"\n"
    return header, data[len(header):]


def payload_offset(path):
    return len(_split(path)[0])


def flip_payload_byte(path):
    """Change one payload byte after makeself wrote its checksums."""
    offset = payload_offset(path)
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.seek(offset + (size - offset) // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))


def truncate(path, drop=10):
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - drop)


def set_payload(path, payload):
    """Replace the payload of the makeself archive at `path` with `payload` and
    rewrite filesizes, totalsize, MD5, SHA and CRCsum so that makeself's own
    checks pass: an archive only the later checks can refuse."""
    header = _split(path)[0]
    fields = {b"filesizes": str(len(payload)).encode(), b"totalsize": str(len(payload)).encode(),
              b"MD5": hashlib.md5(payload).hexdigest().encode(),
              b"SHA": hashlib.sha256(payload).hexdigest().encode(), b"CRCsum": b"0000000000"}
    for key, value in fields.items():
        header = re.sub(br'^' + key + br'="[^"]*"$', key + b'="' + value + b'"', header, count=1, flags=re.M)
    with open(path, "wb") as f:
        f.write(header + payload)
    return path


def repack(path, members):
    """set_payload() with a gzipped tar of `members` [(TarInfo, bytes or None)];
    `path` must be a gzip (makeself's default) archive."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return set_payload(path, buf.getvalue())


def member(name, kind=tarfile.REGTYPE, linkname="", mode=0o644):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.mode = mode
    return info
