#!/usr/bin/env python3
"""What call stacks cost per memory event under PyTorch, on a GPU.

A child Python process allocates and frees a 1 MiB CUDA tensor N times with
PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync (every tensor is one cudaMallocAsync and one
cudaFreeAsync, so every iteration is two tracer events, the allocation carrying a stack) from a
few nested Python functions, and prints the median ns per iteration over R repetitions. The parent
runs it without the tracer and under the tracer with GPUMEMTRACE_STACKS=none, native and all,
interleaved (plain none native all plain ...) after one discarded warm-up round, and prints medians
and the added cost per allocation of each stack mode over "none".

    run_torch_stack_cost.py --build BUILD [--rounds 7] [--iters 20000] [--reps 5]

Exits 77 without a GPU or without torch. The last line is JSON.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import sys, time, torch
iters, reps = int(sys.argv[1]), int(sys.argv[2])
torch.cuda.init()
def leaf(n):
    t = torch.empty(1 << 18, device="cuda")   # 1 MiB of float32
    del t
def middle(n):
    for _ in range(n):
        leaf(n)
def outer(n):
    middle(n)
outer(2000)
torch.cuda.synchronize()
samples = []
for r in range(reps):
    t0 = time.perf_counter_ns()
    outer(iters)
    torch.cuda.synchronize()
    samples.append((time.perf_counter_ns() - t0) / iters)
samples.sort()
print(samples[len(samples) // 2])
"""

MODES = ["plain", "none", "native", "all"]


def run(mode, args, lib, outdir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUMEMTRACE_")}
    env["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
    if mode != "plain":
        env["LD_PRELOAD"] = lib
        env["GPUMEMTRACE_STACKS"] = mode
        env["GPUMEMTRACE_OUTPUT_DIR"] = outdir
    p = subprocess.run([sys.executable, "-c", CHILD, str(args.iters), str(args.reps)], env=env,
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"run_torch_stack_cost: {mode} run failed: {p.stderr.strip()[-500:]}")
    return float(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    try:
        subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=60, check=True)
        import torch  # noqa: F401
    except Exception:  # noqa: BLE001
        print("run_torch_stack_cost: no GPU or no torch: skipped")
        return 77
    lib = os.path.join(os.path.abspath(args.build), "src", "libgpumemtrace.so")
    res = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory(prefix="gmt-stackcost-") as outdir:
        for rnd in range(args.rounds + 1):
            for m in MODES:
                v = run(m, args, lib, outdir)
                if rnd:
                    res[m].append(v)
            for f in os.listdir(outdir):
                os.remove(os.path.join(outdir, f))
    med = {m: statistics.median(v) for m, v in res.items()}
    print(f"torch tensor alloc+free (1 MiB, cudaMallocAsync backend), {args.iters} per rep, "
          f"{args.rounds} interleaved rounds, medians:")
    for m in MODES:
        extra = "" if m in ("plain", "none") else f"  stacks add {med[m] - med['none']:.0f} ns per allocation"
        print(f"  {m:<7} {med[m]:9.0f} ns/iteration{extra}")
    print(json.dumps({"bench": "torch_stack_cost", "median_ns": med, "samples": res,
                      "added_native_ns": med["native"] - med["none"], "added_all_ns": med["all"] - med["none"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
