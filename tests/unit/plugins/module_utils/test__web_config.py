# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""_web_config: the exporter-toolkit web-config form (parsed from YAML and
from JSON, the role's form) and the basic auth decisions, with real bcrypt."""
import base64
import json

import bcrypt
import pytest

from ansible_collections.gcu.topsrider.plugins.module_utils import _web_config as W

HASH = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(rounds=4)).decode()


def basic(text):
    return "Basic " + base64.b64encode(text.encode()).decode()


def test_the_exporter_toolkit_form_in_yaml_and_json():
    yaml_text = "tls_server_config:\n  cert_file: /etc/c.pem\n  key_file: /etc/k.pem\nbasic_auth_users:\n  prom: '%s'\n" % HASH
    want = {"tls": ("/etc/c.pem", "/etc/k.pem"), "users": {"prom": HASH}}
    assert W.parse(W.load_text(yaml_text)) == want
    data = {"tls_server_config": {"cert_file": "/etc/c.pem", "key_file": "/etc/k.pem"}, "basic_auth_users": {"prom": HASH}}
    assert W.parse(W.load_text(json.dumps(data))) == want
    assert W.parse(W.load_text("")) == {"tls": None, "users": {}}
    assert W.parse(W.load_text("basic_auth_users:\n")) == {"tls": None, "users": {}}


@pytest.mark.parametrize("data, message", [
    ([], "not a mapping"),
    ({"http_server_config": {}}, "unknown or unsupported keys http_server_config"),
    ({"tls_server_config": {"cert_file": "/c"}}, "key_file must be an absolute path"),
    ({"tls_server_config": {"cert_file": "/c", "key_file": "/k", "client_ca_file": "/ca"}},
     "tls_server_config: unknown or unsupported keys client_ca_file"),
    ({"tls_server_config": "/c"}, "tls_server_config must be a mapping"),
    ({"basic_auth_users": ["prom"]}, "basic_auth_users must be a mapping"),
    ({"basic_auth_users": {"prom": "s3cret"}}, "basic_auth_users.prom must be a bcrypt hash"),
    ({"basic_auth_users": {"a:b": HASH}}, "is not a user name"),
])
def test_what_is_refused(data, message):
    with pytest.raises(W.WebConfigError, match=message):
        W.parse(data)


def test_not_yaml():
    with pytest.raises(W.WebConfigError, match="not YAML"):
        W.load_text("a: [1\n")


@pytest.mark.parametrize("header, creds", [
    (None, None), ("", None), ("Bearer abc", None), ("Basic !!!", None), (basic("nocolon"), None),
    (basic("prom:s3cret"), ("prom", "s3cret")), (basic("prom:a:b"), ("prom", "a:b")),
    ("basic " + base64.b64encode(b"p:").decode(), ("p", "")),
])
def test_basic_credentials(header, creds):
    assert W.basic_credentials(header) == creds


def test_auth_decisions_with_real_bcrypt():
    calls = []

    def checkpw(password, hashed):
        calls.append(password)
        return bcrypt.checkpw(password, hashed)
    auth = W.Authenticator({"prom": HASH}, checkpw)
    assert auth.required
    assert not auth.allowed(None)
    assert not auth.allowed(basic("prom:wrong"))
    assert not auth.allowed(basic("other:s3cret"))
    assert auth.allowed(basic("prom:s3cret"))
    assert auth.allowed(basic("prom:s3cret"))
    assert not auth.allowed(basic("prom:wrong"))
    # a good password is checked once, a wrong one every time; an unknown user never
    assert calls == [b"wrong", b"s3cret", b"wrong"]
    # a malformed hash (bcrypt raises ValueError) refuses, never allows
    assert not W.Authenticator({"p": "$2b$04$" + "x" * 53}, bcrypt.checkpw).allowed(basic("p:x"))
    assert W.Authenticator({}, checkpw).allowed(None) and not W.Authenticator({}, checkpw).required
