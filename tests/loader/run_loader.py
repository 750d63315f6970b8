#!/usr/bin/env python3
"""Loader suite: the tracer (default options) while the program loads many libraries with
thread-local storage, crossing the point where glibc grows its TLS slot table (victim_tls.c).

    run_loader.py --build BUILD writer|threads

Before the fix, the writer's walk of the module map died there inside ld.so (SIGSEGV, 3 runs out
of 3 here; the same backtrace as a Hugging Face GPT-2 run on the H200). Each run must exit as the
untraced one does, and its trace must hold every allocation the victim made.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

RUNS = 3
COPIES = 100


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("scenario", choices=["writer", "threads"])
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    victim = os.path.join(build, "tests", "loader", "victim_tls")
    lib = os.path.join(build, "tests", "loader", "tls_lib.so")
    tracer = os.path.join(build, "src", "libgpumemtrace.so")
    cli = os.path.join(build, "tools", "gpumemtrace")

    work = tempfile.mkdtemp(prefix="gmt-loader-")
    libs = os.path.join(work, "libs")
    os.mkdir(libs)
    for i in range(COPIES):  # copies, not links: one object per file
        shutil.copyfile(lib, os.path.join(libs, f"{i}.so"))
    argv = [victim, libs, str(COPIES)] + (["threads"] if args.scenario == "threads" else [])
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(build, "tests", "simcuda"),
               SIMCUDA_MEM_BYTES="1G", SIMCUDA_DEVICES="1")

    failures = []
    plain = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    if plain.returncode != 0:
        print(f"the victim fails untraced (exit {plain.returncode}): {plain.stderr.strip()}")
        return 1
    for run in range(RUNS):
        out = os.path.join(work, f"trace{run}")
        os.mkdir(out)
        p = subprocess.run(argv, env=dict(env, LD_PRELOAD=tracer, GPUMEMTRACE_OUTPUT_DIR=out),
                           capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            failures.append(f"run {run}: traced victim exits {p.returncode} (untraced 0): "
                            f"{p.stderr.strip()[-300:]}")
            continue
        did = json.loads(p.stdout.strip().splitlines()[-1])
        traces = glob.glob(os.path.join(out, "*.jsonl.zst"))  # the default: compressed
        if len(traces) != 1:
            failures.append(f"run {run}: {len(traces)} trace files, expected 1")
            continue
        r = subprocess.run([cli, "report", "--format", "json", traces[0]], capture_output=True,
                           text=True, timeout=120)
        if r.returncode != 0:
            failures.append(f"run {run}: report exits {r.returncode}: {r.stderr.strip()}")
            continue
        rep = json.loads(r.stdout)
        proc = rep["processes"][0]
        allocs = proc["allocations"]
        if not proc["complete"] or proc["dropped"]:
            failures.append(f"run {run}: trace complete={proc['complete']}, dropped={proc['dropped']}")
        want = did["allocs"] + did["thread_allocs"]
        if allocs != want:
            failures.append(f"run {run}: the trace has {allocs} allocations, the victim made {want}")
        text = subprocess.run([os.path.join(build, "tests", "preload", "gmt-zcat"), traces[0]],
                              capture_output=True, text=True, timeout=120).stdout
        mods = [json.loads(l) for l in text.splitlines() if '"type":"modules"' in l.replace(" ", "")]
        names = {m["path"] for m in mods[-1]["modules"]} if mods else set()
        if not any(n.startswith(libs) for n in names):
            failures.append(f"run {run}: the last modules line lists none of the loaded libraries")
        print(f"run {run}: exit 0, {allocs} allocations, {len(names)} modules, "
              f"TLS ids up to {did['last_modid']} (table grows at {did['boundary']})")
    shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
