#!/usr/bin/env python3
"""A directory of rank traces analysed on several cores: `gpumemtrace report DIR` with
GMT_JOBS=1, 2, 4, ... (the reader's worker threads, src/analysis/session/session.c), on K traces of
N events each made by bench/gen_trace (one seed per trace, as K ranks of a job would write them).

    run_dir_report.py --build BUILD [--traces 16] [--events 1000000] [--jobs 1,2,4,8,16]
                      [--rounds 2] [--format json] [--dir DIR] [--keep]

The traces are written once (in parallel), read once so that they are in the page cache, then
every job count runs once per round, the order rotating from round to round so that drift hits
all alike; each run's report goes to a file, and every job count must give the bytes of
GMT_JOBS=1 (else the run fails). Per job count: the median wall time, events/s over it, the
speed-up over GMT_JOBS=1 and the efficiency (speed-up / jobs). The last
line of output is one JSON object with every figure and sample. Python 3 standard library only;
the traces take ~226 bytes per event on disk and are deleted at the end unless --keep.
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def run_report(cli, tdir, jobs, fmt, out):
    env = dict(os.environ, GMT_JOBS=str(jobs))
    t0 = time.perf_counter()
    with open(out, "wb") as f:
        p = subprocess.run([cli, "report", "--format", fmt, tdir], stdout=f,
                           stderr=subprocess.PIPE, env=env)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"run_dir_report: GMT_JOBS={jobs} report exited {p.returncode}: "
                 f"{p.stderr.decode(errors='replace')[-400:]}")
    with open(out, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return wall, digest


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--traces", type=int, default=16)
    ap.add_argument("--events", type=int, default=1000000)
    ap.add_argument("--jobs", default="1,2,4,8,16")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--format", default="json")
    ap.add_argument("--dir", help="where the traces go (default: a fresh directory under $TMPDIR)")
    ap.add_argument("--keep", action="store_true", help="keep the traces")
    args = ap.parse_args()

    build = os.path.abspath(args.build)
    gen = os.path.join(build, "bench", "gen_trace")
    cli = os.path.join(build, "tools", "gpumemtrace")
    for f in (gen, cli):
        if not os.path.exists(f):
            sys.exit(f"run_dir_report: {f} not found (ninja -C {args.build})")
    jobs = [int(j) for j in args.jobs.split(",")]
    if 1 not in jobs:
        jobs = [1] + jobs
    work = tempfile.mkdtemp(prefix="gmt-dir-report-")
    tdir = args.dir or os.path.join(work, "traces")
    os.makedirs(tdir, exist_ok=True)
    try:
        t0 = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
            futs = [ex.submit(subprocess.run, [gen, "--events", str(args.events), "--seed", str(i + 1),
                                               "-o", os.path.join(tdir, f"gpumemtrace.h.{1000 + i}.rank{i}.jsonl")],
                              capture_output=True, check=True) for i in range(args.traces)]
            for f in futs:
                f.result()
        size = sum(os.path.getsize(os.path.join(tdir, n)) for n in os.listdir(tdir))
        print(f"run_dir_report: {args.traces} traces of {args.events:,} events ({size / 1e9:.2f} GB) "
              f"written in {time.perf_counter() - t0:.1f} s; {os.cpu_count()} CPUs; "
              f"report --format {args.format}, GMT_JOBS {jobs}, {args.rounds} rounds")
        for n in os.listdir(tdir):  # into the page cache
            with open(os.path.join(tdir, n), "rb") as f:
                while f.read(1 << 24):
                    pass
        samples = {j: [] for j in jobs}
        digests = {}
        for rnd in range(args.rounds):
            order = jobs[rnd % len(jobs):] + jobs[:rnd % len(jobs)]
            for j in order:
                wall, digest = run_report(cli, tdir, j, args.format, os.path.join(work, f"out-{j}"))
                samples[j].append(wall)
                digests.setdefault(j, set()).add(digest)
                print(f"  round {rnd + 1} GMT_JOBS={j:<3} {wall:7.2f} s")
        want = digests[1]
        bad = [j for j in jobs if digests[j] != want or len(want) != 1]
        total = args.traces * args.events
        med = {j: statistics.median(v) for j, v in samples.items()}
        rows = {}
        print("  jobs  median wall  events/s      speed-up  efficiency")
        for j in jobs:
            up = med[1] / med[j]
            rows[j] = {"median_s": round(med[j], 3), "events_per_s": round(total / med[j]),
                       "speedup": round(up, 2), "efficiency": round(up / j, 2), "samples": samples[j]}
            print(f"  {j:>4}  {med[j]:9.2f} s  {total / med[j] / 1e6:8.2f} M  {up:8.2f}x  {up / j:9.2f}")
        if bad:
            print(f"PROBLEM: GMT_JOBS={bad} gave a different report from GMT_JOBS=1")
        print(json.dumps({"bench": "dir_report", "traces": args.traces, "events": args.events,
                          "bytes": size, "cpus": os.cpu_count(), "format": args.format,
                          "rounds": args.rounds, "jobs": rows, "same_output": not bad}))
        return 1 if bad else 0
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
            if args.dir:
                shutil.rmtree(tdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
