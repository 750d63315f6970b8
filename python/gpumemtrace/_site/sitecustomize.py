"""gpumemtrace's start-up hook for traced Python processes (on PYTHONPATH under the tracer only).

It watches for `import torch` to attach the PyTorch layer (gpumemtrace._torch), then hands over to
the sitecustomize this one shadows, if any (Debian's, a virtual environment's), so that nothing a
program relied on is lost. Never raises: a failure here is one line on stderr.
"""


def _gpumemtrace_start():
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    try:
        pkg_parent = os.path.dirname(os.path.dirname(here))
        if pkg_parent not in sys.path:
            sys.path.append(pkg_parent)
        from gpumemtrace import _torch
        _torch.install()
    except Exception as e:  # noqa: BLE001 (a start-up hook must not stop the program)
        sys.stderr.write(f"gpumemtrace: the PyTorch layer is off: {type(e).__name__}: {e}\n")
    # Python 3.12+: a code watcher, so that the tracer's Python walk looks code objects up by
    # address (told of each one's death) rather than hashing their contents at every sight.
    # PYFUNCTYPE: called with the GIL held, as PyCode_AddWatcher needs.
    try:
        import ctypes
        import gpumemtrace
        lib = gpumemtrace._tracer_lib()
        fn = getattr(lib, "gmt_py_watch", None) if lib is not None else None
        if fn is not None:
            ctypes.PYFUNCTYPE(ctypes.c_int)(ctypes.cast(fn, ctypes.c_void_p).value)()
    except Exception:  # noqa: BLE001 (only a cost: the walk hashes contents without it)
        pass
    # the sitecustomize this one shadows
    try:
        import importlib.machinery
        import importlib.util
        rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
        if spec is not None and spec.loader is not None:
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
    except Exception as e:  # noqa: BLE001
        sys.stderr.write(f"gpumemtrace: the program's own sitecustomize failed: {e}\n")


_gpumemtrace_start()
del _gpumemtrace_start
