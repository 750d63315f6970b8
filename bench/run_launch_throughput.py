#!/usr/bin/env python3
"""Launch throughput: bench/launch_throughput (empty-kernel launches per second) without the tracer
and under it, interleaved after one discarded warm-up round (plain, cupti, interpose, plain,
cupti, interpose, ...), so that drift of clocks and load hits every variant alike. Prints the
median launches/s of each variant and its ratio to plain, for the submit rate (the launch calls
alone: the CPU cost a tracer could add) and end to end (launches + synchronize); the goal is a
ratio >= --goal (0.98) for every traced variant, on both. Every traced run must have written its trace (trailer, the program's 2
events, 0 dropped) with the capture path the variant asks for, or the figures measured something
else.

    run_launch_throughput.py --build BUILD [--exe PATH] [--variants plain,cupti,interpose]
                             [--rounds 9] [--launches N] [--reps R] [--warmup W] [--goal 0.98]

Variants:
  plain      no tracer
  cupti      LD_PRELOAD=libgpumemtrace.so with its defaults (CUPTI callbacks; header capture
             must include "cupti")
  interpose  LD_PRELOAD=libgpumemtrace.so, GPUMEMTRACE_CUPTI=0 (capture must be ["interpose"])
  injection  CUDA_INJECTION64_PATH=libgpumemtrace.so only (capture must include "cupti")
  cupti-driver  CUPTI without the runtime domain's callbacks (GPUMEMTRACE_CUPTI_RUNTIME=0)

The program is BUILD/bench/launch_throughput (meson target, built with nvcc -cudart shared; or
--exe). Needs a GPU: exits 77 when nvidia-smi -L fails. The last line of output is one JSON
object with every figure. Exit status 1 when a trace check failed or a ratio missed the goal.
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
from run_hook_overhead import have_gpu, read_trailer, real_cudart_dir  # noqa: E402

VARIANTS = {
    "plain": {"preload": False, "env": {}, "capture": None},
    "cupti": {"preload": True, "env": {}, "capture": "cupti"},
    "interpose": {"preload": True, "env": {"GPUMEMTRACE_CUPTI": "0"}, "capture": "interpose-only"},
    "cupti-driver": {"preload": True, "env": {"GPUMEMTRACE_CUPTI_RUNTIME": "0"}, "capture": "cupti"},
    "injection": {"preload": False, "inject": True, "env": {}, "capture": "cupti"},
}


def capture_ok(header, want):
    cap = (header or {}).get("capture") or []
    if want == "cupti":
        return "cupti" in cap
    if want == "interpose-only":
        return cap == ["interpose"]
    return True


def run_once(cmd, base_env, variant, lib):
    v = VARIANTS[variant]
    env = dict(base_env)
    env.update(v["env"])
    outdir = None
    if v["preload"] or v.get("inject"):
        outdir = tempfile.mkdtemp(prefix=f"gmt-bench-launch-{variant}-")
        env["GPUMEMTRACE_OUTPUT_DIR"] = outdir
        if v["preload"]:
            env["LD_PRELOAD"] = lib
        else:
            env["CUDA_INJECTION64_PATH"] = lib
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            sys.exit(f"run_launch_throughput: {variant}: {' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}")
        res = json.loads(p.stdout.strip().splitlines()[-1])
        if not outdir:
            return res, None
        path, header, trailer, _ = read_trailer(outdir)
        problems = []
        if not path or not trailer:
            problems.append(f"no trace file or no trailer ({p.stderr.strip()[:200] or 'no stderr'})")
        else:
            if trailer["dropped"] != 0:
                problems.append(f"dropped {trailer['dropped']} events")
            events = trailer["events"]
            if events != res["events"]:
                problems.append(f"trace has {events} events, the program made {res['events']}")
            if not capture_ok(header, v["capture"]):
                problems.append(f"header capture {header.get('capture')} (coverage_reason "
                                f"{header.get('coverage_reason')!r}) is not the {variant} path")
        return res, problems
    finally:
        if outdir:
            shutil.rmtree(outdir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--exe", help="the benchmark program (default BUILD/bench/launch_throughput)")
    ap.add_argument("--variants", default="plain,cupti,interpose")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--launches", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=20000)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--goal", type=float, default=0.98)
    ap.add_argument("--cudart-dir")
    args = ap.parse_args()

    build = os.path.abspath(args.build)
    exe = os.path.abspath(args.exe) if args.exe else os.path.join(build, "bench", "launch_throughput")
    lib = os.path.join(build, "src", "libgpumemtrace.so")
    for f in (exe, lib):
        if not os.path.exists(f):
            sys.exit(f"run_launch_throughput: {f} not found (ninja -C {args.build} bench/launch_throughput)")
    variants = args.variants.split(",")
    for v in variants:
        if v not in VARIANTS:
            sys.exit(f"run_launch_throughput: unknown variant {v}")
    if "plain" not in variants:
        variants.insert(0, "plain")
    if not have_gpu():
        print("run_launch_throughput: no GPU (nvidia-smi -L failed): skipped")
        sys.exit(77)
    cudart = real_cudart_dir(args.cudart_dir)
    if not cudart:
        sys.exit("run_launch_throughput: libcudart.so.13 not found; give --cudart-dir")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUMEMTRACE_")}
    env.pop("LD_PRELOAD", None)
    env.pop("CUDA_INJECTION64_PATH", None)
    env["LD_LIBRARY_PATH"] = cudart + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")

    cmd = [exe, "--launches", str(args.launches), "--reps", str(args.reps), "--warmup", str(args.warmup),
           "--batch", str(args.batch)]
    print(f"launch_throughput: variants {','.join(variants)}, {args.rounds} rounds (+1 warm-up), "
          f"{args.launches} launches x {args.reps} reps per process, {args.warmup} warm-up launches")
    print(f"  command: {' '.join(cmd)}")
    samples = {v: [] for v in variants}
    e2e = {v: [] for v in variants}
    problems = []
    for rnd in range(args.rounds + 1):
        line = []
        for v in variants:
            res, probs = run_once(cmd, env, v, lib)
            if res.get("cudart") != "shared":
                problems.append(f"the program runs a {res.get('cudart')} cudart; interposition needs shared")
            if rnd == 0:
                line.append(f"{v} {res['median_launches_per_s']:.0f}/{res['median_e2e_launches_per_s']:.0f}")
                continue
            samples[v].append(res["median_launches_per_s"])
            e2e[v].append(res["median_e2e_launches_per_s"])
            line.append(f"{v} {res['median_launches_per_s']:9.0f}/{res['median_e2e_launches_per_s']:<9.0f}")
            for p in probs or []:
                problems.append(f"round {rnd} {v}: {p}")
        print(f"  {'warm-up' if rnd == 0 else f'round {rnd:2d}'}: " + "  ".join(line) + " launches/s (submit/end-to-end)"
              + (" (discarded)" if rnd == 0 else ""))

    print()
    summary = {"bench": "launch_throughput", "launches": args.launches, "reps": args.reps, "batch": args.batch,
               "rounds": args.rounds, "goal": args.goal, "variants": {}}
    goal_missed = []
    for what, data in (("submit", samples), ("end-to-end", e2e)):
        med = {v: statistics.median(x) for v, x in data.items()}
        base = med["plain"]
        for v in variants:
            ratio = med[v] / base if base > 0 else 0.0
            paired = statistics.median(t / p for t, p in zip(data[v], data["plain"]))
            fig = summary["variants"].setdefault(v, {})
            key = "" if what == "submit" else "e2e_"
            fig.update({f"median_{key}launches_per_s": round(med[v], 1), f"{key}ratio": round(ratio, 4),
                        f"{key}ratio_paired": round(paired, 4), f"{key}samples": data[v]})
            verdict = ""
            if v != "plain":
                met = ratio >= args.goal
                verdict = f"  goal >= {args.goal}: {'met' if met else 'NOT MET'}"
                if not met:
                    goal_missed.append(f"{v} {what} {ratio:.3f}")
            print(f"  {what:<10} {v:<10} median {med[v]:12.0f} launches/s  ratio {ratio:.3f} "
                  f"(median of per-round ratios {paired:.3f}){verdict}")
    problems = list(dict.fromkeys(problems))
    for p in problems:
        print(f"  PROBLEM: {p}")
    summary.update(ok=not problems and not goal_missed, problems=problems, goal_missed=goal_missed)
    print(json.dumps(summary))
    sys.exit(0 if summary["ok"] else 1)


if __name__ == "__main__":
    main()
