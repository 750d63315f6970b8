#!/usr/bin/env python3
"""Demo (scripts/gpu-check, group `demos`): the loop of demo_leak.py done right, so device
memory stays flat.

    gpumemtrace run -o DIR -- python3 tests/gpu/demo_clean.py [--iters 30] [--stats FILE]

The same model, batches and gradient accumulation as demo_leak.py, but each micro-batch calls
`(loss / n).backward()` at once (which frees the activations it saved) and logs
`losses.append(loss.item())`, a Python float. After the first micro-batch PyTorch's caching
allocator serves every request from the blocks it already holds, so no call site's device
memory rises from marker to marker, and `gpumemtrace check --max-growth-bytes 64MiB
--max-leaked-bytes 0` must pass.

At exit PyTorch does not give its cached segments back (the driver frees them with the
context): they are live at the end of the trace with `cache` "pytorch", memory of the caching
allocator, not a leak of this program. check_demos.py prints what leaks[] says about them.
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

    mark = marker("demo_clean")
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
        out = model(x)  # FORWARD-SITE: the same allocating line as demo_leak.py's
        loss = F.mse_loss(out, y)
        (loss / args.iters).backward()  # frees the saved activations
        losses.append(loss.item())  # a float: no graph kept
    mark("after the loop")
    allocated.append(torch.cuda.memory_allocated())
    opt.step()
    torch.cuda.synchronize()
    print(f"demo_clean: {args.iters} micro-batches, mean loss {sum(losses) / len(losses):.4f}; allocated "
          f"{allocated[1] / 2**20:.0f} MiB after the first, {allocated[-1] / 2**20:.0f} MiB after the last; "
          f"reserved {torch.cuda.memory_reserved() / 2**20:.0f} MiB")
    if args.stats:
        with open(args.stats, "w") as f:
            json.dump({"demo": "clean", "iters": args.iters, "allocated_at_markers": allocated,
                       "allocated_growth": allocated[-1] - allocated[1],
                       "reserved": torch.cuda.memory_reserved()}, f)


if __name__ == "__main__":
    main()
