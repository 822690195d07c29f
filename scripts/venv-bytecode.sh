#!/usr/bin/env bash
# Byte-compile a venv's packages once, after pip installed them with
# --no-compile:  scripts/venv-bytecode.sh VENV
#
# Why: Python caches what it compiles on import in __pycache__ only when it
# may write there, and this machine's environment (CI's too) sets
# PYTHONDONTWRITEBYTECODE=1, so a venv installed with --no-compile had every
# process (each ansible-playbook, its workers, molecule, pytest, pylint)
# compile every module it imports from source again: 0.8 of the 2.2 CPU-s of
# a one-task ansible-playbook run. Compiled here, once, they are read.
#
# What: everything under site-packages except ansible_collections/ (the
# `ansible` package's collections: most of the files, and Ansible's
# collection loader compiles a collection's code from source whatever is
# cached, so bytecode there would never be read).
# Idempotent: compileall skips what is already compiled and current.
#
# Also: the modules Ansible runs on localhost (this venv's Python, from a zip
# that Python compiles from source each time) are compiled once per source
# by the hook the simulated nodes have (topsrider_sim_pyc, copied in from
# sim/node/rootfs; its header says what it does and does not change).
set -euo pipefail
venv=${1:?usage: scripts/venv-bytecode.sh VENV}
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
hook=$(cd "$(dirname "$0")/.." && pwd)/sim/node/rootfs/usr/lib/python3/dist-packages
install -m 0644 "$hook/topsrider_sim_pyc.py" "$hook/topsrider_sim_pyc.pth" "$site/"
"$venv/bin/python" -m compileall -q -j 0 -x '/ansible_collections/' "$site" >/dev/null
