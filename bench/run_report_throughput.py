#!/usr/bin/env python3
"""Analyzer throughput: how fast `gpumemtrace report` reads a large trace, and whether its memory
stays bounded by what the trace keeps live (allocations, stacks) rather than by its length.

    run_report_throughput.py --build BUILD [--sizes 1000000,3000000,10000000] [--rounds 3]
                             [--formats json,text] [--cpu N|none] [--seed 1] [--live 10000]
                             [--stacks 300] [--cache DIR] [--baseline EXE]

Builds nothing: BUILD must hold bench/gen_trace and tools/gpumemtrace (ninja -C BUILD). For each
size it writes a trace with bench/gen_trace (cached in BUILD/bench/report-traces and reused while
gen_trace is unchanged), reads it once so it is in the page cache, and checks once, on the
smallest size, that the report's `summary.events` is the trace's count with no bad line. Then
it runs `gpumemtrace report --format F -o /dev/null TRACE` for every size and format,
interleaved (round 1: every size and format, round 2: again, ...), each in a fresh process pinned
to one CPU with taskset (the last CPU by default; --cpu none to leave it unpinned). Per run:
wall seconds, user+system CPU seconds and the peak RSS of that process (os.wait4's rusage).

Per size and format it reports the median wall time, events/s (events / median wall), the
same over the median CPU time (less disturbed by other load on a shared machine) and the
largest peak RSS; per format, how peak RSS grows from the smallest to the largest size: the
ratio, and the bytes added per extra event. Memory bounded by the live set and the stacks (the
generator keeps both fixed whatever the size) adds ~0 bytes per event and gives a ratio near 1;
a reader that keeps every event adds its per-event size. The goal (docs/performance.md,
"Analyzer throughput", issue 30): >= 2M events/s on one core, and under 2 bytes of RSS per extra event.

With --baseline EXE (an older gpumemtrace, e.g. built from the commit before a change), every
run of BUILD's gpumemtrace is followed by the same run of EXE, so both see the same machine
state; it prints the median wall time of both and their ratio per size and format.

The last line of output is one JSON object with every figure and sample. Python 3 standard
library only. Traces are ~226 bytes per event (10M events: ~2.3 GB).
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

GOAL_EVENTS_PER_S = 2_000_000  # issue 30: one core
GOAL_ALL_CORES_EVENTS_PER_S = 4_000_000  # issue 30: one trace on the host's cores (unpinned)
# RSS added per extra event between the smallest and the largest size: below this, memory does not
# follow the trace's length (10M events would add 20 MB)
BOUNDED_BYTES_PER_EVENT = 2.0


def trace_for(args, gen, n):
    """The cached trace of n events for these options, written when missing or stale."""
    name = f"gen-{n}-s{args.seed}-l{args.live}-k{args.stacks}.jsonl"
    path = os.path.join(args.cache, name)
    if not os.path.exists(path) or os.path.getmtime(path) < os.path.getmtime(gen):
        t0 = time.perf_counter()
        tmp = path + ".tmp"
        subprocess.run([gen, "--events", str(n), "--seed", str(args.seed), "--live", str(args.live),
                        "--stacks", str(args.stacks), "-o", tmp], check=True)
        os.replace(tmp, path)
        print(f"  generated {path} ({os.path.getsize(path) / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s")
    if args.zstd:
        # compressed as the tracer's writer does it (a frame per 64 KiB flush, zstd level 1):
        # bench/zstd_frames --write
        zpath = path + ".zst"
        if not os.path.exists(zpath) or os.path.getmtime(zpath) < os.path.getmtime(path):
            frames = os.path.join(os.path.dirname(gen), "zstd_frames")
            subprocess.run([frames, "--levels", "1", "--repeat", "1", "--write", zpath + ".tmp", path],
                           check=True, stdout=subprocess.DEVNULL)
            os.replace(zpath + ".tmp", zpath)
        path = zpath
    # into the page cache, so the first timed run does not measure the disk
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass
    return path


def run_once(cmd, prefix):
    """(wall s, cpu s, max RSS KiB, exit code, stderr) of one fresh process."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(prefix + cmd, stdout=subprocess.DEVNULL, stderr=err)
        # wait4: the rusage of this child alone (RUSAGE_CHILDREN would be the max over all runs)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, p.returncode, stderr


def thread_times(stderr):
    """{thread kind: CPU seconds} from the analyzer's GMT_THREAD_TIMES line, {} without one."""
    for line in reversed(stderr.splitlines()):
        if "thread CPU:" in line:
            out = {}
            for part in line.split("thread CPU:", 1)[1].split(";"):
                words = part.split()
                if len(words) >= 3 and words[2] == "s":
                    out[words[0]] = float(words[1])
            return out
    return {}


def validate(exe, path, n):
    """The report of the generated trace must count every event and find no bad line."""
    p = subprocess.run([exe, "report", "--format", "json", path], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"run_report_throughput: report of {path} exited {p.returncode}: {p.stderr[-400:]}")
    s = json.loads(p.stdout)["summary"]
    problems = []
    if s.get("events") != n:
        problems.append(f"summary.events {s.get('events')} != {n}")
    for key in ("bad_lines", "unmatched_frees", "reused_addresses"):
        if s.get(key):
            problems.append(f"summary.{key} = {s.get(key)}")
    if problems:
        sys.exit(f"run_report_throughput: the generated trace {path} is not read as written: " + "; ".join(problems))
    return {k: s.get(k) for k in ("events", "leaked_allocations", "failed_allocations", "peak_held_bytes")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="meson build directory")
    ap.add_argument("--sizes", default="1000000,3000000,10000000", help="events per trace, comma-separated")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--formats", default="json,text")
    ap.add_argument("--cpu", default=None, help="CPU to pin each run to with taskset (default: the last; 'none': no pinning)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--live", type=int, default=10000, help="gen_trace --live: most allocations live at once")
    ap.add_argument("--stacks", type=int, default=300, help="gen_trace --stacks: distinct stacks")
    ap.add_argument("--cache", help="where the traces are kept (default BUILD/bench/report-traces)")
    ap.add_argument("--zstd", action="store_true",
                    help="read the traces compressed in frames as the tracer writes them (bench/zstd_frames)")
    ap.add_argument("--thread-times", action="store_true",
                    help="GMT_THREAD_TIMES=1: the CPU of each kind of the analyzer's threads, medians per kind")
    ap.add_argument("--baseline", help="another gpumemtrace to run after each run of BUILD's, for a before/after ratio")
    args = ap.parse_args()

    build = os.path.abspath(args.build)
    gen = os.path.join(build, "bench", "gen_trace")
    exe = os.path.join(build, "tools", "gpumemtrace")
    for f in (gen, exe):
        if not os.path.exists(f):
            sys.exit(f"run_report_throughput: {f} not found (build with ninja -C {args.build})")
    args.cache = os.path.abspath(args.cache or os.path.join(build, "bench", "report-traces"))
    os.makedirs(args.cache, exist_ok=True)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    formats = args.formats.split(",")
    cpu = args.cpu
    if cpu is None:
        cpu = str(os.cpu_count() - 1)
    prefix = []
    if cpu != "none" and shutil.which("taskset"):
        prefix = ["taskset", "-c", cpu]
    else:
        cpu = None

    print(f"report_throughput: sizes {sizes}{' zstd' if args.zstd else ''}, formats {formats}, {args.rounds} rounds, "
          f"pinned to CPU {cpu if cpu is not None else '(none)'} of {os.cpu_count()}; "
          f"gen_trace --live {args.live} --stacks {args.stacks} --seed {args.seed}")
    traces = {n: trace_for(args, gen, n) for n in sizes}
    check = validate(exe, traces[sizes[0]], sizes[0])
    print(f"  {sizes[0]} events read back: {check}")

    if args.thread_times:
        os.environ["GMT_THREAD_TIMES"] = "1"
    variants = [("", exe)] + ([("baseline", os.path.abspath(args.baseline))] if args.baseline else [])
    samples = {(v, n, f): [] for v, _ in variants for n in sizes for f in formats}
    for r in range(args.rounds):
        for n in sizes:
            for fmt in formats:
                for variant, program in variants:
                    cmd = [program, "report", "--format", fmt, "-o", "/dev/null", traces[n]]
                    wall, cpu_s, rss, rc, stderr = run_once(cmd, prefix)
                    if rc != 0:
                        sys.exit(f"run_report_throughput: {' '.join(cmd)} exited {rc}: {stderr[-400:]}")
                    samples[(variant, n, fmt)].append({"wall_s": round(wall, 3), "cpu_s": round(cpu_s, 3),
                                                       "max_rss_kib": rss, "threads": thread_times(stderr)})
                    print(f"  round {r + 1}: {n:>10,} events {fmt:<5} {wall:8.2f} s wall {cpu_s:8.2f} s cpu "
                          f"{rss / 1024:8.0f} MiB RSS  {n / wall:>12,.0f} events/s {variant}")

    baseline = []
    for n in sizes:
        for fmt in formats:
            if not args.baseline:
                break
            new_s = statistics.median(x["wall_s"] for x in samples[("", n, fmt)])
            old_s = statistics.median(x["wall_s"] for x in samples[("baseline", n, fmt)])
            baseline.append({"events": n, "format": fmt, "median_wall_s": new_s,
                             "baseline_median_wall_s": old_s, "speedup": old_s / new_s,
                             "baseline_samples": samples[("baseline", n, fmt)]})
    rows = []
    for n in sizes:
        for fmt in formats:
            s = samples[("", n, fmt)]
            wall = statistics.median(x["wall_s"] for x in s)
            rows.append({"events": n, "format": fmt, "trace_bytes": os.path.getsize(traces[n]),
                         "median_wall_s": wall, "events_per_s": n / wall if wall else None,
                         "median_cpu_s": statistics.median(x["cpu_s"] for x in s),
                         "events_per_cpu_s": n / statistics.median(x["cpu_s"] for x in s),
                         "max_rss_kib": max(x["max_rss_kib"] for x in s), "samples": s})
    growth = {}
    for fmt in formats:
        lo = next(r for r in rows if r["format"] == fmt and r["events"] == sizes[0])
        hi = next(r for r in rows if r["format"] == fmt and r["events"] == sizes[-1])
        extra = hi["events"] - lo["events"]
        growth[fmt] = {"ratio": hi["max_rss_kib"] / lo["max_rss_kib"] if lo["max_rss_kib"] else None,
                       "bytes_per_extra_event": (hi["max_rss_kib"] - lo["max_rss_kib"]) * 1024 / extra if extra else None}

    print()
    print(f"  {'events':>11} {'format':<6} {'median wall':>11} {'events/s':>12} {'MB/s':>7} "
          f"{'median cpu':>10} {'events/cpu-s':>12} {'max RSS':>9} {'RSS/event':>9}")
    for r in rows:
        print(f"  {r['events']:>11,} {r['format']:<6} {r['median_wall_s']:>9.2f} s {r['events_per_s']:>12,.0f} "
              f"{r['trace_bytes'] / r['median_wall_s'] / 1e6:>7.1f} {r['median_cpu_s']:>8.2f} s "
              f"{r['events_per_cpu_s']:>12,.0f} {r['max_rss_kib'] / 1024:>5.0f} MiB "
              f"{r['max_rss_kib'] * 1024 / r['events']:>7.1f} B")
    slowest = min(r["events_per_s"] for r in rows)
    bounded = True
    for fmt in formats:
        g = growth[fmt]
        if g["bytes_per_extra_event"] is None:
            print(f"  {fmt}: one size only: memory growth not measured")
            bounded = False
            continue
        ok = g["bytes_per_extra_event"] < BOUNDED_BYTES_PER_EVENT
        bounded = bounded and ok
        print(f"  {fmt}: max RSS at {sizes[-1]:,} / at {sizes[0]:,} events = {g['ratio']:.2f} "
              f"(event ratio {sizes[-1] / sizes[0]:.0f}), {g['bytes_per_extra_event']:.1f} bytes per extra event: "
              f"{'bounded' if ok else 'grows with the event count'}")
    if args.thread_times:
        for (variant, n, fmt), s_ in samples.items():
            kinds = sorted({k for x in s_ for k in x["threads"]})
            if kinds:
                med = {k: statistics.median(x["threads"].get(k, 0.0) for x in s_) for k in kinds}
                print(f"  thread CPU, medians{' (' + variant + ')' if variant else ''}, {n:,} {fmt}: " +
                      "; ".join(f"{k} {v:.2f} s" for k, v in med.items()))
    for b in baseline:
        print(f"  against the baseline: {b['events']:>11,} {b['format']:<5} {b['baseline_median_wall_s']:.2f} s -> "
              f"{b['median_wall_s']:.2f} s: {b['speedup']:.2f}x")
    goal, where = ((GOAL_EVENTS_PER_S, "on one core") if cpu is not None else
                   (GOAL_ALL_CORES_EVENTS_PER_S, f"on this host's {os.cpu_count()} CPUs (GMT_JOBS {os.environ.get('GMT_JOBS', 'unset: one per CPU')})"))
    throughput_met = slowest >= goal
    met = throughput_met and bounded
    print(f"  goal (>= {goal:,} events/s wall {where}): {'met' if throughput_met else 'not met'} "
          f"(slowest {slowest:,.0f} events/s); memory (< {BOUNDED_BYTES_PER_EVENT:g} bytes of RSS per extra "
          f"event): {('bounded' if bounded else 'grows') if len(sizes) > 1 else 'not measured (one size)'}")
    print(json.dumps({"bench": "report_throughput", "cpus": os.cpu_count(), "pinned_cpu": cpu,
                      "rounds": args.rounds, "seed": args.seed, "live": args.live, "stacks": args.stacks,
                      "sizes": sizes, "formats": formats, "check": check, "rows": rows,
                      "rss_growth": growth, "slowest_events_per_s": slowest, "goal_met": met,
                      "throughput_goal_met": throughput_met,
                      "baseline": {"exe": args.baseline, "rows": baseline} if args.baseline else None}))


if __name__ == "__main__":
    main()
