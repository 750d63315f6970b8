#!/usr/bin/env python3
"""Demo (scripts/gpu-check, group `demos`): GPU memory that grows every iteration because the
loop keeps each loss *tensor*.

    gpumemtrace run -o DIR -- python3 tests/gpu/demo_leak.py [--iters 30] [--stats FILE]

A training loop with gradient accumulation: 30 micro-batches, one optimizer step at the end. It
logs each micro-batch's loss with `losses.append(loss)` and calls backward once, on the mean of
that list, after the loop. Each kept loss keeps its autograd graph, and the graph keeps every
activation the forward pass saved for backward (inputs of the Linear layers and of GELU: 4 x 32
MiB plus the batch per micro-batch), so device memory rises by ~150 MiB per micro-batch until
the final backward. (In a loop that calls backward per step, backward frees the saved
activations; it is the graph kept *alive without a backward* that holds them.) The fix is in
demo_clean.py: `(loss / n).backward()` per micro-batch and `losses.append(loss.item())`.

The activations are allocated on the forward line marked LEAK-SITE (PyTorch's caching allocator
calls cudaMalloc there, inside model(x): torch's own frames are in site-packages, so the call site
is this line), not on the append line, which allocates nothing. A marker per micro-batch
(gpumemtrace.mark, or the tracer's gmt_mark through ctypes) lets `growth[]` sample each site.
tests/gpu/check_demos.py finds the line by its marker comment.

--stats FILE writes what PyTorch itself saw (allocated bytes at the first and last marker), so the
check can compare the trace's growth with torch's own accounting.
"""
import argparse
import json

from demo_common import B, D, marker, model_and_optimizer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--stats")
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F

    mark = marker("demo_leak")
    dev = torch.device("cuda")
    model, opt = model_and_optimizer(torch, dev)
    losses = []
    allocated = []
    opt.zero_grad(set_to_none=True)
    for it in range(args.iters):
        mark(f"micro-batch {it}")
        allocated.append(torch.cuda.memory_allocated())
        x = torch.randn(B, D, device=dev)
        y = torch.randn(B, D, device=dev)
        out = model(x)  # LEAK-SITE: the activations saved for backward are allocated here
        loss = F.mse_loss(out, y)
        losses.append(loss)  # the bug: keeps the graph, and with it every saved activation
    mark("after the loop")
    allocated.append(torch.cuda.memory_allocated())
    torch.stack(losses).mean().backward()
    opt.step()
    torch.cuda.synchronize()
    grown = allocated[-1] - allocated[0]
    print(f"demo_leak: {args.iters} micro-batches kept {grown / 2**20:.0f} MiB of tensors alive "
          f"({grown / args.iters / 2**20:.0f} MiB each); reserved {torch.cuda.memory_reserved() / 2**20:.0f} MiB")
    if args.stats:
        with open(args.stats, "w") as f:
            json.dump({"demo": "leak", "iters": args.iters, "allocated_at_markers": allocated,
                       "allocated_growth": grown, "reserved": torch.cuda.memory_reserved()}, f)


if __name__ == "__main__":
    main()
