"""A PyTorch-shaped program for the torch suite (run_torchsim.py), on the torch double.

    victim.py MODE OUT.json

It prints nothing on success but writes what it did (each allocation's size and function, the
bytes PyTorch says are allocated at each marker) to OUT.json, which the test compares with the
trace. MODE late: torch imported and used before gpumemtrace's layer is installed (python -S: no
start-up hook), then `import gpumemtrace` attaches it and backfills what exists.
"""
import json
import sys
import threading

mode, out_path = sys.argv[1], sys.argv[2]
did = {"allocs": [], "markers": [], "oom": False}

import torch  # noqa: E402

if mode != "late":
    import gpumemtrace  # noqa: E402
keep = []


def alloc(nbytes, where):
    t = torch.empty(nbytes, device="cuda")
    did["allocs"].append({"bytes": nbytes, "function": where})
    return t


def temporaries(i):
    a = alloc(1000 + 512 * i, "temporaries")
    b = alloc(3 << 20, "temporaries")
    return a.nbytes + b.nbytes


def grows(i):
    keep.append(alloc(64 << 10, "grows"))


before = []
if mode == "late":
    torch.cuda.init()
    before = [alloc(123456, "before_attach"), alloc(7 << 20, "before_attach")]
    import gpumemtrace  # noqa: E402,F811  (attaches now: CUDA is initialised)

torch.cuda.init()
for i in range(5):
    temporaries(i)
    grows(i)
    torch.cuda.synchronize()
    did["markers"].append({"label": f"step {i}", "allocated": torch.cuda.memory_allocated(),
                           "live_requested": sum(t.nbytes for t in keep + before)})
    gpumemtrace.mark(f"step {i}")

# a free that waits for a stream, completed on another thread
t = alloc(4096, "stream_wait")
t.record_stream(None)
del t
th = threading.Thread(target=torch.cuda.synchronize)
th.start()
th.join()
did["completed_on_other_thread"] = th.ident is not None

torch.cuda.memory._set_memory_metadata("phase=eval")
m = alloc(2048, "with_metadata")
torch.cuda.memory._set_memory_metadata("")
try:
    torch.empty(1 << 40, device="cuda")
except torch.cuda.OutOfMemoryError:
    did["oom"] = True
del m
torch.cuda.empty_cache()
did["allocated_end"] = torch.cuda.memory_allocated()
did["gpumemtrace_enabled"] = gpumemtrace.enabled()
with open(out_path, "w") as f:
    json.dump(did, f)
