"""gmt_pyline() (src/analysis/pyline.c) against the interpreter's own line numbers.

Run as: <python3.X> test_pyline.py <path of libpywalk.so>. For every code object of a crafted
source (long line gaps, negative deltas, artificial instructions, long one-line bytecode,
async, match) and of a few stdlib modules, and for every instruction offset, the line from our
decoder must equal CPython's PyCode_Addr2Line() and what co_lines() says. Also goes through the
hex form a trace carries. Exit 0 = pass, 1 = fail.
"""
import ctypes
import sys
import types

LIB = ctypes.CDLL(sys.argv[1])
VERSION = ("%d.%d" % sys.version_info[:2]).encode()

pyline = LIB.pywalk_pyline
pyline.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int,
                   ctypes.c_uint32]
pyline.restype = ctypes.c_int
pyline_hex = LIB.pywalk_pyline_hex
pyline_hex.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint32]
pyline_hex.restype = ctypes.c_int
addr2line = ctypes.pythonapi.PyCode_Addr2Line
addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
addr2line.restype = ctypes.c_int

CALLS = ",".join("g(%d)" % i for i in range(400))
SOURCE = '''
import os
def f(a, b):
    x = (a +
         b)
    for i in range(3):
        try:
            x += i
        except ValueError as e:
            raise RuntimeError() from e
        finally:
            x -= 1
    with open(os.devnull) as fh:
        pass
    return [y * 2 for y in range(x)
            if y]
''' + "\n" * 300 + '''
def far(a):
    z = 1''' + "\n" * 200 + '''
    return z + a

def big():
    return [''' + CALLS + ''']

async def co(x):
    async with x as y:
        await y
    async for q in x:
        yield q

def matcher(p):
    match p:
        case [1, 2, *rest]:
            return rest
        case {"k": v}:
            return v
        case _:
            return None

class K:
    @staticmethod
    def s():
        return lambda t: (t,
                          t)

def g(n):
    while n:
        n -= 1
    else:
        return (
            n
        )
'''


def all_codes(co):
    yield co
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            yield from all_codes(c)


def lines_from_co_lines(co):
    table = {}
    for start, end, line in co.co_lines():
        for off in range(start, end, 2):
            table[off] = -1 if line is None else line
    return table


def check_code(co, failures, use_hex):
    lt = co.co_linetable
    size = len(co.co_code)
    from_lines = lines_from_co_lines(co)
    for off in range(0, size, 2):
        want = addr2line(co, off)
        got = pyline(VERSION, lt, len(lt), co.co_firstlineno, off)
        if got != want or from_lines.get(off, -1) != want:
            failures.append("%s:%d %s offset %d: ours %d, PyCode_Addr2Line %d, co_lines %s"
                            % (co.co_filename, co.co_firstlineno, co.co_name, off, got,
                               want, from_lines.get(off)))
            return 1
        if use_hex:
            got = pyline_hex(VERSION, lt.hex().encode(), co.co_firstlineno, off)
            if got != want:
                failures.append("%s offset %d: hex path %d != %d" % (co.co_name, off, got, want))
                return 1
    # past the last instruction: no line
    if pyline(VERSION, lt, len(lt), co.co_firstlineno, size + 64) != -1:
        failures.append("%s: an offset past the code has a line" % co.co_name)
    return size // 2


def main():
    failures = []
    roots = [compile(SOURCE, "<crafted>", "exec")]
    import argparse, json.decoder, traceback, dataclasses, typing  # noqa: E401
    for mod in (argparse, json.decoder, traceback, dataclasses, typing):
        with open(mod.__file__, encoding="utf-8") as fh:
            roots.append(compile(fh.read(), mod.__file__, "exec"))
    codes = instructions = 0
    for root in roots:
        for i, co in enumerate(all_codes(root)):
            instructions += check_code(co, failures, use_hex=(i < 5))
            codes += 1
    if pyline(b"3.9", b"\x80", 1, 1, 0) != -1 or pyline(b"3.14", b"\x80", 1, 1, 0) != -1:
        failures.append("an unknown version maps to a line")
    if pyline_hex(VERSION, b"8g", 1, 0) != -1000 or pyline_hex(VERSION, b"801", 1, 0) != -1000:
        failures.append("bad hex accepted")
    for f in failures[:20]:
        print("FAIL:", f)
    print("python %s: %d code objects, %d instruction offsets checked"
          % (VERSION.decode(), codes, instructions))
    return 1 if failures else 0


sys.exit(main())
