#!/usr/bin/env python3
"""Writer throughput: how many events per second the tracer's writer thread turns into trace lines
without dropping any, measured with bench/writer_throughput on tests/simcuda
(SIMCUDA_ALLOC_DELAY_NS=0, so a call costs tens of ns and the writer is the bottleneck).

    run_writer_throughput.py --build BUILD [--threads 1] [--seconds 1] [--mode malloc|async]
                             [--start-rate 250000] [--step 1.25] [--max-rate 20000000]
                             [--ring-slots SLOTS] [--tmpdir DIR] [--settle-ms 200]
                             [--compress none|zstd] [--level L]

It runs the load generator under LD_PRELOAD=libgpumemtrace.so at a target rate, starting at
--start-rate and multiplying by --step, until a run drops events or the producers cannot offer
the target (then the machine, not the writer, is the limit). Each run reads the trace's header
and trailer: the writer's sustained rate is events written / (trailer ts - start of the load), which
includes draining the ring at exit, and MB/s is the trace file's size over the same time.
By default the load starts 200 ms after the process's first event, when the writer is running;
--settle-ms 0 starts it at once and so measures the tracer's start-up as well. The
highest target with 0 drops is reported, then one run with no rate limit (the raw maximum: the
writer's rate while the ring overflows, with the count it dropped).

The last line of output is one JSON object with every figure. Python 3 standard library only.
Trace files are large (about 180 bytes per event) and are deleted after each run.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile


def read_trace(outdir, zcat=None):
    """(header, trailer, size) of the one trace file in outdir; trailer None when missing. A
    .jsonl.zst file (--compress zstd) is read through zcat (the reader module's gmt-zcat)."""
    files = glob.glob(os.path.join(outdir, "*.jsonl")) + glob.glob(os.path.join(outdir, "*.jsonl.zst"))
    if len(files) != 1:
        return None, None, 0
    size = os.path.getsize(files[0])
    if files[0].endswith(".zst"):
        p = subprocess.Popen([zcat, files[0]], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        header, last = json.loads(p.stdout.readline()), b""
        for line in p.stdout:
            last = line
        p.wait()
        tail = [last.rstrip(b"\n")]
    else:
        with open(files[0], "rb") as f:
            header = json.loads(f.readline())
            f.seek(max(0, size - 4096))
            tail = f.read().split(b"\n")
    for line in reversed(tail):
        if line.startswith(b'{"type":"trailer"'):
            return header, json.loads(line), size
    return header, None, size


def run_at(exe, lib, env, args, rate):
    outdir = tempfile.mkdtemp(prefix="gmt-bench-writer-", dir=args.tmpdir)
    env = dict(env, LD_PRELOAD=lib, GPUMEMTRACE_OUTPUT_DIR=outdir)
    cmd = [exe, "--threads", str(args.threads), "--rate", str(rate), "--seconds", str(args.seconds),
           "--mode", args.mode, "--size", str(args.size), "--settle-ms", str(args.settle_ms),
           "--vary", str(args.vary)]
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            sys.exit(f"run_writer_throughput: {' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}")
        res = json.loads(p.stdout.strip().splitlines()[-1])
        header, trailer, size = read_trace(outdir, args.zcat)
    finally:
        shutil.rmtree(outdir, ignore_errors=True)
    r = {"target_rate": rate, "offered_rate": res["offered_rate"], "offered": res["events"],
         "trailer": trailer is not None, "bytes": size}
    if trailer is None:
        r.update(events=None, dropped=None, writer_rate=None, mb_s=None, stderr=p.stderr.strip())
        return r
    # from the start of the load to the trailer: the load plus draining the ring at exit (the
    # settling pair, when there is one, was written before the load started)
    secs = (trailer["ts"] - res["start_ns"]) / 1e9
    load_events = trailer["events"] - (2 if args.settle_ms else 0)
    r.update(events=trailer["events"], dropped=trailer["dropped"], writer_seconds=round(secs, 3),
             writer_rate=load_events / secs if secs > 0 else 0.0,
             mb_s=size / secs / 1e6 if secs > 0 else 0.0)
    if trailer["events"] + trailer["dropped"] != res["events"]:
        r["mismatch"] = f"{trailer['events']} written + {trailer['dropped']} dropped != {res['events']} made"
    return r


def show(r):
    if not r["trailer"]:
        return (f"  target {r['target_rate']:>10,}/s  offered {r['offered_rate']:>12,.0f}/s  "
                f"NO TRAILER ({r.get('stderr') or 'no stderr'})")
    s = (f"  target {r['target_rate']:>10,}/s  offered {r['offered_rate']:>12,.0f}/s  "
         f"written {r['events']:>10,} in {r['writer_seconds']:.3f} s = {r['writer_rate']:>12,.0f}/s "
         f"{r['mb_s']:7.1f} MB/s  dropped {r['dropped']:,}")
    if "mismatch" in r:
        s += f"  MISMATCH: {r['mismatch']}"
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="meson build directory")
    ap.add_argument("--threads", type=int, default=1, help="producer threads (default 1: the writer takes the other core of a 2-core box)")
    ap.add_argument("--seconds", type=float, default=1.0, help="duration of each run")
    ap.add_argument("--mode", choices=["malloc", "async"], default="malloc")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--start-rate", type=int, default=250000)
    ap.add_argument("--step", type=float, default=1.25)
    ap.add_argument("--max-rate", type=int, default=20000000)
    ap.add_argument("--settle-ms", type=int, default=200,
                    help="pause between the first event (the tracer starts its writer) and the load; 0 measures a cold start")
    ap.add_argument("--tmpdir", help="where the trace files go (default: $TMPDIR or /tmp); e.g. /dev/shm to take the disk out")
    ap.add_argument("--ring-slots", type=int, help="GPUMEMTRACE_RING_SLOTS (default: the tracer's, 65536)")
    ap.add_argument("--compress", choices=["none", "zstd"], default="none",
                    help="GPUMEMTRACE_COMPRESS (zstd: the writer compresses each flush into a frame)")
    ap.add_argument("--level", type=int, help="GPUMEMTRACE_COMPRESS_LEVEL (default: the tracer's)")
    ap.add_argument("--stacks", help="GPUMEMTRACE_STACKS (default: the tracer's, all); none makes the "
                    "producer several times faster, so that it can offer more than the writer takes")
    ap.add_argument("--vary", type=int, default=0,
                    help="SEED: events of varied sizes, addresses and 8 call sites, 64 live per thread, "
                         "as a program makes them (0, the default: one size, one site, alloc then free)")
    args = ap.parse_args()

    build = os.path.abspath(args.build)
    exe = os.path.join(build, "bench", "writer_throughput")
    lib = os.path.join(build, "src", "libgpumemtrace.so")
    for f in (exe, lib):
        if not os.path.exists(f):
            sys.exit(f"run_writer_throughput: {f} not found (build with ninja -C {args.build})")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUMEMTRACE_")}
    env.update(LD_LIBRARY_PATH=os.path.join(build, "tests", "simcuda"), SIMCUDA_ALLOC_DELAY_NS="0",
               SIMCUDA_MEM_BYTES="1G")
    if args.ring_slots:
        env["GPUMEMTRACE_RING_SLOTS"] = str(args.ring_slots)
    args.zcat = os.path.join(build, "tests", "preload", "gmt-zcat")
    env["GPUMEMTRACE_COMPRESS"] = args.compress  # named either way: zstd is the tracer's default
    if args.stacks:
        env["GPUMEMTRACE_STACKS"] = args.stacks
    if args.compress == "zstd":
        if args.level is not None:
            env["GPUMEMTRACE_COMPRESS_LEVEL"] = str(args.level)
        if not os.path.exists(args.zcat):
            sys.exit(f"run_writer_throughput: {args.zcat} not found (build with ninja -C {args.build})")

    print(f"writer_throughput: threads={args.threads} seconds={args.seconds} mode={args.mode} "
          f"size={'varied (seed %d)' % args.vary if args.vary else args.size} settle_ms={args.settle_ms} on tests/simcuda, ring {args.ring_slots or 65536} slots, flush 100 ms, "
          f"compress {args.compress}{'' if args.level is None else ' level %d' % args.level}, "
          f"stacks {args.stacks or 'default'}; "
          f"{os.cpu_count()} CPUs")
    steps, best, rate = [], None, args.start_rate
    while rate <= args.max_rate:
        r = run_at(exe, lib, env, args, rate)
        steps.append(r)
        print(show(r))
        if not r["trailer"] or r["dropped"] or "mismatch" in r:
            break
        if r["offered_rate"] < 0.95 * rate:
            print("  the producers could not offer the target rate: the machine, not the writer, is the limit")
            best = r
            break
        best = r
        rate = int(rate * args.step)
    print("  no rate limit (raw maximum):")
    raw = run_at(exe, lib, env, args, 0)
    print(show(raw))

    print()
    if best:
        print(f"  highest target with 0 drops: {best['target_rate']:,} events/s; writer sustained "
              f"{best['writer_rate']:,.0f} events/s, {best['mb_s']:.1f} MB/s of trace "
              f"({best['bytes'] / max(best['events'], 1):.0f} bytes/event)")
    else:
        print(f"  even {args.start_rate:,} events/s dropped events: lower --start-rate")
    if raw["trailer"]:
        print(f"  raw maximum: producers offered {raw['offered_rate']:,.0f} events/s; the writer wrote "
              f"{raw['writer_rate']:,.0f} events/s ({raw['mb_s']:.1f} MB/s) and dropped {raw['dropped']:,} "
              f"of {raw['offered']:,}")
    print(json.dumps({"bench": "writer_throughput", "threads": args.threads, "seconds": args.seconds,
                      "settle_ms": args.settle_ms, "ring_slots": args.ring_slots or 65536, "tmpdir": args.tmpdir or tempfile.gettempdir(),
                      "mode": args.mode, "vary": args.vary, "stacks": args.stacks, "compress": args.compress, "level": args.level, "cpus": os.cpu_count(), "best": best, "raw": raw, "steps": steps}))
    sys.exit(0 if best else 1)


if __name__ == "__main__":
    main()
