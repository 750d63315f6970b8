#!/usr/bin/env python3
"""What the PyTorch layer costs, against plain PyTorch and against PyTorch's own recorder (on a GPU
host with torch; docs/performance.md).

    run_torch_block_cost.py --build BUILD [--rounds 3] [--variants a,b,...] [--cpus 2,3]

--cpus pins every variant's process to the same CPUs (os.sched_setaffinity in the child before
exec): the traced process's writer thread then never lands on another core's hyperthread sibling
in one run and not in the next, which made per-process medians bimodal on the shared H200 host.

Variants, each its own process, interleaved round by round (A B C D E, A B C D E, ...):
  plain          untraced
  traced-nolayer gpumemtrace run, GPUMEMTRACE_TORCH=off (CUDA-level events only: a tensor
                 alloc+free inside the cache makes none)
  traced-layer   gpumemtrace run, default options: the bridge, every block with native+Python stack
  traced-interp  the bridge, full stacks, GPUMEMTRACE_INTERPRETER_FRAMES=1 (native frames unwound
                 through the interpreter too, as before that option: what the cut saves)
  traced-pystack the bridge with GPUMEMTRACE_STACKS=python
  traced-nostacks the bridge with GPUMEMTRACE_STACKS=none (the events alone)
  torch-history  untraced, torch.cuda.memory._record_memory_history(stacks="python")
Two workloads per process: a loop of tensor alloc+free pairs (4-28 KiB, inside the cache: median
ns per pair over 5 loops of 20,000) and a small transformer's training step (median ms over 20
steps after 5 of warm-up). Prints a table of medians and ratios, then one JSON line.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r'''
import json, os, statistics, sys, time
sys.path.insert(0, os.environ["GMT_BENCH_DIR"])
import torch
from torch_workload import make_step, pairs
if os.environ.get("GMT_BENCH_HISTORY") == "1":
    torch.cuda.memory._record_memory_history(max_entries=100000, stacks="python")
torch.zeros(1, device="cuda")
torch.cuda.synchronize()
cpu = []
pairs(torch, 5000)
loops = [pairs(torch, 20000, cpu) for _ in range(5)]
step = make_step(torch)
steps = []
for _ in range(20):
    t0 = time.perf_counter(); step(); torch.cuda.synchronize(); steps.append((time.perf_counter() - t0) * 1e3)
print(json.dumps({"pair_ns": statistics.median(loops), "pair_cpu_ns": statistics.median(cpu),
                  "step_ms": statistics.median(steps)}))
'''

VARIANTS = ["plain", "traced-nolayer", "traced-layer", "traced-interp", "traced-pystack",
            "traced-nostacks", "torch-history"]


def run(variant, gmt, tmp, cpus=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUMEMTRACE_")}
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    env["GMT_BENCH_DIR"] = os.path.dirname(os.path.abspath(__file__))
    argv = [sys.executable, "-c", CHILD]
    if variant.startswith("traced"):
        argv = [gmt, "run", "-o", os.path.join(tmp, variant)] + ["--"] + argv
        if variant == "traced-nolayer":
            env["GPUMEMTRACE_TORCH"] = "off"
        if variant == "traced-pystack":
            env["GPUMEMTRACE_STACKS"] = "python"
        if variant == "traced-nostacks":
            env["GPUMEMTRACE_STACKS"] = "none"
        if variant == "traced-interp":
            env["GPUMEMTRACE_INTERPRETER_FRAMES"] = "1"
    if variant == "torch-history":
        env["GMT_BENCH_HISTORY"] = "1"
    pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600,
                       preexec_fn=pin)
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"{variant}: no result (exit {p.returncode}): {p.stderr[-500:]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help="comma-separated, plain always included")
    ap.add_argument("--cpus", default="", help="comma-separated CPU numbers to pin to")
    a = ap.parse_args()
    variants = ["plain"] + [v for v in a.variants.split(",") if v and v != "plain"]
    for v in variants:
        if v not in VARIANTS:
            ap.error(f"--variants: unknown variant {v!r} (known: {', '.join(VARIANTS)})")
    cpus = {int(c) for c in a.cpus.split(",") if c} or None
    gmt = os.path.join(os.path.abspath(a.build), "tools", "gpumemtrace")
    tmp = tempfile.mkdtemp(prefix="gmt-bench-torch-")
    res = {v: [] for v in variants}
    run("traced-layer", gmt, tmp, cpus)  # builds and caches the bridge: not part of any measurement
    for r in range(a.rounds):
        for v in variants:
            res[v].append(run(v, gmt, tmp, cpus))
    med = {v: {k: statistics.median(x[k] for x in res[v]) for k in ("pair_ns", "step_ms")}
           for v in variants}
    plain = med["plain"]
    # per round, each variant against the plain run of the same round (interleaved: the
    # machine's drift cancels), then the median over rounds
    paired = {v: {"pair_ns": statistics.median(x["pair_ns"] - p["pair_ns"]
                                               for x, p in zip(res[v], res["plain"])),
                  "step_x": statistics.median(x["step_ms"] / p["step_ms"]
                                              for x, p in zip(res[v], res["plain"]))}
              for v in variants}
    cpu_paired = {v: statistics.median(x.get("pair_cpu_ns", 0) - p.get("pair_cpu_ns", 0)
                                       for x, p in zip(res[v], res["plain"])) for v in variants}
    print("main thread's CPU time per pair (time.thread_time_ns), paired over plain: " +
          ", ".join(f"{v} {cpu_paired[v]:+.0f} ns" for v in variants))
    print(f"{'variant':16} {'ns/pair':>9} {'added':>8} {'paired':>8} {'step ms':>9} "
          f"{'x plain':>8} {'paired':>7}")
    for v in variants:
        m = med[v]
        print(f"{v:16} {m['pair_ns']:9.0f} {m['pair_ns'] - plain['pair_ns']:+8.0f} "
              f"{paired[v]['pair_ns']:+8.0f} {m['step_ms']:9.2f} "
              f"{m['step_ms'] / plain['step_ms']:8.3f} {paired[v]['step_x']:7.3f}")
    if "traced-layer" not in paired or "torch-history" not in paired:
        print(json.dumps({"bench": "torch_block_cost", "rounds": a.rounds, "medians": med,
                          "paired": paired, "raw": res}))
        return
    added_ours = paired["traced-layer"]["pair_ns"]
    added_theirs = paired["torch-history"]["pair_ns"]
    print(f"the layer with full stacks adds {added_ours:.0f} ns per pair over plain, torch's "
          f"recorder {added_theirs:.0f} ns (paired medians; goal: ours <= half of theirs); a "
          f"step {paired['traced-layer']['step_x']:.3f}x plain vs "
          f"{paired['torch-history']['step_x']:.3f}x")
    print(json.dumps({"bench": "torch_block_cost", "rounds": a.rounds, "medians": med,
                      "paired": paired, "raw": res, "layer_added_ns": added_ours,
                      "history_added_ns": added_theirs}))


if __name__ == "__main__":
    main()
