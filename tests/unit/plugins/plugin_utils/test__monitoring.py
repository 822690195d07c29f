# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils/_monitoring.py: where Prometheus scrapes each host, decided from the inventory."""
import os

import pytest
import yaml

from ansible_collections.gcu.topsrider.plugins.plugin_utils import _monitoring as mon

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
with open(os.path.join(TOP, "roles", "card_exporter", "defaults", "main.yml")) as f:
    ROLE = yaml.safe_load(f)
DEFAULTS = {"card_exporter_listen_address": "0.0.0.0", "card_exporter_port": 9494}


def test_the_defaults_are_the_roles():
    assert dict((k, ROLE[k]) for k in DEFAULTS) == DEFAULTS


def targets(host_vars, hosts=None, **kw):
    return mon.scrape_targets(hosts or list(host_vars), host_vars, "t20", ROLE, **kw)


@pytest.mark.parametrize("hv, card, node", [
    # nothing set: the inventory name, the role's port, node_exporter's 9100
    ({}, "n1:9494", "n1:9100"),
    ({"ansible_host": "10.0.0.11"}, "10.0.0.11:9494", "10.0.0.11:9100"),
    # the exporter listens on one address only: scraped there
    ({"ansible_host": "10.0.0.11", "card_exporter_listen_address": "192.168.5.11", "card_exporter_port": "9500"},
     "192.168.5.11:9500", "10.0.0.11:9100"),
    ({"ansible_host": "10.0.0.11", "card_exporter_listen_address": "0.0.0.0"}, "10.0.0.11:9494", "10.0.0.11:9100"),
    # the monitoring network's own address wins for both
    ({"ansible_host": "10.0.0.11", "card_exporter_listen_address": "192.168.5.11",
      "topsrider_monitoring_address": "mon-n1.example", "topsrider_monitoring_node_exporter_port": 9101},
     "mon-n1.example:9494", "mon-n1.example:9101"),
    ({"ansible_host": "fd00::11"}, "[fd00::11]:9494", "[fd00::11]:9100"),
    ({"ansible_host": ""}, "n1:9494", "n1:9100"),
])
def test_where_a_host_is_scraped(hv, card, node):
    out = targets({"n1": hv})
    assert out == {"topsrider-cards": [{"targets": [card], "labels": {"node": "n1", "group": "t20"}}],
                   "node": [{"targets": [node], "labels": {"node": "n1", "group": "t20"}}]}


def test_inventory_order_and_no_node_exporter():
    out = targets({"b": {}, "a": {}}, hosts=["b", "a"], node_exporter=False)
    assert list(out) == ["topsrider-cards"]
    assert [t["targets"] for t in out["topsrider-cards"]] == [["b:9494"], ["a:9494"]]


def test_hosts_sharing_an_address_get_their_own_ports():
    hv = {"n1": {"ansible_host": "127.0.0.1", "card_exporter_port": 19494, "topsrider_monitoring_node_exporter_port": 19100},
          "n2": {"ansible_host": "127.0.0.1", "card_exporter_port": 19495, "topsrider_monitoring_node_exporter_port": 19101}}
    out = targets(hv)
    assert [t["targets"][0] for t in out["topsrider-cards"] + out["node"]] == [
        "127.0.0.1:19494", "127.0.0.1:19495", "127.0.0.1:19100", "127.0.0.1:19101"]


@pytest.mark.parametrize("hv, message", [
    ({"n1": {"ansible_host": "127.0.0.1"}, "n2": {"ansible_host": "127.0.0.1"}},
     "n1 and n2 are both scraped at 127.0.0.1:9494"),
    ({"n1": {"card_exporter_port": 0}}, "n1: card_exporter_port is a port number (1-65535), got 0"),
    ({"n1": {"card_exporter_port": "http"}}, "n1: card_exporter_port is a port number (1-65535), got 'http'"),
    ({"n1": {"card_exporter_port": True}}, "n1: card_exporter_port is a port number"),
    ({"n1": {"topsrider_monitoring_node_exporter_port": 70000}}, "n1: topsrider_monitoring_node_exporter_port is a port"),
    ({"n1": {"ansible_host": "10.0.0.1 extra"}}, "n1: ansible_host is a host name or an IP address"),
    ({"n1": {"topsrider_monitoring_address": "http://x/"}}, "n1: topsrider_monitoring_address is a host name"),
])
def test_bad_input_names_the_host(hv, message):
    with pytest.raises(mon.TargetsError) as e:
        targets(hv)
    assert message in str(e.value)


def test_an_empty_group_is_an_error():
    with pytest.raises(mon.TargetsError, match="no host in group 't20'"):
        mon.scrape_targets([], {}, "t20", ROLE)


DEBIAN = "/var/lib/prometheus/node-exporter"


@pytest.mark.parametrize("kind, explicit, directory, exists, expected", [
    # Debian's prometheus-node-exporter directory by default, where it exists
    ("drift", None, None, {DEBIAN}, DEBIAN + "/topsrider_drift.prom"),
    ("fabric", "", None, {DEBIAN}, DEBIAN + "/topsrider_fabric.prom"),
    ("drift", None, None, set(), ""),
    # the prometheus.prometheus collection's directory, set by the operator
    ("drift", "", "/var/lib/node_exporter/", {"/var/lib/node_exporter/"}, "/var/lib/node_exporter/topsrider_drift.prom"),
    ("drift", "", "", {DEBIAN}, ""),
    # a file given wins, whether a directory exists or not
    ("fabric", "/srv/x/topsrider_fabric.prom", None, set(), "/srv/x/topsrider_fabric.prom"),
])
def test_textfile_path(kind, explicit, directory, exists, expected):
    assert mon.textfile_path(kind, explicit, directory, isdir=lambda d: d in exists) == expected


@pytest.mark.parametrize("kind, explicit, directory, message", [
    ("drift", "topsrider_drift.prom", None, "topsrider_drift_textfile is an absolute path ending in .prom"),
    ("fabric", "/var/lib/prometheus/node-exporter/fabric.txt", None, "topsrider_fabric_textfile is an absolute path"),
    ("drift", None, "var/lib", "topsrider_textfile_dir is an absolute path"),
    ("deploy", None, None, "kind is one of drift, fabric"),
])
def test_textfile_path_bad_input(kind, explicit, directory, message):
    with pytest.raises(ValueError, match=message):
        mon.textfile_path(kind, explicit, directory, isdir=lambda d: True)


def test_textfile_path_looks_at_the_real_directory(tmp_path):
    assert mon.textfile_path("drift", None, str(tmp_path)) == str(tmp_path) + "/topsrider_drift.prom"
    assert mon.textfile_path("drift", None, str(tmp_path / "none")) == ""
