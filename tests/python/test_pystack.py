"""The GIL-free Python stack walker (src/capture/pystack.c) inside a real interpreter.

Run as: <python3.X> test_pystack.py <path of libpywalk.so> [--watch]. With --watch the code
watcher is subscribed first (3.12+: code objects are then looked up by address, each death
clearing its entry); every check is the same. The test library walks the calling
thread's frames with gmt_py_walk() (the GIL is released: ctypes.CDLL calls) and formats them;
every walk is compared, frame for frame, with traceback.extract_stack() taken on the same line
(file, line, name), with the frame objects' co_qualname, and with where each frame was entered
from C. Exit 0 = pass, 1 = fail.
"""
import ctypes
import os
import sys
import threading
import traceback

LIB = ctypes.CDLL(sys.argv[1])
VERSION = "%d.%d" % sys.version_info[:2]
FAILURES = []

_format = LIB.pywalk_format
_format.argtypes = [ctypes.c_char_p, ctypes.c_int]
_format.restype = ctypes.c_int
_LOCAL = threading.local()
LIB.pywalk_version.restype = ctypes.c_char_p
LIB.pywalk_bench.restype = ctypes.c_double
LIB.pywalk_bench.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
LIB.pywalk_next_codes.argtypes = [ctypes.POINTER(ctypes.c_int)] * 2

# Frames entered from C on 3.11+ (1) or called by the interpreter itself (0); 3.10: all 1.
# Frames not named here (threading's, the thread target) are not checked for entry.
ENTRY = {
    "<module>": 1,     # run by the interpreter's main from C
    "main": 0,
    "inner": 0,
    "method": 0,
    "key_func": 1,     # sorted(key=...) calls it from C
    "mapped": 1,       # map() calls it from C
    "gen_body": 1,     # resumed by next() from C
    "comp": 0,
    "<listcomp>": 0,   # 3.10/3.11 only; 3.12+ inlines comprehensions (PEP 709)
    "<lambda>": 0,
    "deep": 0,
    "leaf": 0,
    "snap": 0,
    "grüße": 0,
    "関数": 0,
    "𠀀": 0,
}


def fail(msg):
    FAILURES.append(msg)
    print("FAIL:", msg)


class Frame:
    def __init__(self, text):
        f = text.split("\t")
        self.file, self.line, self.name, self.qualname = f[0], int(f[1]), f[2], f[3]
        self.entry, self.code_id = int(f[4]), int(f[5])

    def __repr__(self):
        return "%s:%d %s [%s] entry=%d id=%d" % (self.file, self.line, self.name,
                                                  self.qualname, self.entry, self.code_id)


def _buffer():
    """One output buffer per thread: walks of several threads run at once (GIL released)."""
    buf = getattr(_LOCAL, "buf", None)
    if buf is None:
        buf = _LOCAL.buf = ctypes.create_string_buffer(1 << 18)
    return buf


def snap():
    """Walk from C, and take Python's own view, on one line (the same instruction's line)."""
    buf = _buffer()
    n, stack, me = _format(buf, len(buf)), traceback.extract_stack(), sys._getframe()
    return n, stack, me, buf


def same_text(ours, theirs):
    """Equal, or cut by the registry (at 255, 511 or 1023 bytes, on a character boundary)."""
    return ours == theirs or (theirs.startswith(ours) and len(ours.encode()) >= 252)


def check_frame(tag, i, g, e, f):
    where = "%s frame %d (%s)" % (tag, i, e.name)
    if not same_text(g.file, e.filename):
        fail("%s: file %r != %r" % (where, g.file, e.filename))
    if g.line != e.lineno:
        fail("%s: line %d != %d" % (where, g.line, e.lineno))
    if not same_text(g.name, e.name):
        fail("%s: name %r != %r" % (where, g.name, e.name))
    qual = getattr(f.f_code, "co_qualname", f.f_code.co_name)
    if not same_text(g.qualname, qual):
        fail("%s: qualname %r != %r" % (where, g.qualname, qual))
    want = ENTRY.get(f.f_code.co_name)
    if want is not None:
        want = 1 if VERSION == "3.10" else want
        if g.entry != want:
            fail("%s: entry %d, expected %d" % (where, g.entry, want))


def compare(tag, taken):
    n, stack, me, buf = taken
    if n < 0:
        fail("%s: gmt_py_walk returned %d" % (tag, n))
        return []
    got = [Frame(line) for line in buf.value.decode("utf-8").splitlines()]
    expected = list(reversed(stack))
    frames = []
    while me is not None:
        frames.append(me)
        me = me.f_back
    if not (len(got) == n == len(expected) == len(frames)):
        fail("%s: %d frames walked (%d formatted), traceback has %d, f_back chain %d"
             % (tag, n, len(got), len(expected), len(frames)))
        for g in got:
            print("   ours:", g)
        for e in expected:
            print("   traceback:", e.filename, e.lineno, e.name)
        return got
    for i, (g, e, f) in enumerate(zip(got, expected, frames)):
        check_frame(tag, i, g, e, f)
    return got


# --- the call shapes -------------------------------------------------------------------------

def leaf(tag):
    return compare(tag, snap())


def deep(n, tag):
    if n == 0:
        return leaf(tag)
    return deep(n - 1, tag)


lam = lambda y: deep(3, "nested")  # noqa: E731


def comp(x):
    return [lam(y) for y in [x]][0]


def gen_body(x):
    yield comp(x)


def mapped(x):
    return next(gen_body(x))


def key_func(x):
    list(map(mapped, [x]))
    return x


class Walker:
    def method(self, k):
        return sorted([k, k], key=key_func)


class Built:
    def __init__(self, tag):
        self.got = leaf(tag)


def construct():
    """3.13 specializes Built(...) to push __init__ over a cleanup trampoline frame, which is
    "incomplete" and must be skipped like tracebacks skip it. Its entry flag depends on whether
    the call was specialized yet, so __init__ is not in ENTRY."""
    for _ in range(8):
        Built("init")


NONASCII = """
def grüße(t):
    return 関数(t)

def 関数(t):
    return 𠀀(t)

def 𠀀(t):
    return leaf(t)
"""


def nonascii():
    ns = {"leaf": leaf}
    exec(compile(NONASCII, "/nonexistent/fichier_é_日本.py", "exec"), ns)
    ns["grüße"]("non-ascii")


def long_name():
    name = "n" * 300
    ns = {"leaf": leaf}
    exec("def %s(t):\n    return leaf(t)\n" % name, ns)
    got = ns[name]("long-name")
    if len(got) > 2 and len(got[2].name) != 255:
        fail("long name: not truncated to 255 bytes: %s" % got[2])


def in_thread():
    def thread_main():
        deep(2, "thread")

    t = threading.Thread(target=thread_main)
    t.start()
    t.join()


def concurrent(rounds=100, nthreads=8):
    """Threads walking at once, each round through fresh code objects they all meet together:
    first sights race in the registry."""
    src = "".join("def shared(go):\n    return go()\n\ndef own%d(go):\n    return shared(go)\n"
                  % i for i in range(nthreads))
    barrier = threading.Barrier(nthreads)

    def worker(i):
        for r in range(rounds):
            ns = {}
            exec(compile(src, "<round %d>" % r, "exec"), ns)
            barrier.wait()
            ns["own%d" % i](lambda: leaf("concurrent"))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


SUB_CODE = r"""
import ctypes, sys
lib = ctypes.CDLL(%(lib)r)
lib.pywalk_format.argtypes = [ctypes.c_char_p, ctypes.c_int]
lib.pywalk_format.restype = ctypes.c_int
buf = ctypes.create_string_buffer(1 << 16)
bad = 0
def walk():
    lib.pywalk_format(buf, len(buf))
    return buf.value.decode("utf-8", "replace")
for r in range(300):
    ns = {}
    exec(compile("def shared(go):\n    return go()\n", "<sub %%d>" %% r, "exec"), ns)
    text = ns["shared"](walk)
    files = [line.split("\t")[0] for line in text.splitlines()]
    if "<sub %%d>" %% r not in files:
        bad += 1
with open(%(out)r, "w") as f:
    f.write(str(bad))
"""


def subinterpreter():
    """3.12+ with the code watcher: a subinterpreter's code objects die without the watcher
    hearing of it (watchers are per interpreter), so its threads must not use the code cache:
    fresh code objects at reused addresses are still named right."""
    try:
        import _interpreters as si  # 3.13
        interp = si.create("legacy")
    except ImportError:
        try:
            import _xxsubinterpreters as si  # 3.12
            interp = si.create(isolated=False)
        except ImportError:
            return
    import tempfile
    with tempfile.NamedTemporaryFile("r", suffix=".txt") as out:
        si.run_string(interp, SUB_CODE % {"lib": sys.argv[1], "out": out.name})
        bad = out.read()
    si.destroy(interp)
    if bad != "0":
        fail("subinterpreter: %s of 300 walks named a dead code object" % bad)


def c_threads():
    r = LIB.pywalk_cthread()
    if r != -1:
        fail("C thread without a thread state: %d, expected -1" % r)
    r = LIB.pywalk_gilstate_thread()
    if r != 0:
        fail("C thread with a thread state and no frames: %d, expected 0" % r)


def registry():
    first, last = ctypes.c_int(), ctypes.c_int()
    n = LIB.pywalk_next_codes(ctypes.byref(first), ctypes.byref(last))
    if n <= 0 or first.value != 1 or last.value != n:  # consecutive: nothing abandoned
        fail("gmt_py_next_code: %d records, ids %d..%d" % (n, first.value, last.value))
    if LIB.pywalk_next_codes(ctypes.byref(first), ctypes.byref(last)) != 0:
        fail("gmt_py_next_code: records handed out twice")
    return n


def forked():
    """The child inherits the registry; its cursor restarts at id 1; walks still work."""
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        del FAILURES[:]  # the parent's, if any
        first, last = ctypes.c_int(), ctypes.c_int()
        n = LIB.pywalk_next_codes(ctypes.byref(first), ctypes.byref(last))
        if n <= 0 or first.value != 1:
            fail("child: gmt_py_next_code restarts at %d (%d records)" % (first.value, n))
        deep(1, "child")
        sys.stdout.flush()
        os._exit(1 if FAILURES else 0)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        fail("forked child failed (status %#x)" % status)


def bench():
    frames = ctypes.c_int()
    ns = LIB.pywalk_bench(100000, ctypes.byref(frames))
    return ns, frames.value


def bench_at(depth):
    if depth <= 1:
        return bench()
    return bench_at(depth - 1)


def main():
    version = LIB.pywalk_version()
    if version is None or version.decode() != VERSION:
        fail("gmt_py_version() = %r, expected %r" % (version, VERSION))
        return
    if "--watch" in sys.argv[2:]:
        watch = ctypes.PYFUNCTYPE(ctypes.c_int)(ctypes.cast(LIB.pywalk_watch, ctypes.c_void_p).value)
        r = watch()
        want = 0 if sys.version_info >= (3, 12) else -1
        if r != want:
            fail("gmt_py_watch_code() = %d on %s, expected %d" % (r, VERSION, want))
        if watch() != want:
            fail("a second gmt_py_watch_code() does not say the same")

    def inner():
        Walker().method("main")

    inner()
    construct()
    nonascii()
    long_name()
    in_thread()
    concurrent()
    if "--watch" in sys.argv[2:] and sys.version_info >= (3, 12):
        subinterpreter()
    c_threads()
    n = registry()
    forked()
    depth = len(traceback.extract_stack())
    ns, frames = bench_at(19 - depth)  # 20 frames in all
    print("python %s (%s)%s: %d code objects registered; gmt_py_walk at depth %d: %.0f ns"
          % (VERSION, sys.executable, " with the code watcher" if "--watch" in sys.argv else "",
             n, frames, ns))


main()
if FAILURES:
    print("%d failure(s)" % len(FAILURES))
    sys.exit(1)
print("ok")
