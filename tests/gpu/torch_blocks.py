#!/usr/bin/env python3
"""The PyTorch layer on a real GPU (scripts/gpu-check, group "torch_blocks"; issue: tensor-level
truth). Two halves:

    torch_blocks.py workload STATS.json     run under `gpumemtrace run` (default options)
    torch_blocks.py check STATS.json TRACEDIR

The workload trains a small model with varying batch shapes, marks a point after each step (torch's
own figures are read first: memory_allocated, requested_bytes.all.current, allocation.all.current,
memory_reserved, the segments of memory_snapshot), then captures a CUDA graph and allocates in a
MemPool (private pools), and starts torch.profiler mid-run. The check replays the trace's block
lines with the caching allocator's own rules (blocks rounded to 512 bytes, split when the rest is
at least 512 bytes in small pools and expandable segments, more than 1 MiB in large ones, merged
when freed) and requires, at every marker: live blocks' requested bytes == requested_bytes, their
number == allocation.all.current, their rounded bytes == memory_allocated(), the live segments'
bytes == memory_reserved() and their number == the snapshot's segments; every block allocation
has a stack whose innermost Python frame outside torch is a line of this script (or of torch's
own optimizer/autograd when the allocation is theirs); the graph's and the MemPool's blocks carry a
private pool id; the profiler ran.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from gpumemtrace import tracefile  # noqa: E402 (.jsonl and .jsonl.zst alike)

KMIN, KSMALL = 512, 1 << 20


def workload(stats_path):
    import torch
    import gpumemtrace

    out = {"markers": [], "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")}

    def mark(label):
        torch.cuda.synchronize()
        st = torch.cuda.memory_stats()
        out["markers"].append({
            "label": label,
            "allocated": torch.cuda.memory_allocated(),
            "requested": st.get("requested_bytes.all.current", 0),
            "allocations": st.get("allocation.all.current", 0),
            "reserved": torch.cuda.memory_reserved(),
            "segments": len(torch.cuda.memory_snapshot()),
        })
        gpumemtrace.mark(label)

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(),
                                torch.nn.Linear(4096, 1024)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    mark("start")
    for step in range(8):
        x = torch.randn(64 + 96 * step, 1024, device="cuda")  # varying shapes
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del x, loss
        mark(f"step {step}")
        if step == 4:
            prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                      torch.profiler.ProfilerActivity.CUDA])
            prof.__enter__()
        if step == 6:
            prof.__exit__(None, None, None)
            out["profiler_events"] = len(prof.events())
    # a CUDA graph (a private pool) and a MemPool
    static_x = torch.randn(256, 1024, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.no_grad():
        for _ in range(2):
            model(static_x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g):
        static_y = model(static_x).relu()
    g.replay()
    out["graph_pool"] = list(g.pool())
    mark("graph")
    pool = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool):
        in_pool = torch.empty(8 << 20, dtype=torch.uint8, device="cuda")
    out["mempool"] = list(pool.id)
    mark("mempool")
    del in_pool, static_y, g
    mark("end")
    with open(stats_path, "w") as f:
        json.dump(out, f)


def round_size(n):
    return KMIN if n < KMIN else (n + KMIN - 1) // KMIN * KMIN


class Model:
    """Segments and the blocks tiling them, replayed from block lines."""

    def __init__(self, expandable):
        self.expandable = expandable
        self.segs = {}   # start -> {"size": n, "blocks": {start: [size, state]}}, state: free/alloc/pending
        self.req = {}    # live block -> requested bytes (alloc .. free_requested)
        self.errors = []

    def seg_of(self, p):
        for s, seg in self.segs.items():
            if s <= p < s + seg["size"]:
                return s, seg
        return None, None

    def apply(self, b):
        a, p, n = b["action"], int(b.get("ptr", "0x0"), 16), b.get("size", 0)
        if a == "segment_alloc":
            self.segs[p] = {"size": n, "blocks": {p: [n, "free"]}, "pool": tuple(b.get("pool", [0, 0])),
                            "stream": b.get("stream")}
        elif a == "segment_map":  # expandable: mapped memory added to the segment it extends
            s, seg = self.seg_of(p - 1) if p else (None, None)
            pool = tuple(b.get("pool", [0, 0]))
            if seg is None or seg.get("pool") != pool or seg.get("stream") != b.get("stream"):
                # a segment of its own: another pool's (a CUDA graph's) or stream's reservation
                # may lie right after this one
                self.segs[p] = {"size": n, "blocks": {p: [n, "free"]}, "pool": pool,
                                "stream": b.get("stream")}
            else:
                seg["size"] += n
                seg["blocks"][p] = [n, "free"]
                self.merge(seg, p)
        elif a == "segment_unmap":
            s, seg = self.seg_of(p)
            if seg is not None:
                bs = seg["blocks"]
                start = max(k for k in bs if k <= p)
                size, st = bs.pop(start)
                if start < p:
                    bs[start] = [p - start, st]
                if p + n < start + size:
                    bs[p + n] = [start + size - p - n, st]
                seg["size"] -= n
                if seg["size"] <= 0:
                    del self.segs[s]
        elif a == "segment_free":
            self.segs.pop(p, None)
        elif a == "segment_state":
            self.segs[p] = {"size": n, "blocks": {}}
        elif a == "block_state":
            s, seg = self.seg_of(p)
            if seg is not None:
                seg["blocks"][p] = [n, "alloc" if b.get("allocated") else "free"]
                if b.get("allocated"):
                    self.req[p] = b["requested"]
        elif a == "alloc":
            s, seg = self.seg_of(p)
            if seg is None or p not in seg["blocks"] or seg["blocks"][p][1] != "free":
                self.errors.append(f"alloc at {hex(p)} not at the start of a free block")
                return
            size = seg["blocks"][p][0]
            r = round_size(n)
            rest = size - r
            # torch's should_split: the small pool and expandable segments split any rest of
            # 512 bytes or more, the large pool only a rest larger than 1 MiB
            split = rest >= KMIN if (r <= KSMALL or self.expandable) else rest > KSMALL
            if split:
                seg["blocks"][p] = [r, "alloc"]
                seg["blocks"][p + r] = [rest, "free"]
            else:
                seg["blocks"][p][1] = "alloc"
            self.req[p] = n
        elif a == "free_requested":
            s, seg = self.seg_of(p)
            if seg is not None and p in seg["blocks"]:
                seg["blocks"][p][1] = "pending"
            self.req.pop(p, None)
        elif a == "free_completed":
            s, seg = self.seg_of(p)
            if seg is not None and p in seg["blocks"]:
                seg["blocks"][p][1] = "free"
                self.merge(seg, p)

    def merge(self, seg, p):
        bs = seg["blocks"]
        keys = sorted(bs)
        i = keys.index(p)
        if i + 1 < len(keys) and bs[keys[i + 1]][1] == "free" and bs[p][1] == "free" \
                and p + bs[p][0] == keys[i + 1]:
            bs[p][0] += bs.pop(keys[i + 1])[0]
        if i > 0 and bs[keys[i - 1]][1] == "free" and bs[p][1] == "free" \
                and keys[i - 1] + bs[keys[i - 1]][0] == p:
            bs[keys[i - 1]][0] += bs.pop(p)[0]

    def figures(self):
        allocated = sum(sz for seg in self.segs.values() for sz, st in seg["blocks"].values()
                        if st == "alloc")
        return {"requested": sum(self.req.values()), "allocations": len(self.req),
                "allocated": allocated, "reserved": sum(s["size"] for s in self.segs.values()),
                "segments": sum(self.runs(seg) for seg in self.segs.values())}

    @staticmethod
    def runs(seg):
        """What memory_snapshot() lists as segments: an expandable segment is one entry per run of
        contiguous mapped memory (an unmap in its middle makes two)."""
        keys = sorted(seg["blocks"])
        return sum(1 for i, k in enumerate(keys)
                   if i == 0 or keys[i - 1] + seg["blocks"][keys[i - 1]][0] != k) if keys else 1


def check(stats_path, tracedir):
    stats = json.load(open(stats_path))
    files = [os.path.join(tracedir, f) for f in os.listdir(tracedir)
             if f.endswith((".jsonl", ".jsonl.zst"))]
    recs = []
    for f in files:
        for line in tracefile.lines(f):
            try:
                recs.append(json.loads(line))
            except ValueError:
                pass
    torch_lines = [r for r in recs if r.get("type") == "torch"]
    fails = []
    print("torch_blocks: torch line:", torch_lines)
    if not torch_lines or torch_lines[-1].get("layer") != "blocks":
        print("FAIL: the trace's torch line does not say 'blocks'")
        return 1
    model = Model("expandable_segments:True" in stats["alloc_conf"])
    codes = {r["id"]: r for r in recs if r.get("type") == "pycode"}
    stacks = {r["id"]: r for r in recs if r.get("type") == "stack"}
    marks, allocs, sites, private = [], 0, {}, 0
    for r in sorted((r for r in recs if r.get("type") in ("block", "marker")), key=lambda r: r["seq"]):
        if r["type"] == "marker":
            marks.append((r["label"], model.figures()))
            continue
        model.apply(r)
        if r["action"] == "alloc":
            allocs += 1
            if r.get("pool", [0, 0]) != [0, 0]:
                private += 1
            st = stacks.get(r.get("stack"), {})
            py = [codes[c] for c, _, _ in st.get("py", []) if c in codes]
            own = [c for c in py if "/torch/" not in c["file"]]
            key = (own[0]["file"].rsplit("/", 1)[-1] if own else
                   ("torch:" + py[0]["file"].rsplit("/torch/", 1)[-1] if py else "no python"))
            sites[key] = sites.get(key, 0) + 1
    fails += model.errors[:5]
    want = {m["label"]: m for m in stats["markers"]}
    for label, got in marks:
        w = want.get(label)
        if not w:
            continue
        for k in ("requested", "allocations", "allocated", "reserved", "segments"):
            if got[k] != w[k]:
                fails.append(f"at {label!r}: {k} from the trace {got[k]} != torch's {w[k]}")
        print(f"  {label:10} torch allocated {w['allocated']:>11} requested {w['requested']:>11} "
              f"blocks {w['allocations']:>4} reserved {w['reserved']:>11} segments {w['segments']:>3}"
              f" | trace {got['allocated']:>11} {got['requested']:>11} {got['allocations']:>4} "
              f"{got['reserved']:>11} {got['segments']:>3}")
    print(f"torch_blocks: {allocs} block allocations; innermost Python frames outside torch: {sites}")
    print(f"torch_blocks: {private} block allocations in private pools (graph {stats['graph_pool']}, "
          f"MemPool {stats['mempool']}); profiler events {stats.get('profiler_events')}")
    script = sites.get(os.path.basename(__file__), 0)
    if script < allocs * 0.5:
        fails.append(f"only {script} of {allocs} block allocations are at lines of the script")
    if private == 0:
        fails.append("no block allocation carries a private pool id (CUDA graph, MemPool)")
    if not stats.get("profiler_events"):
        fails.append("torch.profiler started mid-run recorded nothing")
    for f in fails:
        print("FAIL:", f)
    print("torch_blocks:", "PASS" if not fails else f"{len(fails)} failures")
    return 1 if fails else 0


if __name__ == "__main__":
    if sys.argv[1] == "workload":
        workload(sys.argv[2])
    else:
        sys.exit(check(sys.argv[2], sys.argv[3]))
