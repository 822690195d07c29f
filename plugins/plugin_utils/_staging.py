# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who stages the bundle from where (bundle_stage's peer staging; pure, unit-tested
in tests/unit/test_staging_plan.py; the filter topsrider_stage_plan wraps it).

Per rollout batch: a host that lacks files of its bundle gets them from a host
of the run that already holds the same bundle whole (same key: the manifest, as
staged), and only when no such host exists does one host of the batch, the
seed, get them from the controller. So the controller sends each bundle once
per run, however many hosts and batches follow, and every host that holds the
bundle feeds the next ones (clients spread round-robin over the holders, those
already serving first; a holder that does not serve yet is started).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


def stage_plan(needs, offers):
    """needs: {host: {"key": str, "missing": [file, ...], "transfer": "peers"|"controller"}}
    for the hosts of this batch, in batch order; offers: {host: {"key", "url"} or empty}
    for the hosts still in the play (failed ones are left out by the caller: they are
    not sources): the bundle each holds whole, staged and checked in this run, and the
    URL it serves it at ("" when it does not serve yet).

    Returns {"controller": [host, ...], "sources": {host: source_host}, "start": [host, ...],
    "urls": {host: url}}: who copies from the controller, which host each other host
    fetches from, which hosts must start serving first, and the serving hosts' URLs.
    """
    holders = {}
    for host, offer in sorted(offers.items()):
        if offer:
            holders.setdefault(offer["key"], {})[host] = offer.get("url") or ""
    controller, sources, start, urls = [], {}, [], {}
    by_key = {}
    for host, need in needs.items():
        by_key.setdefault(need["key"], []).append(host)
    for key, hosts in by_key.items():
        holding = holders.get(key) or {}
        # Holders that feed nobody yet first: the load spreads over every
        # holder (a tree), not over the first batch's hosts.
        feeders = sorted(holding, key=lambda h: (bool(holding[h]), h))
        urls.update((h, u) for h, u in holding.items() if u)
        clients = []
        for host in hosts:
            need = needs[host]
            if not need["missing"]:
                if host not in holding:
                    feeders.append(host)
            elif need.get("transfer") == "controller":
                controller.append(host)
            else:
                clients.append(host)
        if not clients:
            continue
        if not feeders:
            seed = clients.pop(0)
            controller.append(seed)
            feeders.append(seed)
        for index, host in enumerate(clients):
            source = feeders[index % len(feeders)]
            sources[host] = source
            if not holding.get(source) and source not in start:
                start.append(source)
    return {"controller": controller, "sources": sources, "start": start, "urls": urls}
