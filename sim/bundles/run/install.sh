#!/bin/sh
# SIMULATOR: stands in for the installer script inside the vendor's
# TopsRider .run. gcu.topsrider unpacks the archive without running anything
# in it, so this script must never run: it fails loudly if it does.
echo "topsrider-sim: install.sh ran, but gcu.topsrider must never execute the vendor's installer" >&2
exit 1
