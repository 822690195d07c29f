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
set -euo pipefail
venv=${1:?usage: scripts/venv-bytecode.sh VENV}
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$venv/bin/python" -m compileall -q -j 0 -x '/ansible_collections/' "$site" >/dev/null
