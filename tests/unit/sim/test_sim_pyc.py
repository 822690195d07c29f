"""SIMULATOR and test controller: topsrider_sim_pyc compiles a file of an Ansible module zip
once per source, and nothing a module does changes (sim/node/rootfs/usr/lib/python3/dist-packages)."""
import os
import subprocess
import sys
import zipfile

from conftest import TOP

HOOK_DIR = os.path.join(TOP, "sim", "node", "rootfs", "usr", "lib", "python3", "dist-packages")

# Imports the module of a zip as AnsiballZ puts it on sys.path, with the hook from the checkout
# (-S: not the copy a test venv has), and prints what the module computes and where its
# traceback points.
RUNNER = r"""
import sys
sys.path.insert(0, sys.argv[1])
import topsrider_sim_pyc
sys.path.insert(0, sys.argv[2])
from mod_utils import thing
print(thing.value())
try:
    thing.fail()
except ZeroDivisionError as e:
    print(e.__traceback__.tb_next.tb_frame.f_code.co_filename)
"""

SOURCE = """
def value():
    return [n * %d for n in range(3)]

def fail():
    return 1 / 0
"""


def payload(tmp_path, run, factor=2, name="ansible_stat_payload", module="thing", source=None):
    """The zip as AnsiballZ names it, in a directory of this run: mod_utils/<module>.py."""
    directory = tmp_path / ("%s_%s" % (name, run))
    directory.mkdir()
    path = directory / ("%s.zip" % name)
    with zipfile.ZipFile(str(path), "w") as z:
        z.writestr("mod_utils/__init__.py", "")
        z.writestr("mod_utils/%s.py" % module, SOURCE % factor if source is None else source)
    return str(path)


def run(zip_path, cache):
    env = dict(os.environ, TOPSRIDER_SIM_PYC_CACHE=str(cache))
    proc = subprocess.run([sys.executable, "-S", "-c", RUNNER, HOOK_DIR, zip_path], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_compiled_once_then_read_and_the_traceback_names_this_run(tmp_path):
    cache = tmp_path / "cache"
    first = payload(tmp_path, "a")
    assert run(first, cache) == ["[0, 2, 4]", first + "/mod_utils/thing.py"]
    entries = sorted(os.listdir(str(cache)))
    assert len(entries) == 2  # the package and thing.py
    stamps = {e: os.stat(str(cache / e)).st_mtime_ns for e in entries}
    second = payload(tmp_path, "b")
    assert run(second, cache) == ["[0, 2, 4]", second + "/mod_utils/thing.py"]
    assert {e: os.stat(str(cache / e)).st_mtime_ns for e in os.listdir(str(cache))} == stamps


def test_a_changed_source_is_compiled_anew(tmp_path):
    cache = tmp_path / "cache"
    assert run(payload(tmp_path, "a"), cache)[0] == "[0, 2, 4]"
    assert run(payload(tmp_path, "b", factor=3), cache)[0] == "[0, 3, 6]"
    assert len(os.listdir(str(cache))) == 3


def test_a_damaged_entry_is_compiled_again(tmp_path):
    cache = tmp_path / "cache"
    run(payload(tmp_path, "a"), cache)
    for garbage in (b"", b"\x00not marshal", b"i\x07\x00\x00\x00"):  # nothing, bad data, an int
        for entry in os.listdir(str(cache)):
            (cache / entry).write_bytes(garbage)
        assert run(payload(tmp_path, "b" + str(len(garbage))), cache)[0] == "[0, 2, 4]"


def test_an_unwritable_cache_or_another_zip_takes_pythons_own_path(tmp_path):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache would go")
    assert run(payload(tmp_path, "a"), blocked)[0] == "[0, 2, 4]"
    cache = tmp_path / "cache"
    assert run(payload(tmp_path, "b", name="someone_elses"), cache)[0] == "[0, 2, 4]"
    assert not cache.exists()


def test_an_empty_setting_turns_it_off(tmp_path):
    proc = subprocess.run([sys.executable, "-S", "-c", "import sys; sys.path.insert(0, sys.argv[1]); import zipimport, "
                           "topsrider_sim_pyc; print(zipimport._compile_source.__name__)", HOOK_DIR],
                          env=dict(os.environ, TOPSRIDER_SIM_PYC_CACHE=""), stdout=subprocess.PIPE,
                          universal_newlines=True, check=True)
    assert proc.stdout.strip() == "_compile_source"


def test_an_optimized_python_gets_code_of_its_own(tmp_path):
    # -O strips asserts: code compiled under -O is never served to a Python without it, nor back.
    source = "def check():\n    assert False, 'asserts run'\n    return 'asserts stripped'\n"
    zip_path = payload(tmp_path, "o", module="opt", source=source)
    runner = ("import sys; sys.path.insert(0, sys.argv[1]); import topsrider_sim_pyc; sys.path.insert(0, sys.argv[2])\n"
              "from mod_utils import opt\ntry:\n    print(opt.check())\nexcept AssertionError as e:\n    print(e)\n")
    env = dict(os.environ, TOPSRIDER_SIM_PYC_CACHE=str(tmp_path / "cache"))
    said = [subprocess.run([sys.executable, "-S"] + flags + ["-c", runner, HOOK_DIR, zip_path], env=env,
                           stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.strip()
            for flags in ([], ["-O"], [], ["-O"])]
    assert said == ["asserts run", "asserts stripped", "asserts run", "asserts stripped"]
