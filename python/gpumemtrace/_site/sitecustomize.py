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
