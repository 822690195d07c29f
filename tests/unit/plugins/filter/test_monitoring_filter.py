# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The monitoring filter as Ansible loads it: hostvars read for the named hosts only, errors as AnsibleFilterError."""
import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.gcu.topsrider.plugins.filter import monitoring

FILTERS = monitoring.FilterModule().filters()
DEFAULTS = {"card_exporter_listen_address": "0.0.0.0", "card_exporter_port": 9494}


class Lazy(dict):
    """hostvars: a host's variables templated on access; reading a variable the filter does not need fails."""

    def __getitem__(self, key):
        if key not in monitoring_keys():
            raise AssertionError("read %s" % key)
        return dict.__getitem__(self, key)


def monitoring_keys():
    from ansible_collections.gcu.topsrider.plugins.plugin_utils._monitoring import HOST_KEYS
    return HOST_KEYS


def test_registered():
    assert sorted(FILTERS) == ["topsrider_scrape_targets", "topsrider_textfile_path"]


def test_reads_only_what_it_needs():
    hostvars = {"n1": Lazy(ansible_host="10.0.0.1", secret="x"), "n2": Lazy(card_exporter_port=9500),
                "other": Lazy(ansible_host="10.0.0.1")}
    out = FILTERS["topsrider_scrape_targets"](["n1", "n2"], hostvars, "t20", DEFAULTS, False)
    assert out == {"topsrider-cards": [{"targets": ["10.0.0.1:9494"], "labels": {"node": "n1", "group": "t20"}},
                                       {"targets": ["n2:9500"], "labels": {"node": "n2", "group": "t20"}}]}


def test_errors_are_filter_errors():
    with pytest.raises(AnsibleFilterError, match="scrape_targets: n1: card_exporter_port"):
        FILTERS["topsrider_scrape_targets"](["n1"], {"n1": Lazy(card_exporter_port="x")}, "t20", DEFAULTS)
    with pytest.raises(AnsibleFilterError, match="a list of inventory host names"):
        FILTERS["topsrider_scrape_targets"]("n1", {}, "t20", DEFAULTS)


def test_textfile_path(tmp_path):
    assert FILTERS["topsrider_textfile_path"]("", "drift", str(tmp_path)) == str(tmp_path) + "/topsrider_drift.prom"
    assert FILTERS["topsrider_textfile_path"]("/x/y.prom", "fabric") == "/x/y.prom"
    with pytest.raises(AnsibleFilterError, match="topsrider_textfile_path: topsrider_drift_textfile is an absolute"):
        FILTERS["topsrider_textfile_path"]("y.txt", "drift")
