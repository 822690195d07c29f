"""scripts/gpu_check.py: the parts that run without a GPU (the GPU run itself is scripts/gpu-check.sh)."""
import json
import os
import subprocess
import sys

from conftest import TOP

sys.path.insert(0, os.path.join(TOP, "scripts"))
import gpu_check  # noqa: E402 pylint: disable=wrong-import-position,import-error

# The default callback's assert output, as ansible-core 2.19 prints launch_check.yml's verdicts.
OK_OUT = '''TASK [One training process per card and every card busy] ***
ok: [localhost] => {
    "changed": false,
    "msg": "localhost: 1 training processes for 1 cards, every card busy (>= 10.0%)"
}
'''
FAIL_OUT = '''fatal: [localhost]: FAILED! => {
    "assertion": "launch_check.ok",
    "changed": false,
    "evaluated_to": false,
    "msg": "localhost: launch check failed (no_job): no training process runs on this node; 1 card(s) idle: 0"
}
'''
# ansible-core 2.19's error line on the H200 run (docs/hardware/gpu-check-2026-11-26.json): the verdict ends
# at its line, the Origin lines that follow are not part of it.
ERROR_OUT = '''[ERROR]: Task failed: Action failed: localhost: launch check failed (no_job): no training process runs
on this node (none with LOCAL_RANK in its environment); 1 card(s) idle: 0
Origin: /work/main/playbooks/launch_check.yml:66:7

64         launch_check:
'''.replace("runs\non", "runs on")


def test_launch_check_verdicts_are_read_from_the_playbook_output():
    assert gpu_check.launch_check_case(0, OK_OUT) == (
        "ok", "1 training processes for 1 cards, every card busy (>= 10.0%)")
    case, message = gpu_check.launch_check_case(2, FAIL_OUT)
    assert case == "no_job" and message.startswith("no training process runs")
    assert gpu_check.launch_check_case(2, ERROR_OUT) == (
        "no_job", "no training process runs on this node (none with LOCAL_RANK in its environment); "
        "1 card(s) idle: 0")
    # An output with no verdict is never read as a pass.
    assert gpu_check.launch_check_case(2, "ERROR! the playbook could not be found")[0] == "unknown"


def test_without_a_gpu_it_says_so_and_writes_nothing(tmp_path):
    env = dict(os.environ, PATH="/usr/bin:/bin")
    proc = subprocess.run([os.path.join(TOP, "scripts", "gpu-check.sh"), "--out", str(tmp_path / "out")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env,
                          check=False)
    assert proc.returncode == 0
    assert "no NVIDIA GPU" in proc.stdout and "nothing was checked" in proc.stdout
    assert not (tmp_path / "out").exists()


def test_markdown_names_every_step_and_the_busbw_table():
    result = {"date": "2026-11-23T08:00:00Z", "commit": "abc1234", "driver": "580.159.04", "python": "/p/python3",
              "torch": {"torch": "2.11.0+cu130", "cuda": "13.0"},
              "gpus": [{"model": "NVIDIA H100 80GB HBM3"}],
              "probe": {"bandwidth": "nccl-tests", "libraries": [{"path": "/x/libnccl.so.2", "version": "2.28.9"}],
                        "results": [{"size_bytes": 1048576, "latency_us": 12.5, "algbw_gbps": 80.0,
                                     "busbw_gbps": 0.0, "correct": True}]},
              "steps": [{"name": "a", "pass": True, "detail": "x | y"}, {"name": "b", "pass": False, "detail": "z"}]}
    text = gpu_check.markdown(result)
    assert "| a | pass | x / y |" in text and "| b | FAIL | z |" in text
    assert "| 1 MiB | 12.5 | 80.0 | 0.0 | True |" in text
    assert "/x/libnccl.so.2 (2.28.9)" in text and "NVIDIA H100 80GB HBM3" in text
    assert "no bandwidth" not in text
    # One GPU: NCCL's in-place all-reduce moves nothing, and the result says algbw is then no bandwidth.
    result["probe"]["world_size"] = 1
    assert "algbw here is no bandwidth" in gpu_check.markdown(result)


def test_the_python_probe_step_passes_only_when_the_probe_agrees_with_importlib_metadata():
    sys.path.insert(0, TOP)
    from plugins.module_utils._state import PYTHON_PROBE  # pylint: disable=import-outside-toplevel
    probed = subprocess.run([sys.executable, "-c", PYTHON_PROBE], stdout=subprocess.PIPE, universal_newlines=True,
                            check=True).stdout
    probed = json.loads(probed)
    step = gpu_check.python_probe_step(sys.executable, probed)
    assert step["pass"], step
    assert '"pip": "%s"' % probed["pip"] in step["detail"]
    wrong = dict(probed, pip="0.0")
    assert not gpu_check.python_probe_step(sys.executable, wrong)["pass"]
    assert not gpu_check.python_probe_step(sys.executable, dict(probed, error="boom"))["pass"]
    assert not gpu_check.python_probe_step("/nonexistent/python", probed)["pass"]
