#!/usr/bin/env python3
"""Allocation calls given a NULL output pointer (tests/unit/null_out.c) under the tracer, through
CUPTI and through interposition: the program gets the result it gets untraced, and the trace
records each call as one failed allocation of that name, address 0.

    run_null_out.py PROGRAM LIBGPUMEMTRACE SIMCUDA_DIR
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

prog, lib, simcuda = sys.argv[1:4]
failures = 0


def fail(what):
    global failures
    failures += 1
    print(f"FAIL: {what}")


def run(extra):
    out = tempfile.mkdtemp(prefix="gmt-null-out-")
    # the test reads the tracer's lines: plain JSON Lines
    env = dict(os.environ, LD_LIBRARY_PATH=simcuda, GPUMEMTRACE_OUTPUT_DIR=out,
               GPUMEMTRACE_COMPRESS="none", **extra)
    p = subprocess.run([prog], env=env, capture_output=True, text=True, timeout=60)
    return p, out


untraced, _ = run({})
if untraced.returncode != 0:
    print(untraced.stdout, untraced.stderr)
    sys.exit(f"{prog} fails untraced (exit {untraced.returncode})")
expected = dict(line.split("=") for line in untraced.stdout.split())

for capture, extra in (("cupti", {}), ("interpose", {"GPUMEMTRACE_CUPTI": "0"})):
    p, out = run(dict(extra, LD_PRELOAD=lib))
    if p.returncode != 0:
        fail(f"{capture}: the program exits {p.returncode} under the tracer ({p.stderr.strip()})")
        continue
    if p.stdout != untraced.stdout:
        fail(f"{capture}: results {p.stdout.split()} differ from untraced "
             f"{untraced.stdout.split()}")
    files = glob.glob(os.path.join(out, "*.jsonl"))
    if len(files) != 1:
        fail(f"{capture}: {len(files)} trace files")
        continue
    events = [json.loads(l) for l in open(files[0])]
    failed = {}
    for e in events:
        if e.get("type") == "event" and e.get("op") == "alloc" and e.get("result"):
            failed.setdefault(e["api"], []).append(e)
    # interposition sees the runtime calls only
    names = [n for n in expected if capture == "cupti" or n.startswith("cuda")]
    for name in names:
        got = failed.get(name, [])
        if len(got) != 1:
            fail(f"{capture}: {len(got)} failed allocations named {name} in the trace, expected 1")
        elif got[0]["ptr"] != "0x0" or str(got[0]["result"]) != expected[name]:
            fail(f"{capture}: {name} recorded as ptr {got[0]['ptr']} result {got[0]['result']}")
    extra_names = sorted(set(failed) - set(names))
    if extra_names:
        fail(f"{capture}: failed allocations of {extra_names} that the program did not make")

print("ok" if not failures else f"{failures} check(s) failed")
sys.exit(1 if failures else 0)
