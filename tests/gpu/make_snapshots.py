#!/usr/bin/env python3
"""Real PyTorch memory snapshot pickles for the pickle reader's tests (scripts/gpu-fixtures).

    make_snapshots.py OUTDIR

Writes, each from its own small workload on the GPU:
  history.pickle     _record_memory_history(stacks="python") over a training loop, then
                     _dump_snapshot: segments, blocks, and device_traces with frames
  nohistory.pickle   torch.cuda.memory._snapshot() with history never enabled (segments only)
  expandable.pickle  the same loop with expandable_segments:True (run as a child process)
  oom.pickle         history on, an allocation too large to fit: the trace ends with an 'oom'
  graphs.pickle      a CUDA graph capture (a private memory pool) and a MemPool
and OUTDIR/figures.json: torch's own figures at the moment of each dump, for the tests to compare.
"""
import json
import os
import subprocess
import sys

import torch


def loop(steps=4):
    model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(),
                                torch.nn.Linear(2048, 512)).cuda()
    opt = torch.optim.AdamW(model.parameters())
    for i in range(steps):
        x = torch.randn(64 + 32 * i, 512, device="cuda")  # varying shapes
        model(x).square().mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return model, opt


def figures():
    torch.cuda.synchronize()
    return {"allocated": torch.cuda.memory_allocated(), "reserved": torch.cuda.memory_reserved(),
            "segments": len(torch.cuda.memory_snapshot())}


def main():
    out = sys.argv[1]
    which = sys.argv[2] if len(sys.argv) > 2 else "all"
    os.makedirs(out, exist_ok=True)
    figs = {}
    if which in ("all", "history"):
        torch.cuda.memory._record_memory_history(max_entries=2000, stacks="python")
        keep = loop()
        figs["history"] = figures()
        torch.cuda.memory._dump_snapshot(os.path.join(out, "history.pickle"))
        torch.cuda.memory._record_memory_history(enabled=None)
        del keep
    if which == "nohistory":
        keep = loop()
        figs["nohistory"] = figures()
        import pickle
        with open(os.path.join(out, "nohistory.pickle"), "wb") as f:
            pickle.dump(torch.cuda.memory._snapshot(), f)
    if which == "expandable":
        torch.cuda.memory._record_memory_history(max_entries=2000, stacks="python")
        keep = loop()
        figs["expandable"] = figures()
        torch.cuda.memory._dump_snapshot(os.path.join(out, "expandable.pickle"))
    if which in ("all", "oom"):
        torch.cuda.memory._record_memory_history(max_entries=2000, stacks="python")
        a = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
        try:
            torch.empty(1 << 50, dtype=torch.uint8, device="cuda")
        except torch.cuda.OutOfMemoryError as e:
            figs["oom"] = dict(figures(), message=str(e)[:400])
        torch.cuda.memory._dump_snapshot(os.path.join(out, "oom.pickle"))
        torch.cuda.memory._record_memory_history(enabled=None)
        del a
    if which in ("all", "graphs"):
        torch.cuda.memory._record_memory_history(max_entries=2000, stacks="python")
        static_x = torch.randn(256, 256, device="cuda")
        lin = torch.nn.Linear(256, 256).cuda()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                lin(static_x)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            static_y = lin(static_x).relu()
        g.replay()
        pool = torch.cuda.MemPool()
        with torch.cuda.use_mem_pool(pool):
            in_pool = torch.empty(8 << 20, dtype=torch.uint8, device="cuda")
        figs["graphs"] = figures()
        torch.cuda.memory._dump_snapshot(os.path.join(out, "graphs.pickle"))
        torch.cuda.memory._record_memory_history(enabled=None)
    if which == "all":
        for child, env in (("nohistory", {}), ("expandable",
                                                  {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})):
            subprocess.run([sys.executable, __file__, out, child], env=dict(os.environ, **env), check=True)
            with open(os.path.join(out, f"figures-{child}.json")) as f:
                figs.update(json.load(f))
        with open(os.path.join(out, "figures.json"), "w") as f:
            json.dump(figs, f, indent=1)
    else:
        with open(os.path.join(out, f"figures-{which}.json"), "w") as f:
            json.dump(figs, f)


if __name__ == "__main__":
    main()
