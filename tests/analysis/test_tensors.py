#!/usr/bin/env python3
"""The tensor level of the report (PyTorch's caching allocator replayed from block lines), against
answers known independently of the analyzer:

    test_tensors.py --exe GPUMEMTRACE --fixtures DIR CASE

  markers    real torch 2.11 traces from the H200 (tests/gpu/torch_blocks.py, default allocator and
             expandable segments): at every marker the report's replayed cache (at_markers[]) has
             the allocated, requested, block and reserved bytes and the segment count that torch's
             memory_stats() / memory_snapshot() reported at that marker (the .stats.json beside)
  frag       the H200 fragmentation OOM (tests/gpu/tensor_answers.py frag): allocated and reserved-
             but-unallocated bytes equal torch's own OOM message, the largest free block is one of
             the 64 MiB blocks the program freed, the cause is fragmentation
  growth     the H200 loop keeping 4 MiB a step: the growing site is the program's line, +4 MiB a
             step in each of 11 intervals, while torch's reserved memory stayed flat at first
  gpt2       GPT-2 on the H200: the block peak equals torch.cuda.max_memory_allocated(); the
             categories add up to it; at the last marker the parameters and the optimizer state
             are exactly the model's and AdamW's sizes; a helper (Conv1D.forward) called from two lines shows as
             two rows with their callers
  synthetic  traces written here with one right answer: a cache fragmented into known pieces, an
             OOM inside it, growth inside a segment that absorbs it, a temporary that does not
             grow, bad block lines reported by file:line and the rest read; streamed and stored
             reads agree
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

MiB = 1 << 20
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


def report(exe, path, fmt="json", env=None):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([exe, "report", "--format", fmt, path], capture_output=True, text=True, env=e)
    check(p.returncode == 0, f"report {path} exit {p.returncode}: {p.stderr[-500:]}")
    return (json.loads(p.stdout) if fmt == "json" else p.stdout), p.stderr


def tensors_of(doc):
    t = [p["tensors"] for p in doc["processes"] if "tensors" in p]
    check(len(t) == 1, f"one process with tensors (got {len(t)})")
    return t[0] if t else {}


def case_markers(exe, fx):
    for mode in ("default", "expandable"):
        doc, _ = report(exe, os.path.join(fx, f"blocks-{mode}.jsonl"))
        t = tensors_of(doc)
        stats = json.load(open(os.path.join(fx, f"blocks-{mode}.stats.json")))
        got = {m["label"]: m for m in t.get("at_markers", [])}
        check(len(stats["markers"]) >= 10, f"{mode}: markers in the fixture")
        for w in stats["markers"]:
            g = got.get(w["label"])
            if not check(g is not None, f"{mode}: marker {w['label']} in at_markers"):
                continue
            for tk, rk in (("allocated", "allocated"), ("requested", "requested"),
                           ("allocations", "blocks"), ("reserved", "reserved"),
                           ("segments", "segments")):
                check(g[rk] == w[tk], f"{mode} at {w['label']}: {rk} {g[rk]} != torch's {w[tk]}")
        check(t.get("inconsistent") == 0, f"{mode}: every block line fits the replay")
        check(t["torch"]["version"] == "2.11.0+cu130", f"{mode}: torch version from the torch line")


def case_frag(exe, fx):
    doc, _ = report(exe, os.path.join(fx, "frag.jsonl"))
    t = tensors_of(doc)
    stats = json.load(open(os.path.join(fx, "frag.stats.json")))
    msg = stats["oom"]
    m_alloc = re.search(r"([0-9.]+) MiB is allocated by PyTorch", msg)
    m_unalloc = re.search(r"([0-9.]+) MiB is reserved by PyTorch but unallocated", msg)
    ooms = t.get("ooms", [])
    if not check(len(ooms) == 1 and m_alloc and m_unalloc, f"one OOM (got {len(ooms)}), torch's message parsed"):
        return
    o = ooms[0]
    check(o["allocated"] == stats["at_oom"]["allocated"],
          f"allocated {o['allocated']} != torch's {stats['at_oom']['allocated']}")
    check(o["reserved"] == stats["at_oom"]["reserved"], f"reserved {o['reserved']} != torch's")
    check(o["allocated"] == round(float(m_alloc.group(1)) * MiB), "allocated as the OOM message says")
    check(o["reserved_unallocated"] == round(float(m_unalloc.group(1)) * MiB),
          f"reserved but unallocated {o['reserved_unallocated']} as the message says ({m_unalloc.group(1)} MiB)")
    check(o["largest_free"] == 64 * MiB and o["pool_largest_free"] == 64 * MiB,
          f"largest free block 64 MiB (got {o['largest_free']}, {o['pool_largest_free']})")
    check(o["free_blocks"] == 16, f"16 free pieces (got {o['free_blocks']})")
    check(o["requested"] == 256 * MiB and o["cause"] == "fragmentation", f"request and cause: {o['cause']}")
    check(any("expandable_segments" in h for h in o["would_help"]), "expandable segments suggested")
    check("tensor_answers.py" in o["site"] and "run_frag" in o["site"], f"OOM site: {o['site']}")
    text, _ = report(exe, os.path.join(fx, "frag.jsonl"), fmt="text")
    check("1.0 GiB reserved by PyTorch but unallocated in 16 free blocks, the largest 64.0 MiB" in text,
          "the text says it in PyTorch's terms")
    # torch raised OutOfMemoryError under its memory fraction: no CUDA call failed, still a failure
    check(doc["summary"].get("tensor_oom_errors") == 1 and doc["summary"]["failed_allocations"] == 0,
          f"one PyTorch OOM error with no failed CUDA call ({doc['summary'].get('tensor_oom_errors')})")
    p = subprocess.run([exe, "check", "--max-failed", "0", os.path.join(fx, "frag.jsonl")],
                       capture_output=True, text=True)
    check(p.returncode == 1 and "PyTorch out-of-memory error with no failed CUDA call" in p.stdout,
          f"check --max-failed 0 fails on it ({p.returncode}: {p.stdout[-300:]})")


def case_growth(exe, fx):
    doc, _ = report(exe, os.path.join(fx, "growth.jsonl"))
    t = tensors_of(doc)
    stats = json.load(open(os.path.join(fx, "growth.stats.json")))
    g = t.get("growth", [])
    if not check(len(g) == 1, f"one growing tensor site (got {[x['site'] for x in g]})"):
        return
    s = g[0]
    check("tensor_answers.py:" in s["site"] and "run_growth" in s["site"], f"growth site: {s['site']}")
    check(s["per_step"] == 4 * MiB and s["rises"] == 11 and s["intervals"] == 11,
          f"+4 MiB in each of 11 intervals (got {s['per_step']}, {s['rises']}/{s['intervals']})")
    res = [m["reserved"] for m in stats["markers"]]
    check(res[0] == res[1] == res[2], f"the fixture's cache absorbed the first steps: {res[:3]}")
    text, _ = report(exe, os.path.join(fx, "growth.jsonl"), fmt="text")
    check("about +4.0 MiB a step, rose in 11 of 11 intervals" in text, "the text names the growth")


def case_gpt2(exe, fx):
    doc, _ = report(exe, os.path.join(fx, "gpt2.jsonl"))
    t = tensors_of(doc)
    stats = json.load(open(os.path.join(fx, "gpt2.stats.json")))
    peak = t["peak"]["allocated"]
    check(peak == stats["max_allocated"], f"block peak {peak} != torch's max_memory_allocated {stats['max_allocated']}")
    cats = t["categories"]
    check(sum(c["bytes_at_peak"] for c in cats) == peak, "the categories add up to the peak")
    check(sum(r["bytes"] for r in t["peak_sites"]) == peak, "the peak's sites add up to the peak")
    byname = {c["category"]: c for c in cats}
    check(byname["optimizer_state"]["bytes_at_peak"] >= stats["optimizer_state_bytes"],
          "AdamW's state (2 x the parameters) is optimizer state at the peak")
    check(byname["parameter"]["bytes_at_peak"] >= stats["param_bytes"], "the parameters are parameters")
    check(byname["parameter"]["requested_at_last_mark"] == stats["param_bytes"] + stats["buffer_bytes"],
          f"parameters at the last mark {byname['parameter']['requested_at_last_mark']} == the model's "
          f"{stats['param_bytes'] + stats['buffer_bytes']}")
    check(byname["optimizer_state"]["requested_at_last_mark"] == stats["optimizer_state_bytes"],
          f"optimizer state at the last mark {byname['optimizer_state']['requested_at_last_mark']} == "
          f"AdamW's {stats['optimizer_state_bytes']}")
    pk = t["devices"][0]["peak"]
    check(pk["static"] == stats["allocated_end"],
          f"the static part of the peak {pk['static']} == memory_allocated() after the last step {stats['allocated_end']}")
    check(pk["static"] + pk["dynamic"] == peak, "static + dynamic = the peak")
    check(pk["phase"] == "backward", f"the peak is reached in the backward range (got {pk['phase']})")
    helper = [r for r in t["peak_sites"] if r["site"].endswith("pytorch_utils.py:119 in Conv1D.forward")]
    callers = {tuple(r["callers"]) for r in helper}
    check(len(helper) >= 2 and len(callers) == len(helper),
          f"the helper Conv1D.forward is one row per caller (got {len(helper)} rows, {len(callers)} callers)")
    d = t["devices"][0]
    check(d["peak"]["held"] == d["peak"]["cache"]["reserved"] + d["peak"]["not_pytorch"],
          "tensors + cache free + not PyTorch's = held")


# --- synthetic traces -----------------------------------------------------------------------------

class Trace:
    def __init__(self):
        self.lines = [{"type": "header", "format": "gpumemtrace", "version": 1, "pid": 42, "ppid": 1, "argv": ["synthetic"],
                       "tracer": "test", "start_ts": 1000, "start_unix_ns": 1}]
        self.seq = 0
        self.ts = 1000

    def add(self, **kw):
        self.seq += 1
        self.ts += 1000
        self.lines.append(dict(kw, seq=self.seq, ts=self.ts))

    def block(self, action, ptr=None, size=0, stack=0, **kw):
        d = dict(type="block", tid=1, action=action, device=0, size=size, stream="0x0", pool=[0, 0], **kw)
        if ptr is not None:
            d["ptr"] = hex(ptr)
        if stack:
            d["stack"] = stack
        self.add(**d)

    def torch_segment(self, seg, size):
        """The torch line, then one cudaMalloc of @p size at @p seg that becomes the cache's segment."""
        self.add(type="torch", version="2.11.0+cu130", backend="native", alloc_conf="", layer="blocks",
                 detail="x")
        self.add(type="event", op="alloc", api="cudaMalloc", kind="device", device=0, ptr=hex(seg),
                 size=size, result=0, tid=1)
        self.block("segment_alloc", seg, size)

    def write(self, path, raw=()):
        with open(path, "w") as f:
            for l in self.lines:
                f.write(json.dumps(l, separators=(",", ":")) + "\n")
            for r in raw:
                f.write(r + "\n")
            f.write(json.dumps({"type": "trailer", "ts": self.ts + 1, "events": self.seq, "dropped": 0,
                                "reason": "exit"}) + "\n")


def case_synthetic(exe, fx):
    tmp = tempfile.mkdtemp(prefix="gmt-tensors-")
    seg = 0x7f0000000000
    tr = Trace()
    tr.add(type="torch", version="2.11.0+cu130", backend="native", alloc_conf="", layer="blocks", detail="x")
    tr.add(type="event", op="alloc", api="cudaMalloc", kind="device", device=0, ptr=hex(seg), size=20 * MiB,
           result=0, tid=1)
    tr.block("segment_alloc", seg, 20 * MiB)
    # growth inside the segment: a kept 1 MiB a step (stack 7), a temporary (stack 8) freed
    for step in range(6):
        p = seg + step * MiB
        tr.block("alloc", p, MiB, stack=7)
        tr.block("alloc", seg + 10 * MiB, 3 * MiB, stack=8)
        tr.block("free_requested", seg + 10 * MiB, 3 * MiB)
        tr.block("free_completed", seg + 10 * MiB, 3 * MiB)
        tr.add(type="marker", tid=1, label=f"step {step}")
    # fragmentation: 8 x 1 MiB kept at 6..13 MiB, every other one freed, then a 3 MiB OOM
    for i in range(8):
        tr.block("alloc", seg + (6 + i) * MiB, MiB, stack=9)
    for i in range(0, 8, 2):
        tr.block("free_requested", seg + (6 + i) * MiB, MiB)
        tr.block("free_completed", seg + (6 + i) * MiB, MiB)
    tr.block("oom", None, 7 * MiB, stack=9, device_free=0)
    path = os.path.join(tmp, "synthetic.jsonl")
    bad = ['{"type":"block","seq":9999,"ts":99999,"action":"explode","device":0,"ptr":"0x1","size":1}',
           '{"type":"block","seq":9998,"ts":99999,"action":"alloc","device":0,"ptr":12,"size":1}']
    tr.write(path, bad)
    doc, err = report(exe, path)
    t = tensors_of(doc)
    check("synthetic.jsonl:" in err and "unknown action \"explode\"" in err, f"bad action named by file:line: {err}")
    check(re.search(r'synthetic\.jsonl:\d+: .*"ptr"', err) is not None, f"bad ptr named: {err}")
    g = t["growth"]
    check(len(g) == 1 and g[0]["stack"] == 7 and g[0]["per_step"] == MiB and g[0]["rises"] == 5,
          f"stack 7 grows 1 MiB a step, stack 8 does not: {g}")
    d = t["devices"][0]
    check(d["max_reserved"] == 20 * MiB, "no new segment for the growth")
    o = t["ooms"][0]
    # live: 6 MiB (stack 7) + 4 x 1 MiB (stack 9); free: 4 x 1 MiB between them, 6 MiB at 14..20 MiB
    check(o["allocated"] == 10 * MiB and o["reserved_unallocated"] == 10 * MiB,
          f"OOM: 10 MiB allocated, 10 MiB reserved-unallocated (got {o['allocated']}, {o['reserved_unallocated']})")
    check(o["free_blocks"] == 5 and o["largest_free"] == 6 * MiB and o["cause"] == "fragmentation",
          f"5 free pieces, the largest 6 MiB, fragmentation (got {o['free_blocks']}, {o['largest_free']}, {o['cause']})")
    fr = d["fragmentation"]
    check(abs(fr["max"] - 0.4) < 1e-9, f"fragmentation 1 - 6/10 = 0.4 at the OOM (got {fr['max']})")
    peak = t["peak"]["allocated"]
    check(peak == 14 * MiB, f"peak: 6 MiB kept + 8 x 1 MiB (got {peak})")
    stored, _ = report(exe, path, env={"GMT_TRACE_STORED": "1"})
    check(tensors_of(stored) == t, "a stored read gives the same tensor level as the streamed one")


def case_snapshot(exe, fx):
    """report --format pytorch-snapshot: a pickle torch's tools read (checked with torch's own
    _memory_viz on the H200, gpu-check tensor_answers); here its content against the report."""
    import collections
    import pickle
    tmp = tempfile.mkdtemp(prefix="gmt-snap-")
    src = os.path.join(fx, "gpt2.jsonl")
    out = os.path.join(tmp, "s.pickle")
    p = subprocess.run([exe, "report", "--format", "pytorch-snapshot", "-o", out, src],
                       capture_output=True, text=True)
    if not check(p.returncode == 0, f"export exit {p.returncode}: {p.stderr[-300:]}"):
        return
    snap = pickle.load(open(out, "rb"))
    check(set(snap) >= {"segments", "device_traces", "allocator_settings"}, f"snapshot keys {set(snap)}")
    doc, _ = report(exe, src)
    t = tensors_of(doc)
    end = t["devices"][0]["end"]
    segs = snap["segments"]
    check(len(segs) == end["segments"] and sum(s["total_size"] for s in segs) == end["reserved"],
          f"segments at the end: {len(segs)} of {sum(s['total_size'] for s in segs)} bytes vs the report's {end['segments']}, {end['reserved']}")
    check(sum(s["allocated_size"] for s in segs) == end["allocated"], "allocated bytes at the end")
    for s in segs:
        check(sum(b["size"] for b in s["blocks"]) == s["total_size"], f"blocks tile segment {s['address']:#x}")
    blocks = [json.loads(l) for l in open(src) if '"type":"block"' in l]
    want = collections.Counter(b["action"] for b in blocks if not b["action"].endswith("_state"))
    got = collections.Counter(e["action"] for e in snap["device_traces"][0]
                              if not e.get("frames") or not e["frames"][0]["name"].startswith("[not PyTorch's]"))
    check(got == want, f"one trace entry per block line: {got} vs {want}")
    ext = [e for e in snap["device_traces"][0] if e.get("frames") and e["frames"][0]["name"].startswith("[not PyTorch's]")]
    check(any("libcublas" in f["filename"] for e in ext for f in e["frames"]),
          "cuBLAS's own cudaMalloc is in the timeline as memory that is not PyTorch's")
    # the same live set as the report at the end: replay the entries by address
    live = {}
    for e in snap["device_traces"][0]:
        if e["action"] == "alloc":
            live[e["addr"]] = e
        elif e["action"] == "free_completed":
            live.pop(e["addr"], None)
    allocs = [a for a in live.values() if not a["frames"] or not a["frames"][0]["name"].startswith("[not")]
    check(len(allocs) == end["blocks"], f"live allocations by the entries {len(allocs)} == the report's {end['blocks']}")
    back, _ = report(exe, out)
    bt = tensors_of(back)
    check(bt["devices"][0]["peak"]["not_pytorch"] == t["devices"][0]["peak"]["not_pytorch"],
          f"read back, the memory outside the cache at the peak is the trace's "
          f"({bt['devices'][0]['peak']['not_pytorch']} vs {t['devices'][0]['peak']['not_pytorch']})")
    p = subprocess.run([exe, "report", "--format", "pytorch-snapshot", src], capture_output=True,
                       stdin=subprocess.DEVNULL)
    check(p.returncode == 0 and p.stdout[:1] == b"\x80" and pickle.loads(p.stdout) == snap,
          "to a pipe it writes the same pickle")


def case_categories(exe, fx):
    """report --categories FILE: its rules come first; a bad file is named by FILE:LINE."""
    tmp = tempfile.mkdtemp(prefix="gmt-cats-")
    src = os.path.join(fx, "gpt2.jsonl")
    doc, _ = report(exe, src)
    base = {c["category"]: c for c in tensors_of(doc)["categories"]}
    rules = os.path.join(tmp, "rules.txt")
    with open(rules, "w") as f:
        f.write("# the model's parameters as 'other'\nother py-func PreTrainedModel.cuda\n")
    p = subprocess.run([exe, "report", "--format", "json", "--categories", rules, src],
                       capture_output=True, text=True)
    cats = {c["category"]: c for c in tensors_of(json.loads(p.stdout))["categories"]}
    check(cats["parameter"]["bytes_at_peak"] == 0 and
          cats["other"]["bytes_at_peak"] == base["other"]["bytes_at_peak"] + base["parameter"]["bytes_at_peak"],
          f"the file's rule moved the parameters to other: {cats['parameter']}, {cats['other']}")
    check(sum(c["bytes_at_peak"] for c in cats.values()) == sum(c["bytes_at_peak"] for c in base.values()),
          "the categories still add up to the peak")
    with open(rules, "w") as f:
        f.write("parameter py-func x\n\nparameters py-file y\n")
    p = subprocess.run([exe, "report", "--categories", rules, src], capture_output=True, text=True)
    check(p.returncode == 2 and f"{rules}:3: unknown category 'parameters'" in p.stderr,
          f"a bad rule file is named by file:line, exit 2: {p.returncode} {p.stderr[:200]}")
    p = subprocess.run([exe, "report", "--categories", os.path.join(tmp, "none.txt"), src],
                       capture_output=True, text=True)
    check(p.returncode == 2 and "none.txt" in p.stderr, f"a missing rule file is named: {p.stderr[:200]}")


def case_hostile(exe, fx):
    """Block lines no allocator writes: devices that are no CUDA ordinal (20,000 distinct ones,
    with markers between them) cost nothing and are counted, under a 1 GiB address-space limit."""
    import resource
    tmp = tempfile.mkdtemp(prefix="gmt-hostile-")
    tr = Trace()
    for i in range(20000):
        tr.add(type="block", tid=1, action="segment_alloc", device=64 + i,
               ptr=hex(0x7f0000000000 + i * (2 << 20)), size=2 << 20, stream="0x0", pool=[0, 0])
        if i % 100 == 0:
            tr.add(type="marker", tid=1, label=f"m{i}")
    tr.add(type="block", tid=1, action="alloc", device=-3, ptr="0x10", size=1, stream="0x0", pool=[0, 0])
    path = os.path.join(tmp, "hostile.jsonl")
    tr.write(path)

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    p = subprocess.run([exe, "report", "--format", "json", path], capture_output=True, text=True,
                       preexec_fn=limit)
    if not check(p.returncode == 0, f"exit 0 under 1 GiB (got {p.returncode}: {p.stderr[-300:]})"):
        return
    t = tensors_of(json.loads(p.stdout))
    check(t["devices"] == [] and t["inconsistent"] == 20001 and t["block_events"] == 20001,
          f"no device made up, every such line counted ({len(t['devices'])} devices, {t['inconsistent']})")


def case_limit(exe, fx):
    """An OOM PyTorch raised by its own limit (set_per_process_memory_fraction): the device had
    plenty free and no cudaMalloc failed. The same OOM after a failed cudaMalloc is the device's."""
    tmp = tempfile.mkdtemp(prefix="gmt-tensors-limit-")
    seg = 0x7f0000000000
    for failed in (False, True):
        tr = Trace()
        tr.add(type="torch", version="2.11.0+cu130", backend="native", alloc_conf="", layer="blocks",
               detail="x")
        tr.add(type="event", op="alloc", api="cudaMalloc", kind="device", device=0, ptr=hex(seg),
               size=20 * MiB, result=0, tid=1)
        tr.block("segment_alloc", seg, 20 * MiB)
        tr.block("alloc", seg, 20 * MiB, stack=7)
        if failed:
            tr.add(type="event", op="alloc", api="cudaMalloc", kind="device", device=0, size=32 * MiB,
                   result=2, tid=1, free_bytes=16 * MiB, total_bytes=80 * 1024 * MiB)
        tr.block("oom", None, 32 * MiB, stack=9, device_free=(16 if failed else 60 * 1024) * MiB)
        path = os.path.join(tmp, "limit-%d.jsonl" % failed)
        tr.write(path)
        doc, err = report(exe, path)
        o = tensors_of(doc)["ooms"][0]
        text, _ = report(exe, path, fmt="text")
        if failed:
            check(o["cause"] == "live_tensors",
                  f"a failed cudaMalloc behind it: the device was full, live tensors ({o['cause']})")
            continue
        check(o["cause"] == "allocator_limit",
              f"60 GiB free, no cudaMalloc failed: PyTorch's own limit ({o['cause']})")
        check(any("set_per_process_memory_fraction" in h for h in o["would_help"]) and
              not any("smaller peak of live tensors" in h for h in o["would_help"][:1]),
              f"the limit's setting comes first in what would help ({o['would_help']})")
        check("PyTorch's own limit" in text and "set_per_process_memory_fraction" in text and
              "between 20.0 MiB and 52.0 MiB" in text, "the text names the limit and its bounds")


def case_userline(exe, fx):
    """GPT-2 from transformers on the H200: a tensor made inside a library (site-packages) is
    shown at the library's line and at the user's own line that led there."""
    doc, _ = report(exe, os.path.join(fx, "gpt2.jsonl"))
    t = tensors_of(doc)
    rows = t.get("peak_sites", []) + t.get("live_at_exit", [])
    lib = [r for r in rows if r["site"].startswith("transformers/")]
    check(lib and all("tests/gpu/tensor_answers.py:" in (r.get("user_line") or "") and
                      " in run_gpt2" in r["user_line"] for r in lib),
          f"every transformers site names the script's line: {[(r['site'], r.get('user_line')) for r in lib]}")
    own = [r for r in rows if "tests/gpu/tensor_answers.py:" in r["site"]]
    check(own and all(r.get("user_line") is None for r in own),
          "a site in the user's own file needs no second line")
    text, _ = report(exe, os.path.join(fx, "gpt2.jsonl"), fmt="text")
    check(re.search(r"from your code at \S*tests/gpu/tensor_answers\.py:97 in run_gpt2", text),
          "the text report shows the user's line under a library site")


def case_autogrowth(exe, fx):
    """The tensor level on the tracer's own steps (markers "auto":"step") as the CUDA level:
    a kept 1 MiB a step grows; a list of this step's images whose bytes swing with their sizes
    (3, 5, 2, 6, 4, 7 MiB) does not, nor does a block made in the last of three steps; under
    the user's marks both are judged as the user placed them (listed)."""
    tmp = tempfile.mkdtemp(prefix="gmt-tensors-")
    seg = 0x7f0000000000

    def trace(user, steps, body):
        tr = Trace()
        tr.torch_segment(seg, 200 * MiB)
        for step in range(steps):
            body(tr, step)
            m = dict(type="marker", tid=1, label=("step %d" if user else "optimizer step %d") % (step + 1))
            if not user:
                m["auto"] = "step"
            tr.add(**m)
        return tr

    sizes = [3, 5, 2, 6, 4, 7]

    def swing(tr, step):
        tr.block("alloc", seg + 100 * MiB + (step % 2) * 10 * MiB, sizes[step] * MiB, stack=7)
        if step:
            old = seg + 100 * MiB + ((step - 1) % 2) * 10 * MiB
            tr.block("free_requested", old, sizes[step - 1] * MiB)
            tr.block("free_completed", old, sizes[step - 1] * MiB)
        tr.block("alloc", seg + step * MiB, MiB, stack=5)  # kept: a leak

    def late(tr, step):
        if step == 2:
            tr.block("alloc", seg + 50 * MiB, 2 * MiB, stack=8)

    for user in (False, True):
        for name, steps, body, want in (("swing", 6, swing, [5, 7] if user else [5]),
                                        ("late", 3, late, [8] if user else [])):
            path = os.path.join(tmp, "%s-%s.jsonl" % (name, user))
            trace(user, steps, body).write(path)
            doc, _ = report(exe, path)
            t = tensors_of(doc)
            got = sorted(g["stack"] for g in t.get("growth", []))
            check(got == want, "%s, %s: growing tensor stacks %s, want %s (basis %s)" % (
                "user marks" if user else "automatic steps", name, got, want, t.get("growth_basis")))


def case_graphoom(exe, fx):
    """tests/gpu/workloads/graph_oom.py traced on an H100 (no marker in it): three forwards
    (automatic steps), a model captured into a CUDA graph (its private pool made in the last
    of them), replays, a caught torch.OutOfMemoryError. Nothing grows (the graph's pool is not
    growth by being made), both failed cudaMallocs are explained as larger than the device, the
    tensor level names torch's OOM, and what the program kept is held by its module's globals,
    named as the program knows them (__main__, not multiprocessing's __mp_main__)."""
    path = os.path.join(fx, "graph-oom.jsonl.zst")
    doc, _ = report(exe, path)
    t = tensors_of(doc)
    check(doc["growth"] == [] and t.get("growth") == [] and t.get("growth_basis") == "auto_steps",
          f"nothing grows on the three forwards (CUDA {doc['growth']}, tensors {t.get('growth')})")
    check(doc["summary"]["failed_allocations"] == 2 and doc["summary"]["leaked_bytes"] == 0,
          "two failed allocations, nothing leaked")
    check([o["cause"] for o in doc["oom"]] == ["larger_than_device"] * 2,
          f"each failure is larger than the device ({[o['cause'] for o in doc['oom']]})")
    check([o.get("cause") for o in t.get("ooms", [])] == ["too_large"],
          f"torch's OOM explained ({[o.get('cause') for o in t.get('ooms', [])]})")
    check([h["holder"] for h in t.get("held_at_end", [])] == ["static_in in __main__",
                                                            "static_out in __main__"],
          f"the kept tensors held by the script's globals ({t.get('held_at_end')})")
    text, _ = report(exe, path, fmt="text")
    check("growing" not in text and "larger than the device" in text,
          "the text says no growth and why the allocation failed")


CASES = {"graphoom": case_graphoom, "autogrowth": case_autogrowth, "userline": case_userline, "limit": case_limit, "hostile": case_hostile, "categories": case_categories, "snapshot": case_snapshot, "markers": case_markers, "frag": case_frag, "growth": case_growth, "gpt2": case_gpt2,
         "synthetic": case_synthetic}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("case", choices=sorted(CASES))
    a = ap.parse_args()
    CASES[a.case](a.exe, a.fixtures)
    print(f"tensors {a.case}: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
