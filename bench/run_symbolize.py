#!/usr/bin/env python3
"""The analyzer's symbolization on a large library: a trace whose stacks are return addresses in
one real ELF file (a few thousand distinct addresses in its code), reported with
`gpumemtrace report`, its wall time per round; with --baseline, another build's analyzer on the
same trace in the same rounds (interleaved), and whether the two reports are the same bytes.

    run_symbolize.py --build BUILD [--lib PATH] [--stacks 2000] [--depth 25] [--rounds 3]
                     [--baseline OLD_BUILD]

--lib defaults to the first of a few large C++ libraries found on this machine (LLVM's, the
C++ library). The trace names the file with its own build-id, so the analyzer opens and
symbolizes it as it would a traced program's library. The last line is one JSON object. Python 3
standard library only.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

CANDIDATES = ["/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1", "/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1",
              "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"]


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "Build ID:" in line:
            return line.split("Build ID:")[1].strip()
    return ""


def code_range(path):
    """(lo, hi) of the .text section's addresses."""
    out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.replace("[ ", "[").split()
        if len(f) > 5 and f[1] == ".text":
            addr, size = int(f[3], 16), int(f[5], 16)
            return addr, addr + size
    sys.exit(f"run_symbolize: {path} has no .text section")


def write_trace(path, lib, nstacks, depth):
    random.seed(1)
    base = 0x7f0000000000
    lo, hi = code_range(lib)
    pool = [random.randrange(lo, hi) for _ in range(nstacks * 3)]
    lines = [{"type": "header", "format": "gpumemtrace", "version": 1, "tracer": "0.1.0", "pid": 7,
              "ppid": 1, "host": "bench", "argv": ["bench"], "start_ts": 1000,
              "start_unix_ns": 1796228579123000000, "rank": None, "forked_from": None,
              "coverage": "full", "capture": ["cupti"],
              "options": {"ring_slots": 65536, "flush_ms": 100, "snapshot_ms": 1000}},
             {"type": "modules", "seq": 1, "modules": [{"path": lib, "base": hex(base),
                                                        "build_id": build_id(lib),
                                                        "segments": [[0, hi]]}]}]
    seq, ts = 1, 2000
    for i in range(1, nstacks + 1):
        lines.append({"type": "stack", "id": i,
                      "frames": [hex(base + random.choice(pool)) for _ in range(depth)]})
    for i in range(1, nstacks + 1):
        seq, ts = seq + 1, ts + 10
        lines.append({"type": "event", "seq": seq, "ts": ts, "tid": 7, "op": "alloc", "api": "cudaMalloc",
                      "kind": "device", "device": 0, "stream": "0x0", "ptr": hex(0x7e0000000000 + i * 0x100000),
                      "size": 1048576, "result": 0, "stack": i})
    for i in range(1, nstacks + 1, 2):
        seq, ts = seq + 1, ts + 10
        lines.append({"type": "event", "seq": seq, "ts": ts, "tid": 7, "op": "free", "api": "cudaFree",
                      "kind": "device", "device": 0, "stream": "0x0", "ptr": hex(0x7e0000000000 + i * 0x100000),
                      "result": 0, "stack": 0})
    lines.append({"type": "trailer", "ts": ts + 10, "events": seq - 1, "dropped": 0, "reason": "exit"})
    with open(path, "w") as f:
        for line in lines:
            f.write(json.dumps(line, separators=(",", ":")) + "\n")


def report(exe, trace):
    t = time.monotonic()
    p = subprocess.run([exe, "report", trace], capture_output=True, timeout=1800)
    if p.returncode != 0:
        sys.exit(f"run_symbolize: {exe} report exits {p.returncode}: {p.stderr.decode(errors='replace')[-500:]}")
    return time.monotonic() - t, p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--baseline")
    ap.add_argument("--lib")
    ap.add_argument("--stacks", type=int, default=2000)
    ap.add_argument("--depth", type=int, default=25)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    lib = args.lib or next((c for c in CANDIDATES if os.path.exists(c)), None)
    if not lib:
        sys.exit("run_symbolize: no large library here: pass --lib PATH")
    builds = {"this": os.path.join(args.build, "tools", "gpumemtrace")}
    if args.baseline:
        builds["baseline"] = os.path.join(args.baseline, "tools", "gpumemtrace")
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "sym.jsonl")
        write_trace(trace, lib, args.stacks, args.depth)
        times, outs = {k: [] for k in builds}, {}
        for r in range(args.rounds):
            for name in (list(builds) if r % 2 == 0 else list(builds)[::-1]):
                t, out = report(builds[name], trace)
                times[name].append(t)
                outs[name] = out
                print(f"round {r + 1} {name}: {t:.2f} s")
    res = {"bench": "symbolize", "lib": lib, "stacks": args.stacks, "depth": args.depth,
           "seconds": {k: round(statistics.median(v), 3) for k, v in times.items()}}
    if args.baseline:
        res["same_report"] = outs["this"] == outs["baseline"]
        print(f"same report: {res['same_report']}")
    for k, v in res["seconds"].items():
        print(f"{k}: median {v:.2f} s")
    print(json.dumps(res))


if __name__ == "__main__":
    main()
