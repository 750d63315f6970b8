#!/usr/bin/env python3
"""Where the tracer's time goes inside the application's calls, part by part: bench/hook_overhead
under the tracer with GPUMEMTRACE_SELF_PROFILE (src/capture/selfprof.h), for each tracer
configuration asked, a few rounds each; prints per part the probes per recorded event and the
nanoseconds per probe and per recorded event (median over rounds, the probe's own cost taken
off), so that the cost above the CUPTI floor that run_hook_overhead.py measures as a whole is
split into its parts (a driver query, a stack, the ring) on the machine it runs on.

    run_self_profile.py --build BUILD [--runtime sim|real] [--mode malloc|async]
                        [--capture cupti-nostacks,cupti] [--rounds 5] [--iters N] [--reps R]

--capture   configurations of run_hook_overhead.py (cupti, cupti-nostacks, cupti-native,
            cupti-noruntime-nostacks, interpose...), a comma list
--runtime   as run_hook_overhead.py: sim (tests/simcuda) or real (exits 77 with no GPU)

Parts nest: a callback part (cupti_driver_exit) includes its inner parts (params, stack,
stamp, emit, pool_reading); `own` is a callback part minus the inner parts measured inside it
and their probes' own cost. Under interposition alone (interpose, interpose-nostacks)
`wrap_record` is the wrappers' recording around the real call (device_query, stack, stamp,
emit inside it).
The last line is one JSON object with every figure. Python 3 standard library only.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_hook_overhead as rho  # noqa: E402 (the same runtimes, defaults and configurations)

INNER_OF_DRIVER_EXIT = ("exit_prep", "params", "stack", "meminfo", "stamp", "emit", "pool_reading")
INNER_OF_WRAP_RECORD = ("device_query", "stack", "stamp", "emit")


def own_row(rows, outer, inners, probe):
    """@outer's ns per event less its inner parts and their probes' own cost."""
    inner = sum(rows[p]["ns_per_event"] for p in inners if p in rows)
    inner_probes = sum(rows[p]["probes_per_event"] for p in inners if p in rows)
    return {"probes_per_event": rows[outer]["probes_per_event"], "ns_per_probe": None,
            "ns_per_event": rows[outer]["ns_per_event"] - inner - inner_probes * probe}


def one_run(cmd, env, lib, extra):
    out = tempfile.mkdtemp(prefix="gmt-selfprof-")
    try:
        prof = os.path.join(out, "self.json")
        e = dict(env, LD_PRELOAD=lib, GPUMEMTRACE_OUTPUT_DIR=out, GPUMEMTRACE_SELF_PROFILE=prof,
                 **extra)
        p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=600,
                           preexec_fn=rho.pinned())
        if p.returncode != 0:
            sys.exit(f"run_self_profile: {cmd[0]} failed ({p.returncode}): {p.stderr[-500:]}")
        bench = json.loads(p.stdout.strip().splitlines()[-1])
        with open(prof) as f:
            doc = json.load(f)
        return bench, doc
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--runtime", choices=["sim", "real"], default="sim")
    ap.add_argument("--mode", choices=["malloc", "async"], default="async")
    ap.add_argument("--capture", default="cupti-nostacks,cupti")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cudart-dir")
    ap.add_argument("--cpus", default="none", help="as run_hook_overhead.py --cpus")
    args = ap.parse_args()
    rho.PIN = rho.pick_cpus(args.cpus)

    build = os.path.abspath(args.build)
    exe = os.path.join(build, "bench", "hook_overhead")
    lib = os.path.join(build, "src", "libgpumemtrace.so")
    d = rho.DEFAULTS[(args.runtime, args.mode)]
    iters = args.iters or d["iters"]
    env = rho.runtime_env(args.runtime, build, args.cudart_dir, "run_self_profile")
    cmd = [exe, "--mode", args.mode, "--iters", str(iters), "--reps", str(args.reps),
           "--warmup", str(d["warmup"]), "--gap-ms", str(d["gap_ms"])]
    names = args.capture.split(",")
    for n in names:
        if n not in rho.CAPTURES:
            sys.exit(f"run_self_profile: unknown --capture {n!r} ({', '.join(rho.CAPTURES)})")
    print(f"self-profile: runtime={args.runtime} mode={args.mode} iters={iters} reps={args.reps} "
          f"rounds={args.rounds}, configurations {', '.join(names)}")
    per = {n: [] for n in names}
    for _ in range(args.rounds):  # interleaved: A B A B ...
        for n in names:
            bench, doc = one_run(cmd, env, lib, rho.CAPTURES[n][0])
            per[n].append((bench, doc))
    result = {}
    for n in names:
        rows = {}
        parts = sorted({p for _, doc in per[n] for p in doc["parts"]})
        for part in parts:
            ns_probe, ns_event, per_event = [], [], []
            for bench, doc in per[n]:
                v = doc["parts"].get(part)
                if not v or not v["count"]:
                    continue
                net = max(v["ns"] - v["count"] * doc["probe_ns"], 0.0)
                events = bench["events"]
                ns_probe.append(net / v["count"])
                ns_event.append(net / events)
                per_event.append(v["count"] / events)
            rows[part] = {"probes_per_event": statistics.median(per_event),
                          "ns_per_probe": statistics.median(ns_probe),
                          "ns_per_event": statistics.median(ns_event)}
        # a part's time holds its inner parts' and their probes' own cost: both come off (the
        # CUPTI driver EXIT; the interposed wrappers' recording, GPUMEMTRACE_CUPTI=0)
        probe = statistics.median(doc["probe_ns"] for _, doc in per[n])
        for outer, inners in (("cupti_driver_exit", INNER_OF_DRIVER_EXIT),
                              ("wrap_record", INNER_OF_WRAP_RECORD)):
            if outer in rows:
                rows[outer + " own"] = own_row(rows, outer, inners, probe)
        pair = statistics.median(b["median_ns_per_pair"] for b, _ in per[n])
        result[n] = {"median_ns_per_pair": pair, "parts": rows,
                     "probe_ns": statistics.median(doc["probe_ns"] for _, doc in per[n])}
        print(f"\n{n}: {pair:.0f} ns per alloc+free pair with the probes on "
              f"(probe pair {result[n]['probe_ns']:.1f} ns, taken off below)")
        print(f"  {'part':28s} {'probes/event':>12s} {'ns/probe':>9s} {'ns/event':>9s}")
        for part, r in rows.items():
            npp = "" if r["ns_per_probe"] is None else f"{r['ns_per_probe']:9.1f}"
            print(f"  {part:28s} {r['probes_per_event']:12.3f} {npp:>9s} {r['ns_per_event']:9.1f}")
    print(json.dumps({"bench": "self_profile", "runtime": args.runtime, "mode": args.mode,
                      "configurations": result}))


if __name__ == "__main__":
    main()
