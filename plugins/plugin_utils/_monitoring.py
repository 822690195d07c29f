# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prometheus scrape targets from the inventory (playbooks/monitoring_targets.yml,
docs/monitoring.md): for every host of a group, where its card exporter and
its node_exporter answer, as Prometheus file_sd target groups. Pure; the
filter topsrider_scrape_targets hands over the few host variables it reads."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os.path
import re

# The scrape jobs the collection's rules select (contrib/prometheus): the card
# exporter's job is named in topsrider-cards.yml; node_exporter's is the name
# the prometheus.prometheus collection and most examples use.
CARD_JOB = "topsrider-cards"
NODE_JOB = "node"
# The host variables a target is decided from (all optional).
HOST_KEYS = ("ansible_host", "card_exporter_listen_address", "card_exporter_port",
             "topsrider_monitoring_address", "topsrider_monitoring_node_exporter_port")
# An address that means "every address": the target is the host's own address.
_ANY = ("", "0.0.0.0", "::", "[::]")
_HOSTNAME = re.compile(r"^[A-Za-z0-9_.-]+$")
_IPV6 = re.compile(r"^[0-9A-Fa-f:.]+$")


class TargetsError(ValueError):
    pass


def _port(host, name, value):
    if isinstance(value, bool):
        raise TargetsError("%s: %s is a port number (1-65535), got %r" % (host, name, value))
    try:
        port = int(str(value).strip())
    except ValueError:
        raise TargetsError("%s: %s is a port number (1-65535), got %r" % (host, name, value))
    if not 1 <= port <= 65535:
        raise TargetsError("%s: %s is a port number (1-65535), got %r" % (host, name, value))
    return port


def _address(host, name, value):
    text = str(value).strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if ":" in text and _IPV6.match(text):
        return "[%s]" % text
    if not text or not _HOSTNAME.match(text):
        raise TargetsError("%s: %s is a host name or an IP address, got %r" % (host, name, value))
    return text


def scrape_targets(hosts, host_vars, group, card_defaults, node_exporter=True):
    """{job: [file_sd target group, ...]} for the hosts (inventory order).

    host_vars: {host: {variable: value}} (HOST_KEYS; a missing one takes its
    default). card_defaults: the card_exporter role's defaults
    (card_exporter_listen_address, card_exporter_port), so that a host without
    its own settings is scraped where the role made its exporter listen.

    Where a host is scraped: topsrider_monitoring_address when set; else, for
    the card exporter, its listen address when it is a single one (it answers
    nowhere else); else ansible_host; else the inventory name. node_exporter on
    topsrider_monitoring_node_exporter_port (default 9100) of the same host.
    Every target group carries the labels node (the inventory name) and group.
    Two hosts on the same address and port are an error: Prometheus would
    scrape one exporter twice and the other never."""
    if not isinstance(hosts, list) or not hosts:
        raise TargetsError("no host in group %r: the inventory defines none (or -e topsrider_monitoring_group "
                           "names another group)" % (group,))
    if not isinstance(host_vars, dict) or not isinstance(card_defaults, dict):
        raise TargetsError("host_vars and card_defaults are dicts")
    jobs = {CARD_JOB: []}
    if node_exporter:
        jobs[NODE_JOB] = []
    seen = {}
    for host in hosts:
        hv = host_vars.get(host) or {}
        own = hv.get("topsrider_monitoring_address")
        base = _address(host, "topsrider_monitoring_address", own) if own not in (None, "") else (
            _address(host, "ansible_host", hv["ansible_host"]) if hv.get("ansible_host") not in (None, "")
            else _address(host, "the inventory name", host))
        listen = hv.get("card_exporter_listen_address", card_defaults.get("card_exporter_listen_address", "0.0.0.0"))
        card_address = base if own not in (None, "") or str(listen).strip() in _ANY else \
            _address(host, "card_exporter_listen_address", listen)
        ports = [(CARD_JOB, card_address,
                  _port(host, "card_exporter_port", hv.get("card_exporter_port",
                                                           card_defaults.get("card_exporter_port", 9494))))]
        if node_exporter:
            ports.append((NODE_JOB, base, _port(host, "topsrider_monitoring_node_exporter_port",
                                                hv.get("topsrider_monitoring_node_exporter_port", 9100))))
        for job, address, port in ports:
            target = "%s:%d" % (address, port)
            if target in seen:
                raise TargetsError("%s and %s are both scraped at %s: give each its own address or port "
                                   "(topsrider_monitoring_address, card_exporter_port, "
                                   "topsrider_monitoring_node_exporter_port)" % (seen[target], host, target))
            seen[target] = host
            jobs[job].append({"targets": [target], "labels": {"node": str(host), "group": str(group)}})
    return jobs


# node_exporter's textfile directory as Debian's prometheus-node-exporter
# package sets it (its --collector.textfile.directory default): the collection
# supports Debian-family nodes and controllers. The prometheus.prometheus
# collection's node_exporter role uses /var/lib/node_exporter instead; set
# topsrider_textfile_dir to that there.
TEXTFILE_DIR = "/var/lib/prometheus/node-exporter"
_KINDS = ("drift", "fabric")


def textfile_path(kind, explicit=None, textfile_dir=None, isdir=None):
    """Where the drift or fabric check writes its Prometheus textfile on the
    controller, or "" (none):

    - explicit (topsrider_<kind>_textfile) when given: an absolute path ending
      in .prom (node_exporter's textfile collector reads only *.prom);
    - else <textfile_dir>/topsrider_<kind>.prom when that directory exists
      (textfile_dir: topsrider_textfile_dir, TEXTFILE_DIR when None; "" turns
      the default off), so a controller without node_exporter gets none;
    - else "".
    isdir: os.path.isdir, replaceable in tests."""
    if kind not in _KINDS:
        raise ValueError("kind is one of %s, got %r" % (", ".join(_KINDS), kind))
    if explicit not in (None, ""):
        path = str(explicit)
        if not path.startswith("/") or not path.endswith(".prom"):
            raise ValueError("topsrider_%s_textfile is an absolute path ending in .prom (node_exporter's textfile "
                             "collector reads only *.prom files), got %r" % (kind, explicit))
        return path
    directory = TEXTFILE_DIR if textfile_dir is None else str(textfile_dir)
    if directory == "":
        return ""
    if not directory.startswith("/"):
        raise ValueError("topsrider_textfile_dir is an absolute path (or empty: no textfile), got %r" % (textfile_dir,))
    if isdir is None:
        isdir = os.path.isdir
    return "%s/topsrider_%s.prom" % (directory.rstrip("/") or "", kind) if isdir(directory) else ""
