# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/bundle_stage's check of a release on the controller, before anything is sent: one
find over the files the manifest names (exact names, sha256), run on localhost (local
connection, the cache under tmp), every case in one play."""
import os
import subprocess
import sys

from conftest import TOP, run_cases

TOOL = os.path.join(TOP, "scripts", "topsrider-manifest")


def release(tmp_path, name, spoil=None):
    rel = tmp_path / name
    rel.mkdir()
    (rel / "tops-docs_2.5.140.tar").write_bytes(b"deb bytes")
    # A plain name with characters a regular expression reads otherwise ('+' and '.').
    (rel / "notes+v1.1.txt").write_text(u"release notes\n")
    subprocess.run([sys.executable, TOOL, "create", str(rel), "--version", "2.5.140"], check=True,
                   stdout=subprocess.DEVNULL)
    if spoil:
        spoil(rel)
    return str(rel)


def settings(tmp_path, directory):
    return {"bundle_stage_dir": directory, "bundle_stage_cache_root": str(tmp_path / "cache"),
            "bundle_stage_transfer": "controller"}


def test_the_files_the_manifest_names_are_checked_by_exact_name_and_sha256(tmp_path):
    def changed(rel):
        (rel / "tops-docs_2.5.140.tar").write_bytes(b"other bytes")

    def missing(rel):
        (rel / "notes+v1.1.txt").unlink()

    def extra(rel):
        # Not in the manifest: neither needed nor a reason to refuse (the first two would match
        # the listed name read as a regular expression).
        (rel / "notessv1.1.txt").write_text(u"x")
        (rel / "notes+v1x1.txt").write_text(u"x")
        (rel / "README").write_text(u"unlisted\n")

    cases = [("good", settings(tmp_path, release(tmp_path, "good"))),
             ("extra", settings(tmp_path, release(tmp_path, "extra", extra))),
             ("slash", settings(tmp_path, release(tmp_path, "slash") + "/")),
             ("changed", settings(tmp_path, release(tmp_path, "changed", changed))),
             ("missing", settings(tmp_path, release(tmp_path, "missing", missing)))]
    seen, out = run_cases(tmp_path, "gcu.topsrider.bundle_stage", cases)
    for name in ("good", "extra", "slash"):
        assert seen[name] == {"failed": False}, (name, out)
    for name, wrong in (("changed", "tops-docs_2.5.140.tar"), ("missing", "notes+v1.1.txt")):
        assert seen[name]["failed"], (name, out)
        assert "does not match its manifest; nothing was sent to any node" in seen[name]["msg"], seen[name]
        assert "Missing or mismatched: %s." % wrong in seen[name]["msg"], seen[name]
    staged = sorted(os.listdir(str(tmp_path / "cache" / "2.5.140")))
    assert staged == ["manifest.json", "notes+v1.1.txt", "tops-docs_2.5.140.tar"], staged
