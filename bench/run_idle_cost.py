#!/usr/bin/env python3
"""What a traced process costs while it makes no GPU call: CPU time and wakeups per second.

    run_idle_cost.py --build BUILD [--runtime sim|real] [--seconds 5] [--rounds 3] [--baseline LIB]

The preload victim (tests/preload/victim hang: a few allocations, then it sleeps until killed) runs
untraced and under the tracer (LD_PRELOAD, default options), interleaved. After it says "ready"
and one more second, its CPU time (utime + stime of /proc/PID/stat, all threads) and its threads'
voluntary context switches (wakeups) are sampled over --seconds. A training job waits on data, on
other ranks, on the GPU: the tracer is on there too. Prints one line per run and medians, then one
JSON line. Builds nothing: BUILD must hold tests/preload/victim and src/libgpumemtrace.so.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time


def sample(pid):
    """(CPU seconds of the process, voluntary context switches of its threads, per thread name)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    per = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                vol = next(int(l.split()[1]) for l in f if l.startswith("voluntary_ctxt_switches"))
        except (OSError, StopIteration):
            continue
        per[name] = per.get(name, 0) + vol
    return ticks / os.sysconf("SC_CLK_TCK"), sum(per.values()), per


def one(victim, env, seconds):
    p = subprocess.Popen([victim, "hang"], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True)
    try:
        for line in p.stdout:
            if line.strip() == "ready":
                break
        time.sleep(1.0)
        cpu0, wake0, per0 = sample(p.pid)
        time.sleep(seconds)
        cpu1, wake1, per1 = sample(p.pid)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    threads = {k: (per1.get(k, 0) - per0.get(k, 0)) / seconds for k in per1}
    return {"cpu_ms_per_s": (cpu1 - cpu0) * 1000 / seconds, "wakeups_per_s": (wake1 - wake0) / seconds,
            "threads": threads}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--runtime", choices=["sim", "real"], default="sim")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline", help="another build's libgpumemtrace.so, run as a third variant")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    victim = os.path.join(build, "tests", "preload", "victim")
    lib = os.path.join(build, "src", "libgpumemtrace.so")
    rt = (os.path.join(build, "tests", "simcuda") if args.runtime == "sim"
          else os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "lib64"))
    out = tempfile.mkdtemp(prefix="gmt-idle-")
    base = {k: v for k, v in os.environ.items() if not k.startswith("GPUMEMTRACE_") and k != "LD_PRELOAD"}
    base.update(LD_LIBRARY_PATH=rt, SIMCUDA_MEM_BYTES="1G")
    variants = {"untraced": dict(base), "traced": dict(base, LD_PRELOAD=lib, GPUMEMTRACE_OUTPUT_DIR=out)}
    if args.baseline:
        variants["baseline"] = dict(base, LD_PRELOAD=os.path.abspath(args.baseline),
                                    GPUMEMTRACE_OUTPUT_DIR=out)
    runs = {k: [] for k in variants}
    for r in range(args.rounds):
        for name, env in variants.items():
            res = one(victim, env, args.seconds)
            runs[name].append(res)
            tw = ", ".join(f"{k} {v:.0f}/s" for k, v in sorted(res["threads"].items()) if v)
            print(f"  round {r + 1} {name:9} CPU {res['cpu_ms_per_s']:6.2f} ms/s, "
                  f"{res['wakeups_per_s']:7.1f} wakeups/s ({tw})", flush=True)
    summary = {}
    for name, rs in runs.items():
        summary[name] = {"cpu_ms_per_s": statistics.median(r["cpu_ms_per_s"] for r in rs),
                         "wakeups_per_s": statistics.median(r["wakeups_per_s"] for r in rs)}
        print(f"{name:9} median CPU {summary[name]['cpu_ms_per_s']:.2f} ms per second, "
              f"{summary[name]['wakeups_per_s']:.1f} wakeups per second")
    print(json.dumps({"bench": "idle_cost", "runtime": args.runtime, "seconds": args.seconds,
                      "rounds": args.rounds, "median": summary, "runs": runs}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
