# -*- coding: utf-8 -*-
# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which Slurm job has which card: the job files the Slurm prolog writes.

The health gate of the slurm_node role (roles/slurm_node/files/topsrider_slurm_gate.py),
run as the node's Prolog, writes one file per job it lets start:
``<jobs dir>/<job id>.json`` (default ``/run/topsrider/jobs``, root-owned,
mode 0644), ``{"job_id": "4242", "user": "alice", "cards": [0, 1]}``; the same
gate run as the Epilog removes it. The card exporter reads these files (no
process of another user is looked at), as dcgm-exporter reads the files its
prolog writes. Runs on the node: Python 3.6+, no Ansible imports.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import re

DEFAULT_JOBS_DIR = "/run/topsrider/jobs"
JOB_ID_RE = re.compile(r"^[0-9]+(_[0-9]+)?(\+[0-9]+)?\Z")  # 4242, array 4242_7, het job 4242+1
MAX_FILE_BYTES = 65536


class JobFileError(ValueError):
    """A job file that is not what the prolog writes."""


def parse_job_file(name, text):
    """One job file's text -> {job_id, user, cards}. name: the file's name
    (<job id>.json), which must agree with its job_id. JobFileError otherwise."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise JobFileError("%s: not JSON (%s)" % (name, e))
    if not isinstance(data, dict):
        raise JobFileError("%s: not a JSON object" % name)
    job_id, user, cards = data.get("job_id"), data.get("user"), data.get("cards")
    if not isinstance(job_id, str) or not JOB_ID_RE.match(job_id):
        raise JobFileError("%s: job_id must be a Slurm job id, got %r" % (name, job_id))
    if name != job_id + ".json":
        raise JobFileError("%s: names job %s" % (name, job_id))
    if not isinstance(user, str):
        raise JobFileError("%s: user must be a string, got %r" % (name, user))
    if (not isinstance(cards, list)
            or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in cards)):
        raise JobFileError("%s: cards must be a list of card indexes, got %r" % (name, cards))
    return {"job_id": job_id, "user": user, "cards": sorted(set(cards))}


def read_jobs(jobs_dir=DEFAULT_JOBS_DIR):
    """(jobs, problems): the job files of jobs_dir as parse_job_file's dicts,
    sorted by job id, and a sentence for each file that could not be used.
    A missing directory is no job (a node outside Slurm); any other error
    listing it raises OSError."""
    try:
        names = sorted(os.listdir(jobs_dir))
    except OSError as e:
        if not os.path.exists(jobs_dir):
            return [], []
        raise e
    jobs, problems = [], []
    for name in names:
        if not name.endswith(".json"):
            continue  # the prolog's temporary files (.<id>.json.tmp) and anything else
        path = os.path.join(jobs_dir, name)
        try:
            with open(path, "rb") as f:
                raw = f.read(MAX_FILE_BYTES + 1)
        except (IOError, OSError) as e:
            if os.path.exists(path):
                problems.append("%s: %s" % (name, e))
            continue  # removed by the epilog meanwhile
        try:
            if len(raw) > MAX_FILE_BYTES:
                raise JobFileError("%s: more than %d bytes" % (name, MAX_FILE_BYTES))
            jobs.append(parse_job_file(name, raw.decode("utf-8", "replace")))
        except JobFileError as e:
            problems.append(str(e))
    return sorted(jobs, key=lambda j: job_sort_key(j["job_id"])), problems


def job_sort_key(job_id):
    return [int(p) for p in re.split(r"[_+]", job_id)]


def card_jobs(jobs, index):
    """{slurm_job, user} of card `index`: the job ids and users of the jobs
    that name it, comma-joined ("" when none)."""
    mine = [j for j in jobs if index in j["cards"]]
    return {"slurm_job": ",".join(j["job_id"] for j in mine),
            "user": ",".join(sorted(set(j["user"] for j in mine if j["user"])))}
