#!/usr/bin/env python3
"""How a traced process ends, on the real runtime and a GPU (scripts/gpu-check group `ends`):

  term     a PyTorch training loop (no markers, default options) killed by SIGTERM mid-run, as a
           scheduler does at a time limit: it dies of SIGTERM as untraced, and its trace is whole
           up to the signal: the trailer names SIGTERM, nothing dropped, the report says
           `ended_by` SIGTERM and counts what was live, not leaks
  abort    a PyTorch program that hits an out-of-memory error and then aborts (a C++ program's
           uncaught exception): the failed allocation is in the trace, the trailer names SIGABRT
  ctypes   libcudart's own functions called through ctypes (past the interposed wrappers): after
           a pause the calls are named by their runtime call (the writer turned CUPTI's runtime
           callbacks back on)

    ends_check.py --build BUILD [CASE...]

Prints one "PASS name" or "FAIL name: why" line per check; exit 0 when all passed.
"""
import argparse
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile

failures = 0


def check(cond, name, why=""):
    global failures
    if cond:
        print(f"PASS {name}")
    else:
        failures += 1
        print(f"FAIL {name}: {why}")
    return cond


def traced_env(build, out):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GPUMEMTRACE_") and k not in ("LD_PRELOAD", "PYTORCH_CUDA_ALLOC_CONF")}
    env.update(LD_PRELOAD=os.path.join(build, "src", "libgpumemtrace.so"),
               GPUMEMTRACE_OUTPUT_DIR=out, GPUMEMTRACE_COMPRESS="none")
    return env


def lines_of(build, out):
    """The one trace in @out (plain: GPUMEMTRACE_COMPRESS=none) as records."""
    paths = glob.glob(os.path.join(out, "gpumemtrace.*"))
    if len(paths) != 1:
        return paths, []
    with open(paths[0], encoding="utf-8", errors="replace") as f:
        return paths, [json.loads(ln) for ln in f if ln.strip()]


def report(build, path):
    p = subprocess.run([os.path.join(build, "tools", "gpumemtrace"), "report", "--format", "json",
                        path], capture_output=True, text=True, timeout=300)
    return json.loads(p.stdout) if p.returncode == 0 else {}


TRAIN = r'''
import sys, time, torch
m = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(8)]).cuda()
opt = torch.optim.AdamW(m.parameters())
for step in range(100000):
    x = torch.randn(256, 1024, device="cuda")
    loss = m(x).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    if step == 20:
        print("ready", flush=True)
'''

ABORT = r'''
import os, sys, torch
keep = [torch.empty(64 << 20, dtype=torch.uint8, device="cuda") for _ in range(4)]
try:
    torch.empty(1 << 50, dtype=torch.uint8, device="cuda")
except torch.OutOfMemoryError:
    print("oom", flush=True)
os.abort()
'''

CTYPES = r'''
import ctypes, time
rt = ctypes.CDLL("libcudart.so.13")
p = ctypes.c_void_p()
def pairs(n):
    for _ in range(n):
        assert rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(1 << 20)) == 0
        assert rt.cudaFree(p) == 0
pairs(10)
time.sleep(0.3)
pairs(10)
'''


def case_term(build, work):
    out = tempfile.mkdtemp(prefix="term-", dir=work)
    proc = subprocess.Popen([sys.executable, "-c", TRAIN], env=traced_env(build, out),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in proc.stdout:
        if line.strip() == "ready":
            break
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    check(proc.returncode == -signal.SIGTERM, "term: the training loop dies of SIGTERM",
          f"exit {proc.returncode}: {proc.stderr.read()[-300:]}")
    paths, recs = lines_of(build, out)
    last = recs[-1] if recs else {}
    check(last.get("type") == "trailer" and last.get("reason") == "SIGTERM" and
          last.get("dropped") == 0, "term: the trace ends with a trailer naming SIGTERM",
          f"{paths}: {last}")
    rep = report(build, paths[0]) if paths else {}
    pr = (rep.get("processes") or [{}])[0]
    s = rep.get("summary", {})
    check(pr.get("ended_by") == "SIGTERM" and s.get("leaked_bytes") == 0 and
          s.get("live_at_end_bytes", 0) > 0, "term: the report says ended by SIGTERM, live not leaked",
          f"ended_by {pr.get('ended_by')}, leaked {s.get('leaked_bytes')}, live {s.get('live_at_end_bytes')}")


def case_abort(build, work):
    out = tempfile.mkdtemp(prefix="abort-", dir=work)
    p = subprocess.run([sys.executable, "-c", ABORT], env=traced_env(build, out),
                       capture_output=True, text=True, timeout=300)
    check(p.returncode == -signal.SIGABRT and "oom" in p.stdout, "abort: dies of SIGABRT after its OOM",
          f"exit {p.returncode}: {p.stderr[-300:]}")
    paths, recs = lines_of(build, out)
    last = recs[-1] if recs else {}
    failed = [r for r in recs if r.get("type") == "event" and r.get("op") == "alloc" and r.get("result")]
    check(last.get("reason") == "SIGABRT" and failed, "abort: the failed allocation and a trailer naming SIGABRT",
          f"{len(failed)} failed allocations, {last}")


def case_ctypes(build, work):
    out = tempfile.mkdtemp(prefix="ctypes-", dir=work)
    p = subprocess.run([sys.executable, "-c", CTYPES], env=traced_env(build, out),
                       capture_output=True, text=True, timeout=300)
    paths, recs = lines_of(build, out)
    ev = [(r["api"], r.get("driver")) for r in recs
          if r.get("type") == "event" and r.get("op") in ("alloc", "free")]
    later = ev[-20:]
    check(p.returncode == 0 and len(ev) == 40 and all(a.startswith("cuda") and d for a, d in later),
          "ctypes: after a pause, calls past the wrappers are named by their runtime call",
          f"exit {p.returncode}, {len(ev)} events, the last: {later[:4]}")


CASES = {"term": case_term, "abort": case_abort, "ctypes": case_ctypes}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("cases", nargs="*", default=list(CASES))
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    work = tempfile.mkdtemp(prefix="gmt-ends-")
    for c in a.cases:
        CASES[c](build, work)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
