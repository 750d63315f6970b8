"""A TEST DOUBLE of the `torch` package for gpumemtrace's CPU tests (CI has no torch): the few
names gpumemtrace's PyTorch layer (python/gpumemtrace/_torch.py) and the test programs use, over
the double's caching allocator (tests/torchsim/c10_cuda.cpp) on the simulated CUDA runtime.
Not PyTorch. The test assembles a package directory from this file, torch/cuda, the double's C++
headers (include/) and its libraries (lib/), as a torch wheel lays them out.
"""
import ctypes
import os
import types

__version__ = os.environ.get("TORCHSIM_VERSION", "2.11.0+sim")

_HERE = os.path.dirname(os.path.abspath(__file__))
_lib = ctypes.CDLL(os.path.join(_HERE, "lib", "libc10_cuda.so"), mode=ctypes.RTLD_GLOBAL)
_lib.torchsim_init.argtypes = [ctypes.c_char_p]
_lib.torchsim_malloc.argtypes = [ctypes.c_size_t]
_lib.torchsim_malloc.restype = ctypes.c_void_p
_lib.torchsim_free.argtypes = [ctypes.c_void_p, ctypes.c_int]
_lib.torchsim_allocated.restype = ctypes.c_ulonglong
_lib.torchsim_reserved.restype = ctypes.c_ulonglong
_lib.torchsim_set_metadata.argtypes = [ctypes.c_char_p]
_lib.torchsim_snapshot.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
_lib.torchsim_snapshot.restype = ctypes.c_size_t
_lib.torchsim_blas_handle.restype = ctypes.c_void_p

_C = types.SimpleNamespace(_GLIBCXX_USE_CXX11_ABI=True)

from torch import cuda  # noqa: E402
from torch import nn  # noqa: E402,F401 (torch imports it too)
from torch import optim  # noqa: E402,F401 (torch imports it too)


class _Device:
    type = "cuda"

    def __init__(self, index):
        self.index = index


class _Storage:
    def __init__(self, ptr):
        self._ptr = ptr

    def data_ptr(self):
        return self._ptr


class _Node:
    """An autograd graph node as torch's C++ nodes look from Python: the tensors saved for
    backward (`_saved_*`) and the nodes it leads to (`next_functions`)."""

    def __init__(self, saved, next_functions=()):
        self._saved_self = saved
        self.next_functions = next_functions


class Tensor:
    """Bytes on the simulated device, freed when the object goes (Python's reference count)."""

    is_cuda = True
    device = _Device(0)
    grad_fn = None

    def untyped_storage(self):
        return _Storage(self._ptr)

    def __init__(self, nbytes):
        cuda._lazy_init()
        self.nbytes = nbytes
        self._ptr = _lib.torchsim_malloc(nbytes)
        if not self._ptr:
            raise cuda.OutOfMemoryError(f"CUDA out of memory. Tried to allocate {nbytes} bytes.")
        self._wait = False

    def data_ptr(self):
        return self._ptr

    def record_stream(self, stream=None):
        self._wait = True  # the free completes at the next synchronize(), maybe on another thread

    def __del__(self):
        if getattr(self, "_ptr", None):
            _lib.torchsim_free(self._ptr, 1 if self._wait else 0)
            self._ptr = None


uint8 = "uint8"  # a dtype name: the double's tensors are bytes (empty() takes a byte count)


def empty(nbytes, device="cuda", dtype=None):
    return Tensor(int(nbytes))


def matmul(a, b):
    """A product: its output, and the cuBLAS handle's workspace that the first one allocates
    and torch keeps for the handle's life (c10_cuda.cpp)."""
    _lib.torchsim_blas_handle()
    return Tensor(max(a.nbytes, b.nbytes))


def _sim_layer(x, activation_bytes):
    """A layer's forward as autograd records it: an activation saved for backward in the graph of
    the (small) output, which leads back to the input's graph."""
    out = Tensor(512)
    out.grad_fn = _Node(Tensor(int(activation_bytes)), ((getattr(x, "grad_fn", None), 0),))
    return out
