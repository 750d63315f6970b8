#!/usr/bin/env python3
"""The tracer's own cost per event, measured inside one process: bench/hook_overhead --in-process
under the tracer times each repetition's pairs with the tracer paused on its thread
(gmt_bench_pause(): the wrappers forward at once, CUPTI's callbacks return at once, so what is
left is an empty callback on the tracer's ids) and recording, in alternating order, and reports
the median of the per-repetition differences. Whole processes on the GPU host run in a fast or a
slow mode (the same configuration 40% apart from one process to the next), which the
process-to-process comparisons of run_hook_overhead.py must outvote with many rounds; within one
process both states share the mode, so a difference of ~10 ns per event shows in a few rounds.

    run_hook_inprocess.py --build BUILD [--runtime sim|real] [--mode malloc|async]
                          [--capture cupti-nostacks,interpose-nostacks] [--rounds 5]
                          [--reps 11] [--iters N] [--cpus auto] [--touch KB] [--branches K]

--capture   configurations of run_hook_overhead.py (cupti, cupti-nostacks, interpose, ...), a
            comma list; each round runs each once (one process each), interleaved. Its floors
            too (floor-interpose, floor-cupti-record: bench/floor.h, paused as the tracer is):
            with floor-interpose in the list, each interpose* configuration is also given
            "above floor-interpose", the median over rounds of its added cost less the floor's
            in the same round (issue 30's "<= 50 above floor-interpose", measured, not
            estimated); likewise cupti* above floor-cupti-record
Per configuration it prints the paused and recording medians, and the added cost per event:
the median over rounds of each process's median of per-repetition differences (recording minus
paused, halved: a pair is two events), with every round's figure. Every traced run must have
written every recorded event and dropped none, else PROBLEM lines and exit 1. The last line is
one JSON object. Python 3 standard library only.

What "paused" leaves in place: CUPTI's dispatch to the tracer's callback (which returns at once)
and the preloaded wrappers' forwarding (a call through our symbol, a thread-local test). So the
added cost is the tracer's work above the empty-callback floor of the same path, the issue-30
measure (docs/performance.md), without another library in another process.

Where the library holds CUPTI (the cupti* configurations, floor-cupti-record), each repetition
also times the pairs paused with its callbacks off (hook_overhead --off 1, gmt_bench_cupti()):
the calls with no subscriber, so the same process gives the empty callback's own cost
("callback", paused less off) and the whole tracer against no tracer ("over no subscriber",
recording less off, and as a ratio). Only the wrappers' forwarding is then left in "off".
--touch KB: the program writes a KB-sized working set of its own before each call
(hook_overhead --touch), so that the tracer's code and data are not all in the nearest caches
when a call comes, as in a program that does work between its calls (a Python loop); --sweep KB
the same with code (hook_overhead --sweep: KB of the program's own code run before each call);
--branches K: K thousand branches at their own addresses before each call (hook_overhead
--branches), the branch predictor cold for the tracer's branches, as after an interpreter's loop.
--min-callback-ns N (a test's check, with --sim-callback-ns: each delivered callback costs that
on the double) makes it a PROBLEM when a configuration holding CUPTI has no "off" state or its
empty callback costs less than N ns per event there: the callbacks were not turned off.
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_hook_overhead as rho  # noqa: E402 (runtimes, defaults, configurations, the traced run)


def floor_in_process(name, names):
    """The floor of @name's path in this run, paused as the tracer is: the bare record around
    the same calls (floor-interpose for the wrappers, floor-cupti-record for the CUPTI path), or
    None."""
    if name in rho.FLOORS:
        return None
    interpose = rho.CAPTURES[name][0].get("GPUMEMTRACE_CUPTI") == "0"
    f = "floor-interpose" if interpose else "floor-cupti-record"
    return f if f in names else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--runtime", choices=["sim", "real"], default="sim")
    ap.add_argument("--mode", choices=["malloc", "async"], default="async")
    ap.add_argument("--capture", default="cupti-nostacks,interpose-nostacks")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=11)
    ap.add_argument("--iters", type=int)
    ap.add_argument("--cudart-dir")
    ap.add_argument("--sim-callback-ns", type=int, default=0,
                    help="sim only: SIMCUPTI_CALLBACK_NS, what each delivered callback costs")
    ap.add_argument("--cpus", default="none", help="as run_hook_overhead.py --cpus")
    ap.add_argument("--touch", type=int, default=0,
                    help="KB the program writes before each call (hook_overhead --touch)")
    ap.add_argument("--sweep", type=int, default=0,
                    help="KB of code the program runs before each call (hook_overhead --sweep)")
    ap.add_argument("--branches", type=int, default=0,
                    help="thousands of branches the program runs before each call "
                    "(hook_overhead --branches)")
    ap.add_argument("--min-callback-ns", type=float,
                    help="a check: the empty callback (paused less off) at least this, per event")
    args = ap.parse_args()
    rho.PIN = rho.pick_cpus(args.cpus)

    build = os.path.abspath(args.build)
    exe = os.path.join(build, "bench", "hook_overhead")
    lib = os.path.join(build, "src", "libgpumemtrace.so")
    for f in (exe, lib):
        if not os.path.exists(f):
            sys.exit(f"run_hook_inprocess: {f} not found (build with ninja -C {args.build})")
    d = rho.DEFAULTS[(args.runtime, args.mode)]
    iters = args.iters or d["iters"]
    env = rho.runtime_env(args.runtime, build, args.cudart_dir, "run_hook_inprocess",
                          args.sim_callback_ns)
    names = args.capture.split(",")
    for n in names:
        if n not in rho.CAPTURES and n not in rho.FLOORS:
            sys.exit(f"run_hook_inprocess: unknown --capture {n!r} "
                     f"({', '.join(list(rho.CAPTURES) + list(rho.FLOORS))})")
    cmd = [exe, "--mode", args.mode, "--iters", str(iters), "--reps", str(args.reps),
           "--warmup", str(d["warmup"]), "--gap-ms", str(d["gap_ms"]), "--in-process", "1",
           "--off", "1"] + (["--touch", str(args.touch)] if args.touch else []) + (
               ["--sweep", str(args.sweep)] if args.sweep else []) + (
               ["--branches", str(args.branches)] if args.branches else [])
    print(f"hook_overhead --in-process: runtime={args.runtime} mode={args.mode} iters={iters} "
          f"reps={args.reps} rounds={args.rounds} touch={args.touch} KB sweep={args.sweep} KB branches={args.branches}k, "
          f"configurations "
          f"{', '.join(names)}")
    print(f"  pinned to CPUs: {','.join(map(str, rho.PIN)) if rho.PIN else 'not pinned'}")

    per = {n: [] for n in names}
    problems = []
    for rnd in range(1, args.rounds + 1):
        row = []
        for n in names:
            if n in rho.FLOORS:
                res, facts = rho.run_once(cmd, env, True, lib, floor=rho.FLOORS[n])
            else:
                res, facts = rho.run_once(cmd, env, True, lib, rho.CAPTURES[n][0])
            if res["runtime"] != args.runtime:
                sys.exit(f"run_hook_inprocess: asked for the {args.runtime} runtime, the program "
                         f"ran on {res['runtime']} (check LD_LIBRARY_PATH)")
            if not res.get("in_process"):
                sys.exit("run_hook_inprocess: the program did not run in-process (an old build?)")
            if n in rho.FLOORS:
                why = rho.floor_problem(f"{n} round {rnd}", facts)
                # paused, a floor records nothing: floor-interpose records exactly the
                # program's recorded events; floor-cupti-record also a few driver calls of the
                # set-up (the stream, the pool's settings), never the paused repetitions'
                line = facts["floor"] or {}
                extra = (line.get("records") or 0) - facts["expected"]
                if not why and line.get("mode") == "record" and (
                        extra < 0 or extra > (0 if n == "floor-interpose" else 64)):
                    why = (f"{n} round {rnd}: the floor recorded {line['records']} events, the "
                           f"program {facts['expected']} (its pause not honoured?)")
                if why:
                    problems.append(why)
            elif not facts["trailer"]:
                problems.append(f"{n} round {rnd}: no trace file or no trailer ({facts['stderr'] or 'no stderr'})")
            elif facts["dropped"] != 0:
                problems.append(f"{n} round {rnd}: the tracer dropped {facts['dropped']} events")
            elif facts["events"] != facts["expected"]:
                problems.append(f"{n} round {rnd}: trace has {facts['events']} events, the program "
                                f"recorded {facts['expected']}")
            elif args.runtime == "real" and not rho.capture_matches({"capture": facts["capture"]},
                                                                    rho.CAPTURES[n][1]):
                problems.append(f"{n} round {rnd}: header capture {facts['capture']} is not the {n} path")
            per[n].append(res)
            row.append(f"{n} paused {res['paused_median_ns_per_pair']:8.1f} recording "
                       f"{res['recording_median_ns_per_pair']:8.1f} added "
                       f"{res['added_median_ns_per_pair'] / 2:7.1f} ns/event")
        print(f"  round {rnd:2d}: " + "  |  ".join(row))

    figures = {}
    print()
    for n in names:
        rs = per[n]
        added = [r["added_median_ns_per_pair"] / 2 for r in rs]
        paused = statistics.median(r["paused_median_ns_per_pair"] for r in rs)
        recording = statistics.median(r["recording_median_ns_per_pair"] for r in rs)
        figures[n] = {"paused_ns_per_pair": round(paused, 1), "recording_ns_per_pair": round(recording, 1),
                      "added_ns_per_event": round(statistics.median(added), 1),
                      "added_ns_per_event_rounds": [round(x, 1) for x in added]}
        print(f"  {n:<24} paused {paused:8.1f} ns/pair, recording {recording:8.1f} ns/pair: the tracer "
              f"adds {statistics.median(added):.1f} ns/event above its empty callback "
              f"(median of {len(added)} rounds: {', '.join(f'{x:.0f}' for x in added)})")
    for n in names:
        rs = [r for r in per[n] if r.get("off_median_ns_per_pair") is not None]
        holds_cupti = n.startswith("floor-cupti") or (
            n in rho.CAPTURES and rho.CAPTURES[n][0].get("GPUMEMTRACE_CUPTI") != "0")
        if args.min_callback_ns is not None and holds_cupti and len(rs) != len(per[n]):
            problems.append(f"{n}: no state with the CUPTI callbacks off (gmt_bench_cupti)")
        if not rs:
            continue
        cb = [r["callback_median_ns_per_pair"] / 2 for r in rs]
        over = [(r["recording_median_ns_per_pair"] - r["off_median_ns_per_pair"]) / 2 for r in rs]
        ratio = [r["recording_median_ns_per_pair"] / r["off_median_ns_per_pair"] for r in rs]
        off = statistics.median(r["off_median_ns_per_pair"] for r in rs)
        figures[n].update({"off_ns_per_pair": round(off, 1),
                           "callback_ns_per_event": round(statistics.median(cb), 1),
                           "callback_ns_per_event_rounds": [round(x, 1) for x in cb],
                           "over_off_ns_per_event": round(statistics.median(over), 1),
                           "ratio_to_off": round(statistics.median(ratio), 3)})
        if args.min_callback_ns is not None and statistics.median(cb) < args.min_callback_ns:
            problems.append(f"{n}: the empty callback costs {statistics.median(cb):.1f} ns per "
                            f"event over the callbacks off, less than {args.min_callback_ns:g}: "
                            f"they were not off")
        print(f"  {n:<24} callbacks off {off:8.1f} ns/pair: the empty callback itself "
              f"{statistics.median(cb):.1f} ns/event (rounds: {', '.join(f'{x:.0f}' for x in cb)}); "
              f"recording over no subscriber {statistics.median(over):.1f} ns/event, "
              f"{statistics.median(ratio):.3f}x")
    for n in names:
        f = floor_in_process(n, names)
        if not f:
            continue
        above = [a["added_median_ns_per_pair"] / 2 - b["added_median_ns_per_pair"] / 2
                 for a, b in zip(per[n], per[f])]
        figures[n]["floor"] = f
        figures[n]["above_floor_ns_per_event"] = round(statistics.median(above), 1)
        figures[n]["above_floor_ns_per_event_rounds"] = [round(x, 1) for x in above]
        print(f"  {n:<24} above {f}: {statistics.median(above):.1f} ns/event (median of the "
              f"rounds' differences: {', '.join(f'{x:.0f}' for x in above)})")
    for p in problems:
        print(f"  PROBLEM: {p}")
    print(json.dumps({"bench": "hook_inprocess", "runtime": args.runtime, "mode": args.mode,
                      "iters": iters, "reps": args.reps, "rounds": args.rounds, "cpus": rho.PIN,
                      "variants": figures, "ok": not problems}))
    sys.exit(0 if not problems else 1)


if __name__ == "__main__":
    main()
