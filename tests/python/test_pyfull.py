"""The code registry running full: later code objects get id 0, frames are still walked, the
ones registered before keep their ids, and one warning line says so.

Run as: <python3.X> test_pyfull.py <path of libpywalk.so>. Exit 0 = pass, 1 = fail.
"""
import ctypes
import os
import sys
import tempfile

LIB = ctypes.CDLL(sys.argv[1])
LIB.pywalk_ids.argtypes = [ctypes.POINTER(ctypes.c_uint32), ctypes.c_int]
IDS = (ctypes.c_uint32 * 8)()
N = 33000  # more than the registry's 32767 ids


def top_ids():
    n = LIB.pywalk_ids(IDS, 8)
    return list(IDS[:n])


def main():
    ns = {"walk": top_ids}
    src = "".join("def f%d():\n    return walk()\n" % i for i in range(N))
    exec(compile(src, "<many>", "exec"), ns)
    before = top_ids()  # top_ids, main, <module>: registered while there is room

    err = tempfile.TemporaryFile()
    saved = os.dup(2)
    os.dup2(err.fileno(), 2)
    walks = []  # each: top_ids, f<i>, main, <module>
    try:
        for i in range(N):
            walks.append(ns["f%d" % i]())
    finally:
        os.dup2(saved, 2)
    err.seek(0)
    said = err.read().decode()

    failures = []
    zero = [i for i, w in enumerate(walks) if len(w) > 1 and w[1] == 0]
    if not zero or zero[0] == 0 or zero != list(range(zero[0], N)):
        failures.append("f<i> without a code id: %d, from %s" % (len(zero), zero[:1]))
    if any(len(w) != len(before) + 1 for w in walks):
        failures.append("walk depths %s" % sorted({len(w) for w in walks}))
    if any(w[:1] + w[2:] != before for w in walks):
        failures.append("known code objects lost their ids")
    if top_ids() != before:
        failures.append("after the registry filled: %s != %s" % (top_ids(), before))
    if said.count("\n") != 1 or "registry full" not in said:
        failures.append("expected one warning, stderr: %r" % said)
    print("%d walks, %d without a code id: %s" % (len(walks), len(zero), said.strip()))
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


sys.exit(main())
