"""fork() while other threads register code objects: the child's registry stays usable.

Threads keep exec'ing fresh code and walking through it (first sights: registrations) while the
main thread forks. In each child, registrations the vanished threads had in flight must not
block anything: draining gmt_py_next_code() ends, ids only increase, and a walk through a new
code object gets an id. Run as: <python3.X> test_pyfork.py <path of libpywalk.so>.
"""
import ctypes
import os
import sys
import threading
import warnings

LIB = ctypes.CDLL(sys.argv[1])
LIB.pywalk_ids.argtypes = [ctypes.POINTER(ctypes.c_uint32), ctypes.c_int]
LIB.pywalk_next_codes.argtypes = [ctypes.POINTER(ctypes.c_int)] * 2
warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork() with threads running


def top_id():
    ids = (ctypes.c_uint32 * 4)()
    n = LIB.pywalk_ids(ids, 4)
    return ids[1] if n > 1 else 0


def churn(stop, k):
    r = 0
    while not stop.is_set() and r < 3000:  # well below the registry's 32767 ids
        ns = {"walk": top_id}
        exec(compile("def f():\n    return walk()\n", "<churn %d.%d>" % (k, r), "exec"), ns)
        ns["f"]()
        r += 1


def child():
    first, last = ctypes.c_int(), ctypes.c_int()
    n = LIB.pywalk_next_codes(ctypes.byref(first), ctypes.byref(last))
    if n <= 0:
        return 1  # no code object in the child's registry, or its ids out of order
    if first.value != 1:
        return 4  # the main thread's, id 1, is not the first
    ns = {"walk": top_id}
    exec(compile("def g():\n    return walk()\n", "<child>", "exec"), ns)
    if ns["g"]() == 0:
        return 2
    return 0 if last.value - first.value + 1 == n else 3  # 3: ids retired (fine, counted)


def main():
    # id 1, registered whole before any thread runs and any fork: a child's drain starts there
    # even when the first fork comes before a churning thread registered anything (seen under
    # ThreadSanitizer, whose threads start slowly), or with a thread's first registration in flight
    ns = {"walk": top_id}
    exec(compile("def h():\n    return walk()\n", "<main>", "exec"), ns)
    if ns["h"]() == 0:
        print("the main thread's walk got no code id")
        return 1
    stop = threading.Event()
    threads = [threading.Thread(target=churn, args=(stop, k)) for k in range(3)]
    for t in threads:
        t.start()
    results = []
    try:
        for _ in range(100):
            pid = os.fork()
            if pid == 0:
                os._exit(child())
            _, status = os.waitpid(pid, 0)
            results.append(os.waitstatus_to_exitcode(status))
    finally:
        stop.set()
        for t in threads:
            t.join()
    bad = [r for r in results if r not in (0, 3)]
    print("100 forks: %d children saw retired ids, %d failed %s"
          % (results.count(3), len(bad), sorted(set(bad))))
    return 1 if bad else 0


sys.exit(main())
