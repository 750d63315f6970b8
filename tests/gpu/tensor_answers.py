#!/usr/bin/env python3
"""PyTorch programs whose tensor-level answers are known (scripts/gpu-check, group "tensor_answers";
issue: answers at the tensor level). Each runs under `gpumemtrace run` with default options and
writes what torch itself says (its figures, its OOM message, the model's sizes) to STATS.json; the
check half reads the trace's report and compares:

    tensor_answers.py run CASE STATS.json
    tensor_answers.py check CASE STATS.json TRACEDIR GPUMEMTRACE

Cases:
  growth  a loop that keeps every step's output (4 MiB a step) in a list, inside a cache that
          absorbs it: the report's block-level growth names this file's line `kept.append(...)`'s
          producer (the `y = model(x)` line) with +4 MiB a step, found while torch's reserved
          memory did not grow
  frag    an OOM from fragmentation inside the cache: 32 blocks of 64 MiB filling one 2 GiB segment,
          every other one freed, under a memory fraction, then a 256 MiB request: the
          report's reserved-but-unallocated bytes, allocated bytes and largest free block equal
          torch's own (its OOM message and memory_stats at the failure)
  gpt2    a Hugging Face GPT-2 built from its config (random weights), AdamW, 3 steps: the block
          peak equals torch.cuda.max_memory_allocated(), the categories add up to it, and what
          is live at the last marker splits into parameters (and buffers) and
          optimizer state of exactly the model's and the optimizer's sizes
"""
import json
import os
import re
import subprocess
import sys

MiB = 1 << 20


def run_growth(stats):
    import torch
    import gpumemtrace

    torch.manual_seed(0)
    model = torch.nn.Linear(1024, 1024).cuda()
    kept = []
    stats["markers"] = []
    for step in range(12):
        x = torch.randn(1024, 1024, device="cuda")
        with torch.no_grad():
            y = model(x)  # GROWTH-LINE: 4 MiB a step, kept below
        kept.append(y)
        del x
        torch.cuda.synchronize()
        stats["markers"].append({"label": f"step {step}", "allocated": torch.cuda.memory_allocated(),
                                 "reserved": torch.cuda.memory_reserved()})
        gpumemtrace.mark(f"step {step}")
    stats["kept_bytes"] = sum(t.numel() * t.element_size() for t in kept)


def run_frag(stats):
    import torch
    import gpumemtrace

    total = torch.cuda.get_device_properties(0).total_memory
    big = torch.empty(2048 * MiB, dtype=torch.uint8, device="cuda")  # one 2 GiB segment
    del big  # cached, whole
    blocks = [torch.empty(64 * MiB, dtype=torch.uint8, device="cuda") for _ in range(32)]
    for i in range(0, 32, 2):
        blocks[i] = None  # every other block free: 16 pieces of 64 MiB between live ones
    torch.cuda.synchronize()
    reserved = torch.cuda.memory_reserved()
    torch.cuda.set_per_process_memory_fraction((reserved + 64 * MiB) / total)
    gpumemtrace.mark("fragmented")
    st = torch.cuda.memory_stats()
    stats["before"] = {"allocated": torch.cuda.memory_allocated(), "reserved": reserved,
                       "inactive_split": st.get("inactive_split_bytes.all.current", 0)}
    try:
        torch.empty(256 * MiB, dtype=torch.uint8, device="cuda")
        stats["oom"] = None
    except torch.OutOfMemoryError as e:
        msg = str(e)
        stats["oom"] = msg
        st = torch.cuda.memory_stats()
        stats["at_oom"] = {"allocated": torch.cuda.memory_allocated(),
                           "reserved": torch.cuda.memory_reserved(),
                           "inactive_split": st.get("inactive_split_bytes.all.current", 0)}
    del blocks


def run_gpt2(stats):
    import torch
    import gpumemtrace
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=6)).cuda()
    stats["param_bytes"] = sum(p.numel() * p.element_size() for p in model.parameters())
    stats["buffer_bytes"] = sum(b.numel() * b.element_size() for b in model.buffers() if b.is_cuda)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for step in range(3):
        ids = torch.randint(0, 50257, (4, 256), device="cuda")
        with gpumemtrace.range("forward"):
            out = model(ids, labels=ids)
        with gpumemtrace.range("backward"):
            out.loss.backward()
        with gpumemtrace.range("optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)
        del out, ids
        gpumemtrace.mark(f"step {step}")
    torch.cuda.synchronize()
    stats["optimizer_state_bytes"] = sum(
        v.numel() * v.element_size() for s in opt.state.values() for v in s.values()
        if torch.is_tensor(v) and v.is_cuda)
    stats["allocated_end"] = torch.cuda.memory_allocated()
    stats["max_allocated"] = torch.cuda.max_memory_allocated()
    KEEP.append((model, opt))  # live until the process exits: the trace's end sees them


KEEP = []


CASES = {"growth": run_growth, "frag": run_frag, "gpt2": run_gpt2}


def report_json(gmt, tracedir):
    p = subprocess.run([gmt, "report", "--format", "json", tracedir], capture_output=True, text=True)
    if p.returncode not in (0, 1):
        raise SystemExit(f"report failed ({p.returncode}): {p.stderr[-2000:]}")
    return json.loads(p.stdout)


def gib_of(text, what):
    """A figure of torch's OOM message ('X GiB is reserved by PyTorch but unallocated')."""
    m = re.search(r"([0-9.]+) (GiB|MiB|KiB|bytes) " + re.escape(what), text)
    if not m:
        return None
    return float(m.group(1)) * {"GiB": 1 << 30, "MiB": MiB, "KiB": 1024, "bytes": 1}[m.group(2)]


def main():
    if sys.argv[1] == "run":
        stats = {}
        CASES[sys.argv[2]](stats)
        with open(sys.argv[3], "w") as f:
            json.dump(stats, f, indent=1)
        return 0
    case, stats_path, tracedir, gmt = sys.argv[2:6]
    stats = json.load(open(stats_path))
    doc = report_json(gmt, tracedir)
    tensors = [p.get("tensors") for p in doc.get("processes", []) if p.get("tensors")]
    fails = []
    if not tensors:
        print("FAIL: no tensors object in the report")
        return 1
    t = tensors[0]
    print(json.dumps(t, indent=1)[:6000])
    if case == "growth":
        g = [s for s in t.get("growth", []) if "run_growth" in (s.get("site") or "")]
        if not g:
            fails.append(f"no growing site in this file: {t.get('growth')}")
        else:
            s = g[0]
            if s.get("per_step") != 4 * MiB:
                fails.append(f"growth per step {s.get('per_step')} != {4 * MiB}")
        res = [m["reserved"] for m in stats["markers"]]
        print("torch reserved at markers:", res)
    elif case == "frag":
        if not stats.get("oom"):
            fails.append("torch raised no OOM")
        else:
            ooms = t.get("ooms", [])
            if not ooms:
                fails.append("no tensor-level OOM in the report")
            else:
                o = ooms[0]
                a = stats["at_oom"]
                for key, want in (("allocated", a["allocated"]), ("reserved", a["reserved"])):
                    if o.get(key) != want:
                        fails.append(f"oom {key} {o.get(key)} != torch's {want}")
                unalloc = gib_of(stats["oom"], "is reserved by PyTorch but unallocated")
                got = o.get("reserved_unallocated")
                if unalloc is None or got is None or abs(got - unalloc) > 0.01 * (1 << 30):
                    fails.append(f"reserved but unallocated {got} vs torch's message {unalloc}")
                if o.get("largest_free") != 64 * MiB:
                    fails.append(f"largest free block {o.get('largest_free')} != 64 MiB")
    elif case == "gpt2":
        cats = {c["category"]: c for c in t.get("categories", [])}
        peak = t.get("peak", {}).get("allocated")
        if sum(c["bytes_at_peak"] for c in cats.values()) != peak:
            fails.append(f"categories at peak {sum(c['bytes_at_peak'] for c in cats.values())} != peak {peak}")
        if peak != stats["max_allocated"]:
            fails.append(f"block peak {peak} != torch.cuda.max_memory_allocated() {stats['max_allocated']}")
        p = cats.get("parameter", {}).get("requested_at_last_mark")
        o = cats.get("optimizer_state", {}).get("requested_at_last_mark")
        want_p = stats["param_bytes"] + stats["buffer_bytes"]
        if p != want_p:
            fails.append(f"parameters (and buffers) {p} != the model's {want_p}")
        if o != stats["optimizer_state_bytes"]:
            fails.append(f"optimizer state {o} != the optimizer's {stats['optimizer_state_bytes']}")
    for f in fails:
        print("FAIL:", f)
    print(f"tensor_answers {case}: {'FAIL' if fails else 'PASS'}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
