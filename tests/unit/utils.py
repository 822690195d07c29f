"""Helpers for module unit tests, after community.general's tests/unit/plugins/modules/utils.py."""
import contextlib
import json

from ansible.module_utils import basic
from ansible.module_utils.common.text.converters import to_bytes


class AnsibleExitJson(Exception):
    """exit_json was called: args[0] holds the result."""


class AnsibleFailJson(Exception):
    """fail_json was called: args[0] holds the result."""


def exit_json(*args, **kwargs):
    kwargs.setdefault("changed", False)
    raise AnsibleExitJson(kwargs)


def fail_json(*args, **kwargs):
    kwargs["failed"] = True
    raise AnsibleFailJson(kwargs)


@contextlib.contextmanager
def set_module_args(args):
    """Give the module its arguments for the duration of a with-block only."""
    args = dict(args)
    args.setdefault("_ansible_remote_tmp", "/tmp")
    args.setdefault("_ansible_keep_remote_files", False)
    serialized = to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    # ansible-core 2.19 reads the args and their serialization profile
    # through these two private hooks.
    with _patch_attr(basic, "_ANSIBLE_ARGS", serialized):
        with _patch_attr(basic, "_ANSIBLE_PROFILE", "legacy"):
            yield


@contextlib.contextmanager
def _patch_attr(obj, name, value):
    old = getattr(obj, name, None)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)
