#!/usr/bin/env python3
"""The PyTorch layer's cost measured inside one process (docs/performance.md): between processes
the same untraced loop ran at 2.2-4.8 us per tensor alloc+free on the shared H200 host, more than
the cost to be measured, so process-level A/B (run_torch_block_cost.py) cannot resolve it.

    run_torch_block_ab.py --build BUILD [--rounds 9] [--pairs 20000] [--steps 10]

One process under `gpumemtrace run` (default options: the bridge, native + Python stacks). Each
round runs, in turn (the order rotating from round to round), the same loop in three states:
  off      the layer paused (gmt_bridge_detach: torch still calls the bridge's tracker, which
           returns at once); the CUDA-level tracer as always (a pair inside the cache makes no
           CUDA call)
  layer    the layer recording (gmt_bridge_resume), every block with our stacks
  history  the layer paused, torch's own recorder on (_record_memory_history(stacks="python"))
  unwind   (where BUILD/bench/libgmt_unwind_probe.so was built) the native stacks' floor: the
           bridge calls the probe's gmt_probe_floor instead of the tracer, which unwinds with
           libunwind exactly to the innermost eval frame (where the layer's native stack ends)
           and does nothing else: the part of the layer's cost that libunwind's unwind alone
           takes, measured, so that "layer - unwind" is all the rest (Python walk, interning,
           the events)
Per round: ns per alloc+free pair (median of 3 loops) in each state, then a small transformer's
training step, --steps cycles of one step per state (the state switched between steps, the order
rotating), so that each step is paired with the `off` step of its own cycle: the host's drift
moves a step by more than the cost to be measured from one second to the next. The figures are
per-round differences against `off` (the step's: of the round's medians), then their median over
rounds; the step also as the median of all cycles' paired ratios, with its quartiles, beside
what the pair loop's cost predicts for the step's allocations (torch's own count of them). Also run with GPUMEMTRACE_STACKS=python (--stacks python) to split
native and Python stacks.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r'''
import ctypes, json, os, statistics, sys, time
sys.path.insert(0, os.environ["GMT_BENCH_DIR"])
import torch
from torch_workload import make_step, pairs
import gpumemtrace
from gpumemtrace import _torch
rounds, npairs, nsteps = (int(x) for x in sys.argv[1:4])
x = torch.empty(16, device="cuda")  # CUDA initialised: the layer attaches
del x
torch.cuda.synchronize()
bridge = _torch._state.get("bridge")
lib = gpumemtrace._tracer_lib()
if bridge is None or lib is None or not hasattr(bridge, "gmt_bridge_resume"):
    print(json.dumps({"error": "no PyTorch layer in this process (bridge %r)" % (bridge,)}))
    sys.exit(0)
record = ctypes.cast(lib.gmt_torch_record, ctypes.c_void_p)
bridge.gmt_bridge_resume.argtypes = [ctypes.c_void_p]
floor = None
if os.environ.get("GMT_UNWIND_PROBE"):
    probe = ctypes.CDLL(os.environ["GMT_UNWIND_PROBE"])
    probe.gmt_probe_floor_setup()
    floor = ctypes.cast(probe.gmt_probe_floor, ctypes.c_void_p)
mem = torch.cuda.memory
has_history = hasattr(mem, "_record_memory_history")

def state(s):
    if has_history:
        mem._record_memory_history(enabled=None)
    bridge.gmt_bridge_detach()
    if s == "layer":
        bridge.gmt_bridge_resume(record)
    elif s == "history":
        mem._record_memory_history(max_entries=100000, stacks="python")
    elif s == "unwind":
        bridge.gmt_bridge_resume(floor)

step = make_step(torch, warmup=3) if nsteps > 0 else None  # --steps 0: the pair loop alone

def one_step():
    t0 = time.perf_counter(); step(); torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3

def rotated(k):
    return states[k % len(states):] + states[:k % len(states)]

states = ["off", "layer"] + (["history"] if has_history else []) + (["unwind"] if floor else [])
pairs(torch, 3000)
doc = {"states": states}
def allocations():
    """torch's own count of the allocations made so far (cache hits included); None without it"""
    stats = getattr(torch.cuda, "memory_stats", None)
    return stats().get("allocation.all.allocated") if stats else None

if step is not None:
    state("off")
    before = allocations()
    one_step()
    after = allocations()
    doc["allocations_per_step"] = after - before if None not in (before, after) else None
res = []
for r in range(rounds):
    row = {}
    for s in rotated(r):
        state(s)
        row[s] = {"pair_ns": statistics.median(pairs(torch, npairs) for _ in range(3))}
    if step is not None:
        # the steps interleaved one by one (off, layer, ... then the order rotated), so that
        # the host's drift, which moves a step by 10% from one second to the next, is shared
        cycles = []
        for k in range(nsteps):
            cyc = {}
            for s in rotated(r + k):
                state(s)
                cyc[s] = one_step()
            cycles.append(cyc)
        for s in states:
            row[s]["step_ms"] = statistics.median(c[s] for c in cycles)
        row["step_cycles"] = cycles
    res.append(row)
state("layer")
doc["rounds"] = res
if floor:
    buf = ctypes.create_string_buffer(512)
    probe.gmt_probe_floor_stats(buf, 512)
    doc["unwind_floor"] = json.loads(buf.value.decode())
print(json.dumps(doc))
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--pairs", type=int, default=20000)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--stacks", default="all", help="GPUMEMTRACE_STACKS of the run")
    ap.add_argument("--self-profile", action="store_true",
                    help="GPUMEMTRACE_SELF_PROFILE on: the layer's parts (torch_record, its stack's "
                         "Python walk, unwind and interning) in ns per call, over the whole run "
                         "(the probes cost a little themselves: the pair figures are then not "
                         "the plain layer's)")
    a = ap.parse_args()
    gmt = os.path.join(os.path.abspath(a.build), "tools", "gpumemtrace")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUMEMTRACE_")}
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    env["GPUMEMTRACE_STACKS"] = a.stacks
    env["GMT_BENCH_DIR"] = os.path.dirname(os.path.abspath(__file__))
    probe = os.path.join(os.path.abspath(a.build), "bench", "libgmt_unwind_probe.so")
    if os.path.exists(probe):
        env["GMT_UNWIND_PROBE"] = probe
    with tempfile.TemporaryDirectory(prefix="gmt-bench-ab-") as tmp:
        prof = os.path.join(tmp, "self-profile.json")
        if a.self_profile:
            env["GPUMEMTRACE_SELF_PROFILE"] = prof
        p = subprocess.run([gmt, "run", "-o", os.path.join(tmp, "t"), "--", sys.executable, "-c",
                            CHILD, str(a.rounds), str(a.pairs), str(a.steps)], env=env,
                           capture_output=True, text=True, timeout=570)
        parts = None
        if a.self_profile and os.path.exists(prof):
            with open(prof) as f:
                parts = json.load(f)
    doc = None
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            doc = json.loads(line)
            break
    if doc is None or "error" in doc:
        print("torch block A/B: no result (exit %d): %s %s" % (
            p.returncode, (doc or {}).get("error", ""), p.stderr[-800:]))
        return 1
    rounds, states = doc["rounds"], doc["states"]
    if parts:
        print("self-profile (ns per call, the probe's %.1f ns not taken off): %s" % (
            parts.get("probe_ns", 0), ", ".join(
                "%s %.1f (%d)" % (k, v["ns"] / v["count"], v["count"])
                for k, v in sorted(parts.get("parts", {}).items()) if v.get("count"))))
    if "unwind_floor" in doc:
        print("the unwind floor's own figures: %s" % json.dumps(doc["unwind_floor"]))
    print("in one process under gpumemtrace run (GPUMEMTRACE_STACKS=%s), %d rounds of %d pairs "
          "(median of 3 loops) per state, the order rotating:" % (a.stacks, len(rounds), a.pairs))
    out = {"bench": "torch_block_ab", "stacks": a.stacks, "rounds": rounds,
           "unwind_floor": doc.get("unwind_floor"), "self_profile": parts}
    for key, unit in (("pair_ns", "ns/pair"), ("step_ms", "ms/step")):
        if key not in rounds[0]["off"]:
            continue
        for s in states:
            vals = [r[s][key] for r in rounds]
            line = "  %-8s %s median %.2f (min %.2f, max %.2f)" % (
                s, unit, statistics.median(vals), min(vals), max(vals))
            if s != "off":
                diff = [r[s][key] - r["off"][key] for r in rounds]
                ratio = [r[s][key] / r["off"][key] for r in rounds]
                line += "; over off: %+.2f (median of per-round differences), x%.3f" % (
                    statistics.median(diff), statistics.median(ratio))
                out.setdefault("added", {}).setdefault(s, {})[key] = statistics.median(diff)
                out["added"][s][key + "_x"] = statistics.median(ratio)
            print(line)
    cycles = [c for r in rounds for c in r.get("step_cycles", [])]
    if cycles:
        # each step against the `off` step of its own cycle: rounds x steps paired ratios
        apd = doc.get("allocations_per_step")
        out["allocations_per_step"] = apd
        print("  steps paired one by one (%d cycles; a step makes %s allocations):" % (
            len(cycles), apd))
        for s in states[1:]:
            ratios = sorted(c[s] / c["off"] for c in cycles)
            q = lambda f: ratios[min(len(ratios) - 1, int(f * len(ratios)))]
            paired = {"x": statistics.median(ratios), "q25": q(0.25), "q75": q(0.75),
                      "ms": statistics.median(c[s] - c["off"] for c in cycles)}
            line = "    %-8s x%.3f (quartiles x%.3f-x%.3f), %+.3f ms per step" % (
                s, paired["x"], paired["q25"], paired["q75"], paired["ms"])
            if apd:
                # what the pair loop's cost per tensor predicts for the step's allocations
                paired["pair_ns_times_allocations_ms"] = out["added"][s]["pair_ns"] * apd / 1e6
                line += "; the pair loop's cost x %d allocations: %+.3f ms" % (
                    apd, paired["pair_ns_times_allocations_ms"])
            out["added"][s]["step_paired"] = paired
            print(line)
    if "history" in out.get("added", {}):
        ours, theirs = out["added"]["layer"]["pair_ns"], out["added"]["history"]["pair_ns"]
        print("the layer adds %.0f ns per pair, torch's recorder %.0f ns (goal: ours <= half of "
              "theirs)" % (ours, theirs))
    if "unwind" in out.get("added", {}):
        floor = out["added"]["unwind"]["pair_ns"]
        rest = statistics.median(r["layer"]["pair_ns"] - r["unwind"]["pair_ns"] for r in rounds)
        out["layer_over_unwind_ns"] = rest
        print("libunwind's unwind alone (the native stacks' floor) adds %.0f ns per pair; the layer "
              "%.0f ns more (median of per-round differences)" % (floor, rest))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
