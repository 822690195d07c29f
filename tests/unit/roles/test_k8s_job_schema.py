# Copyright: gcu.topsrider contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dist_launch's k8s-job.yaml, rendered with the real role template and the
role's own defaults and vars (by ansible's template module on localhost), validated
against the Kubernetes API schemas, offline and strict (kubernetes-validate
ships the schemas: an unknown field is an error, not a silent drop), for both
vendors. Rendering alone would accept a misspelt field that kubectl refuses."""
import json
import os
import subprocess
import sys

import kubernetes_validate
import pytest
import yaml

ROLE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles", "dist_launch"))
ANSIBLE = os.path.join(os.path.dirname(sys.executable), "ansible")
# The oldest Kubernetes the Indexed Job with its completion-index annotation
# runs on unchanged (1.28) and the newest whose schemas the validator ships.
K8S_VERSIONS = ("1.28.0", kubernetes_validate.latest_version())


def render_job(tmp_path, vendor):
    variables = {
        "dist_launch_vendor": vendor,
        "dist_launch_group": "t20" if vendor == "enflame" else "h100",
        "dist_launch_nproc": 8,
        "dist_launch_dir": "/opt/topsrider/launch",
        "dist_launch_backend": "eccl" if vendor == "enflame" else "nccl",
        "dist_launch_environment": {"ECCL_DEBUG": "WARN"} if vendor == "enflame" else {"NCCL_DEBUG": "WARN"},
        "dist_launch_master_addr": "127.0.0.1",
        "dist_launch_cluster_hosts": ["node1", "node2"],
        "dist_launch_cluster_cards": 8,
        "dist_launch_train_command": ["/opt/train/train.py", "--steps", "100"],
    }
    vars_file = tmp_path / "vars.json"
    vars_file.write_text(json.dumps(variables))
    dest = tmp_path / "k8s-job.yaml"
    argv = [ANSIBLE, "localhost", "-c", "local", "-i", "localhost,", "-m", "ansible.builtin.template",
            "-a", "src=%s dest=%s" % (os.path.join(ROLE, "templates", "k8s-job.yaml.j2"), dest),
            "-e", "@%s" % os.path.join(ROLE, "defaults", "main.yml"), "-e", "@%s" % os.path.join(ROLE, "vars", "main.yml"),
            "-e", "@%s" % vars_file,
            "-e", "ansible_python_interpreter=%s" % sys.executable]
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.minimal", ANSIBLE_DEPRECATION_WARNINGS="0")
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    return [doc for doc in yaml.safe_load_all(dest.read_text()) if doc is not None]


@pytest.fixture(scope="module", params=["enflame", "nvidia"])
def documents(request, tmp_path_factory):
    return request.param, render_job(tmp_path_factory.mktemp("k8s-" + request.param), request.param)


@pytest.mark.parametrize("k8s_version", K8S_VERSIONS)
def test_every_document_is_valid_for_the_kubernetes_api(documents, k8s_version):
    vendor, docs = documents
    assert [d["kind"] for d in docs] == ["ConfigMap", "Service", "Job"]
    for doc in docs:
        kubernetes_validate.validate(doc, k8s_version, strict=True)
    job = docs[2]
    limits = job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits == ({"enflame.com/gcu": 8} if vendor == "enflame" else {"nvidia.com/gpu": 8})


def test_the_validator_refuses_what_the_api_refuses(documents):
    """The check can fail: a misspelt field and a wrong type are refused."""
    docs = documents[1]
    job = json.loads(json.dumps(docs[2]))
    job["spec"]["completionsMode"] = job["spec"].pop("completionMode")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(job, K8S_VERSIONS[-1], strict=True)
    job = json.loads(json.dumps(docs[2]))
    job["spec"]["parallelism"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(job, K8S_VERSIONS[-1], strict=True)
