"""Fake torch / torch_gcu packages for eccl_probe tests, run by real child interpreters.

The fakes are just enough torch for the probe scripts; their behaviour is
switched with environment variables so one install serves every case:
  FAKE_TORCH_VERSION     torch.__version__ (default 2.13.0+cpu)
  FAKE_GCU_DEVICES       device count torch_gcu reports (default 8)
  FAKE_GCU_IMPORT_ERROR  set: import torch_gcu raises ImportError about libeccl.so
  FAKE_GCU_NO_REGISTER   set: torch_gcu does not register the eccl backend
  FAKE_DIST_MODE         ok | wrong | hang | crash (the rank FAKE_DIST_RANK misbehaves)
  FAKE_PID_DIR           where a hanging rank writes the pid of the grandchild it forked
"""
import glob
import os
import subprocess
import sys
import textwrap

TORCH_INIT = '''
import os
__version__ = os.environ.get("FAKE_TORCH_VERSION", "2.13.0+cpu")
float32 = "float32"


class _Bool(object):
    def __init__(self, value):
        self.value = value

    def all(self):
        return self

    def __bool__(self):
        return self.value
    __nonzero__ = __bool__


    def cpu(self):
        return self


class device(object):
    def __init__(self, type_, index=None):
        if ":" in type_:
            type_, index = type_.split(":")
        self.type, self.index = type_, None if index is None else int(index)

    def __str__(self):
        return self.type if self.index is None else "%s:%d" % (self.type, self.index)


class _Scalar(float):
    def cpu(self):
        return self


class Tensor(object):
    def __init__(self, n, value, device_=None):
        self.data = [float(value)] * n
        self.device = device_ or device("cpu")

    def fill_(self, value):
        self.data = [float(value)] * len(self.data)
        return self

    def eq(self, value):
        return _Bool(all(x == value for x in self.data))

    def reshape(self, *shape):
        return self

    def cpu(self):
        return Tensor(len(self.data), self.data[0], device("cpu"))

    def __getitem__(self, i):
        return _Scalar(self.data[i])


def full(shape, value, dtype=None, device=None):
    if isinstance(device, str):
        device = globals()["device"](device)
    return Tensor(shape[0], value, device)


class cuda(object):
    @staticmethod
    def is_available():
        return False

    @staticmethod
    def device_count():
        return 0
'''

DIST_INIT = '''
import os
import subprocess
import sys
import time

_registry = {"gloo": None}
_state = {}


def is_available():
    return True


if not os.environ.get("FAKE_TORCH_VERSION", "2").startswith("1."):
    # torch 2.x: Backend(name) accepts anything; availability is a registry lookup.
    def is_backend_available(backend):
        return backend.lower() in _registry


class Backend(str):
    def __new__(cls, name):
        if name.lower() not in _registry:
            raise ValueError("Invalid backend: '%s'" % name)
        return str.__new__(cls, name.lower())

    @classmethod
    def register_backend(cls, name, func, extended_api=False, devices=None):
        _registry[name.lower()] = func


def _misbehaves(rank, mode):
    return os.environ.get("FAKE_DIST_MODE", "ok") == mode and rank == int(os.environ.get("FAKE_DIST_RANK", "1"))


def init_process_group(backend, init_method=None, rank=0, world_size=1, timeout=None):
    Backend(backend)
    if _misbehaves(rank, "crash"):
        raise RuntimeError("fake ECCL error: device lost on rank %d" % rank)
    _state.update(backend=backend, rank=rank, world=world_size)


def all_reduce(tensor):
    rank, world = _state["rank"], _state["world"]
    if _state["backend"] in ("eccl", "nccl") and tensor.device.type == "cpu":
        # As a device backend does: host tensors have no backend.
        raise RuntimeError("No backend type associated with device type cpu")
    if _misbehaves(rank, "hang"):
        # Fork a grandchild too: the probe must kill the rank's whole process group.
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(os.path.join(os.environ["FAKE_PID_DIR"], "grandchild.%d" % rank), "w") as f:
            f.write(str(child.pid))
        while True:
            time.sleep(1)
    total = world * (world + 1) / 2.0
    if _misbehaves(rank, "wrong"):
        total += 1
    tensor.fill_(total)


def barrier():
    pass


def get_backend():
    return _state["backend"]


def destroy_process_group():
    _state.clear()
'''

GCU_2X = '''
import os
import sys
import types

if os.environ.get("FAKE_GCU_IMPORT_ERROR"):
    raise ImportError("libeccl.so: cannot open shared object file: No such file or directory")
import torch
import torch.distributed as dist

__version__ = "%(version)s"


def _count():
    return int(os.environ.get("FAKE_GCU_DEVICES", "8"))


if not os.environ.get("FAKE_GCU_NO_REGISTER"):
    dist.Backend.register_backend("eccl", lambda *a: None, devices=["cpu"])
gcu = types.ModuleType("torch.gcu")
gcu.device_count = _count
gcu.is_available = lambda: _count() > 0
gcu.set_device = lambda index: None
gcu.synchronize = lambda: None
torch.gcu = gcu
sys.modules["torch.gcu"] = gcu
'''

GCU_1X = '''
import os

if os.environ.get("FAKE_GCU_IMPORT_ERROR"):
    raise ImportError("libeccl.so: cannot open shared object file: No such file or directory")
import torch
import torch.distributed as dist

__version__ = "%(version)s"


def device_count():
    return int(os.environ.get("FAKE_GCU_DEVICES", "8"))


def is_available():
    return device_count() > 0


def gcu_device(index=0):
    return torch.device("xla", index)


if not os.environ.get("FAKE_GCU_NO_REGISTER"):
    dist.Backend.register_backend("eccl", lambda *a: None)
'''

GCU_NO_API = '''
import torch
__version__ = "%(version)s"
'''


def _write(path, text):
    d = os.path.dirname(path)
    if not os.path.isdir(d):
        os.makedirs(d)
    with open(path, "w") as f:
        f.write(textwrap.dedent(text))


def make_site(root, gcu="2.x", torch=True, requires="2.13.0", gcu_version=None):
    """A directory to put on PYTHONPATH holding fake torch and torch_gcu ("2.x", "1.x", "noapi" or None)."""
    root = str(root)
    if torch:
        _write(os.path.join(root, "torch", "__init__.py"), TORCH_INIT)
        _write(os.path.join(root, "torch", "distributed", "__init__.py"), DIST_INIT)
    if gcu:
        version = gcu_version or ("%s+2.5.136" % ("1.10.0" if gcu == "1.x" else requires))
        body = {"2.x": GCU_2X, "1.x": GCU_1X, "noapi": GCU_NO_API}[gcu]
        _write(os.path.join(root, "torch_gcu", "__init__.py"), body % {"version": version})
        meta = "Metadata-Version: 2.1\nName: torch_gcu\nVersion: %s\nRequires-Dist: torch==%s\n" % (version, requires)
        _write(os.path.join(root, "torch_gcu-%s.dist-info" % version, "METADATA"), meta)
    return root


def build_libeccl(out_dir, name="libeccl.so", version=2005136):
    """Compile a tiny libeccl.so exporting ecclGetVersion/ecclGetVersionString (gcc, as sim/bundles does)."""
    out_dir = str(out_dir)
    if not os.path.isdir(out_dir):
        os.makedirs(out_dir)
    src = os.path.join(out_dir, "eccl.c")
    with open(src, "w") as f:
        f.write('int ecclGetVersion(int *v) { *v = %d; return 0; }\n'
                'const char *ecclGetVersionString(void) { return "%d.%d.%d"; }\n'
                % (version, version // 1000000, version // 1000 % 1000, version % 1000))
    path = os.path.join(out_dir, name)
    subprocess.check_call(["gcc", "-shared", "-fPIC", "-Wl,-soname,libeccl.so", "-o", path, src])
    os.remove(src)
    return path


def interpreters():
    """sys.executable, plus a Python 3.6 when this machine has one (the oldest the module supports)."""
    found = [sys.executable]
    for cand in sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.6*/bin/python3.6"))):
        if os.access(cand, os.X_OK):
            found.append(cand)
            break
    return found
