# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's plugin docs as ansible-doc renders them, and the record
of each release's options (tests/unit/fixtures/released-options.yml).

At a release, after `antsibull-changelog release`:

    .venv/bin/python tests/unit/plugin_docs.py record X.Y.Z

adds release X.Y.Z's option set, read from the checkout's docs, to the record;
tests/unit/test_plugin_docs.py compares every option's version_added with the
first release the record lists it in."""
import json
import os
import subprocess
import sys

import yaml

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RECORD = os.path.join(TOP, "tests", "unit", "fixtures", "released-options.yml")
# The plugin types the collection ships, as ansible-doc names them.
TYPES = ("module", "filter", "callback")


def ansible_doc(collections, home, args):
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith("ANSIBLE_"))
    env.update(ANSIBLE_COLLECTIONS_PATH=collections, ANSIBLE_HOME=home, ANSIBLE_LOCAL_TEMP=os.path.join(home, "tmp"))
    doc = os.path.join(os.path.dirname(sys.executable), "ansible-doc")
    proc = subprocess.run([doc] + args, env=env, cwd=home, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False, timeout=300)
    assert proc.returncode == 0, "ansible-doc %s failed: %s" % (" ".join(args), proc.stderr)
    return json.loads(proc.stdout)


def collection_docs(work):
    """{type: {short name: ansible-doc's JSON (doc, examples, return, ...)}}
    for every plugin of the checkout, two ansible-doc calls per type (the
    list, then every page at once). work: an empty scratch directory."""
    collections = os.path.join(work, "collections")
    os.makedirs(os.path.join(collections, "ansible_collections", "gcu"))
    os.symlink(TOP, os.path.join(collections, "ansible_collections", "gcu", "topsrider"))
    home = os.path.join(work, "home")
    os.makedirs(home)
    docs = {}
    for kind in TYPES:
        names = sorted(ansible_doc(collections, home, ["-t", kind, "-l", "gcu.topsrider", "--json"]))
        pages = ansible_doc(collections, home, ["-t", kind, "--json"] + names) if names else {}
        assert sorted(pages) == names, (kind, sorted(pages), names)
        docs[kind] = dict((name.split(".")[-1], page) for name, page in pages.items())
    return docs


def option_sets(docs):
    """{type: {plugin: [option, ...]}}: the top-level options of every plugin."""
    return dict((kind, dict((name, sorted((page["doc"].get("options") or {})))
                            for name, page in sorted(pages.items())))
                for kind, pages in docs.items())


class _Dumper(yaml.SafeDumper):
    """Block style with indented lists, as ansible-lint's yaml rule wants them."""
    def increase_indent(self, flow=False, indentless=False):
        return super().increase_indent(flow, False)


def load_record():
    with open(RECORD) as f:
        return yaml.safe_load(f)


def main(argv):
    if len(argv) != 3 or argv[1] != "record":
        sys.exit("usage: plugin_docs.py record VERSION")
    import tempfile
    version = argv[2]
    with tempfile.TemporaryDirectory() as work:
        sets = option_sets(collection_docs(work))
    with open(RECORD) as f:
        text = f.read()
    if version in (yaml.safe_load(text) or {}):
        sys.exit("%s is recorded already" % version)
    with open(RECORD, "a") as f:
        f.write(yaml.dump({version: sets}, Dumper=_Dumper, default_flow_style=False, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv)
