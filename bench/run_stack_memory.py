#!/usr/bin/env python3
"""Analyzer memory per distinct stack: peak RSS and time of `gpumemtrace report` on traces whose
cost is their stacks, not their events.

    run_stack_memory.py --build BUILD [--cases stacks,unique,deep,directory] [--stacks 200000]
                        [--frame-pool 1000] [--formats text,json,html] [--rounds 3]
                        [--cpu N|none] [--cache DIR] [--baseline EXE]

Builds nothing: BUILD must hold bench/gen_trace and tools/gpumemtrace. The cases, each written
once by bench/gen_trace into --cache (default BUILD/bench/stack-traces) and reused while
gen_trace is unchanged:

- stacks: --stacks distinct stacks of 64 native frames (and 3-10 Python frames), each module's
  frames drawn from --frame-pool return addresses (a program's stacks share their code), every
  allocation at the next stack (gen_trace --distinct), 3 x --stacks events, at most 10,000
  allocations live at once;
- unique: the same with nearly every frame an address of its own (no pool): the worst case;
- deep: one stack of 1,000,000 native frames;
- directory: 10,000 copies of a tiny trace (100 events, 5 stacks) in one directory.

Every run is a fresh process pinned to one CPU (the last by default), rounds interleaved (every
case and format, then again); with --baseline EXE (an older gpumemtrace, e.g. built from the
commit before a change) each run of BUILD's gpumemtrace is followed by the same run of EXE. Per
case and format: the median wall and CPU seconds and the largest peak RSS (os.wait4's rusage),
and per distinct stack the RSS above a report of the smallest trace. The last line of output is
one JSON object with every figure. Python 3 standard library only.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def fresh(path, gen):
    return os.path.exists(path) and os.path.getmtime(path) >= os.path.getmtime(gen)


def gen_trace(gen, path, opts):
    if not fresh(path, gen):
        t0 = time.perf_counter()
        subprocess.run([gen] + opts + ["-o", path + ".tmp"], check=True)
        os.replace(path + ".tmp", path)
        print(f"  generated {path} ({os.path.getsize(path) / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s")
    return path


def make_cases(args, gen):
    """{case: (path, distinct stacks)}"""
    c = args.cache
    cases = {}
    want = args.cases.split(",")
    n = args.stacks
    if "stacks" in want:
        cases["stacks"] = (gen_trace(gen, os.path.join(c, f"stacks-{n}-p{args.frame_pool}.jsonl"),
                                     ["--stacks", str(n), "--events", str(3 * n), "--depth", "64",
                                      "--distinct", "--frame-pool", str(args.frame_pool)]), n)
    if "unique" in want:
        cases["unique"] = (gen_trace(gen, os.path.join(c, f"unique-{n}.jsonl"),
                                     ["--stacks", str(n), "--events", str(3 * n), "--depth", "64",
                                      "--distinct"]), n)
    if "deep" in want:
        cases["deep"] = (gen_trace(gen, os.path.join(c, "deep-1m.jsonl"),
                                   ["--stacks", "1", "--events", "1000", "--depth", "1000000",
                                    "--distinct"]), 1)
    if "directory" in want:
        d = os.path.join(c, "directory-10000")
        one = gen_trace(gen, os.path.join(c, "tiny.jsonl"),
                        ["--stacks", "5", "--events", "100", "--live", "10"])
        if not os.path.isdir(d) or not fresh(os.path.join(d, "t00000.jsonl"), one):
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            for i in range(10000):
                shutil.copyfile(one, os.path.join(d, f"t{i:05}.jsonl"))
        cases["directory"] = (d, 5)
    # the floor: a report of a trace of a few stacks (what the program itself takes)
    cases["floor"] = (gen_trace(gen, os.path.join(c, "floor.jsonl"),
                                ["--stacks", "20", "--events", str(3 * 20), "--depth", "64",
                                 "--distinct"]), 20)
    return cases


def run_once(cmd, prefix):
    """(wall s, cpu s, max RSS KiB, exit code, stderr) of one fresh process."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(prefix + cmd, stdout=subprocess.DEVNULL, stderr=err,
                             env=dict(os.environ, DEBUGINFOD_URLS=""))
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        rc = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, rc, stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--cases", default="stacks,unique,deep,directory")
    ap.add_argument("--stacks", type=int, default=200000)
    ap.add_argument("--frame-pool", type=int, default=1000)
    ap.add_argument("--formats", default="text,json,html")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cpu", default=None)
    ap.add_argument("--cache")
    ap.add_argument("--baseline")
    args = ap.parse_args()

    build = os.path.abspath(args.build)
    gen = os.path.join(build, "bench", "gen_trace")
    exe = os.path.join(build, "tools", "gpumemtrace")
    for f in (gen, exe):
        if not os.path.exists(f):
            sys.exit(f"run_stack_memory: {f} not found (build with ninja -C {args.build})")
    args.cache = os.path.abspath(args.cache or os.path.join(build, "bench", "stack-traces"))
    os.makedirs(args.cache, exist_ok=True)
    cpu = args.cpu if args.cpu is not None else str(os.cpu_count() - 1)
    prefix = ["taskset", "-c", cpu] if cpu != "none" and shutil.which("taskset") else []
    formats = args.formats.split(",")
    cases = make_cases(args, gen)
    variants = [("new", exe)] + ([("baseline", os.path.abspath(args.baseline))] if args.baseline else [])
    print(f"stack_memory: cases {list(cases)}, formats {formats}, {args.rounds} rounds, "
          f"pinned to CPU {cpu if prefix else '(none)'}")

    samples = {(v, c, f): [] for v, _ in variants for c in cases for f in formats}
    for r in range(args.rounds):
        for case, (path, _) in cases.items():
            for fmt in formats:
                for variant, program in variants:
                    cmd = [program, "report", "--format", fmt, "-o", "/dev/null", path]
                    wall, cpu_s, rss, rc, stderr = run_once(cmd, prefix)
                    if rc != 0:
                        print(f"  {variant} {case} {fmt}: exit {rc}: {stderr.strip()[-300:]}")
                    samples[(variant, case, fmt)].append(
                        {"wall_s": round(wall, 3), "cpu_s": round(cpu_s, 3), "max_rss_kib": rss,
                         "rc": rc})
                    print(f"  round {r + 1}: {case:<9} {fmt:<5} {variant:<8} {wall:7.2f} s wall "
                          f"{cpu_s:7.2f} s cpu {rss / 1024:8.0f} MiB")

    rows = []
    for variant, _ in variants:
        for case, (path, nstacks) in cases.items():
            for fmt in formats:
                s = samples[(variant, case, fmt)]
                floor = max(x["max_rss_kib"] for x in samples[(variant, "floor", fmt)])
                rss = max(x["max_rss_kib"] for x in s)
                rows.append({"variant": variant, "case": case, "format": fmt, "stacks": nstacks,
                             "ok": all(x["rc"] == 0 for x in s),
                             "median_wall_s": statistics.median(x["wall_s"] for x in s),
                             "median_cpu_s": statistics.median(x["cpu_s"] for x in s),
                             "max_rss_kib": rss,
                             "bytes_per_stack": (rss - floor) * 1024 / nstacks
                             if case in ("stacks", "unique") else None,
                             "samples": s})
    print()
    print(f"  {'case':<9} {'format':<6} {'variant':<8} {'median wall':>11} {'median cpu':>10} "
          f"{'max RSS':>9} {'per stack':>10}")
    for r in rows:
        per = f"{r['bytes_per_stack']:8.0f} B" if r["bytes_per_stack"] is not None else ""
        print(f"  {r['case']:<9} {r['format']:<6} {r['variant']:<8} {r['median_wall_s']:9.2f} s "
              f"{r['median_cpu_s']:8.2f} s {r['max_rss_kib'] / 1024:5.0f} MiB {per:>10}"
              f"{'' if r['ok'] else '  FAILED'}")
    print(json.dumps({"bench": "stack_memory", "cpus": os.cpu_count(), "pinned_cpu": cpu if prefix else None,
                      "rounds": args.rounds, "stacks": args.stacks, "frame_pool": args.frame_pool,
                      "formats": formats, "baseline": args.baseline,
                      "cases": {c: {"path": p, "bytes": os.path.getsize(p) if os.path.isfile(p) else None}
                                for c, (p, _) in cases.items()},
                      "rows": rows}))


if __name__ == "__main__":
    main()
