#!/usr/bin/env python3
"""Python call-stack victim: cudaMalloc of the (simulated) runtime through ctypes, from known
functions and lines: <module> -> main() -> build_model() -> alloc_weights() / alloc_activations().

Prints one JSON line like the C victims: per site, the Python frames innermost first (function,
file, line), as `gpumemtrace report` must name them. Each call shares its line with the line it
records (here()), and carries a SITE: marker for make_trace.py, which compiles this file to get
real line tables without running it.
"""
import ctypes
import json
import os
import sys

FILE = os.path.abspath(__file__)


def here():
    """The caller's current line."""
    return sys._getframe(1).f_lineno


def runtime():
    # Loaded globally, then looked up from the global scope, as a program linked with it would:
    # an LD_PRELOADed cudaMalloc (the tracer's interposition) comes first there.
    ctypes.CDLL("libcudart.so.13", mode=ctypes.RTLD_GLOBAL)
    rt = ctypes.CDLL(None)
    rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    rt.cudaMalloc.restype = ctypes.c_int
    return rt


def frame(function, line):
    return {"function": function, "file": FILE, "line": line}


def alloc_weights(rt, n):
    p = ctypes.c_void_p(); rc = rt.cudaMalloc(ctypes.byref(p), n); line = here()  # SITE:py-weights
    return rc, frame("alloc_weights", line)


def alloc_activations(rt, n):
    p = ctypes.c_void_p(); rc = rt.cudaMalloc(ctypes.byref(p), n); line = here()  # SITE:py-activations
    return rc, frame("alloc_activations", line)


def build_model(rt):
    sites = []
    rc, f = alloc_weights(rt, 1 << 20); sites.append((1 << 20, rc, [f, frame("build_model", here())]))  # SITE:py-build-weights
    rc, f = alloc_activations(rt, 2 << 20); sites.append((2 << 20, rc, [f, frame("build_model", here())]))  # SITE:py-build-activations
    return sites


def main():
    rt = runtime()
    sites = build_model(rt); line = here()  # SITE:py-main
    return [(n, rc, frames + [frame("main", line)]) for n, rc, frames in sites]


if __name__ == "__main__":
    done = main(); line = here()  # SITE:py-module
    print(json.dumps({"pid": os.getpid(), "sites": [
        {"bytes": n, "ok": rc == 0, "frames": frames + [frame("<module>", line)]}
        for n, rc, frames in done]}))
