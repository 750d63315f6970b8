#!/usr/bin/env python3
"""Issue 30's tensor row measured inside one process: a 1 MiB CUDA tensor made and dropped in a
loop with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync (each tensor one cudaMallocAsync and
one cudaFreeAsync, two CUDA-level events), under `gpumemtrace run` with the tracer's defaults.

    run_torch_async_inprocess.py --build BUILD [--rounds 5] [--iters 20000] [--reps 7]
                                 [--configs all,none,interpose-all,interpose-none]

Whole processes on the GPU host run at speeds 40-80% apart (docs/performance.md), more than the
cost to be measured, so the states are timed in the same process, each repetition rotating
their order, the figures the medians of per-repetition ratios and differences:
  off        the tracer paused on the thread (gmt_bench_pause) and its CUPTI callbacks off for
             the process (gmt_bench_cupti): the calls cost what they cost with no subscriber
             (only the wrappers' forwarding is left)
  paused     paused, the callbacks on: CUPTI's dispatch to a callback that returns at once, the
             floor of any CUPTI tracer of these calls
  recording  the tracer as a user runs it
A configuration is a process: `all` (the defaults: native and Python stacks), `none` (stacks
off), and the same with GPUMEMTRACE_CUPTI=0 (`interpose-*`: the wrappers alone record, there is
no subscriber, "off" is "paused"). Each round runs each configuration once, interleaved.
Prints per configuration the medians of recording/off (the row: <= 1.10x) and paused/off (the
CUPTI floor), with every round's figure. --cpus auto pins the program, the tracer's writer and
torch's own threads to two CPUs, where the writer's work (a few hundred ns per event) is taken
from the program whenever they share one (docs/performance.md): run it unpinned too.
--self-profile: each process also runs with
GPUMEMTRACE_SELF_PROFILE, and the tracer's parts are printed per recorded tensor (probes and ns:
how many callbacks of each site a tensor costs, where the time goes; the probes' own cost is in
the figures, so the ratios of that run are not the plain tracer's). Exits 77 without a GPU or
torch (--sim: on the torch
double of tests/torchsim, for its test: run_torchsim.py benches). The last line is one JSON
object. Python 3 standard library only.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_hook_overhead as rho  # noqa: E402 (the CPU pinning)

WARMUP = 2000  # tensors made before the timed repetitions (recorded)

CHILD = r'''
import ctypes, json, statistics, sys, time
WARMUP = @WARMUP@
import torch
iters, reps = int(sys.argv[1]), int(sys.argv[2])
torch.cuda.init()
me = ctypes.CDLL(None)  # the preloaded tracer's exports
pause, cupti = me.gmt_bench_pause, me.gmt_bench_cupti
pause.argtypes = cupti.argtypes = [ctypes.c_int]
cupti.restype = ctypes.c_int

def leaf():
    t = torch.empty(1 << 18, device="cuda")  # 1 MiB of float32
    del t

def loop(n):
    for _ in range(n):
        leaf()

def timed(state):
    if state == "off":
        cupti(0)
    if state != "recording":
        pause(1)
    try:
        torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        loop(iters)
        torch.cuda.synchronize()
        return (time.perf_counter_ns() - t0) / iters
    finally:
        if state != "recording":
            pause(0)
        if state == "off":
            cupti(1)

loop(WARMUP)
torch.cuda.synchronize()
has_cupti = cupti(1) >= 0
states = ["off", "paused", "recording"] if has_cupti else ["paused", "recording"]
rows = []
for r in range(reps):
    k = r % len(states)
    row = {}
    for s in states[k:] + states[:k]:
        row[s] = timed(s)
    rows.append(row)
print(json.dumps({"states": states, "reps": rows,
                  "backend": torch.cuda.get_allocator_backend()}))
'''.replace("@WARMUP@", str(WARMUP))

CONFIGS = {
    "all": {},
    "none": {"GPUMEMTRACE_STACKS": "none"},
    "interpose-all": {"GPUMEMTRACE_CUPTI": "0"},
    "interpose-none": {"GPUMEMTRACE_CUPTI": "0", "GPUMEMTRACE_STACKS": "none"},
}


def run(gmt, config, args, tmp):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUMEMTRACE_")}
    env["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
    env.pop("CUDA_INJECTION64_PATH", None)
    env.update(CONFIGS[config])
    prof = os.path.join(tmp, config + "-profile.json")
    if args.self_profile:
        env["GPUMEMTRACE_SELF_PROFILE"] = prof
    out = os.path.join(tmp, config)
    p = subprocess.run([gmt, "run", "-o", out, "--", sys.executable, "-c", CHILD,
                        str(args.iters), str(args.reps)], env=env, capture_output=True,
                       text=True, timeout=600, preexec_fn=rho.pinned())
    doc = None
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            doc = json.loads(line)
            break
    if p.returncode != 0 or doc is None:
        sys.exit(f"run_torch_async_inprocess: {config}: exit {p.returncode}: {p.stderr[-800:]}")
    if doc["backend"] != "cudaMallocAsync":
        sys.exit(f"run_torch_async_inprocess: {config}: torch's allocator is {doc['backend']}, "
                 f"not cudaMallocAsync")
    for f in os.listdir(out):
        os.remove(os.path.join(out, f))
    if args.self_profile:
        try:
            with open(prof) as f:
                doc["self_profile"] = json.load(f)
            os.remove(prof)
        except (OSError, ValueError) as e:
            sys.exit(f"run_torch_async_inprocess: {config}: no self-profile ({e})")
        # the tensors recorded: the warm-up's and the recording repetitions'
        doc["recorded_tensors"] = WARMUP + args.iters * args.reps
    return doc


def print_profile(config, docs):
    """The tracer's parts per recorded tensor, summed over @p docs (one per round)."""
    tensors = sum(d["recorded_tensors"] for d in docs)
    parts = {}
    for d in docs:
        for name, v in d["self_profile"].get("parts", {}).items():
            p = parts.setdefault(name, [0, 0])
            p[0] += v.get("count", 0)
            p[1] += v.get("ns", 0)
    rows = sorted(parts.items(), key=lambda kv: -kv[1][1])
    print(f"  {config}: self-profile per recorded tensor ({tensors} tensors; the probe's "
          f"{docs[0]['self_profile'].get('probe_ns', 0):.1f} ns not taken off): " +
          ", ".join(f"{n} {c / tensors:.2f}x {ns / tensors:.0f} ns" for n, (c, ns) in rows if c))
    return {n: {"probes_per_tensor": c / tensors, "ns_per_tensor": ns / tensors}
            for n, (c, ns) in rows if c}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--cpus", default="none", help="as run_hook_overhead.py --cpus")
    ap.add_argument("--self-profile", action="store_true",
                    help="the tracer's parts per recorded tensor (GPUMEMTRACE_SELF_PROFILE)")
    ap.add_argument("--sim", action="store_true",
                    help="the environment's torch and runtime are the doubles: no GPU check")
    args = ap.parse_args()
    configs = args.configs.split(",")
    for c in configs:
        if c not in CONFIGS:
            sys.exit(f"run_torch_async_inprocess: unknown config {c!r} ({', '.join(CONFIGS)})")
    rho.PIN = rho.pick_cpus(args.cpus)
    try:
        if not args.sim:
            subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=60, check=True)
        import torch  # noqa: F401
    except Exception:  # noqa: BLE001
        print("run_torch_async_inprocess: no GPU or no torch: skipped")
        return 77
    gmt = os.path.join(os.path.abspath(args.build), "tools", "gpumemtrace")
    per = {c: [] for c in configs}
    with tempfile.TemporaryDirectory(prefix="gmt-async-ip-") as tmp:
        for rnd in range(args.rounds):
            for c in configs:
                per[c].append(run(gmt, c, args, tmp))
            print(f"  round {rnd + 1} done", flush=True)
    print(f"torch tensor alloc+free (1 MiB, backend:cudaMallocAsync) in one process per "
          f"configuration, {args.iters} per repetition, {args.reps} repetitions, {args.rounds} "
          f"rounds; pinned to CPUs {','.join(map(str, rho.PIN)) if rho.PIN else 'none'}:")
    figures = {}
    for c in configs:
        f = {}
        base = "off" if "off" in per[c][0]["states"] else "paused"
        for s in per[c][0]["states"]:
            # per process: the median over its repetitions of the state against the base
            ratios = [statistics.median(rep[s] / rep[base] for rep in d["reps"]) for d in per[c]]
            diffs = [statistics.median(rep[s] - rep[base] for rep in d["reps"]) for d in per[c]]
            ns = [statistics.median(rep[s] for rep in d["reps"]) for d in per[c]]
            f[s] = {"ns_per_tensor": round(statistics.median(ns), 1),
                    "x_over_" + base: round(statistics.median(ratios), 3),
                    "x_rounds": [round(x, 3) for x in ratios],
                    "ns_over_" + base: round(statistics.median(diffs), 1)}
            line = f"  {c:<15} {s:<10} {statistics.median(ns):8.0f} ns/tensor"
            if s != base:
                line += (f"  x{statistics.median(ratios):.3f} over {base} "
                         f"({statistics.median(diffs):+.0f} ns; rounds "
                         f"{', '.join(f'x{x:.3f}' for x in ratios)})")
            print(line)
        figures[c] = f
    profiles = {c: print_profile(c, per[c]) for c in configs} if args.self_profile else None
    print(json.dumps({"bench": "torch_async_inprocess", "iters": args.iters, "reps": args.reps,
                      "rounds": args.rounds, "cpus": rho.PIN, "configs": figures,
                      "self_profile": profiles}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
