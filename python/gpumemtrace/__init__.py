"""Markers and ranges in a gpumemtrace trace, from Python.

    import gpumemtrace

    gpumemtrace.mark("loaded weights")          # a point in the sequence of allocations

    with gpumemtrace.range("forward"):          # a named span, nested per thread
        loss = model(batch)

    @gpumemtrace.range("optimizer step")        # the same, around every call
    def step():
        opt.step()

    gpumemtrace.range_push("epoch 3")           # or by hand, as torch.cuda.nvtx does
    ...
    gpumemtrace.range_pop()

The calls land in the trace when the program runs under the tracer (`gpumemtrace run`,
LD_PRELOAD=libgpumemtrace.so, or CUDA_INJECTION64_PATH=/path/to/libgpumemtrace.so alone): this
module calls the tracer's gmt_mark, gmt_range_push and gmt_range_pop through ctypes. Without the
tracer every function here does nothing (one Python call), so the calls can stay in production
code.
Labels are str (UTF-8) or bytes, truncated by the tracer to 63 bytes. Pure Python, no compiler;
docs/markers.md has the details.

PYTEST_DONT_REWRITE: traced processes import this package at start-up (the start-up hook), before
pytest loads the wheel's plugin (gpumemtrace.pytest_plugin), which would warn that it cannot
rewrite the asserts of a package already imported.
"""
import contextlib
import ctypes
import os

__all__ = ["mark", "range_push", "range_pop", "range", "enabled"]
__version__ = "0.1.0"


def _symbol(lib, name, argtypes):
    fn = getattr(lib, name, None) if lib is not None else None
    if fn is not None:
        fn.argtypes = argtypes
        fn.restype = None
    return fn


def _is_tracer(path):
    return os.path.basename(path).startswith("libgpumemtrace")


def _mapped_tracer():
    """A tracer already loaded outside the global scope (the CUDA driver dlopen()s the
    CUDA_INJECTION64_PATH library RTLD_LOCAL at cuInit): its path from /proc/self/maps."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rstrip("\n").split(None, 5)[5:]
                if path and path[0].startswith("/") and _is_tracer(path[0]):
                    return path[0]
    except OSError:
        pass
    return None


def _tracer_library():
    """The tracer when it is not in the global scope: the copy already loaded (RTLD_NOLOAD,
    nothing new is loaded), else the library CUDA_INJECTION64_PATH names, loaded now (when CUDA
    initialises, the driver's dlopen() of the same file gets this very object)."""
    path = _mapped_tracer()
    if path:
        try:
            return ctypes.CDLL(path, mode=os.RTLD_NOLOAD)
        except OSError:
            pass
    inject = os.environ.get("CUDA_INJECTION64_PATH", "")
    if inject and _is_tracer(inject) and os.path.isfile(inject):
        try:
            return ctypes.CDLL(inject)
        except OSError:
            pass
    return None


def _find():
    # The global scope of the process first: the executable and everything loaded RTLD_GLOBAL,
    # the preloaded tracer included; then a tracer loaded (or to be loaded) RTLD_LOCAL by the
    # CUDA driver. Resolved once, at import.
    try:
        lib = ctypes.CDLL(None)
    except OSError:
        lib = None
    if lib is None or getattr(lib, "gmt_mark", None) is None:
        lib = _tracer_library()
    return lib


_lib = _find()


def _tracer_lib():
    """The tracer's library (a ctypes.CDLL), or None when the program is not traced."""
    return _lib if _lib is not None and getattr(_lib, "gmt_mark", None) is not None else None


def _load():
    lib = _lib
    return (_symbol(lib, "gmt_mark", [ctypes.c_char_p]),
            _symbol(lib, "gmt_range_push", [ctypes.c_char_p]),
            _symbol(lib, "gmt_range_pop", []))


_gmt_mark, _gmt_range_push, _gmt_range_pop = _load()


def _label(label):
    if isinstance(label, bytes):
        return label
    return str(label).encode("utf-8", "replace")


def enabled():
    """True when the tracer is loaded in this process (the calls are recorded)."""
    return _gmt_mark is not None


def mark(label):
    """Put a marker named `label` in the trace (a point, e.g. "epoch 3 start")."""
    if _gmt_mark is not None:
        _gmt_mark(_label(label))


def range_push(label):
    """Open a range named `label` on this thread; close it with range_pop() on the same thread."""
    if _gmt_range_push is not None:
        _gmt_range_push(_label(label))


def range_pop():
    """Close this thread's innermost open range."""
    if _gmt_range_pop is not None:
        _gmt_range_pop()


class range(contextlib.ContextDecorator):  # noqa: A001 (named like torch.cuda.nvtx.range)
    """A range around a `with` block, or around every call of a decorated function.

    The range is closed however the block ends (return, exception). One object can be used
    several times and from several threads: it keeps no state but its label.
    """

    def __init__(self, label):
        self.label = _label(label)

    def __enter__(self):
        if _gmt_range_push is not None:
            _gmt_range_push(self.label)
        return self

    def __exit__(self, *exc):
        if _gmt_range_pop is not None:
            _gmt_range_pop()
        return False


# The PyTorch layer follows `import torch` in traced processes (gpumemtrace/_torch.py); the start-up
# hook installs it too, this covers programs run with python -S or a tracer loaded by injection.
if _tracer_lib() is not None:
    try:
        from gpumemtrace import _torch

        _torch.install()
    except Exception as _e:  # noqa: BLE001
        import sys as _sys

        _sys.stderr.write(f"gpumemtrace: the PyTorch layer is off: {_e}\n")
