# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The card exporter's web configuration: TLS and basic auth in the form the
Prometheus exporters share (prometheus/exporter-toolkit's web-config file,
``--web.config.file`` of node_exporter)::

    tls_server_config:
      cert_file: /etc/topsrider/exporter.crt
      key_file: /etc/topsrider/exporter.key
    basic_auth_users:
      prometheus: $2b$12$...   # a bcrypt hash (htpasswd -nBC 12 "" | tr -d ':\\n')

Both parts are optional; an empty file is plain HTTP without auth. The file is
YAML; JSON is YAML too, and is what the card_exporter role writes, so the
daemon reads it with the standard library where PyYAML is missing. Keys the
exporter does not implement are refused (exporter-toolkit refuses unknown keys
as well): a setting is never silently ignored. Passwords are checked with
bcrypt (the ``bcrypt`` module: Debian's python3-bcrypt, which the role
installs only when basic_auth_users is set). Runs on the node: Python 3.6+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import base64
import binascii
import hashlib
import json
import re

TLS_KEYS = ("cert_file", "key_file")
TOP_KEYS = ("tls_server_config", "basic_auth_users")
BCRYPT_RE = re.compile(r"^\$2[aby]?\$[0-9]{2}\$[./A-Za-z0-9]{53}\Z")
USER_RE = re.compile(r"^[^:\x00-\x1f]+\Z")  # basic auth: no colon in a user name
CACHE_SIZE = 64


class WebConfigError(ValueError):
    """A web configuration the exporter refuses (the message names the key)."""


def load_text(text, name="web config"):
    """The file's text -> its mapping (YAML when PyYAML is there, else JSON)."""
    if not text.strip():
        return {}
    try:
        import yaml  # pylint: disable=import-outside-toplevel
    except ImportError:
        yaml = None
    try:
        data = yaml.safe_load(text) if yaml is not None else json.loads(text)
    except ValueError as e:  # yaml.YAMLError is not one: caught below
        raise WebConfigError("%s: not %s (%s)" % (name, "YAML" if yaml else "JSON (no PyYAML here)", e))
    except Exception as e:  # pylint: disable=broad-except  # yaml.YAMLError without importing yaml
        raise WebConfigError("%s: not YAML (%s)" % (name, str(e).replace("\n", " ")))
    return {} if data is None else data


def parse(data, name="web config"):
    """A loaded web config -> {tls: (cert_file, key_file) or None, users: {name: hash}}.
    WebConfigError on anything else."""
    if not isinstance(data, dict):
        raise WebConfigError("%s: not a mapping" % name)
    unknown = sorted(str(k) for k in data if k not in TOP_KEYS)
    if unknown:
        raise WebConfigError("%s: unknown or unsupported keys %s (supported: %s)" % (
            name, ", ".join(unknown), ", ".join(TOP_KEYS)))
    tls = None
    tls_cfg = data.get("tls_server_config")
    if tls_cfg is not None:
        if not isinstance(tls_cfg, dict):
            raise WebConfigError("%s: tls_server_config must be a mapping" % name)
        unknown = sorted(str(k) for k in tls_cfg if k not in TLS_KEYS)
        if unknown:
            raise WebConfigError("%s: tls_server_config: unknown or unsupported keys %s (supported: %s)" % (
                name, ", ".join(unknown), ", ".join(TLS_KEYS)))
        for key in TLS_KEYS:
            v = tls_cfg.get(key)
            if not isinstance(v, str) or not v.startswith("/"):
                raise WebConfigError("%s: tls_server_config.%s must be an absolute path, got %r" % (name, key, v))
        tls = (tls_cfg["cert_file"], tls_cfg["key_file"])
    users = data.get("basic_auth_users")
    if users is None:
        users = {}
    if not isinstance(users, dict):
        raise WebConfigError("%s: basic_auth_users must be a mapping of user name to bcrypt hash" % name)
    for user, hashed in users.items():
        if not isinstance(user, str) or not USER_RE.match(user):
            raise WebConfigError("%s: basic_auth_users: %r is not a user name (no colon)" % (name, user))
        if not isinstance(hashed, str) or not BCRYPT_RE.match(hashed):
            raise WebConfigError("%s: basic_auth_users.%s must be a bcrypt hash ($2b$...), got something else" % (
                name, user))
    return {"tls": tls, "users": dict(users)}


def basic_credentials(header):
    """An Authorization header's value -> (user, password), or None when it is not basic auth."""
    if not header:
        return None
    scheme, _sep, token = header.strip().partition(" ")
    if scheme.lower() != "basic" or not token.strip():
        return None
    try:
        text = base64.b64decode(token.strip().encode("ascii"), validate=True).decode("utf-8")
    except (ValueError, binascii.Error, UnicodeError):
        return None
    user, sep, password = text.partition(":")
    if not sep:
        return None
    return user, password


class Authenticator(object):
    """Decides a request's basic auth. checkpw(password bytes, hash bytes) -> bool
    is bcrypt.checkpw on the node. Successful checks are remembered (by a
    SHA-256 of user, hash and password) so a scrape every few seconds does not
    pay bcrypt's cost each time; a wrong password is always checked afresh."""

    def __init__(self, users, checkpw):
        self.users = dict(users)
        self.checkpw = checkpw
        self.good = []

    @property
    def required(self):
        return bool(self.users)

    def allowed(self, header):
        """True when no users are configured or the header names one with its password."""
        if not self.users:
            return True
        creds = basic_credentials(header)
        if creds is None or creds[0] not in self.users:
            return False
        user, password = creds
        hashed = self.users[user]
        key = hashlib.sha256(("%s\0%s\0%s" % (user, hashed, password)).encode("utf-8")).hexdigest()
        if key in self.good:
            return True
        try:
            ok = bool(self.checkpw(password.encode("utf-8"), hashed.encode("utf-8")))
        except ValueError:
            ok = False
        if ok:
            self.good = [key] + self.good[:CACHE_SIZE - 1]
        return ok
