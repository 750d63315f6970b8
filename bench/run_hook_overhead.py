#!/usr/bin/env python3
"""Hook overhead: bench/hook_overhead without the tracer (A) and under LD_PRELOAD=libgpumemtrace.so
(B), interleaved A B A B ... after one discarded warm-up round, so that clock and load drift hit
both alike. Prints the median ns per alloc+free pair of each, the ratio B/A and the overhead in ns
per event (a pair is 2 events), and checks that every traced run wrote all its events and dropped
none: a run whose tracer dropped events measured the cheap drop path, not the tracer, and makes
this script exit 1.

    run_hook_overhead.py --build BUILD [--runtime sim|real] [--mode malloc|async]
                         [--capture default|both|cupti|interpose]
                         [--rounds 11] [--iters N] [--reps R] [--warmup W] [--gap-ms MS]
                         [--baseline OTHER_BUILD]

--capture       which tracer configurations are B (each interleaved with A: A B C A B C ...):
                default    the tracer's defaults (one variant, as before)
                cupti      GPUMEMTRACE_CUPTI=1: events come from CUPTI callbacks
                interpose  GPUMEMTRACE_CUPTI=0: events come from the LD_PRELOAD wrappers
                both       cupti and interpose
                cupti-nostacks, cupti-native, interpose-nostacks, interpose-native: the same paths
                           with GPUMEMTRACE_STACKS=none / native (the default is all)
                cupti-noruntime-nostacks: CUPTI without the runtime-domain callbacks, no stacks
                cupti-rtcallbacks-nostacks, cupti-rtcallbacks: CUPTI's runtime callbacks name every
                           call and a stack is taken inside the driver's callback (without and
                           with stacks); the default has the wrappers name the calls they see
                           and take their allocations' stacks
                floors (bench/floor.h; another library preloaded instead of the tracer):
                floor-cupti         a CUPTI subscriber with exactly the tracer's callback ids
                                    and an empty callback
                floor-cupti-driver  the same without the runtime-domain ids
                floor-cupti-record  floor-cupti plus the bare minimum of a recorded event
                                    (guard, clock, seq, ring slot) at each driver EXIT
                floor-interpose     LD_PRELOAD wrappers doing that bare minimum
                With a floor in the list, each tracer configuration of its path is also given
                "above" it: the tracer's own cost (interpose* above floor-interpose; cupti*
                above the empty callback on the ids that fire: floor-cupti-driver for the
                default, where the wrappers name the calls, floor-cupti for
                cupti-rtcallbacks-nostacks and --baseline builds).
                a comma list of these names runs them all, interleaved
                On --runtime real the header of each traced run must show the path asked for
                (capture includes "cupti", or is ["interpose"]); otherwise the run is a PROBLEM.

--runtime sim   tests/simcuda (LD_LIBRARY_PATH=BUILD/tests/simcuda), SIMCUDA_ALLOC_DELAY_NS=0
                unless --sim-delay-ns is given
--runtime real  the CUDA runtime: --cudart-dir, else $CUDA_HOME/lib64 or
                $CUDA_HOME/targets/x86_64-linux/lib, else where `ldconfig -p` finds
                libcudart.so.13; exits 77 when there is no GPU (nvidia-smi -L fails)

--cpus auto     pin every process (the program, the tracer's writer, the driver's threads) to two
                cores that are not hyperthread siblings; unpinned, per-process medians on the
                shared GPU host fell in two modes ~2x apart from one process to the next

The last line of output is one JSON object with every figure (for scripts).
Python 3 standard library only.
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from gpumemtrace import tracefile  # noqa: E402 (.jsonl and .jsonl.zst, the default, alike)

# Defaults per (runtime, mode): N pairs per repetition (2N events must fit in the tracer's ring,
# 65536 slots by default, so a repetition cannot overflow it), warm-up pairs (enough to go once
# round the ring, so its pages are touched before timing), and the pause between repetitions
# during which the writer drains the ring (outside the timed region).
DEFAULTS = {
    ("sim", "malloc"): {"iters": 10000, "warmup": 40000, "gap_ms": 30},
    ("sim", "async"): {"iters": 10000, "warmup": 40000, "gap_ms": 30},
    ("real", "malloc"): {"iters": 500, "warmup": 200, "gap_ms": 10},
    ("real", "async"): {"iters": 10000, "warmup": 40000, "gap_ms": 30},
}


def have_gpu():
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def real_cudart_dir(explicit):
    """The directory holding the real libcudart.so.13."""
    cands = [explicit] if explicit else []
    home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    cands += [os.path.join(home, "lib64"), os.path.join(home, "targets", "x86_64-linux", "lib")]
    for d in cands:
        if d and os.path.exists(os.path.join(d, "libcudart.so.13")):
            return os.path.realpath(d)
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    except OSError:
        out = ""
    for line in out.splitlines():
        if line.strip().startswith("libcudart.so.13 ") and "=>" in line:
            return os.path.dirname(line.split("=>", 1)[1].strip())
    return None


def count_usage(path):
    return sum(1 for line in tracefile.lines(path) if b'"op":"usage"' in line)


def read_trailer(outdir):
    """(path, header, trailer, size) of the one trace file in outdir; trailer None when missing."""
    files = glob.glob(os.path.join(outdir, "*.jsonl")) + glob.glob(os.path.join(outdir, "*.jsonl.zst"))
    if len(files) != 1:
        return None, None, None, 0
    path = files[0]
    size = os.path.getsize(path)
    if path.endswith(".zst"):
        header, tail = None, []
        for line in tracefile.lines(path):
            header = header or json.loads(line)
            if line.startswith(b'{"type":"trailer"'):
                tail = [line]
    else:
        with open(path, "rb") as f:
            header = json.loads(f.readline())
            f.seek(max(0, size - 4096))
            tail = f.read().split(b"\n")
    trailer = None
    for line in reversed(tail):
        if line.startswith(b'{"type":"trailer"'):
            trailer = json.loads(line)
            break
    return path, header, trailer, size


# Tracer configurations (--capture): extra environment and the capture path the header must show
CAPTURES = {
    "default": ({}, None),
    "cupti": ({"GPUMEMTRACE_CUPTI": "1"}, "cupti"),
    "interpose": ({"GPUMEMTRACE_CUPTI": "0"}, "interpose-only"),
    # the cost of call stacks: the same paths without stacks and with native frames only
    "cupti-nostacks": ({"GPUMEMTRACE_CUPTI": "1", "GPUMEMTRACE_STACKS": "none"}, "cupti"),
    "cupti-native": ({"GPUMEMTRACE_CUPTI": "1", "GPUMEMTRACE_STACKS": "native"}, "cupti"),
    "interpose-nostacks": ({"GPUMEMTRACE_CUPTI": "0", "GPUMEMTRACE_STACKS": "none"}, "interpose-only"),
    "interpose-native": ({"GPUMEMTRACE_CUPTI": "0", "GPUMEMTRACE_STACKS": "native"}, "interpose-only"),
    # the runtime names from CUPTI's runtime callbacks for every call (before 2026-12-05 the only
    # way; the default, auto, has the wrappers name the calls they see)
    "cupti-rtcallbacks-nostacks": ({"GPUMEMTRACE_CUPTI": "1", "GPUMEMTRACE_CUPTI_RUNTIME": "callbacks",
                                    "GPUMEMTRACE_STACKS": "none"}, "cupti"),
    # the same with full stacks, taken inside the driver's callback as then
    "cupti-rtcallbacks": ({"GPUMEMTRACE_CUPTI": "1", "GPUMEMTRACE_CUPTI_RUNTIME": "callbacks"}, "cupti"),
    # without the runtime-domain callbacks (driver names only)
    "cupti-noruntime-nostacks": ({"GPUMEMTRACE_CUPTI": "1", "GPUMEMTRACE_CUPTI_RUNTIME": "0",
                                  "GPUMEMTRACE_STACKS": "none"}, "cupti"),
}

# The floors (bench/floor.h): not the tracer but the least a tracer of the same path can cost.
# Each is a library of BUILD/bench, preloaded instead of the tracer, with its environment and the
# callbacks (per pair of calls) and records (per event) its exit line must show at least.
FLOORS = {
    # a CUPTI subscriber holding exactly the tracer's callback ids, with an empty callback
    "floor-cupti": ("libgmt_floor_cupti.so", {"GMT_FLOOR_MODE": "empty"}),
    # the same without the runtime-domain ids
    "floor-cupti-driver": ("libgmt_floor_cupti.so", {"GMT_FLOOR_MODE": "driver"}),
    # the CUPTI subscriber recording the bare minimum (guard, clock, seq, slot) at driver EXIT
    "floor-cupti-record": ("libgmt_floor_cupti.so", {"GMT_FLOOR_MODE": "record"}),
    # LD_PRELOAD wrappers recording the bare minimum around the real call
    "floor-interpose": ("libgmt_floor_interpose.so", {}),
}


def runtime_env(runtime, build, cudart_dir, who, sim_callback_ns=0):
    """The environment of a benchmark process for the runners built on this one
    (run_self_profile.py, run_hook_inprocess.py): no GPUMEMTRACE_* variable (the tracer's
    defaults), and the runtime asked for: the double (its callbacks costing @sim_callback_ns),
    or the real one, LD_LIBRARY_PATH outranking the program's RUNPATH to tests/simcuda. Exits 77
    without a GPU, as the runners do."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUMEMTRACE_")}
    if runtime == "sim":
        env["LD_LIBRARY_PATH"] = os.path.join(build, "tests", "simcuda")
        env["SIMCUDA_ALLOC_DELAY_NS"] = "0"
        env["SIMCUPTI_CALLBACK_NS"] = str(sim_callback_ns)
        env.setdefault("SIMCUDA_MEM_BYTES", "1G")
        return env
    if not have_gpu():
        print(f"{who}: no GPU (nvidia-smi -L failed): skipped")
        sys.exit(77)
    cudart = real_cudart_dir(cudart_dir)
    if not cudart:
        sys.exit(f"{who}: libcudart.so.13 not found; give --cudart-dir")
    env["LD_LIBRARY_PATH"] = cudart + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def read_floor_line(stderr):
    """The floor library's exit line ("gmt-floor: {...}"), or None."""
    for line in reversed(stderr.splitlines()):
        if line.startswith("gmt-floor: {"):
            return json.loads(line[len("gmt-floor: "):])
    return None


def capture_matches(header, want):
    cap = (header or {}).get("capture") or []
    if want == "cupti":
        return "cupti" in cap
    if want == "interpose-only":
        return cap == ["interpose"]
    return True


# CPUs every benchmark process is pinned to (--cpus), or None: on the shared GPU host an unpinned
# process's median moved between two modes from one process to the next (the writer thread, or
# the process itself, landing on a busy core or on its own core's hyperthread sibling), which
# swamped differences of 100 ns per event.
PIN = None


def pick_cpus(spec):
    """--cpus: "none", a comma list, or "auto": two CPUs that are not hyperthread siblings of
    each other, away from CPU 0 (interrupts), so that the program's thread and the tracer's
    writer each have a core of their own."""
    if spec in (None, "", "none"):
        return None
    if spec != "auto":
        return sorted({int(c) for c in spec.split(",")})
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 4:
        return None

    def siblings(c):
        try:
            with open(f"/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list") as f:
                text = f.read().strip()
        except OSError:
            return {c}
        out = set()
        for part in text.split(","):
            lo, _, hi = part.partition("-")
            out.update(range(int(lo), int(hi or lo) + 1))
        return out

    first = cpus[2]
    second = next((c for c in cpus[3:] if c not in siblings(first)), None)
    return [first, second] if second is not None else None


def pinned():
    """preexec_fn for subprocess.run: the child (and every thread it starts) on PIN."""
    return (lambda: os.sched_setaffinity(0, PIN)) if PIN else None


def run_once(cmd, env, traced, lib, extra_env=None, floor=None):
    """Run the benchmark once; returns (result dict, trace facts dict or None). With @floor
    (a FLOORS entry) the floor library is preloaded instead of the tracer, and the facts are
    what its exit line says."""
    env = dict(env)
    outdir = None
    if floor:
        env["LD_PRELOAD"] = os.path.join(os.path.dirname(os.path.dirname(lib)), "bench", floor[0])
        env.pop("CUDA_INJECTION64_PATH", None)
        env.update(floor[1])
    elif traced:
        outdir = tempfile.mkdtemp(prefix="gmt-bench-hook-")
        env["LD_PRELOAD"] = lib
        env["GPUMEMTRACE_OUTPUT_DIR"] = outdir
        env.update(extra_env or {})
    else:
        env.pop("LD_PRELOAD", None)
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600,
                           preexec_fn=pinned())
        if p.returncode != 0:
            sys.exit(f"run_hook_overhead: {' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}")
        res = json.loads(p.stdout.strip().splitlines()[-1])
        if floor:
            line = read_floor_line(p.stderr) or {}
            return res, {"floor": line, "expected": res["events"], "stderr": p.stderr.strip(),
                         "events": line.get("records"), "dropped": 0}
        if not traced:
            return res, None
        path, header, trailer, size = read_trailer(outdir)
        facts = {"file": path is not None, "trailer": trailer is not None, "bytes": size,
                 # readings of pool reservations are events too, but not the program's calls
                 "events": trailer["events"] - count_usage(path) if trailer else None,
                 "dropped": trailer["dropped"] if trailer else None,
                 "capture": (header or {}).get("capture"),
                 "coverage_reason": (header or {}).get("coverage_reason"),
                 "expected": res["events"], "stderr": p.stderr.strip()}
        return res, facts
    finally:
        if outdir:
            shutil.rmtree(outdir, ignore_errors=True)


def floor_problem(name, f):
    """Why a floor run did not measure its floor (None when it did)."""
    line = f["floor"]
    if not line:
        return f"{name}: the floor library did not report (not loaded?): {f['stderr'] or 'no stderr'}"
    # each call (two per pair) goes through the floor: CUPTI callbacks or wrapper calls
    if line["calls"] < f["expected"]:
        return f"{name}: the floor saw {line['calls']} calls for {f['expected']} events: not in the call path"
    if line["mode"] in ("record",) and line["records"] < f["expected"]:
        return f"{name}: the floor recorded {line['records']} of {f['expected']} events"
    return None


def base_name(name):
    """The configuration of a variant ("before:cupti" is cupti with the --baseline build)."""
    return name.split(":", 1)[1] if name.startswith("before:") else name


def floor_of(name, names):
    """The floor a tracer configuration is measured against, when it is in this run: the empty
    callback on the ids that fire for the benchmark's calls. With CUPTI's runtime callbacks
    (GPUMEMTRACE_CUPTI_RUNTIME=callbacks, and a --baseline build from before 2026-12-05) that is
    floor-cupti; with none (=0), or with the default (auto), where the preloaded wrappers name
    the calls and only their driver callbacks fire, floor-cupti-driver (else floor-cupti)."""
    if name in FLOORS:
        return None
    env = CAPTURES[base_name(name)][0]
    if env.get("GPUMEMTRACE_CUPTI") == "0":
        return "floor-interpose" if "floor-interpose" in names else None
    driver_only = env.get("GPUMEMTRACE_CUPTI_RUNTIME") != "callbacks" and not name.startswith("before:")
    if driver_only and "floor-cupti-driver" in names:
        return "floor-cupti-driver"
    return "floor-cupti" if "floor-cupti" in names else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="meson build directory")
    ap.add_argument("--runtime", choices=["sim", "real"], default="sim")
    ap.add_argument("--mode", choices=["malloc", "async"], default="malloc")
    ap.add_argument("--capture", default="default",
                    help="tracer configurations to compare with no tracer (see above)")
    ap.add_argument("--rounds", type=int, default=11, help="interleaved A/B rounds (after one warm-up round)")
    ap.add_argument("--iters", type=int, help="pairs per repetition (default depends on runtime and mode)")
    ap.add_argument("--reps", type=int, default=11, help="repetitions per process; the process reports their median")
    ap.add_argument("--warmup", type=int, help="warm-up pairs per process")
    ap.add_argument("--gap-ms", type=int, help="pause between repetitions (writer drains)")
    ap.add_argument("--size", type=int, default=1 << 20, help="bytes per allocation (default 1 MiB)")
    ap.add_argument("--sim-delay-ns", type=int, default=0,
                    help="sim only: SIMCUDA_ALLOC_DELAY_NS, a device-like cost per call (40000 ~ an H200 cudaMalloc pair)")
    ap.add_argument("--sim-callback-ns", type=int, default=0,
                    help="sim only: SIMCUPTI_CALLBACK_NS, what the CUPTI double charges per delivered "
                    "callback (about 70 on the H200)")
    ap.add_argument("--cudart-dir", help="real only: directory of libcudart.so.13")
    ap.add_argument("--baseline", help="another build directory: each tracer configuration also "
                    "runs with its libgpumemtrace.so, as before:NAME, interleaved (before and after "
                    "in one run)")
    ap.add_argument("--cpus", default="none",
                    help="pin every process to these CPUs: a comma list, 'auto' (two cores that "
                    "are not hyperthread siblings, not CPU 0) or 'none' (default)")
    args = ap.parse_args()
    global PIN
    PIN = pick_cpus(args.cpus)

    build = os.path.abspath(args.build)
    exe = os.path.join(build, "bench", "hook_overhead")
    lib = os.path.join(build, "src", "libgpumemtrace.so")
    for f in (exe, lib):
        if not os.path.exists(f):
            sys.exit(f"run_hook_overhead: {f} not found (build with ninja -C {args.build})")
    d = DEFAULTS[(args.runtime, args.mode)]
    iters = args.iters or d["iters"]
    warmup = args.warmup if args.warmup is not None else d["warmup"]
    gap_ms = args.gap_ms if args.gap_ms is not None else d["gap_ms"]

    env = dict(os.environ)
    for k in list(env):
        if k.startswith("GPUMEMTRACE_"):
            del env[k]  # the tracer runs with its defaults; the doc states them
    if args.runtime == "sim":
        env["LD_LIBRARY_PATH"] = os.path.join(build, "tests", "simcuda")
        env["SIMCUDA_ALLOC_DELAY_NS"] = str(args.sim_delay_ns)
        env["SIMCUPTI_CALLBACK_NS"] = str(args.sim_callback_ns)
        env.setdefault("SIMCUDA_MEM_BYTES", "1G")
    else:
        if not have_gpu():
            print("run_hook_overhead: no GPU (nvidia-smi -L failed): skipped")
            sys.exit(77)
        cudart = real_cudart_dir(args.cudart_dir)
        if not cudart:
            sys.exit("run_hook_overhead: libcudart.so.13 not found; give --cudart-dir")
        # LD_LIBRARY_PATH outranks the program's RUNPATH to tests/simcuda
        env["LD_LIBRARY_PATH"] = cudart + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")

    cmd = [exe, "--mode", args.mode, "--iters", str(iters), "--reps", str(args.reps),
           "--warmup", str(warmup), "--gap-ms", str(gap_ms), "--size", str(args.size)]
    print(f"hook_overhead: runtime={args.runtime} mode={args.mode} size={args.size} iters={iters} "
          f"reps={args.reps} warmup={warmup} gap_ms={gap_ms} rounds={args.rounds} (+1 warm-up round)"
          + (f" sim_delay_ns={args.sim_delay_ns} sim_callback_ns={args.sim_callback_ns}"
             if args.runtime == "sim" else ""))
    print(f"  command: {' '.join(cmd)}")
    print(f"  pinned to CPUs: {','.join(map(str, PIN)) if PIN else 'not pinned'}")
    print(f"  LD_LIBRARY_PATH={env['LD_LIBRARY_PATH']}")

    names = ["cupti", "interpose"] if args.capture == "both" else args.capture.split(",")
    base_lib = None
    if args.baseline:
        base_lib = os.path.join(os.path.abspath(args.baseline), "src", "libgpumemtrace.so")
        if not os.path.exists(base_lib):
            sys.exit(f"run_hook_overhead: {base_lib} not found (--baseline)")
        # each tracer configuration also with the baseline's library, right after it
        names = [v for n in names for v in ([n] if n in FLOORS else [f"before:{n}", n])]
    for n in names:
        if base_name(n) not in CAPTURES and n not in FLOORS:
            sys.exit(f"run_hook_overhead: unknown --capture {n!r} (one of both, "
                     f"{', '.join(list(CAPTURES) + list(FLOORS))}, or a comma list)")
        if n in FLOORS and not os.path.exists(os.path.join(build, "bench", FLOORS[n][0])):
            sys.exit(f"run_hook_overhead: {FLOORS[n][0]} not found in {build}/bench (ninja -C {args.build})")
    print(f"  tracer configurations: {', '.join(names)}")
    plain = []
    per = {n: {"traced": [], "diffs": [], "facts": []} for n in names}
    for rnd in range(args.rounds + 1):
        a, _ = run_once(cmd, env, False, lib)
        if a["runtime"] != args.runtime:
            sys.exit(f"run_hook_overhead: asked for the {args.runtime} runtime, the program ran on "
                     f"{a['runtime']} (check LD_LIBRARY_PATH)")
        row = []
        for n in names:
            if n in FLOORS:
                b, facts = run_once(cmd, env, True, lib, floor=FLOORS[n])
            else:
                b, facts = run_once(cmd, env, True, base_lib if n != base_name(n) else lib,
                                    CAPTURES[base_name(n)][0])
            if b["runtime"] != args.runtime:
                sys.exit(f"run_hook_overhead: asked for the {args.runtime} runtime, the program ran on "
                         f"{b['runtime']} (check LD_LIBRARY_PATH)")
            if rnd == 0:
                row.append(f"{n} {b['median_ns_per_pair']:.1f} ns")
                continue
            per[n]["traced"].append(b["median_ns_per_pair"])
            per[n]["diffs"].append(b["median_ns_per_pair"] - a["median_ns_per_pair"])
            per[n]["facts"].append(facts)
            drop = "" if facts["dropped"] == 0 else f" <-- DROPPED {facts['dropped']}"
            row.append(f"{n} {b['median_ns_per_pair']:10.1f} ({facts['events']} ev, drop {facts['dropped']}){drop}")
        if rnd == 0:
            print(f"  warm-up round: plain {a['median_ns_per_pair']:.1f} ns, " + ", ".join(row) + " (discarded)")
            continue
        plain.append(a["median_ns_per_pair"])
        print(f"  round {rnd:2d}: plain {a['median_ns_per_pair']:10.1f}  " + "  ".join(row) + " ns/pair")

    mp = statistics.median(plain)
    problems = []
    figures = {}
    print()
    print(f"  without tracer  median {mp:10.1f} ns/pair  ({mp / 2:.1f} ns/event)")
    for n in names:
        d = per[n]
        mt = statistics.median(d["traced"])
        ratio = mt / mp if mp > 0 else float("inf")
        per_event = (mt - mp) / 2.0
        per_event_paired = statistics.median(d["diffs"]) / 2.0
        for i, f in enumerate(d["facts"], 1):
            if n in FLOORS:
                why = floor_problem(f"{n} round {i}", f)
                if why:
                    problems.append(why)
                continue
            if not f["file"] or not f["trailer"]:
                problems.append(f"{n} round {i}: no trace file or no trailer ({f['stderr'] or 'no stderr'})")
            elif f["dropped"] != 0:
                problems.append(f"{n} round {i}: the tracer dropped {f['dropped']} of {f['expected']} events")
            elif f["events"] != f["expected"]:
                problems.append(f"{n} round {i}: trace has {f['events']} events, the program made {f['expected']}")
            elif args.runtime == "real" and not capture_matches({"capture": f["capture"]},
                                                                CAPTURES[base_name(n)][1]):
                problems.append(f"{n} round {i}: header capture {f['capture']} (coverage_reason "
                                f"{f['coverage_reason']!r}) is not the {n} path")
        events = [f["events"] for f in d["facts"] if f["events"] is not None]
        dropped = sum(f["dropped"] or 0 for f in d["facts"])
        label = "with tracer" if n == "default" else n if n in FLOORS else f"tracer {n}"
        print(f"  {label:<15} median {mt:10.1f} ns/pair  ({mt / 2:.1f} ns/event)  ratio {ratio:.2f}x  "
              f"overhead {per_event:.1f} ns/event (difference of medians), {per_event_paired:.1f} ns/event "
              f"(median of per-round differences)")
        if n in FLOORS:
            print(f"  {'':<15} the floor recorded {events[0] if events else '?'} events per run")
        else:
            print(f"  {'':<15} trace {events[0] if events else '?'} events per traced run, dropped {dropped} in all")
        figures[n] = {"traced_ns_per_pair": round(mt, 1), "ratio": round(ratio, 3),
                      "best_ns_per_pair": round(min(d["traced"]), 1),
                      "overhead_ns_per_event": round(per_event, 1),
                      "overhead_ns_per_event_paired": round(per_event_paired, 1),
                      "traced_samples": d["traced"], "events_per_run": events[0] if events else None,
                      "dropped": dropped}
    # The tracer above its path's floor: the cost that is ours (per event, both estimators).
    for n in names:
        floor = floor_of(n, names)
        if not floor:
            continue
        t, f = per[n]["traced"], per[floor]["traced"]
        above = (statistics.median(t) - statistics.median(f)) / 2.0
        paired = statistics.median([a - b for a, b in zip(t, f)]) / 2.0
        figures[n]["floor"] = floor
        figures[n]["above_floor_ns_per_event"] = round(above, 1)
        figures[n]["above_floor_ns_per_event_paired"] = round(paired, 1)
        best = (min(t) - min(f)) / 2.0
        figures[n]["above_floor_ns_per_event_best"] = round(best, 1)
        print(f"  {n} above {floor}: {above:.1f} ns/event (difference of medians), "
              f"{paired:.1f} ns/event (median of per-round differences), {best:.1f} ns/event "
              f"(difference of the best rounds)")
    for p in problems:
        print(f"  PROBLEM: {p}")
    if any(f["dropped"] for f in figures.values()):
        print("  the tracer DROPPED events: these figures measure the drop path, not the tracer "
              "(raise --gap-ms or lower --iters)")
    first = figures[names[0]]
    summary = {
        "bench": "hook_overhead", "runtime": args.runtime, "mode": args.mode, "size": args.size,
        "iters": iters, "reps": args.reps, "warmup": warmup, "gap_ms": gap_ms, "rounds": args.rounds,
        "sim_delay_ns": args.sim_delay_ns if args.runtime == "sim" else None, "capture": args.capture,
        "plain_ns_per_pair": round(mp, 1), "traced_ns_per_pair": first["traced_ns_per_pair"],
        "ratio": first["ratio"], "overhead_ns_per_event": first["overhead_ns_per_event"],
        "overhead_ns_per_event_paired": first["overhead_ns_per_event_paired"],
        "plain_samples": plain, "traced_samples": first["traced_samples"], "cpus": PIN,
        "events_per_run": first["events_per_run"], "dropped": sum(f["dropped"] for f in figures.values()),
        "variants": figures, "ok": not problems,
    }
    print(json.dumps(summary))
    sys.exit(0 if not problems else 1)


if __name__ == "__main__":
    main()
