#!/usr/bin/env python3
"""Demo (scripts/gpu-check, group `demos`): PyTorch runs out of memory because of fragmentation
inside its caching allocator, with plenty of memory reserved but unused.

    gpumemtrace run -o DIR -- python3 tests/gpu/demo_frag_oom.py [--fill 0.9] [--stats FILE]

1. Fill about --fill of the device's free memory with tensors of mixed sizes between 1.25 and
   9.5 MiB (FILL-SITE). PyTorch serves requests of 1-10 MiB from 20 MiB segments (one cudaMalloc
   each), several tensors per segment.
2. Free every other tensor. The freed blocks go back to PyTorch's cache, not to CUDA: every
   segment still holds live tensors, so none can be given back, and no free block is larger
   than a segment (20 MiB). About half of what PyTorch reserved is now unused.
3. Ask for one tensor larger than what the device has free, but smaller than the reserved
   but unused memory (OOM-SITE). No cached block fits, so PyTorch calls cudaMalloc, which
   fails; PyTorch frees the cached segments it can (none: all are split), retries, and raises
   torch.cuda.OutOfMemoryError.

Catches the error, prints torch's message and memory_reserved()/memory_allocated(), exits 0.
Sized from torch.cuda.mem_get_info(), so it works on any GPU size; on an H200 (~140 GiB) it
allocates ~25000 tensors in ~6000 segments and takes a few seconds. --stats FILE writes the
request and torch's figures at the failure for tests/gpu/check_demos.py, which finds the lines
by their marker comments.
"""
import argparse
import json
import random
import sys

MiB = 1 << 20


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fill", type=float, default=0.9, help="fraction of the free device memory to fill")
    ap.add_argument("--stats")
    args = ap.parse_args()
    import torch

    dev = torch.device("cuda")
    torch.cuda.init()
    torch.empty(1, device=dev)  # the context exists before the device's free memory is read
    free0, total = torch.cuda.mem_get_info()
    target = int(free0 * args.fill)
    rng = random.Random(0)
    sizes = [int(s * MiB) for s in (1.25, 2, 2.5, 3.5, 4.5, 6, 7.5, 9.5)]
    tensors, filled = [], 0
    while filled < target:
        n = rng.choice(sizes)
        tensors.append(torch.empty(n, dtype=torch.uint8, device=dev))  # FILL-SITE
        filled += n
    del tensors[::2]  # every other one back to the cache: each segment keeps live tensors
    torch.cuda.synchronize()
    free1, _ = torch.cuda.mem_get_info()
    reserved, allocated = torch.cuda.memory_reserved(), torch.cuda.memory_allocated()
    unused = reserved - allocated
    # larger than the device's free memory, smaller than what PyTorch reserved and does not use
    request = (free1 + unused) // 2 // (2 * MiB) * (2 * MiB)
    print(f"demo_frag_oom: device {total / 2**30:.1f} GiB, free {free0 / 2**30:.1f} GiB at start; "
          f"{len(tensors)} tensors live; reserved {reserved / 2**30:.2f} GiB, allocated "
          f"{allocated / 2**30:.2f} GiB, reserved but unused {unused / 2**30:.2f} GiB; device free "
          f"{free1 / 2**30:.2f} GiB; requesting {request / 2**30:.2f} GiB")
    if not free1 < request < unused:
        print("demo_frag_oom: cannot set up the case (the device's free memory is not below the "
              "reserved-but-unused memory)", file=sys.stderr)
        return 1
    oom_class = getattr(torch.cuda, "OutOfMemoryError", RuntimeError)
    try:
        big = torch.empty(request, dtype=torch.uint8, device=dev)  # OOM-SITE
    except oom_class as e:
        msg = str(e)
        reserved_oom, allocated_oom = torch.cuda.memory_reserved(), torch.cuda.memory_allocated()
        print("demo_frag_oom: torch.cuda.OutOfMemoryError: " + msg.strip())
        print(f"demo_frag_oom: at the failure memory_reserved() = {reserved_oom} "
              f"({reserved_oom / 2**30:.2f} GiB), memory_allocated() = {allocated_oom} "
              f"({allocated_oom / 2**30:.2f} GiB)")
        if args.stats:
            with open(args.stats, "w") as f:
                json.dump({"demo": "frag_oom", "total": total, "free_at_start": free0,
                           "free_before_request": free1, "request": request, "tensors": len(tensors),
                           "reserved": reserved_oom, "allocated": allocated_oom, "message": msg}, f)
        return 0
    print(f"demo_frag_oom: the {request} byte request succeeded ({big.numel()}): no OOM to show",
          file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
