#!/usr/bin/env python3
"""The tracer's work per event counted in instructions, under callgrind: what recording adds on
the application's thread, a figure that does not move with the machine's speed or load.

    run_hook_instructions.py --build BUILD [--capture cupti-nostacks,interpose-nostacks]
                             [--mode async|malloc] [--iters 4000] [--top 12] [--json FILE]
                             [--max-added NAME=N,...] [--keep DIR]

Each configuration (run_hook_overhead.py's names) runs bench/hook_overhead --in-process 1 with
one repetition on the simulated runtime under `valgrind --tool=callgrind --separate-threads=yes`.
The repetition times its pairs paused (gmt_bench_pause(): the wrappers forward at once, CUPTI's
callbacks return at once) in one function, timed_paused(), and recording in another,
timed_recording(); their inclusive instruction counts on the program's thread differ by what the
tracer adds there, divided by the events (two per pair): "added instructions per event". The
writer's and the compressor's threads are counted apart ("other threads per event": where the
formatting goes, off the application's thread). The top functions of libgpumemtrace on the
program's thread, exclusive, per event, say where the added instructions are.

Why instructions: the GPU host runs the same code 2-3x slower than a development machine, and
its timings spread from one process to the next (docs/performance.md); an instruction count
only moves when the code does. It is not a time: a cache miss or a locked instruction costs
more than its one count, so it guides, and the timed figures (run_hook_inprocess.py on the GPU
host) decide. Pool readings are due by time (one per pool per millisecond), so under callgrind's
slowdown a few more are counted than at full speed (~600 instructions each); --mode malloc has
none, and counts the same to the instruction from one run to the next: meson's hook-instructions
test (suite bench) holds the figures under ceilings there (--max-added), so that a change that
adds work to every event fails on a machine with no GPU (docs/performance.md).

Exits 77 when valgrind is not installed. The last line is one JSON object. Python 3 standard
library only.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_hook_overhead as rho  # noqa: E402 (configurations, the runtime's environment)

LIB = "libgpumemtrace.so"
# callgrind_annotate's rows: "  1,234,567 (12.34%)  file:function [object]"
ROW = re.compile(r"^\s*([0-9,]+)\s+(?:\([^)]*\)\s+)?(\S.*?)(?:\s+\[(.*)\])?\s*$")


def annotate(path, inclusive):
    """(Ir, function, object) rows of one callgrind output file."""
    cmd = ["callgrind_annotate", "--threshold=100", f"--inclusive={'yes' if inclusive else 'no'}", path]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit(f"run_hook_instructions: {' '.join(cmd)} failed: {p.stderr.strip()}")
    rows, body = [], False
    for line in p.stdout.splitlines():
        if line.startswith("Ir") or "file:function" in line:
            body = True
            continue
        m = ROW.match(line) if body else None
        if m and "PROGRAM TOTALS" not in line:
            rows.append((int(m.group(1).replace(",", "")), m.group(2), m.group(3) or ""))
    return rows


def totals(path):
    """The PROGRAM TOTALS of one callgrind output file."""
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("totals:") or line.startswith("summary:"):
                return int(line.split()[1])
    return 0


def function_ir(rows, name):
    """The inclusive count of the function called @name (file:name), or None."""
    for ir, fn, _ in rows:
        if fn.rsplit(":", 1)[-1] == name:
            return ir
    return None


def measure(exe, env, capture, mode, iters, top, keep):
    """One configuration under callgrind: its figures (a dict)."""
    outdir = tempfile.mkdtemp(prefix="gmt-bench-instr-")
    try:
        run_env = dict(env)
        if capture in rho.FLOORS:  # a floor library, paused as the tracer is (bench/floor.h)
            lib, floor_env = rho.FLOORS[capture]
            run_env.update(floor_env)
            run_env.pop("CUDA_INJECTION64_PATH", None)
            run_env["LD_PRELOAD"] = os.path.join(os.path.dirname(os.path.dirname(exe)), "bench", lib)
        else:
            run_env.update(rho.CAPTURES[capture][0])
            run_env["LD_PRELOAD"] = os.path.join(os.path.dirname(os.path.dirname(exe)), "src", LIB)
        run_env["GPUMEMTRACE_OUTPUT_DIR"] = outdir
        cmd = ["valgrind", "--tool=callgrind", "--separate-threads=yes",
               f"--callgrind-out-file={outdir}/cg.out", exe, "--mode", mode, "--iters", str(iters),
               "--reps", "1", "--warmup", str(iters), "--gap-ms", "20", "--in-process", "1"]
        p = subprocess.run(cmd, env=run_env, capture_output=True, text=True, timeout=1200)
        if p.returncode != 0:
            sys.exit(f"run_hook_instructions: {capture}: exited {p.returncode}: {p.stderr.strip()[-2000:]}")
        res = json.loads(p.stdout.strip().splitlines()[-1])
        if res.get("runtime") != "sim" or not res.get("in_process"):
            sys.exit(f"run_hook_instructions: {capture}: not the simulated runtime in-process: {res}")
        files = sorted(glob.glob(f"{outdir}/cg.out-*"))
        main_file = next((f for f in files if f.endswith("-01")), None)
        if not main_file:
            sys.exit(f"run_hook_instructions: {capture}: no callgrind output for the main thread in {outdir}")
        rows = annotate(main_file, True)
        recording, paused = function_ir(rows, "timed_recording"), function_ir(rows, "timed_paused")
        if recording is None or paused is None:
            sys.exit(f"run_hook_instructions: {capture}: timed_recording/timed_paused not in the "
                     "profile (an old hook_overhead?)")
        events = 2 * iters
        others = sum(totals(f) for f in files if f != main_file)
        own = [(ir, fn) for ir, fn, obj in annotate(main_file, False) if obj.endswith(LIB + ".0.1.0")
               or os.path.basename(obj).startswith(LIB)]
        # every event of the run: the warm-up's, the paused repetition's (none recorded) and the
        # recording's; the exclusive counts of the library's functions cover the recorded ones
        recorded = 2 * (iters + iters)
        if keep:
            for f in files:
                shutil.copy(f, os.path.join(keep, f"{capture}-{os.path.basename(f)}"))
        return {"added_instructions_per_event": round((recording - paused) / events, 1),
                "paused_instructions_per_pair": round(paused / iters, 1),
                "recording_instructions_per_pair": round(recording / iters, 1),
                "other_threads_instructions_per_event": round(others / recorded, 1),
                "top": [{"function": fn.rsplit(":", 1)[-1], "per_event": round(ir / recorded, 1)}
                        for ir, fn in sorted(own, reverse=True)[:top]]}
    finally:
        shutil.rmtree(outdir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--capture", default="cupti-nostacks,interpose-nostacks")
    ap.add_argument("--mode", choices=["malloc", "async"], default="async")
    ap.add_argument("--iters", type=int, default=4000, help="pairs per state (default 4000)")
    ap.add_argument("--top", type=int, default=12, help="functions of the library listed (default 12)")
    ap.add_argument("--max-added", default="",
                    help="NAME=N,...: exit 1 when configuration NAME adds more than N instructions per event")
    ap.add_argument("--keep", help="copy the callgrind files into this directory")
    ap.add_argument("--json", help="also write the JSON line to this file")
    args = ap.parse_args()

    if not shutil.which("valgrind") or not shutil.which("callgrind_annotate"):
        print("run_hook_instructions: valgrind (callgrind) is not installed: skipped")
        sys.exit(77)
    build = os.path.abspath(args.build)
    exe = os.path.join(build, "bench", "hook_overhead")
    if not os.path.exists(exe) or not os.path.exists(os.path.join(build, "src", LIB)):
        sys.exit(f"run_hook_instructions: build {build} has no bench/hook_overhead or src/{LIB}")
    names = args.capture.split(",")
    for n in names:
        if n not in rho.CAPTURES and n not in rho.FLOORS:
            sys.exit(f"run_hook_instructions: unknown --capture {n!r} "
                     f"({', '.join(list(rho.CAPTURES) + list(rho.FLOORS))})")
    ceilings = {}
    for item in filter(None, args.max_added.split(",")):
        name, _, value = item.partition("=")
        try:
            ceilings[name] = float(value)
        except ValueError:
            sys.exit(f"run_hook_instructions: --max-added {item!r}: not NAME=NUMBER")
        if name not in names:
            sys.exit(f"run_hook_instructions: --max-added {item!r}: {name} is not in --capture")
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    env = rho.runtime_env("sim", build, None, "run_hook_instructions")

    print(f"hook_overhead --in-process under callgrind: mode={args.mode} iters={args.iters}, "
          f"configurations {', '.join(names)}")
    figures, problems = {}, []
    for n in names:
        f = measure(exe, env, n, args.mode, args.iters, args.top, args.keep)
        figures[n] = f
        print(f"\n{n}: the tracer adds {f['added_instructions_per_event']} instructions per event on the "
              f"program's thread (paused {f['paused_instructions_per_pair']} per pair, recording "
              f"{f['recording_instructions_per_pair']}); other threads {f['other_threads_instructions_per_event']} per event")
        for t in f["top"]:
            print(f"    {t['per_event']:8.1f}  {t['function']}")
        if n in ceilings and f["added_instructions_per_event"] > ceilings[n]:
            problems.append(f"{n}: {f['added_instructions_per_event']} instructions per event, more than "
                            f"its ceiling {ceilings[n]:g} (--max-added)")
    for p in problems:
        print(f"PROBLEM: {p}")
    line = json.dumps({"bench": "hook_instructions", "mode": args.mode, "iters": args.iters,
                       "configurations": figures, "ok": not problems})
    print(line)
    if args.json:
        with open(args.json, "w") as f:
            f.write(line + "\n")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
