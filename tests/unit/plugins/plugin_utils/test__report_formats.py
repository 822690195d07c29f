# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report text helpers of plugins/plugin_utils/_drift.py that the drift and
fabric reports share: Prometheus text and the XML document."""
from xml.etree import ElementTree

from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gcu.topsrider.plugins.plugin_utils._report_formats import prometheus_text, xml_document


def test_prometheus_text_families_labels_and_bare_samples():
    text = prometheus_text([
        ("a_total", "Help of a.", [((("node", 'n"1\\\n'), ("k", 2)), 3), ((("node", "n2"), ("k", 1)), "0.500")]),
        ("b", "Help of b.", [((), 7)]),
        ("c", "Empty family.", []),
    ])
    assert text == ('# HELP a_total Help of a.\n# TYPE a_total gauge\n'
                    'a_total{node="n\\"1\\\\\\n",k="2"} 3\na_total{node="n2",k="1"} 0.500\n'
                    '# HELP b Help of b.\n# TYPE b gauge\nb 7\n'
                    '# HELP c Empty family.\n# TYPE c gauge\n')
    families = dict((f.name, f) for f in text_string_to_metric_families(text))
    assert [s.labels for s in families["a_total"].samples] == [{"node": 'n"1\\\n', "k": "2"}, {"node": "n2", "k": "1"}]
    assert [(s.labels, s.value) for s in families["b"].samples] == [({}, 7.0)]


def test_xml_document_has_the_declaration_and_one_final_newline():
    root = ElementTree.Element("testsuites", {"name": "ü"})
    ElementTree.SubElement(root, "testsuite", {"name": "s"})
    text = xml_document(root)
    assert text == '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="ü"><testsuite name="s" /></testsuites>\n'
    assert ElementTree.fromstring(text.encode("utf-8")).get("name") == "ü"
