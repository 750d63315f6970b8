"""A training loop of many short-lived tensors, for the bounded trace's tensor level
(tests/bounded run_bounded.py same-torch-churn): no markers, nothing of gpumemtrace in it.
Each step makes and drops TEMPS temporaries of a few sizes (the churn a bounded trace leaves
out), keeps 64 KiB by mistake (growth across the automatic steps), and at one step makes a
32 MiB temporary (the tensor-level peak, inside a bucket); at a third of the steps an
out-of-memory error amid the churn (the cache empties its free segments, then the OOM: its
forensics are the allocator's state in the middle of a bucket). Then tensors kept alive by
reference cycles, freed by the collector, and another out-of-memory error.

    victim_churn.py STEPS TEMPS
"""
import gc
import sys

import torch

steps, temps = int(sys.argv[1]), int(sys.argv[2])
kept = []
opt = torch.optim.SGD([torch.empty(4096, device="cuda")])


def temporaries(step):
    for j in range(temps):
        a = torch.empty(1000 + 512 * (j % 7), device="cuda")
        b = torch.empty((1 + j % 3) << 20, device="cuda")
        if step == steps // 3 and j == temps // 2:
            try:  # amid the churn: a and b live, the cache full of split free blocks
                torch.empty(1 << 40, device="cuda")
            except torch.cuda.OutOfMemoryError:
                pass
        del a, b


def train_step(step):
    temporaries(step)
    kept.append(torch.empty(64 << 10, device="cuda"))  # the leak
    if step == steps // 2:
        big = torch.empty(32 << 20, device="cuda")  # the peak
        del big
    opt.step()


class Cycle:
    def __init__(self):
        self.t = torch.empty(128 << 10, device="cuda")
        self.me = self


for s in range(steps):
    train_step(s)
gc.disable()
for _ in range(5):
    Cycle()
gc.collect()
try:
    torch.empty(1 << 40, device="cuda")
except torch.cuda.OutOfMemoryError:
    pass
