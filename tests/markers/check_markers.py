#!/usr/bin/env python3
"""Markers suite: the marker lines a traced program writes (docs/trace-format.md, "marker").

    check_markers.py --build BUILD --source SRC c-traced|c-untraced|py-traced|py-untraced|
                                                c-inject|py-inject

c-*: tests/markers/marker_program (include/gpumemtrace.h, weak symbols) with LD_PRELOAD of the
tracer, or alone. py-*: py_markers.py under `gpumemtrace run` (the module found through the
PYTHONPATH it sets), or with only python/ on PYTHONPATH and no tracer. *-inject: with
CUDA_INJECTION64_PATH alone (the driver loads the tracer RTLD_LOCAL at cuInit). On tests/simcuda.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


# (label, range, depth, thread): thread "main" or "worker"; range None for a plain mark. A pop
# line names no label (the tracer keeps only each thread's depth): the reader pairs it with the
# push of its thread and depth, so these tables give the push's label and popless() blanks it.
LONG = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab\u00e9"
C_EXPECTED = (
    [("start", None, None, "main"),
     ("epoch 1", "push", 1, "main"), ("forward", "push", 2, "main"),
     ("forward", "pop", 2, "main"), ("epoch 1", "pop", 1, "main"), ("", "pop", 0, "main")]
    + [("level %d" % i, "push", i, "main") for i in range(1, 41)]
    + [("level %d" % i if i <= 32 else "", "pop", i, "main") for i in range(40, 0, -1)]
    + [(LONG, "push", 1, "main"), (LONG, "pop", 1, "main"),
       ("main open", "push", 1, "main"), ("worker", "push", 1, "worker"),
       ("worker", "pop", 1, "worker"), ("main open", "pop", 1, "main"),
       ("end", None, None, "main")])

PY_EXPECTED = [
    ("py start", None, None), ("load", "push", 1), ("load", "pop", 1),
    ("step", "push", 1), ("step", "pop", 1), ("step", "push", 1), ("step", "pop", 1),
    ("fails", "push", 1), ("fails", "pop", 1),
    ("outer", "push", 1), ("step", "push", 2), ("step", "pop", 2), ("outer", "pop", 1),
    ("manual", "push", 1), ("manual", "pop", 1),
    ("\u00fcn\u00efcode", None, None), ("bytes label", None, None)]


def popless(expected):
    """The expected marker lines as written: pops carry label ""."""
    return [(("",) + e[1:]) if e[1] == "pop" else e for e in expected]


def load(outdir):
    paths = glob.glob(os.path.join(outdir, "*.jsonl"))
    check(len(paths) == 1, "one trace file written (%d)" % len(paths))
    if len(paths) != 1:
        return []
    with open(paths[0], "rb") as f:
        recs = [json.loads(line) for line in f.read().decode("utf-8").splitlines()]
    check(recs and recs[-1]["type"] == "trailer" and recs[-1]["dropped"] == 0,
          "the trace ends with a trailer, nothing dropped")
    return recs


def check_lines(markers):
    for m in markers:
        keys = set(m) - {"type", "seq", "ts", "tid", "label"}
        if m.get("range") is None:
            check(not keys, "a plain mark has no range/depth key: %s" % m)
        else:
            check(keys == {"range", "depth"} and isinstance(m["depth"], int),
                  "a range marker has range and an integer depth: %s" % m)


def env_sim(build):
    env = dict(os.environ)
    env.update({"LD_LIBRARY_PATH": os.path.join(build, "tests", "simcuda"),
                "SIMCUDA_MEM_BYTES": "1G", "SIMCUDA_DEVICES": "1",
                "GPUMEMTRACE_COMPRESS": "none"})  # the test reads the tracer's lines
    env.pop("LD_PRELOAD", None)
    env.pop("PYTHONPATH", None)
    return env


def c_traced(build, src):
    outdir = tempfile.mkdtemp(prefix="gmt-markers-")
    env = env_sim(build)
    env.update({"LD_PRELOAD": os.path.join(build, "src", "libgpumemtrace.so"),
                "GPUMEMTRACE_OUTPUT_DIR": outdir})
    p = subprocess.run([os.path.join(build, "tests", "markers", "marker_program")], env=env,
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, "the program exits 0 under the tracer (%d: %s)" % (p.returncode, p.stderr))
    check(p.stdout.strip() == "tracer: present", "the weak symbols resolve under the tracer")
    recs = load(outdir)
    markers = sorted((r for r in recs if r["type"] == "marker"), key=lambda r: r["seq"])
    check_lines(markers)
    tids = {}
    main_tid = markers[0]["tid"] if markers else None
    got = []
    for m in markers:
        who = "main" if m["tid"] == main_tid else "worker"
        tids.setdefault(who, m["tid"])
        got.append((m["label"], m.get("range"), m.get("depth"), who))
    check(len(tids) == 2, "the worker's range is on its own thread id")
    check(len(got) == len(C_EXPECTED), "%d marker lines (expected %d)" % (len(got), len(C_EXPECTED)))
    for i, (g, e) in enumerate(zip(got, popless(C_EXPECTED))):
        check(g == e, "marker %d by seq: %r == %r" % (i, g, e))
    # markers and events share one order: B's allocation is inside "epoch 1", before "forward"
    allocs = sorted((r for r in recs if r["type"] == "event" and r["op"] == "alloc"),
                    key=lambda r: r["seq"])
    seq = {(m["label"], m.get("range")): m["seq"] for m in reversed(markers)}
    b = [e for e in allocs if e["size"] == 2 << 20]
    check(len(b) == 1 and seq[("epoch 1", "push")] < b[0]["seq"] < seq[("forward", "push")],
          "the allocation made inside \"epoch 1\" has a seq between its push and the next")
    w = [e for e in allocs if e["size"] == 1 << 16]
    check(len(w) == 1 and w[0]["tid"] == tids.get("worker")
          and seq[("worker", "push")] < w[0]["seq"] < min(m["seq"] for m in markers
                                                         if m["tid"] == tids.get("worker")
                                                         and m.get("range") == "pop"),
          "the worker's allocation lies inside its range, on its thread")
    rep = subprocess.run([os.path.join(build, "tools", "gpumemtrace"), "report", outdir],
                         capture_output=True, text=True, timeout=120)
    check(rep.returncode == 0, "gpumemtrace report reads a trace with ranges (%d: %s)"
          % (rep.returncode, rep.stderr[-300:]))


def c_untraced(build, src):
    outdir = tempfile.mkdtemp(prefix="gmt-markers-off-")
    env = env_sim(build)
    env["GPUMEMTRACE_OUTPUT_DIR"] = outdir
    p = subprocess.run([os.path.join(build, "tests", "markers", "marker_program")], env=env,
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, "the program exits 0 without the tracer (%d: %s)" % (p.returncode, p.stderr))
    check(p.stdout.strip() == "tracer: absent", "the weak symbols are NULL without the tracer")
    check(not os.listdir(outdir), "nothing is written without the tracer")


def py_traced(build, src):
    outdir = tempfile.mkdtemp(prefix="gmt-markers-py-")
    env = env_sim(build)
    p = subprocess.run([os.path.join(build, "tools", "gpumemtrace"), "run", "-o", outdir, "--",
                        sys.executable, os.path.join(src, "tests", "markers", "py_markers.py")],
                       env=env, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, "the script exits 0 under gpumemtrace run (%d: %s)" % (p.returncode, p.stderr))
    said = json.loads(p.stdout.strip().splitlines()[-1]) if p.stdout.strip() else {}
    check(said.get("enabled") is True, "gpumemtrace.enabled() is True under the tracer")
    want = os.path.realpath(os.path.join(src, "python", "gpumemtrace", "__init__.py"))
    check(os.path.realpath(said.get("module", "")) == want,
          "the module comes from the source tree's python/ via PYTHONPATH (%s)" % said.get("module"))
    markers = sorted((r for r in load(outdir) if r["type"] == "marker"), key=lambda r: r["seq"])
    check_lines(markers)
    got = [(m["label"], m.get("range"), m.get("depth")) for m in markers]
    want = popless(PY_EXPECTED)
    check(got == want, "marker lines by seq:\n  got      %r\n  expected %r" % (got, want))


def py_untraced(build, src):
    env = env_sim(build)
    env["PYTHONPATH"] = os.path.join(src, "python")
    p = subprocess.run([sys.executable, os.path.join(src, "tests", "markers", "py_markers.py")],
                       env=env, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, "the script exits 0 without the tracer (%d: %s)" % (p.returncode, p.stderr))
    said = json.loads(p.stdout.strip().splitlines()[-1]) if p.stdout.strip() else {}
    check(said.get("enabled") is False, "gpumemtrace.enabled() is False without the tracer")


def c_inject(build, src):
    """CUDA_INJECTION64_PATH alone: the weak symbols of a C program stay NULL (bound before the
    driver loads the tracer), the documented run-time lookup finds the functions."""
    lib = os.path.join(build, "src", "libgpumemtrace.so")
    outdir = tempfile.mkdtemp(prefix="gmt-markers-inject-c-")
    env = env_sim(build)
    env.update({"CUDA_INJECTION64_PATH": lib, "GPUMEMTRACE_OUTPUT_DIR": outdir})
    p = subprocess.run([os.path.join(build, "tests", "markers", "inject_markers")], env=env,
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, "the program exits 0 under injection (%d: %s)" % (p.returncode, p.stderr))
    check(p.stdout.strip() == "markers: lookup",
          "weak symbols are NULL under injection alone, the documented lookup finds them (%r)" % p.stdout)
    recs = load(outdir)
    markers = sorted((r for r in recs if r["type"] == "marker"), key=lambda r: r["seq"])
    check_lines(markers)
    got = [(m["label"], m.get("range"), m.get("depth")) for m in markers]
    want = [("after init", None, None), ("phase", "push", 1), ("", "pop", 1), ("end", None, None)]
    check(got == want, "marker lines by seq: %r == %r" % (got, want))
    allocs = [r for r in recs if r["type"] == "event" and r["op"] == "alloc"]
    phase = [m["seq"] for m in markers if m.get("range")]
    check(len(allocs) == 2 and len(phase) == 2 and phase[0] < max(a["seq"] for a in allocs) < phase[1],
          "the allocation made inside the range lies between its push and pop")


def py_inject(build, src):
    """CUDA_INJECTION64_PATH alone, no LD_PRELOAD: the module finds the tracer, both when it is
    imported before CUDA is initialised (it loads the library the variable names, which the
    driver then reuses) and after (the copy the driver loaded RTLD_LOCAL)."""
    lib = os.path.join(build, "src", "libgpumemtrace.so")
    outdir = tempfile.mkdtemp(prefix="gmt-markers-inject-py-")
    env = env_sim(build)
    env.update({"CUDA_INJECTION64_PATH": lib, "GPUMEMTRACE_OUTPUT_DIR": outdir,
                "PYTHONPATH": os.path.join(src, "python")})
    p = subprocess.run([sys.executable, os.path.join(src, "tests", "markers", "py_markers.py")],
                       env=env, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, "the script exits 0 under injection (%d: %s)" % (p.returncode, p.stderr))
    said = json.loads(p.stdout.strip().splitlines()[-1]) if p.stdout.strip() else {}
    check(said.get("enabled") is True, "gpumemtrace.enabled() is True under CUDA_INJECTION64_PATH alone")
    recs = load(outdir)
    check(recs and recs[0].get("capture") == ["cupti"], "traced through CUPTI, the driver's injection")
    markers = sorted((r for r in recs if r["type"] == "marker"), key=lambda r: r["seq"])
    got = [(m["label"], m.get("range"), m.get("depth")) for m in markers]
    check(got == popless(PY_EXPECTED), "marker lines by seq:\n  got      %r\n  expected %r"
          % (got, popless(PY_EXPECTED)))

    # imported after CUDA initialised: the tracer is already mapped, loaded RTLD_LOCAL
    outdir = tempfile.mkdtemp(prefix="gmt-markers-inject-py-late-")
    env["GPUMEMTRACE_OUTPUT_DIR"] = outdir
    script = ("import ctypes, json\n"
              "cudart = ctypes.CDLL('libcudart.so.13')\n"
              "assert cudart.cudaFree(None) == 0\n"
              "loaded = [l for l in open('/proc/self/maps') if 'libgpumemtrace' in l] != []\n"
              "import gpumemtrace\n"
              "gpumemtrace.mark('late import')\n"
              "print(json.dumps({'loaded_before': loaded, 'enabled': gpumemtrace.enabled()}))\n")
    p = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    said = json.loads(p.stdout.strip().splitlines()[-1]) if p.stdout.strip() else {}
    check(p.returncode == 0 and said.get("loaded_before") is True and said.get("enabled") is True,
          "imported after the driver loaded the tracer: enabled (%s, %s)" % (said, p.stderr.strip()))
    labels = [r["label"] for r in load(outdir) if r["type"] == "marker"]
    check(labels == ["late import"], "its marker is in the trace (%r)" % labels)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("case", choices=["c-traced", "c-untraced", "py-traced", "py-untraced",
                                     "c-inject", "py-inject"])
    a = ap.parse_args()
    globals()[a.case.replace("-", "_")](os.path.abspath(a.build), os.path.abspath(a.source))
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


sys.exit(main())
