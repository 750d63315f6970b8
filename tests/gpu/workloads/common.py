"""Shared by the real workloads: a fixed seed, and one JSON line at the end with what the program
itself saw (torch's peak figures where torch is used), for run_workloads.py's log."""
import json
import sys


def report(name, **figures):
    print(json.dumps({"workload": name, **figures}), flush=True)
    sys.stdout.flush()


def torch_figures(torch):
    torch.cuda.synchronize()
    return {
        "max_allocated": torch.cuda.max_memory_allocated(),
        "max_reserved": torch.cuda.max_memory_reserved(),
        "allocated_end": torch.cuda.memory_allocated(),
    }
