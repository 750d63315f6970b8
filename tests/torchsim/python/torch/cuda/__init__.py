"""A TEST DOUBLE of torch.cuda (see torch/__init__.py): lazy initialisation with queued calls as
torch.cuda does it, the allocator's backend from PYTORCH_CUDA_ALLOC_CONF, memory statistics."""
import os
import threading
import traceback

import torch

_initialized = False
_queued_calls = []
_lock = threading.RLock()
_tls = threading.local()


class OutOfMemoryError(RuntimeError):
    pass


def is_initialized():
    return _initialized


def _backend_from_env():
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    for item in conf.split(","):
        k, _, v = item.partition(":")
        if k.strip() == "backend":
            return v.strip()
    return "native"


def _lazy_call(callable, **kwargs):
    if is_initialized():
        callable()
    else:
        _queued_calls.append((callable, traceback.format_stack()))


def _lazy_init():
    global _initialized
    if _initialized or getattr(_tls, "is_initializing", False):
        return
    with _lock:
        if _initialized:
            return
        torch._lib.torchsim_init(_backend_from_env().encode())
        _tls.is_initializing = True
        try:
            for call, _ in _queued_calls:
                call()
        finally:
            _tls.is_initializing = False
        _initialized = True


def init():
    _lazy_init()


def get_allocator_backend():
    return _backend_from_env()


def memory_allocated(device=None):
    return torch._lib.torchsim_allocated()


def memory_reserved(device=None):
    return torch._lib.torchsim_reserved()


def empty_cache():
    torch._lib.torchsim_empty_cache()


def synchronize(device=None):
    torch._lib.torchsim_process_events()


def memory_snapshot():
    n = torch._lib.torchsim_snapshot(None, 0)
    import ctypes
    buf = ctypes.create_string_buffer(n + 1)
    torch._lib.torchsim_snapshot(buf, n + 1)
    segs = []
    for line in buf.value.decode().splitlines():
        f = line.split()
        addr, total, large = int(f[0]), int(f[1]), f[2] == "1"
        blocks, a = [], addr
        for b in f[3:]:
            size, req, alloc = b.split(":")
            blocks.append({"address": a, "size": int(size), "requested_size": int(req),
                           "state": "active_allocated" if alloc == "1" else "inactive"})
            a += int(size)
        segs.append({"device": 0, "address": addr, "total_size": total,
                     "segment_type": "large" if large else "small", "blocks": blocks})
    return segs


class memory:  # noqa: N801 (torch.cuda.memory is a module in torch)
    @staticmethod
    def _set_memory_metadata(md):
        torch._lib.torchsim_set_metadata(md.encode())
