#!/usr/bin/env bash
# Real-GPU proof of the collection's NVIDIA path (issue 13). Not part of `make test`.
#
#   scripts/gpu-check.sh [--python /path/to/cuda/python] [--out DIR] [--hold SECONDS]
#
# On a machine with an NVIDIA GPU, nvidia-smi and a CUDA build of torch it runs,
# against this machine (connection local): gcu_devices (vendor nvidia), the
# dist_launch role for nvidia (card count from the facts), launch-single.sh and
# launch-platform.sh with the smoke job, eccl_probe's collective with nccl from
# 1 MiB to 256 MiB, and launch_check.yml while the smoke job holds the GPUs, when
# no job runs, and (more than one GPU) with one process for all GPUs. It writes
# gpu-check-<date>.json and .md to DIR (default docs/hardware; GPU_CHECK_COMMIT names
# the commit where the tree has no .git). Needs
# ansible-core importable by the python that runs this script (PYTHONPATH is
# fine). On a machine without a GPU it says so and exits 0 without a result.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec "${GPU_CHECK_DRIVER_PYTHON:-python3}" "$here/gpu_check.py" "$@"
