"""Marks and ranges through the gpumemtrace Python module, on the CUDA runtime of
LD_LIBRARY_PATH (tests/simcuda in the suite). check_markers.py runs it under `gpumemtrace run`
(which makes the module importable) and compares the trace's marker lines; and without the tracer,
where the module must load and do nothing. Prints one JSON line: module path, enabled().
"""
import ctypes
import json
import sys

import gpumemtrace

cudart = ctypes.CDLL("libcudart.so.13")
held = []


def alloc(n):
    p = ctypes.c_void_p()
    rc = cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n))
    if rc != 0:
        sys.exit("cudaMalloc: %d" % rc)
    held.append(p)


@gpumemtrace.range("step")
def step(n):
    alloc(n)
    return n


def main():
    alloc(1 << 20)
    gpumemtrace.mark("py start")
    with gpumemtrace.range("load"):
        alloc(2 << 20)
    step(4096)
    step(8192)
    try:
        with gpumemtrace.range("fails"):
            raise ValueError("the range is closed all the same")
    except ValueError:
        pass
    with gpumemtrace.range("outer"):
        step(16384)
    gpumemtrace.range_push("manual")
    gpumemtrace.range_pop()
    gpumemtrace.mark("\u00fcn\u00efcode")
    gpumemtrace.mark(b"bytes label")
    assert step.__name__ == "step", "the decorator keeps the function's name"
    for p in held:
        cudart.cudaFree(p)
    print(json.dumps({"module": gpumemtrace.__file__, "enabled": gpumemtrace.enabled()}))


main()
