#!/usr/bin/env bash
# ansible-test sanity on a copy of the collection at the path ansible-test
# requires (.../ansible_collections/gcu/topsrider), made from the files git
# tracks plus new untracked ones.
#
# ansible-test's own --venv and --requirements modes bootstrap pip from a host
# this machine cannot reach and run pip with every pip setting of the machine
# switched off, so the sanity tools (at the versions ansible-test pins) go into
# a venv of their own, .cache/sanity-venv, installed with the machine's pip
# settings, and ansible-test runs there with --local.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
venv=$top/.cache/sanity-venv
core=$(grep -E '^ansible-core==' "$top/requirements/controller.txt")
if [ ! -f "$venv/.stamp-$core" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "$core"
  # The sanity tools at the versions ansible-test itself pins.
  reqs=$("$venv/bin/python" -c 'import ansible_test, os; print(os.path.join(os.path.dirname(ansible_test.__file__), "_data", "requirements"))')
  cat "$reqs"/sanity.*.txt | grep -v '^#' | LC_ALL=C sort -u >"$venv/sanity-requirements.txt"
  "$venv/bin/pip" install --quiet -r "$venv/sanity-requirements.txt"
  touch "$venv/.stamp-$core"
fi

# The import test always runs in a venv of ansible-test's own, bootstrapped with
# get-pip.py from a host this machine cannot reach, and its pip runs with
# PIP_CONFIG_FILE=/dev/null and a scrubbed environment, so it neither finds the
# script nor trusts this machine's CA bundle. ansible-test looks for the script
# in its cache first: put a stand-in there that bootstraps pip with the stdlib's
# ensurepip and makes that throwaway venv's pip trust the machine's CA bundle.
ca_bundle=${PIP_CERT:-${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}}
pip_version=$("$venv/bin/python" -c '
from ansible_test._internal.python_requirements import get_venv_packages
from ansible_test._internal.host_configs import NativePythonConfig
print(get_venv_packages(NativePythonConfig(version="3.11"))["pip"])')
mkdir -p "$HOME/.ansible/test/cache"
sed "s|@CA_BUNDLE@|$ca_bundle|" "$top/scripts/get-pip-standin.py" \
  >"$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"

dest=$top/.cache/sanity/ansible_collections/gcu/topsrider
rm -rf "$dest"
mkdir -p "$dest"
cd "$top"
# sim/ (not in the tarball) and scripts/ (tools, not plugin code; galaxy.yml's
# manifest ships only the operator tools from it): left out.
git ls-files -z --cached --others --exclude-standard -- . ':!sim' ':!scripts' | while IFS= read -r -d '' f; do
  [ -e "$f" ] && printf '%s\0' "$f"
done | tar --null -T - -cf - | tar -xf - -C "$dest"
cd "$dest"
# ansible-test lists files through git when it finds a repository.
git init -q . && git add -A >/dev/null
PATH=$venv/bin:$PATH ansible-test sanity --local --python 3.11 --color no "$@"
