#!/usr/bin/env python3
"""What call stacks cost per memory event under PyTorch, on a GPU.

A child Python process allocates and frees a 1 MiB CUDA tensor N times with
PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync (every tensor is one cudaMallocAsync and one
cudaFreeAsync, so every iteration is two tracer events, the allocation carrying a stack) from a
few nested Python functions, and prints the median ns per iteration over R repetitions. The parent
runs it without the tracer and under the tracer with GPUMEMTRACE_STACKS=none, native and all,
interleaved (plain none native all plain ...) after one discarded warm-up round, and prints medians
and the added cost per allocation of each stack mode over "none".

    run_torch_stack_cost.py --build BUILD [--rounds 7] [--iters 20000] [--reps 5] [--cpus auto]
                            [--modes plain,floor-cupti,floor-cupti-record,none,native,all]

floor-cupti and floor-cupti-record are bench/floor.h's floors preloaded instead of the tracer (an
empty CUPTI callback on the tracer's ids; the bare minimum of a recorded event): what any CUPTI
tracer of these calls costs at least, measured in the same rounds. interpose-none and
interpose-all are the tracer without CUPTI (GPUMEMTRACE_CUPTI=0: the wrappers alone record),
stacks off and full; floor-interpose the bare-minimum wrappers of bench/floor.h: that path's
floor.

Exits 77 without a GPU or without torch. The last line is JSON.
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

MODES = ["plain", "floor-cupti", "floor-cupti-record", "none-callbacks", "none", "native",
         "all-callbacks", "all", "floor-interpose", "interpose-none", "interpose-all"]
# the floors of bench/floor.h under torch: a CUPTI subscriber on exactly the tracer's callback ids
# with an empty callback, and the same recording the bare minimum (guard, clock, seq, ring slot)
FLOORS = {"floor-cupti": "empty", "floor-cupti-record": "record"}


def run(mode, args, lib, outdir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUMEMTRACE_")}
    env["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
    env.pop("CUDA_INJECTION64_PATH", None)
    if mode in FLOORS:
        env["LD_PRELOAD"] = os.path.join(os.path.dirname(os.path.dirname(lib)), "bench",
                                         "libgmt_floor_cupti.so")
        env["GMT_FLOOR_MODE"] = FLOORS[mode]
    elif mode == "floor-interpose":  # wrappers recording the bare minimum, no CUPTI
        env["LD_PRELOAD"] = os.path.join(os.path.dirname(os.path.dirname(lib)), "bench",
                                         "libgmt_floor_interpose.so")
    elif mode.startswith("interpose-"):  # the tracer without CUPTI: its wrappers record
        env["LD_PRELOAD"] = lib
        env["GPUMEMTRACE_CUPTI"] = "0"
        env["GPUMEMTRACE_STACKS"] = mode.split("-")[1]
        env["GPUMEMTRACE_OUTPUT_DIR"] = outdir
    elif mode.endswith("-callbacks"):  # CUPTI's runtime callbacks name every call, and an
        # allocation's stack is taken inside the driver's callback: the tracer before 2026-12-05
        env["LD_PRELOAD"] = lib
        env["GPUMEMTRACE_STACKS"] = mode.split("-")[0]
        env["GPUMEMTRACE_CUPTI_RUNTIME"] = "callbacks"
        env["GPUMEMTRACE_OUTPUT_DIR"] = outdir
    elif mode != "plain":
        env["LD_PRELOAD"] = lib
        env["GPUMEMTRACE_STACKS"] = mode
        env["GPUMEMTRACE_OUTPUT_DIR"] = outdir
    p = subprocess.run([sys.executable, "-c", CHILD, str(args.iters), str(args.reps)], env=env,
                       capture_output=True, text=True, timeout=600, preexec_fn=rho.pinned())
    if p.returncode != 0:
        sys.exit(f"run_torch_stack_cost: {mode} run failed: {p.stderr.strip()[-500:]}")
    return float(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cpus", default="none", help="as run_hook_overhead.py --cpus")
    ap.add_argument("--modes", default=",".join(MODES),
                    help=f"comma list of {', '.join(MODES)} (plain and none always run)")
    args = ap.parse_args()
    rho.PIN = rho.pick_cpus(args.cpus)
    modes = [m for m in MODES if m in args.modes.split(",") or m in ("plain", "none")]
    for m in args.modes.split(","):
        if m not in MODES:
            sys.exit(f"run_torch_stack_cost: unknown mode {m!r} ({', '.join(MODES)})")
    try:
        subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=60, check=True)
        import torch  # noqa: F401
    except Exception:  # noqa: BLE001
        print("run_torch_stack_cost: no GPU or no torch: skipped")
        return 77
    lib = os.path.join(os.path.abspath(args.build), "src", "libgpumemtrace.so")
    for m, floor in (("floor-cupti", "libgmt_floor_cupti.so"),
                     ("floor-cupti-record", "libgmt_floor_cupti.so"),
                     ("floor-interpose", "libgmt_floor_interpose.so")):
        if m in modes and not os.path.exists(os.path.join(os.path.abspath(args.build), "bench", floor)):
            sys.exit(f"run_torch_stack_cost: BUILD/bench/{floor} not found")
    res = {m: [] for m in modes}
    with tempfile.TemporaryDirectory(prefix="gmt-stackcost-") as outdir:
        for rnd in range(args.rounds + 1):
            for m in modes:
                v = run(m, args, lib, outdir)
                if rnd:
                    res[m].append(v)
            for f in os.listdir(outdir):
                os.remove(os.path.join(outdir, f))
    med = {m: statistics.median(v) for m, v in res.items()}
    print(f"torch tensor alloc+free (1 MiB, cudaMallocAsync backend), {args.iters} per rep, "
          f"{args.rounds} interleaved rounds, medians; pinned to CPUs "
          f"{','.join(map(str, rho.PIN)) if rho.PIN else 'none'}:")
    for m in modes:
        ratio = f"{med[m] / med['plain']:.3f}x plain"
        extra = ""
        if m in ("native", "all"):
            extra = f"  stacks add {med[m] - med['none']:.0f} ns per allocation"
        elif m == "interpose-all" and "interpose-none" in med:
            extra = f"  stacks add {med[m] - med['interpose-none']:.0f} ns per allocation"
        print(f"  {m:<18} {med[m]:9.0f} ns/iteration  {ratio}{extra}")
    for m in modes:
        if m in ("none", "native", "all") and "floor-cupti" in med:
            print(f"  {m} above floor-cupti: {med[m] - med['floor-cupti']:.0f} ns per iteration "
                  f"(the floor itself {med['floor-cupti'] - med['plain']:.0f} over plain)")
        if m.startswith("interpose-") and "floor-interpose" in med:
            print(f"  {m} above floor-interpose: {med[m] - med['floor-interpose']:.0f} ns per "
                  f"iteration (the floor itself {med['floor-interpose'] - med['plain']:.0f} over plain)")
    print(json.dumps({"bench": "torch_stack_cost", "median_ns": med, "samples": res, "cpus": rho.PIN,
                      "ratio_to_plain": {m: med[m] / med["plain"] for m in modes},
                      "added_native_ns": med.get("native", 0) - med["none"],
                      "added_all_ns": med.get("all", 0) - med["none"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
