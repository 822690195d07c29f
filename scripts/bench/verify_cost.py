#!/usr/bin/env python3
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What verifying a signed bundle costs against one sha256 pass over it (issue 32).

    .venv/bin/python scripts/bench/verify_cost.py [--mib 1024] [--rounds 5] [--dir BUNDLE] [--json OUT]

The bundle is make bench-large's (sim/bundles/build-large.sh MIB, built once
and cached) unless --dir names an extracted bundle with its manifest.json.
It is linked file by file into a temporary directory (the cache is not
touched), and a key made there for the run (gpg, a temporary GNUPGHOME)
signs its manifest.json and a revocation list, as docs/signing.md's
operators do. Then, alternately and with the files in the page cache, each
round times:

  openssl  openssl dgst -sha256 over every file the manifest lists: one
           sha256 pass with OpenSSL's SHA extensions, the reference;
  sha256sum  coreutils' sha256sum over the same files (shown; here it is
           the slower of the two, so it is not the reference);
  verify   scripts/topsrider-manifest verify DIR --keyring K --revocations R
           --seen S: gpgv on the manifest and on the list, the serial and
           revoked checks, then every file's size and sha256
           (_signature.check_release and _manifest.verify, the code deploy
           runs on the controller and deb_bundle on each node), with the
           Python start-up counted.

Prints each round, the medians and verify / the faster one-pass median;
--json writes them.
Exits 1 when the median ratio is above --limit (1.1, issue 32's goal).
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from provenance import short_commit

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(TOP, "scripts", "topsrider-manifest")


class BenchError(Exception):
    pass


def run(argv, env=None):
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          env=env, check=False)
    if proc.returncode != 0:
        raise BenchError("%s failed (exit %d): %s" % (" ".join(argv[:3]), proc.returncode, proc.stderr.strip()))
    return proc.stdout


def large_bundle(mib):
    out = run([os.path.join(TOP, "sim", "bundles", "build-large.sh"), str(mib)]).strip().splitlines()[-1]
    return os.path.join(out, "2.5.136")


def linked_copy(src, dest):
    """DEST holds hard links to SRC's files (a copy where links cannot be made)
    and its own copy of manifest.json, which is signed there."""
    os.mkdir(dest)
    for name in os.listdir(src):
        path = os.path.join(src, name)
        if not os.path.isfile(path) or name.startswith("manifest.json."):
            continue
        if name == "manifest.json":
            shutil.copyfile(path, os.path.join(dest, name))
            continue
        try:
            os.link(path, os.path.join(dest, name))
        except OSError:
            shutil.copyfile(path, os.path.join(dest, name))


def signing_key(home):
    """A throwaway ed25519 key in HOME (an empty directory): returns gpg's environment for it and its exported keyring."""
    env = dict(os.environ, GNUPGHOME=home, LC_ALL="C")
    run(["gpg", "--batch", "--quiet", "--passphrase", "", "--quick-gen-key", "Bench Ops <bench@example.org>",
         "ed25519", "sign", "1d"], env)
    ring = os.path.join(home, "keyring.gpg")
    run(["gpg", "--batch", "--yes", "--output", ring, "--export"], env)
    return env, ring


def timed(argv, env=None):
    start = time.perf_counter()
    run(argv, env)
    return time.perf_counter() - start


def measure(bundle, rounds, work, home):
    d = os.path.join(work, "bundle")
    linked_copy(bundle, d)
    with open(os.path.join(d, "manifest.json")) as f:
        files = [os.path.join(d, entry["file"]) for entry in json.load(f)["files"]]
    size = sum(os.path.getsize(p) for p in files)
    env, ring = signing_key(home)
    run([sys.executable, TOOL, "sign", d, "--keyring", ring], env)
    rev = os.path.join(work, "revocations.json")
    with open(rev, "w") as f:
        json.dump({"serial": 1, "issued": "2026-11-26T12:00:00Z",
                   "revoked": [{"version": "2.5.0", "reason": "bench: another release"}]}, f)
    run([sys.executable, TOOL, "sign", rev], env)
    seen = os.path.join(work, "seen.json")
    commands = {"openssl": ["openssl", "dgst", "-sha256", "--"] + files,
                "sha256sum": ["sha256sum", "--"] + files,
                "verify": [sys.executable, TOOL, "verify", d, "--keyring", ring, "--revocations", rev, "--seen", seen]}
    for argv in commands.values():
        timed(argv)  # the page cache and the list's serial record, once, untimed
    times = {what: [] for what in commands}
    for i in range(rounds):
        order = sorted(commands, reverse=i % 2 == 1)
        for what in order:
            times[what].append(timed(commands[what]))
        print("round %d: %s" % (i + 1, ", ".join("%s %.3f s" % (w, times[w][-1]) for w in commands)), flush=True)
    medians = {k: statistics.median(v) for k, v in times.items()}
    reference = min(("openssl", "sha256sum"), key=lambda w: medians[w])
    return {"bundle": bundle, "files": len(files), "bytes": size, "rounds": rounds, "times_s": times,
            "median_s": medians, "reference": reference, "ratio": medians["verify"] / medians[reference]}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mib", type=int, default=1024, help="size of make bench-large's bundle (default 1024)")
    p.add_argument("--dir", help="an extracted bundle with manifest.json instead of the large one")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--limit", type=float, default=1.1, help="the highest verify/sha256 ratio that passes (1.1)")
    p.add_argument("--json", help="write the result here")
    args = p.parse_args(argv)
    if args.rounds < 1 or args.mib < 1:
        p.error("--rounds and --mib: at least 1")
    for tool in ("gpg", "gpgv", "sha256sum", "openssl"):
        if not shutil.which(tool):
            print("verify_cost: %s is required (Debian: gpg, gpgv, coreutils, openssl)" % tool, file=sys.stderr)
            return 2
    try:
        bundle = os.path.abspath(args.dir) if args.dir else large_bundle(args.mib)
        if not os.path.isfile(os.path.join(bundle, "manifest.json")):
            raise BenchError("%s has no manifest.json (an extracted bundle: scripts/topsrider-manifest create)" % bundle)
        # The linked copy beside the bundle (one file system); the key in the system's
        # temporary directory (gpg-agent's socket path must stay short).
        with tempfile.TemporaryDirectory(prefix="verify-cost.", dir=os.path.dirname(bundle)) as work, \
                tempfile.TemporaryDirectory(prefix="verify-cost-gpg.") as home:
            try:
                result = measure(bundle, args.rounds, work, home)
            finally:
                subprocess.run(["gpgconf", "--kill", "gpg-agent"], env=dict(os.environ, GNUPGHOME=home),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    except BenchError as e:
        print("verify_cost: %s" % e, file=sys.stderr)
        return 2
    result.update({"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
                   "commit": short_commit(), "limit": args.limit, "cpus": os.cpu_count()})
    medians = result["median_s"]
    print("%d files, %.1f MiB, medians of %d: openssl %.3f s, sha256sum %.3f s, verify %.3f s: verify/%s = %.3f (limit %.2f)"
          % (result["files"], result["bytes"] / 2 ** 20, args.rounds, medians["openssl"], medians["sha256sum"],
             medians["verify"], result["reference"], result["ratio"], args.limit))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
            f.write("\n")
    return 0 if result["ratio"] <= args.limit else 1


if __name__ == "__main__":
    sys.exit(main())
