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
import ctypes, json, os, statistics, sys, time
WARMUP = @WARMUP@
import torch
iters, reps, want_held = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
torch.cuda.init()
me = ctypes.CDLL(None)  # the preloaded tracer's exports
pause, cupti = me.gmt_bench_pause, me.gmt_bench_cupti
pause.argtypes = cupti.argtypes = [ctypes.c_int]
cupti.restype = ctypes.c_int
writer = getattr(me, "gmt_bench_writer", None) if want_held else None
if writer is not None:
    writer.argtypes, writer.restype = [ctypes.c_int], ctypes.c_int

# The program thread's own counters (perf_event_open, user space only, this thread only):
# what a state costs in cycles, instructions and cache misses, and whether the thread was
# taken off its CPU or moved to another. Absent where the kernel or the machine refuses them.
# llc_refs: the last level's references, the second level's misses on Intel's processors.
COUNTERS = {"cycles": (0, 0), "instructions": (0, 1), "l1d_misses": (3, 0x10000),
            "llc_refs": (0, 2), "llc_misses": (0, 3), "dtlb_misses": (3, 0x10003),
            "ctx_switches": (1, 3), "migrations": (1, 4)}
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
fds = {}
for name, (typ, config) in COUNTERS.items():
    attr = (ctypes.c_uint64 * 8)()  # PERF_ATTR_SIZE_VER0: 64 bytes
    attr[0] = typ | (64 << 32)      # type, size
    attr[1] = config
    attr[4] = 1 | 2                 # read_format: time enabled, time running (multiplexed)
    # exclude_kernel, exclude_hv: the hardware counters count the program's own code; the
    # software events (type 1: switches, migrations) happen in the kernel and count there
    attr[5] = ((1 << 5) | (1 << 6)) if typ != 1 else 0
    fd = libc.syscall(298, ctypes.byref(attr), 0, -1, -1, 0)  # x86_64 perf_event_open
    if fd >= 0:
        fds[name] = fd

def counts():
    out = {}
    for n, fd in fds.items():
        b = os.read(fd, 24)
        v, en, run = (int.from_bytes(b[i:i + 8], "little") for i in (0, 8, 16))
        out[n] = v * en / run if run else 0.0  # scaled where the counters were shared
    return out

def leaf():
    t = torch.empty(1 << 18, device="cuda")  # 1 MiB of float32
    del t

def loop(n):
    for _ in range(n):
        leaf()

def timed(state):
    if state == "off":
        cupti(0)
    if state not in ("recording", "held"):
        pause(1)
    if state == "held":
        writer(0)
    try:
        torch.cuda.synchronize()
        c0, cpu0 = counts(), time.thread_time_ns()
        t0 = time.perf_counter_ns()
        loop(iters)
        torch.cuda.synchronize()
        wall = (time.perf_counter_ns() - t0) / iters
        cpu, c1 = (time.thread_time_ns() - cpu0) / iters, counts()
        ctr = {"cpu_ns": cpu}
        ctr.update({n: (c1[n] - c0[n]) / iters for n in c1})
        return wall, ctr
    finally:
        if state == "held" and not writer(1):
            sys.exit("the ring was not drained after a held stretch")
        if state not in ("recording", "held"):
            pause(0)
        if state == "off":
            cupti(1)

loop(WARMUP)
torch.cuda.synchronize()
has_cupti = cupti(1) >= 0
states = ["off", "paused", "recording"] if has_cupti else ["paused", "recording"]
if writer is not None:
    states.append("held")
rows, ctrs = [], []
for r in range(reps):
    k = r % len(states)
    row, ctr = {}, {}
    for s in states[k:] + states[:k]:
        row[s], ctr[s] = timed(s)
    rows.append(row)
    ctrs.append(ctr)
print(json.dumps({"states": states, "reps": rows, "counters": ctrs, "counted": sorted(fds),
                  "backend": torch.cuda.get_allocator_backend()}))
'''.replace("@WARMUP@", str(WARMUP))

CONFIGS = {
    "all": {},
    "none": {"GPUMEMTRACE_STACKS": "none"},
    "interpose-all": {"GPUMEMTRACE_CUPTI": "0"},
    "interpose-none": {"GPUMEMTRACE_CUPTI": "0", "GPUMEMTRACE_STACKS": "none"},
    # not in the default set: stacks off and the trace plain (no compressor thread)
    "none-plain": {"GPUMEMTRACE_STACKS": "none", "GPUMEMTRACE_COMPRESS": "none"},
}
DEFAULT_CONFIGS = "all,none,interpose-all,interpose-none"


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
                        str(args.iters), str(args.reps), "1" if args.held else "0"], env=env, capture_output=True,
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
    ap.add_argument("--configs", default=DEFAULT_CONFIGS,
                    help=f"a comma list of {', '.join(CONFIGS)} (default {DEFAULT_CONFIGS})")
    ap.add_argument("--held", action="store_true",
                    help="a fourth state: recording with the writer held (gmt_bench_writer), "
                    "what the writer's work beside the program costs it")
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
    if args.held and args.iters * 2 > 60000:
        sys.exit("run_torch_async_inprocess: --held keeps a repetition's events in the ring "
                 "(65536 slots): --iters 30000 at most")
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
        counted = per[c][0].get("counted", [])
        for st in per[c][0]["states"]:
            # the program thread's own figures per tensor, medians over repetitions and rounds
            keys = ["cpu_ns"] + counted
            med = {k: statistics.median(cr[st][k] for d in per[c] for cr in d["counters"])
                   for k in keys}
            f[st]["thread"] = {k: round(v, 6) for k, v in med.items()}
            print(f"  {'':<15} {st:<10} thread: " +
                  ", ".join(f"{k} {v:.0f}" if v >= 100 else f"{k} {v * 1000:.3g} per 1k"
                            if k in ("ctx_switches", "migrations") else f"{k} {v:.3g}"
                            for k, v in med.items()))
    profiles = {c: print_profile(c, per[c]) for c in configs} if args.self_profile else None
    print(json.dumps({"bench": "torch_async_inprocess", "iters": args.iters, "reps": args.reps,
                      "rounds": args.rounds, "cpus": rho.PIN, "configs": figures,
                      "self_profile": profiles}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
