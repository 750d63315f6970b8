#!/usr/bin/env python3
"""Python call-stack victim whose allocation is made in a function that C code calls back:
<module> -> main() -> map() (C) -> alloc_in_callback() -> cudaMalloc through ctypes. The Python
frames are two groups, each run by its own call of the interpreter's eval function, with the
interpreter's C code (map's iterator, list's constructor) between them. Prints one JSON line like
victim.py: per site, the Python frames innermost first.
"""
import ctypes
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from victim import here, runtime  # noqa: E402 (the same loading of the runtime, the same lines)

FILE = os.path.abspath(__file__)


def frame(function, line):
    return {"function": function, "file": FILE, "line": line}


RT = runtime()


def alloc_in_callback(n):
    p = ctypes.c_void_p(); rc = RT.cudaMalloc(ctypes.byref(p), n); line = here()
    return n, rc, frame("alloc_in_callback", line)


def main():
    done = list(map(alloc_in_callback, [3 << 20])); line = here()
    return [(n, rc, [f, frame("main", line)]) for n, rc, f in done]


def code_watcher():
    """What the tracer's gmt_py_watch says now (called with the GIL held): 0 when the start-up
    hook subscribed the code watcher (3.12+), -1 when not; None untraced."""
    fn = getattr(ctypes.CDLL(None), "gmt_py_watch", None)
    if fn is None:
        return None
    return ctypes.PYFUNCTYPE(ctypes.c_int)(ctypes.cast(fn, ctypes.c_void_p).value)()


if __name__ == "__main__":
    sites = main(); line = here()
    print(json.dumps({"pid": os.getpid(), "watch": code_watcher(), "sites": [
        {"bytes": n, "ok": rc == 0, "frames": frames + [frame("<module>", line)]}
        for n, rc, frames in sites]}))
