#!/usr/bin/env python3
"""PyTorch under the tracer (scripts/gpu-check).

    torch_check.py train OUT.json        the workload: a small training loop; writes what PyTorch's
                                         own allocator statistics say it did
    torch_check.py compare OUT.json DIR  compares those statistics with the traces in DIR

What each allocator mode shows at the CUDA runtime layer:
  default (native caching allocator): cudaMalloc/cudaFree of *segments*, not tensors. Every
    segment torch allocates must be in the trace ("segment.all.allocated"); the trace may hold
    more cudaMalloc calls than that (other users of the shared runtime).
  backend:cudaMallocAsync: cudaMallocAsync/cudaFreeAsync per tensor; torch's allocated-bytes
    peak is the peak of live pool allocations in the trace.
"""
import ctypes
import glob
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from gpumemtrace import tracefile  # noqa: E402 (.jsonl and .jsonl.zst alike)


def mark(label):
    # Markers from Python without a compiler: the tracer's gmt_mark is in the global scope.
    lib = ctypes.CDLL(None)
    if hasattr(lib, "gmt_mark"):
        lib.gmt_mark(label.encode())


def train(out_path):
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = nn.Sequential(
        nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 4096), nn.GELU(), nn.Linear(4096, 1024)
    ).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for epoch in range(3):
        mark(f"epoch {epoch}")
        for step in range(20):
            x = torch.randn(256, 1024, device=dev)
            y = torch.randn(256, 1024, device=dev)
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    torch.cuda.synchronize()
    s = torch.cuda.memory_stats()
    backend = torch.cuda.memory.get_allocator_backend()
    keys = ["segment.all.allocated", "segment.all.freed", "reserved_bytes.all.peak",
            "reserved_bytes.all.current", "allocated_bytes.all.peak", "allocated_bytes.all.current"]
    with open(out_path, "w") as f:
        json.dump({"pid": os.getpid(), "backend": backend, "loss": loss.item(),
                   "stats": {k: s.get(k) for k in keys}}, f)
    print(f"torch_check: {backend} allocator, final loss {loss.item():.4f}")


def replay(path):
    recs = [json.loads(l) for l in tracefile.lines(path)]
    ev = sorted((r for r in recs if r["type"] == "event"), key=lambda r: r["seq"])
    count, live, cur, peak = {}, {}, {}, {}
    for e in ev:
        key = (e["op"], e["api"], e["result"] == 0)
        count[key] = count.get(key, 0) + 1
        if e["result"] != 0:
            continue
        if e["op"] == "alloc":
            live[e["ptr"]] = (e["size"], e["kind"])
            cur[e["kind"]] = cur.get(e["kind"], 0) + e["size"]
            peak[e["kind"]] = max(peak.get(e["kind"], 0), cur[e["kind"]])
        elif e["op"] == "free" and e["ptr"] in live:
            size, kind = live.pop(e["ptr"])
            cur[kind] -= size
    trailer = recs[-1] if recs and recs[-1]["type"] == "trailer" else None
    # the program's own marks, and the optimizer steps the PyTorch layer marks by itself
    # ("auto":"step", one per opt.step())
    markers = sum(1 for r in recs if r["type"] == "marker" and "auto" not in r)
    auto_steps = sum(1 for r in recs if r["type"] == "marker" and r.get("auto") == "step")
    return count, peak, trailer, markers, auto_steps


def compare(stats_path, trace_dir):
    did = json.load(open(stats_path))
    st = did["stats"]
    traces = [p for p in glob.glob(os.path.join(trace_dir, "*.jsonl")) +
              glob.glob(os.path.join(trace_dir, "*.jsonl.zst"))
              if json.loads(next(tracefile.lines(p), b"{}")).get("pid") == did["pid"]]
    if len(traces) != 1:
        print(f"FAIL: expected one trace of pid {did['pid']} in {trace_dir}, found {traces}")
        return 1
    count, peak, trailer, markers, auto_steps = replay(traces[0])
    ok = True

    def row(what, torch_says, trace_says, good):
        nonlocal ok
        ok = ok and good
        print(f"  {what:<44} torch {torch_says!s:>14}   trace {trace_says!s:>14}   {'ok' if good else 'MISMATCH'}")

    print(f"torch {did['backend']} allocator, pid {did['pid']}: {os.path.basename(traces[0])}")
    row("trace complete (trailer), events dropped", "-", f"{trailer is not None}, {trailer['dropped'] if trailer else '?'}",
        trailer is not None and trailer["dropped"] == 0)
    row("markers from Python (ctypes gmt_mark)", 3, markers, markers == 3)
    row("optimizer steps marked by themselves", 60, auto_steps, auto_steps == 60)
    if did["backend"] == "native":
        mallocs = count.get(("alloc", "cudaMalloc", True), 0)
        frees = count.get(("free", "cudaFree", True), 0)
        row("segments allocated (cudaMalloc)", st["segment.all.allocated"], mallocs,
            mallocs >= st["segment.all.allocated"])
        row("segments freed (cudaFree)", st["segment.all.freed"], frees, frees >= st["segment.all.freed"])
        row("peak reserved bytes (device kind peak)", st["reserved_bytes.all.peak"], peak.get("device", 0),
            peak.get("device", 0) >= st["reserved_bytes.all.peak"])
    else:
        allocs = count.get(("alloc", "cudaMallocAsync", True), 0)
        frees = count.get(("free", "cudaFreeAsync", True), 0)
        print(f"  cudaMallocAsync calls in trace: {allocs}, cudaFreeAsync: {frees}")
        row("peak allocated bytes (pool kind peak)", st["allocated_bytes.all.peak"], peak.get("pool", 0),
            peak.get("pool", 0) >= st["allocated_bytes.all.peak"])
        row("tensor allocations seen", "> 0", allocs, allocs > 0)
    fails = {k: v for k, v in count.items() if not k[2]}
    if fails:
        print(f"  failed calls in trace: {fails}")
    print("torch_check:", "ok" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1] == "train":
        train(sys.argv[2])
    elif sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
