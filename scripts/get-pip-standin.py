"""Stand-in for get-pip.py, ansible-test's pip bootstrap script.

scripts/sanity.sh copies this into ansible-test's cache (with @CA_BUNDLE@
replaced), because the real script comes from a host this machine cannot
reach. It bootstraps pip with the stdlib's ensurepip, then installs what
ansible-test asked for. ansible-test runs pip with PIP_CONFIG_FILE=/dev/null
and a scrubbed environment, so the pip of its throwaway venv is made to trust
this machine's CA bundle by appending it to that pip's own certifi bundle.
"""
import ensurepip
import subprocess
import sys

CA_BUNDLE = "@CA_BUNDLE@"

TRUST_CA = """
import sys
import pip._vendor.certifi as certifi
marker = '# gcu.topsrider: this machine CA bundle\\n'
path = certifi.where()
with open(path) as f:
    known = marker in f.read()
if not known:
    with open(sys.argv[1]) as src, open(path, 'a') as dst:
        dst.write('\\n' + marker + src.read())
"""


def trust_ca():
    # A fresh interpreter: the pip just installed is not the one imported here.
    subprocess.check_call([sys.executable, "-c", TRUST_CA, CA_BUNDLE])


args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
ensurepip.bootstrap(upgrade=True)
trust_ca()
subprocess.check_call([sys.executable, "-m", "pip", "install"] + args)
trust_ca()
