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
#
# One ansible-core or another: SANITY_REQUIREMENTS names the requirements file
# whose ansible-core pin is used (default requirements/controller.txt, 2.19)
# and SANITY_PYTHON the interpreter (default python3); the venv and the copy
# are .cache/sanity-venv<tag> and .cache/sanity<tag>, the tag being what
# follows "controller" in the file's name (make sanity-2.21:
# requirements/controller-2.21.txt, Python 3.12, .cache/sanity-venv-2.21), so
# that the two can run at once.
#
# SANITY_SCOPE: all (default) is every tracked file but sim/ and scripts/;
# shipped leaves out tests/ and molecule/ as well, the test code that the
# tarball does not ship (galaxy.yml's manifest) and no ansible-core loads,
# so that its checks (pylint most of all) cannot differ between two cores:
# make sanity-2.21 checks what ships, make sanity everything.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
requirements=${SANITY_REQUIREMENTS:-requirements/controller.txt}
case $requirements in /*) ;; *) requirements=$top/$requirements ;; esac
tag=$(basename "$requirements" .txt)
tag=${tag#controller}
python=${SANITY_PYTHON:-python3}
case ${SANITY_SCOPE:-all} in
  all) leave_out=() ;;
  shipped) leave_out=(':!tests' ':!molecule') ;;
  *) echo "sanity.sh: SANITY_SCOPE is all or shipped, not '$SANITY_SCOPE'" >&2; exit 2 ;;
esac
venv=$top/.cache/sanity-venv$tag
core=$(grep -E '^ansible-core==' "$requirements")
if [ ! -f "$venv/.stamp-$core" ]; then
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet --no-compile "$core"
  # The sanity tools at the versions ansible-test itself pins.
  reqs=$("$venv/bin/python" -c 'import ansible_test, os; print(os.path.join(os.path.dirname(ansible_test.__file__), "_data", "requirements"))')
  cat "$reqs"/sanity.*.txt | grep -v '^#' | LC_ALL=C sort -u >"$venv/sanity-requirements.txt"
  "$venv/bin/pip" install --quiet --no-compile -r "$venv/sanity-requirements.txt"
  "$top/scripts/venv-bytecode.sh" "$venv"
  touch "$venv/.stamp-$core"
fi

# The import test always runs in a venv of ansible-test's own, bootstrapped with
# get-pip.py from a host this machine cannot reach, and its pip runs with
# PIP_CONFIG_FILE=/dev/null and a scrubbed environment, so it neither finds the
# script nor trusts this machine's CA bundle. ansible-test looks for the script
# in its cache first: put a stand-in there that bootstraps pip with the stdlib's
# ensurepip and makes that throwaway venv's pip trust the machine's CA bundle.
ca_bundle=${PIP_CERT:-${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}}
pyver=$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
pip_version=$("$venv/bin/python" -c '
import sys
from ansible_test._internal.python_requirements import get_venv_packages
from ansible_test._internal.host_configs import NativePythonConfig
print(get_venv_packages(NativePythonConfig(version=sys.argv[1]))["pip"])' "$pyver")
mkdir -p "$HOME/.ansible/test/cache"
# Written whole, then renamed: the other core's sanity may read it meanwhile.
standin=$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py
sed "s|@CA_BUNDLE@|$ca_bundle|" "$top/scripts/get-pip-standin.py" >"$standin.$$"
mv -f "$standin.$$" "$standin"

dest=$top/.cache/sanity$tag/ansible_collections/gcu/topsrider
rm -rf "$dest"
mkdir -p "$dest"
cd "$top"
# sim/ (not in the tarball) and scripts/ (tools, not plugin code; galaxy.yml's
# manifest ships only the operator tools from it): left out, and SANITY_SCOPE's.
git ls-files -z --cached --others --exclude-standard -- . ':!sim' ':!scripts' "${leave_out[@]}" | while IFS= read -r -d '' f; do
  [ -e "$f" ] && printf '%s\0' "$f"
done | tar --null -T - -cf - | tar -xf - -C "$dest"
cd "$dest"
# ansible-test lists files through git when it finds a repository.
git init -q . && git add -A >/dev/null
PATH=$venv/bin:$PATH ansible-test sanity --local --python "$pyver" --color no "$@"
