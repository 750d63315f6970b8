#!/usr/bin/env python3
"""Write gpumemtrace traces whose stacks are real return addresses of real binaries.

The offline half of call stacks is tested without the tracer: the addresses a tracer would
capture are taken from the victims' own code (objdump: the instruction after each call), their
modules from the ELF headers (readelf: PT_LOAD segments, the GNU build-id), their Python frames
from a real interpreter compiling victim.py (co_linetable, co_lines()). The expected names and
lines come from the sources' `SITE:<name>` markers, never from the analyzer.

    make_trace.py --victim BUILD/tests/stacks/victim_stacks --libvictim ... OUTDIR

writes OUTDIR/*.jsonl (see TRACES) and OUTDIR/expected.json (what test_symbolize.py checks).
Importable: test_symbolize.py uses the same functions.
"""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# Load addresses of the traced process, as dl_iterate_phdr would give them.
BASE_EXE = 0x555555554000
BASE_LIB = 0x7F0000000000
BASE_PY = 0x7F1000000000
BASE_CXX = 0x7F2000000000
BASE_CUDART = 0x7F3000000000

# What the report prints for a stack of a thread with Python but no Python frames.
GMT_PYSTATE_LABEL = "(PyTorch autograd / worker thread: no Python frames)"


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def build_id(path):
    m = re.search(r"Build ID: ([0-9a-f]+)", run(["readelf", "-n", path]))
    return m.group(1) if m else ""


def segments(path):
    """[p_vaddr, p_memsz] of each PT_LOAD."""
    segs = []
    for line in run(["readelf", "-lW", path]).splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            segs.append([int(f[2], 16), int(f[5], 16)])
    return segs


def module(path, base, bid=None):
    return {"path": path, "base": "0x%x" % base, "build_id": build_id(path) if bid is None else bid,
            "segments": segments(path)}


def calls(path):
    """{function: [(target, return address), ...]} from the disassembly, in address order."""
    out = {}
    func = None
    pending = None  # the call whose return address is the next instruction
    for line in run(["objdump", "-d", "--no-show-raw-insn", path]).splitlines():
        m = re.match(r"^([0-9a-f]+) <(.+)>:$", line)
        if m:
            func, pending = m.group(2), None
            out.setdefault(func, [])
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(\S+)\s*(.*)$", line)
        if not m or func is None:
            continue
        addr = int(m.group(1), 16)
        if pending is not None:
            out[func].append((pending, addr))
            pending = None
        if m.group(2).startswith("call"):
            t = re.search(r"<([^>]+)>", m.group(3))
            pending = t.group(1) if t else m.group(3)
    return out


def return_after(table, func, target, nth=0):
    """The return address of the nth call from func to a target whose name starts with target."""
    found = [ret for tgt, ret in table.get(func, []) if tgt.split("@")[0] == target or
             tgt.split("@")[0].startswith(target + "+")]
    if len(found) <= nth:
        raise SystemExit("make_trace: no call %s -> %s (%d found)" % (func, target, len(found)))
    return found[nth]


def markers(path):
    """{name: line} of the `SITE:name` markers of a source file."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = re.search(r"SITE:([\w-]+)", line)
            if m:
                out[m.group(1)] = n
    return out


def python_codes(path):
    """{qualname: code object} of every function in a Python source, and the module's."""
    with open(path, encoding="utf-8") as f:
        top = compile(f.read(), path, "exec")
    out = {"<module>": top}
    todo = [top]
    while todo:
        co = todo.pop()
        for c in co.co_consts:
            if hasattr(c, "co_code"):
                out[getattr(c, "co_qualname", c.co_name)] = c
                todo.append(c)
    return out


def offset_at_line(code, line):
    """The byte offset of the first instruction of code on line (co_lines(), 3.10+)."""
    for start, end, ln in code.co_lines():
        if ln == line and end > start:
            return start
    raise SystemExit("make_trace: %s has no instruction on line %d" % (code.co_name, line))


class Trace:
    """A trace file being written: header, then lines in order, events numbered by seq."""

    def __init__(self, argv, python=None):
        self.lines = [{"type": "header", "format": "gpumemtrace", "version": 1, "tracer": "0.1.0",
                       "pid": 4242, "ppid": 1, "host": "test", "argv": argv,
                       "start_ts": 1000000000, "coverage": "runtime API only",
                       "capture": ["interpose"],
                       "stacks": {"native": True, "python": python, "depth": 64}}]
        self.seq = 0
        self.ptr = 0x7F9000000000

    def add(self, rec):
        self.lines.append(rec)

    def modules(self, mods):
        self.add({"type": "modules", "seq": self.seq, "modules": mods})

    def stack(self, sid, frames, py=None, pystate=None):
        rec = {"type": "stack", "id": sid, "frames": ["0x%x" % a for a in frames]}
        if py is not None:
            rec["py"] = py
        if pystate:
            rec["pystate"] = pystate
        self.add(rec)

    def event(self, op, stack, size=0, ptr=None, result=0):
        self.seq += 1
        if ptr is None:
            self.ptr += 0x1000000
            ptr = self.ptr
        rec = {"type": "event", "seq": self.seq, "ts": 1000000000 + 1000 * self.seq, "tid": 4242,
               "op": op, "api": "cudaMalloc" if op == "alloc" else "cudaFree", "kind": "device",
               "device": 0, "stream": "0x0", "ptr": "0x%x" % (ptr if result == 0 else 0),
               "result": result, "stack": stack}
        if op == "alloc":
            rec["size"] = size
        if result:
            rec.update({"free_bytes": 1 << 30, "total_bytes": 1 << 30})
        self.add(rec)
        return ptr

    def write(self, path, trailer=True):
        if trailer:
            self.add({"type": "trailer", "ts": 1000000000 + 1000 * (self.seq + 1),
                      "events": self.seq, "dropped": 0, "reason": "exit"})
        with open(path, "w", encoding="utf-8") as f:
            for rec in self.lines:
                f.write(json.dumps(rec, separators=(",", ":")) + "\n")


def frame(function, file, line, inlined=False):
    return {"function": function, "file": os.path.realpath(file), "line": line, "inlined": inlined}


class Binaries:
    """The victims' addresses and the lines the sources say they are on."""

    def __init__(self, a):
        self.a = a
        for k in ("victim", "libvictim", "libother", "fakepython", "libcxx"):
            if getattr(a, k):
                setattr(a, k, os.path.abspath(getattr(a, k)))
        self.exe, self.lib, self.other, self.py = a.victim, a.libvictim, a.libother, a.fakepython
        self.t_exe, self.t_lib = calls(self.exe), calls(self.lib)
        self.t_other, self.t_py = calls(self.other), calls(self.py)
        self.src = {n: os.path.join(HERE, n) for n in
                    ("victim_stacks.c", "libvictim.c", "libother.c", "fakepython.c",
                     "libvictimxx.cpp", "victim.py")}
        self.m = {}
        for n, p in self.src.items():
            self.m.update({k: (p, v) for k, v in markers(p).items()})

    def at(self, marker, function, inlined=False):
        path, line = self.m[marker]
        return frame(function, path, line, inlined)

    def exe_frames(self, which):
        """Return addresses of b -> lib, a -> b, main -> a, and what they are."""
        b_ret = BASE_EXE + return_after(self.t_exe, "b", which)
        a_ret = BASE_EXE + return_after(self.t_exe, "a", "b")
        main_ret = BASE_EXE + return_after(self.t_exe, "main", "a")
        return [b_ret, a_ret, main_ret]

    def exe_expect(self, which_marker):
        return [self.at(which_marker, "b"), self.at("a-b", "a"), self.at("main-a", "main")]


def trace_native(b, outdir, expect, with_cxx):
    """native.jsonl: four sites of libvictim (one inlined, one failing), the same site through two
    stacks, a frame of a CUDA library that is not on this machine, a pystate "empty" stack."""
    t = Trace(["victim_stacks"])
    cudart = {"path": "/nonexistent/gmt-test/libcudart.so.13", "base": "0x%x" % BASE_CUDART,
              "build_id": "ab" * 20, "segments": [[0, 0x100000]]}
    t.modules([module(b.exe, BASE_EXE), module(b.lib, BASE_LIB), cudart])
    lib = lambda fn: BASE_LIB + return_after(b.t_lib, fn, "cudaMalloc")
    sites = [("lib_alloc_weights", "b-weights", "weights", 1 << 20),
             ("lib_alloc_grads", "b-grads", "grads", 2 << 20),
             ("lib_alloc_inlined", "b-inlined", "inlined", 3 << 20)]
    exp = {"leak_sites": [], "failed_sites": [], "stacks": {}}
    sid = 0
    for fn, bmark, smark, size in sites:
        sid += 1
        frames = [lib(fn)] + b.exe_frames(fn)
        if fn == "lib_alloc_weights":
            frames = [BASE_CUDART + 0x1234] + frames  # CUPTI: runtime frames come first
        t.stack(sid, frames)
        t.event("alloc", sid, size)
        if fn == "lib_alloc_inlined":
            chain = [b.at("inlined", "pick_and_alloc", inlined=True),
                     b.at("inline-call", "lib_alloc_inlined")]
        else:
            chain = [b.at(smark, fn)]
        chain += b.exe_expect(bmark)
        exp["stacks"][str(sid)] = chain
        exp["leak_sites"].append({"site": chain[0], "bytes": size, "stacks": [sid]})
    # The weights site again through a stack without the runtime frame: one site, two stacks.
    sid += 1
    t.stack(sid, [lib("lib_alloc_weights")] + b.exe_frames("lib_alloc_weights"))
    t.event("alloc", sid, 4 << 20)
    exp["stacks"][str(sid)] = exp["stacks"]["1"]
    exp["leak_sites"][0]["bytes"] += 4 << 20
    exp["leak_sites"][0]["stacks"] = [sid, 1]
    # Freed: at the peak, not a leak.
    ptr = t.event("alloc", sid, 8 << 20)
    # A failed allocation at the huge site.
    sid += 1
    t.stack(sid, [lib("lib_alloc_huge")] + b.exe_frames("lib_alloc_huge"))
    t.event("alloc", sid, 1 << 50, result=2)
    exp["stacks"][str(sid)] = [b.at("huge", "lib_alloc_huge")] + b.exe_expect("b-huge")
    exp["failed_sites"].append({"site": exp["stacks"][str(sid)][0], "stacks": [sid]})
    t.event("free", sid, ptr=ptr)
    # A thread with Python but no Python frames (autograd): its site is a(), labelled.
    sid += 1
    t.stack(sid, b.exe_frames("lib_alloc_grads")[1:], pystate="empty")
    t.event("alloc", sid, 512 << 10)
    exp["stacks"][str(sid)] = b.exe_expect("b-grads")[1:]
    exp["leak_sites"].append({"site": exp["stacks"][str(sid)][0], "bytes": 512 << 10,
                              "stacks": [sid], "pystate": "empty"})
    t.write(os.path.join(outdir, "native.jsonl"))
    expect["native"] = exp

    if with_cxx:
        t = Trace(["victim_cxx"])
        tcxx = calls(b.a.libcxx)
        grab = [f for f in tcxx if f.startswith("_ZN6victim4Pool4grab") and "@" not in f][0]
        t.modules([module(b.a.libcxx, BASE_CXX)])
        t.stack(1, [BASE_CXX + return_after(tcxx, grab, "cudaMalloc"),
                    BASE_CXX + return_after(tcxx, "cxx_alloc", grab)])
        t.event("alloc", 1, 1 << 20)
        t.write(os.path.join(outdir, "cxx.jsonl"))
        expect["cxx"] = {"stacks": {"1": [
            b.at("cxx", "victim::Pool::grab(unsigned long, int*)"),
            b.at("cxx-call", "cxx_alloc")]}}


def trace_mismatch(b, outdir, expect):
    """mismatch.jsonl: libvictim with another build-id, the executable where it is not: every
    frame stays, as module+offset."""
    t = Trace(["victim_stacks"])
    gone = "/nonexistent/gmt-test/victim_stacks"
    exe = module(b.exe, BASE_EXE)
    exe["path"] = gone
    t.modules([exe, module(b.lib, BASE_LIB, bid="00" * 20)])
    frames = [BASE_LIB + return_after(b.t_lib, "lib_alloc_weights", "cudaMalloc")] + \
        b.exe_frames("lib_alloc_weights")
    t.stack(1, frames)
    t.event("alloc", 1, 1 << 20)
    t.write(os.path.join(outdir, "mismatch.jsonl"))
    expect["mismatch"] = {"stacks": {"1": [
        {"module": b.lib, "offset": "0x%x" % (frames[0] - BASE_LIB),
         "status": "build_id_mismatch"}] + [
        {"module": gone, "offset": "0x%x" % (a - BASE_EXE), "status": "file_missing"}
        for a in frames[1:]]}}


def trace_dlopen(b, outdir, expect):
    """dlopen.jsonl: libvictim loaded, used, unloaded; libvictim_other loaded at the same base.
    Each stack resolves in the module list of its own time."""
    t = Trace(["victim_dlopen"])
    exe = module(b.exe, BASE_EXE)
    t.modules([exe, module(b.lib, BASE_LIB)])
    t.stack(1, [BASE_LIB + return_after(b.t_lib, "lib_alloc_weights", "cudaMalloc")] +
            b.exe_frames("lib_alloc_weights"))
    t.event("alloc", 1, 1 << 20)
    t.modules([exe])
    t.modules([exe, module(b.other, BASE_LIB)])
    t.stack(2, [BASE_LIB + return_after(b.t_other, "other_alloc", "cudaMalloc")] +
            b.exe_frames("lib_alloc_weights"))
    t.event("alloc", 2, 2 << 20)
    t.write(os.path.join(outdir, "dlopen.jsonl"))
    expect["dlopen"] = {"stacks": {
        "1": [b.at("weights", "lib_alloc_weights")] + b.exe_expect("b-weights"),
        "2": [b.at("other", "other_alloc")] + b.exe_expect("b-weights")}}


def trace_python(b, outdir, expect):
    """python.jsonl: Python frames of victim.py (line tables from this interpreter) spliced into a
    native stack at the fake interpreter's eval frames; then the same with the interpreter's
    symbols unusable (another build-id): the Python frames go to the outermost end."""
    version = "%d.%d" % sys.version_info[:2]
    t = Trace(["python3", "victim.py"], python=version)
    codes = python_codes(b.src["victim.py"])
    ids = {}
    for i, name in enumerate(["alloc_weights", "build_model", "main", "<module>"], 1):
        co = codes[name]
        ids[name] = i
        t.add({"type": "pycode", "id": i, "file": b.src["victim.py"], "name": co.co_name,
               "qualname": getattr(co, "co_qualname", co.co_name),
               "firstlineno": co.co_firstlineno, "python": version,
               "linetable": co.co_linetable.hex()})
    py = []
    for name, mark, entry in [("alloc_weights", "py-weights", 0),
                              ("build_model", "py-build-weights", 1),
                              ("main", "py-main", 0), ("<module>", "py-module", 1)]:
        py.append([ids[name], offset_at_line(codes[name], b.m[mark][1]), entry])
    native = [BASE_LIB + return_after(b.t_lib, "lib_alloc_weights", "cudaMalloc"),
              BASE_PY + calls_any(b.t_py, "_PyEval_EvalFrameDefault"),
              BASE_PY + return_after(b.t_py, "PyObject_Call", "_PyEval_EvalFrameDefault"),
              BASE_PY + calls_any(b.t_py, "_PyEval_EvalFrameDefault"),
              BASE_EXE + return_after(b.t_exe, "main", "a")]
    mods = [module(b.exe, BASE_EXE), module(b.lib, BASE_LIB), module(b.py, BASE_PY)]
    t.modules(mods)
    t.stack(1, native, py=py)
    t.event("alloc", 1, 1 << 20)
    pyexp = [b.at("py-weights", "alloc_weights"), b.at("py-build-weights", "build_model"),
             b.at("py-main", "main"), b.at("py-module", "<module>")]
    libf = b.at("weights", "lib_alloc_weights")
    mainf = b.at("main-a", "main")
    # The interpreter without usable symbols: no eval frame to splice at.
    nosym = [dict(m) for m in mods]
    nosym[2]["build_id"] = "11" * 20
    t.modules(nosym)
    t.stack(2, native, py=py)
    t.event("alloc", 2, 2 << 20)
    # A frame naming a code no pycode line defines (the interpreter readable again).
    t.modules(mods)
    t.stack(3, native[:2] + native[-1:], py=[[999, 0, 1]])
    t.event("alloc", 3, 3 << 20)
    t.write(os.path.join(outdir, "python.jsonl"))
    expect["python"] = {"stacks": {
        "1": [libf] + pyexp + [mainf],
        "2": [libf, mainf] + pyexp,
        "3": [libf, {"function": "<unknown Python code 999>", "file": None, "line": None},
              mainf]},
        "placement": {"1": "spliced", "2": "outermost", "3": "spliced"}}


def calls_any(table, func):
    """The return address of the first call made inside func (whatever it calls)."""
    if not table.get(func):
        raise SystemExit("make_trace: %s makes no call" % func)
    return table[func][0][1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--victim", required=True)
    ap.add_argument("--libvictim", required=True)
    ap.add_argument("--libother", required=True)
    ap.add_argument("--fakepython", required=True)
    ap.add_argument("--libcxx")
    ap.add_argument("outdir")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    b = Binaries(a)
    expect = {}
    trace_native(b, a.outdir, expect, bool(a.libcxx))
    trace_mismatch(b, a.outdir, expect)
    trace_dlopen(b, a.outdir, expect)
    trace_python(b, a.outdir, expect)
    with open(os.path.join(a.outdir, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expect, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
