#!/usr/bin/env python3
"""Analyses suite: what `gpumemtrace report` concludes from traces built to have one answer.

    test_analyses.py --exe BUILD/tools/gpumemtrace CASE

Each case writes small traces (docs/trace-format.md) into a temporary directory, runs the report
(JSON, and text where the wording matters) and checks the keys of docs/report-json.md,
"Analyses": growth across markers, temporaries and churn, OOM causes and explanations, --from/--to,
the timeline's bounded series, fragmentation, the per-process figures for many ranks, range
markers whose pops name their push, lines out of seq order (the reorder window, lines applied
late) and the progress line on a terminal.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

MiB = 1 << 20
GiB = 1 << 30
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


class Trace:
    """A trace file written line by line; seq and ts advance with every event or marker."""

    def __init__(self, pid=4242, start_unix_ns=1_800_000_000_000_000_000, start_ts=1_000_000_000):
        self.lines = [{"type": "header", "format": "gpumemtrace", "version": 1, "tracer": "0.1.0",
                       "pid": pid, "ppid": 1, "host": "test", "argv": ["python3", "train.py"],
                       "start_ts": start_ts, "start_unix_ns": start_unix_ns, "rank": None,
                       "forked_from": None, "coverage": "full", "capture": ["cupti"]}]
        self.seq = 0
        self.ts = start_ts
        self.stacks = set()

    def _next(self, dt_ns):
        self.seq += 1
        self.ts += dt_ns
        return self.seq, self.ts

    def stack(self, sid):
        if sid not in self.stacks:
            self.stacks.add(sid)
            self.lines.append({"type": "stack", "id": sid, "frames": ["0x%x" % (0x400000 + sid * 16)]})

    def alloc(self, ptr, size, stack=1, kind="device", device=0, api="cudaMalloc", dt=1000, **extra):
        self.stack(stack)
        seq, ts = self._next(dt)
        ev = {"type": "event", "seq": seq, "ts": ts, "tid": 1, "op": "alloc", "api": api,
              "kind": kind, "device": device, "ptr": "0x%x" % ptr, "size": size, "result": 0,
              "stack": stack}
        ev.update(extra)
        self.lines.append(ev)

    def fail(self, size, free, total, stack=9, result=2, device=0, dt=1000):
        self.stack(stack)
        seq, ts = self._next(dt)
        self.lines.append({"type": "event", "seq": seq, "ts": ts, "tid": 1, "op": "alloc",
                           "api": "cudaMalloc", "kind": "device", "device": device, "ptr": "0x0",
                           "size": size, "result": result, "free_bytes": free,
                           "total_bytes": total, "stack": stack})

    def free(self, ptr, kind="device", device=0, api="cudaFree", dt=1000):
        seq, ts = self._next(dt)
        self.lines.append({"type": "event", "seq": seq, "ts": ts, "tid": 1, "op": "free",
                           "api": api, "kind": kind, "device": device, "ptr": "0x%x" % ptr,
                           "result": 0})

    def usage(self, pool, size, device=0, dt=1000):
        seq, ts = self._next(dt)
        self.lines.append({"type": "event", "seq": seq, "ts": ts, "tid": 1, "op": "usage",
                           "api": "cuMemPoolGetAttribute", "kind": "pool_reserve",
                           "device": device, "pool": "0x%x" % pool, "size": size, "result": 0})

    def mark(self, label, rng=None, depth=None, tid=1, dt=1000):
        seq, ts = self._next(dt)
        m = {"type": "marker", "seq": seq, "ts": ts, "tid": tid, "label": label}
        if rng:
            m["range"] = rng
            m["depth"] = depth
        self.lines.append(m)

    def write(self, path, trailer=True):
        with open(path, "w") as f:
            for line in self.lines:
                f.write(json.dumps(line) + "\n")
            if trailer:
                f.write(json.dumps({"type": "trailer", "ts": self.ts + 1, "events": self.seq,
                                    "dropped": 0, "reason": "exit"}) + "\n")


def report(exe, paths, *args, fmt="json"):
    p = subprocess.run([exe, "report", "--format", fmt, *args, *paths], capture_output=True,
                       text=True, timeout=120)
    check(p.returncode == 0, "report %s exits 0 (%d: %s)" % (" ".join(args), p.returncode, p.stderr[-400:]))
    return json.loads(p.stdout) if fmt == "json" and p.returncode == 0 else p.stdout


def frame_addr(stack):
    return "0x%x" % (0x400000 + stack * 16)


def sites_at(entries, stack):
    return [e for e in entries if e.get("stack") == stack]


# --- cases ---------------------------------------------------------------------------------------

def case_growth(exe, tmp):
    """Stack 1 keeps one more 8 MiB block every step (kept losses); stack 2 allocates and frees."""
    t = Trace()
    ptr = 0x7f0000000000
    for step in range(10):
        t.mark("step %d" % step)
        t.alloc(ptr + step * 16 * MiB, 8 * MiB, stack=1)
        t.alloc(0x7e0000000000, 4 * MiB, stack=2)
        t.free(0x7e0000000000)
    t.mark("end")
    path = os.path.join(tmp, "growth.jsonl")
    t.write(path)
    rep = report(exe, [path])
    g = rep["growth"]
    check(len(g) == 1 and g[0]["stack"] == 1, "only the kept site grows: %s" % [e["stack"] for e in g])
    if g:
        e = g[0]
        check(e["basis"] == "markers" and e["samples"] == 11, "sampled at the 11 markers (%s, %s)" % (e["basis"], e["samples"]))
        check(e["first_bytes"] == 0 and e["last_bytes"] == 80 * MiB and e["growth_bytes"] == 80 * MiB,
              "0 -> 80 MiB (%d -> %d)" % (e["first_bytes"], e["last_bytes"]))
        check(e["rises"] == 10 and e["falls"] == 0, "rose in 10 intervals, fell in none")
        check(e["first_label"] == "step 0" and e["last_label"] == "end", "labels of first and last marker")
        check(e["site"] and e["site"]["address"] == frame_addr(1), "the site is stack 1's frame")
    churn = rep["churn"]
    c2 = sites_at(churn, 2)
    check(churn and churn[0]["stack"] in (1, 2) and len(c2) == 1, "churn lists both sites")
    if c2:
        c = c2[0]
        check(c["allocations"] == 10 and c["frees"] == 10 and c["temporaries"] == 10
              and c["temporary_bytes"] == 40 * MiB,
              "the alloc+free site: 10 allocations, 10 temporaries (%s)" % c)
        check(c["median_lifetime_s"] is not None and 0.5e-6 <= c["median_lifetime_s"] <= 3e-6,
              "its median lifetime is ~1 us (%s)" % c["median_lifetime_s"])
    c1 = sites_at(churn, 1)
    check(c1 and c1[0]["temporaries"] == 0 and c1[0]["frees"] == 0, "the kept site has no temporaries")
    text = report(exe, [path], fmt="text")
    check("growing: 1 call site" in text and "+80.0 MiB (0 B -> 80.0 MiB, rose in 10 of 10 intervals between markers)" in text,
          "the text report names the growth:\n" + "\n".join(l for l in text.splitlines() if "grow" in l or "+80" in l))


def case_growth_sites(exe, tmp):
    """One line reached through two native paths (two stacks, one call site): growth_sites[]
    and churn_sites[] merge them, as the text report does; growth[] keeps them apart."""
    t = Trace()
    for sid, caller in ((11, 0x600000), (12, 0x610000)):
        t.stacks.add(sid)
        t.lines.append({"type": "stack", "id": sid, "frames": ["0x500000", "0x%x" % caller]})
    ptr = 0x7f0000000000
    for step in range(8):
        t.mark("step %d" % step)
        t.alloc(ptr + step * 64 * MiB, 8 * MiB, stack=11)
        t.alloc(ptr + step * 64 * MiB + 32 * MiB, 2 * MiB, stack=12 if step % 4 else 11)
    t.mark("end")
    path = os.path.join(tmp, "two-paths.jsonl")
    t.write(path)
    rep = report(exe, [path])
    check(sorted(e["stack"] for e in rep["growth"]) == [11, 12], "growth[]: one entry per stack")
    gs = rep["growth_sites"]
    check(len(gs) == 1, "growth_sites[]: one call site (%d)" % len(gs))
    if gs:
        g = gs[0]
        check(g["growth_bytes"] == 8 * 10 * MiB and g["first_bytes"] == 0 and g["last_bytes"] == 80 * MiB,
              "their growth summed: 80 MiB (%s)" % g["growth_bytes"])
        check([s["stack"] for s in g["stacks"]] == [11, 12] and g["stacks"][0]["growth_bytes"] == 68 * MiB,
              "its stacks, largest first (%s)" % g["stacks"])
        check(g["site"]["address"] == "0x500000", "the shared frame is the site")
        check(g["min_rises"] == 6 and g["max_rises"] == 8, "rises per stack: 6 to 8 (%s-%s)"
              % (g["min_rises"], g["max_rises"]))
    cs = rep["churn_sites"]
    check(len(cs) == 1 and cs[0]["allocations"] == 16 and cs[0]["stacks"] == [11, 12],
          "churn_sites[]: the two stacks' 16 allocations together (%s)" % cs)
    text = report(exe, [path], fmt="text")
    check("growing: 1 call site" in text and "+80.0 MiB (0 B -> 80.0 MiB, rose in 6-8 of 8 intervals "
          "between markers, 2 stacks) at " in text,
          "the text report merges them:\n" + "\n".join(l for l in text.splitlines() if "grow" in l or "+80" in l))


def case_growth_snapshots(exe, tmp):
    """Without markers, growth is sampled at snapshots."""
    t = Trace()
    for step in range(6):
        t.alloc(0x7f0000000000 + step * 16 * MiB, 8 * MiB, stack=3, dt=10_000_000)
        seq, ts = t.seq, t.ts + 1
        t.lines.append({"type": "snapshot", "ts": ts, "seq": seq, "events": seq, "dropped": 0,
                        "live": [], "nvml": [{"device": 0, "index": 0, "total": 80 * GiB,
                                              "used": GiB + (step + 1) * 8 * MiB,
                                              "process_used": None}]})
    path = os.path.join(tmp, "snap.jsonl")
    t.write(path)
    g = report(exe, [path])["growth"]
    check(len(g) == 1 and g[0]["basis"] == "snapshots" and g[0]["samples"] == 6
          and g[0]["first_bytes"] == 8 * MiB and g[0]["last_bytes"] == 48 * MiB
          and g[0]["first_label"] is None,
          "growth across 6 snapshots, 8 -> 48 MiB (%s)" % g)
    # three snapshots (a run of two seconds): too few to call anything growth
    t.lines = [l for l in t.lines if l["type"] != "snapshot" or l["nvml"][0]["used"] <= GiB + 24 * MiB]
    t.write(path)
    g = report(exe, [path])["growth"]
    check(g == [], "3 snapshots are too few to list growth (%s)" % g)


def oom_trace(tmp, name, build):
    t = Trace()
    build(t)
    path = os.path.join(tmp, name + ".jsonl")
    t.write(path)
    return path


def case_oom(exe, tmp):
    total = 80 * GiB

    def by_process(t):
        for i in range(4):
            t.alloc(0x7f0000000000 + i * 20 * GiB, 19 * GiB, stack=1)
        t.fail(2 * GiB, free=1 * GiB, total=total)

    def outside(t):
        t.alloc(0x7f0000000000, 1 * GiB, stack=1)
        t.fail(2 * GiB, free=1 * GiB, total=total)

    def fragmented(t):
        t.alloc(0x7f0000000000, 1 * GiB, stack=1)
        t.alloc(0x7f0000000000 + 3 * GiB // 2, 1 * GiB, stack=2)
        t.fail(2 * GiB, free=10 * GiB, total=total)

    def larger(t):
        t.fail(100 * GiB, free=79 * GiB, total=total)

    def not_oom(t):
        t.fail(2 * MiB, free=79 * GiB, total=total, result=801)

    def pool_cache(t):
        for i in range(4):
            t.alloc(0x7f0000000000 + i * 20 * GiB, 19 * GiB, stack=4, kind="pool", api="cudaMallocAsync")
        t.usage(0xabc, 78 * GiB)
        t.fail(4 * GiB, free=1 * GiB, total=total)

    cases = [("held_by_process", by_process), ("held_outside", outside),
             ("fragmented", fragmented), ("larger_than_device", larger),
             ("not_out_of_memory", not_oom), ("held_by_cache", pool_cache)]
    for cause, build in cases:
        path = oom_trace(tmp, cause, build)
        rep = report(exe, [path])
        oom = rep["oom"]
        check(len(oom) == 1 and len(rep["failed"]) == 1, "%s: one oom[] entry per failure" % cause)
        if not oom:
            continue
        o = oom[0]
        check(o["cause"] == cause, "%s: cause %s" % (cause, o["cause"]))
        check(isinstance(o["explanation"], str) and len(o["explanation"]) > 30,
              "%s: explained: %s" % (cause, o["explanation"]))
        if cause == "held_by_process":
            check(o["held_bytes"] == 76 * GiB and o["live_allocations"] == 4
                  and o["untracked_bytes"] == 3 * GiB,
                  "held_by_process: 76 GiB held in 4, 3 GiB untracked (%s)" % o)
            check("2.0 GiB" in o["explanation"] and "76.0 GiB" in o["explanation"],
                  "the explanation names the request and what was held")
            check(len(o["top_sites"]) == 1 and o["top_sites"][0]["bytes"] == 76 * GiB
                  and o["top_sites"][0]["allocations"] == 4 and o["top_sites"][0]["cache"] is None,
                  "top site: stack 1 with 76 GiB, no cache (%s)" % o["top_sites"])
        if cause == "fragmented":
            check(o["largest_gap_bytes"] == GiB // 2, "the hole between the two: 512 MiB (%s)" % o["largest_gap_bytes"])
        if cause == "held_by_cache":
            check(o["cache_bytes"] == 76 * GiB and o["pool_slack_bytes"] == 2 * GiB,
                  "held_by_cache: 76 GiB by the pool, 2 GiB slack (%s, %s)" % (o["cache_bytes"], o["pool_slack_bytes"]))
            check("cannot see inside the cache" in o["explanation"],
                  "says what the CUDA-level view cannot see")
        if cause == "not_out_of_memory":
            check("801" in o["explanation"], "names the error code")
    text = report(exe, [os.path.join(tmp, "held_by_process.jsonl")], fmt="text")
    lines = text.splitlines()
    check(len(lines) > 3 and lines[2].startswith("why allocations failed (1 failure):"),
          "the text report's answer comes first (line 3: %r)" % (lines[2] if len(lines) > 2 else None))


def case_range(exe, tmp):
    """Before "train", 1 block is live (starting state); inside, one leaks, one is freed."""
    t = Trace()
    t.alloc(0x7f0000000000, 64 * MiB, stack=1)              # before the range: starting state
    t.alloc(0x7f0100000000, 512 * MiB, stack=5)
    t.free(0x7f0100000000)                                   # a peak before the range
    t.mark("train")
    t.alloc(0x7f0010000000, 8 * MiB, stack=2)               # leaks inside the range
    t.alloc(0x7f0020000000, 16 * MiB, stack=3)
    t.free(0x7f0020000000)
    t.mark("eval")
    t.alloc(0x7f0030000000, 256 * MiB, stack=4)             # after the range
    path = os.path.join(tmp, "range.jsonl")
    t.write(path)
    full = report(exe, [path])
    check(full["range"] is None and full["summary"]["peak_held_bytes"] == 576 * MiB,
          "without a range: range null, the peak before train counts")
    rep = report(exe, [path], "--from", "train", "--to", "eval")
    r = rep["range"]
    check(r and r["from"]["spec"] == "train" and r["from"]["marker"] == "train"
          and r["to"]["marker"] == "eval", "range names its markers (%s)" % r)
    check(rep["summary"]["peak_held_bytes"] == 88 * MiB,
          "the peak inside counts the starting state: 64 + 8 + 16 MiB (%d)" % rep["summary"]["peak_held_bytes"])
    check(rep["summary"]["leaked_bytes"] == 8 * MiB and [l["stack"] for l in rep["leaks"]] == [2],
          "leaks: only what was allocated inside (%s)" % [(l["stack"], l["bytes"]) for l in rep["leaks"]])
    check(rep["processes"][0]["allocations"] == 2, "allocations: the two inside")
    # seconds: the same range by time (train at ~3.5 us, eval at ~6.5 us after start)
    t0 = t.lines[0]["start_ts"]
    m = {l["label"]: l["ts"] for l in t.lines if l.get("type") == "marker"}
    frm, to = (m["train"] - t0) / 1e9, (m["eval"] - t0 - 1) / 1e9
    rep2 = report(exe, [path], "--from", "%.9f" % frm, "--to", "%.9f" % to)
    check(rep2["summary"]["leaked_bytes"] == 8 * MiB and rep2["range"]["from"]["marker"] is None,
          "--from/--to in seconds give the same leaks (%d)" % rep2["summary"]["leaked_bytes"])
    p3 = subprocess.run([exe, "report", "--format", "json", "--from", "no such marker", path],
                        capture_output=True, text=True, timeout=120)
    check(p3.returncode == 2 and p3.stdout == "" and "'no such marker'" in p3.stderr
          and "'train', 'eval'" in p3.stderr,
          "an unknown marker: a usage error naming it and the labels there are (%d: %s)"
          % (p3.returncode, p3.stderr[-300:]))
    text = report(exe, [path], "--from", "train", fmt="text")
    check("range: from train to the end" in text, "the text report states the range")
    # without a header, times count from the earliest line: the range moves with it
    first = min(l["ts"] for l in t.lines if "ts" in l)
    t.lines = t.lines[1:]
    bare = os.path.join(tmp, "range-noheader.jsonl")
    t.write(bare)
    rep4 = report(exe, [bare], "--from", "%.9f" % ((m["train"] - first) / 1e9),
                  "--to", "%.9f" % ((m["eval"] - first - 1) / 1e9))
    check(rep4["summary"]["leaked_bytes"] == 8 * MiB,
          "no header: --from/--to in seconds from the first line (%d)" % rep4["summary"]["leaked_bytes"])


def case_timeline(exe, tmp):
    """A long series is bucketed to at most 4096 points and keeps its peak; a short one is exact."""
    t = Trace()
    n = 6000
    for i in range(n):
        t.alloc(0x7f0000000000, (i % 100 + 1) * MiB if i != 4321 else 900 * MiB, stack=1)
        t.free(0x7f0000000000)
    path = os.path.join(tmp, "timeline.jsonl")
    t.write(path)
    rep = report(exe, [path])
    held = [s for s in rep["timeline"] if s["kind"] == "held"]
    dev = [s for s in rep["timeline"] if s["kind"] == "device"]
    check(len(held) == 1 and len(dev) == 1, "one held and one device series")
    for s in held + dev:
        pts = s["points"]
        check(not s["exact"] and len(pts) <= 4096, "%s: bucketed, %d points" % (s["kind"], len(pts)))
        check(max(p[1] for p in pts) == 900 * MiB, "%s: the 900 MiB peak survives" % s["kind"])
        check(all(pts[i][0] <= pts[i + 1][0] for i in range(len(pts) - 1)), "%s: in time order" % s["kind"])
    t = Trace()
    t.alloc(0x7f0000000000, MiB, stack=1)
    t.free(0x7f0000000000)
    short = os.path.join(tmp, "short.jsonl")
    t.write(short)
    small = report(exe, [short])["timeline"]
    check(small and all(s["exact"] and [p[1] for p in s["points"]] == [MiB, 0] for s in small),
          "a short series is exact: every change (%s)" % small)


def case_fragmentation(exe, tmp):
    t = Trace()
    t.alloc(0x7f0000000000, 2 * MiB, stack=1)
    t.alloc(0x7f0000300000, 1 * MiB, stack=1)
    t.alloc(0x7f0000600000, 1000, stack=2, api="cudaMallocPitch", requested=900)
    t.alloc(0x7f8000000000, 1 * MiB, stack=1)   # far away: another address range, not a hole
    path = os.path.join(tmp, "frag.jsonl")
    t.write(path)
    fr = report(exe, [path])["fragmentation"]
    check(len(fr) == 1, "one fragmentation entry")
    if fr:
        f = fr[0]
        g = f["gaps_at_peak"]
        check(g["live_allocations"] == 4 and g["gaps"] == 2 and g["largest_gap_bytes"] == 2 * MiB
              and g["gap_bytes"] == 3 * MiB, "two holes, 1 and 2 MiB (%s)" % g)
        check(f["requested_vs_granted"] == {"allocations": 1, "requested_bytes": 900, "granted_bytes": 1000},
              "pitched: asked 900, got 1000 (%s)" % f["requested_vs_granted"])
        h = {e["kind"]: e["buckets"] for e in f["size_histogram"]}
        check([(b["min_bytes"], b["allocations"]) for b in h.get("device", [])]
              == [(512, 1), (1 * MiB, 2), (2 * MiB, 1)], "size histogram by powers of two (%s)" % h)


def case_ranks(exe, tmp):
    paths = []
    for rank, (peak, fail_after_ns) in enumerate([(1 * GiB, None), (3 * GiB, 5_000_000), (2 * GiB, 1_000_000)]):
        t = Trace(pid=100 + rank, start_unix_ns=1_800_000_000_000_000_000 + rank * 10_000_000)
        t.alloc(0x7f0000000000, peak, stack=1)
        if fail_after_ns:
            t.fail(80 * GiB, free=GiB, total=80 * GiB, dt=fail_after_ns)
        p = os.path.join(tmp, "rank%d.jsonl" % rank)
        t.write(p)
        paths.append(p)
    rep = report(exe, paths)
    s = rep["summary"]
    check(s["peak_process"] == 1, "the rank with the largest peak: 1 (%s)" % s["peak_process"])
    # rank 1 fails at +10 ms +5 ms wall clock, rank 2 at +20 ms +1 ms: rank 1 first by wall clock
    check(s["first_failure_process"] == 1, "first failure by wall clock: rank 1 (%s)" % s["first_failure_process"])
    p1 = rep["processes"][1]
    check(p1["peak_held_bytes"] == 3 * GiB and p1["first_failure_time_s"] is not None
          and p1["peak_unix_s"] is not None and rep["processes"][0]["first_failure_time_s"] is None,
          "per-process peak and first failure (%s)" % {k: p1[k] for k in p1 if k.startswith(("peak", "first"))})


def case_ranges(exe, tmp):
    """Range markers: a pop line names no label; the report gives it its push's."""
    t = Trace()
    t.mark("epoch", "push", 1)
    t.mark("fwd", "push", 2)
    t.mark("", "pop", 2)
    t.mark("bwd", "push", 2)
    t.mark("", "pop", 2)
    t.mark("", "pop", 1)
    t.mark("other thread", "push", 1, tid=2)
    t.mark("", "pop", 1, tid=2)
    path = os.path.join(tmp, "ranges.jsonl")
    t.write(path)
    mk = report(exe, [path])["processes"][0]["markers"]
    got = [(m["label"], m.get("range"), m.get("depth")) for m in mk]
    want = [("epoch", "push", 1), ("fwd", "push", 2), ("fwd", "pop", 2), ("bwd", "push", 2),
            ("bwd", "pop", 2), ("epoch", "pop", 1), ("other thread", "push", 1), ("other thread", "pop", 1)]
    check(got == want, "pops named by their push:\n  got  %s\n  want %s" % (got, want))


def run_report(exe, path, env=None, stderr=subprocess.PIPE):
    """`report --format json PATH`: (exit status, the report or None, stderr as text)."""
    p = subprocess.run([exe, "report", "--format", "json", path], stdout=subprocess.PIPE,
                       stderr=stderr, env=dict(os.environ, **(env or {})), timeout=120)
    rep = json.loads(p.stdout) if p.returncode == 0 else None
    return p.returncode, rep, (p.stderr or b"").decode(errors="replace")


def without_file(rep):
    """The report less what names the file, to compare two files with the same events."""
    for proc in rep["processes"]:
        proc.pop("file", None)
    return rep


def case_order(exe, tmp):
    """Lines out of seq order: put back in order within the window, the rest applied late."""
    t = Trace()
    for i in range(3000):
        t.alloc(0x7f0000000000 + (i % 50) * 16 * MiB, (i % 7 + 1) * MiB, stack=1 + i % 3)
        if i % 50 == 49:
            for k in range(50):
                t.free(0x7f0000000000 + k * 16 * MiB)
        if i % 500 == 0:
            t.mark("step %d" % i)
    t.alloc(0x7f8000000000, 3 * MiB, stack=4)   # leaked
    head = [l for l in t.lines if l["type"] not in ("event", "marker")]
    body = [l for l in t.lines if l["type"] in ("event", "marker")]
    sorted_path = os.path.join(tmp, "sorted.jsonl")
    t.write(sorted_path)
    # as the writer drains: blocks of up to 997 lines, the odd seqs of a block before the even
    shuffled = []
    for b in range(0, len(body), 997):
        block = body[b:b + 997]
        shuffled += [l for l in block if l["seq"] % 2] + [l for l in block if not l["seq"] % 2]
    t.lines = head + shuffled
    shuffled_path = os.path.join(tmp, "shuffled.jsonl")
    t.write(shuffled_path)
    rc_a, a, err_a = run_report(exe, sorted_path)
    rc_b, b, err_b = run_report(exe, shuffled_path)
    check(rc_a == rc_b == 0 and a and b and without_file(a) == without_file(b),
          "lines in drain order give the report of lines in seq order")
    check("applied late" not in err_b, "no line applied late (%s)" % err_b.strip()[-300:])

    # seq 1 missing (a stamp that wrote no line): the window waits, gives up, and goes on
    gap = Trace()
    gap.seq = 1
    for i in range(70000):
        gap.alloc(0x7f0000000000, MiB, stack=1)
        gap.free(0x7f0000000000)
    gap.alloc(0x7f8000000000, 2 * MiB, stack=2)
    gap_path = os.path.join(tmp, "gap.jsonl")
    gap.write(gap_path)
    rc, rep, err = run_report(exe, gap_path)
    check(rc == 0 and rep["summary"]["events"] == 140001 and rep["summary"]["leaked_bytes"] == 2 * MiB,
          "a seq that never comes: every event counted, the leak found (%s)"
          % (rep and {k: rep["summary"][k] for k in ("events", "leaked_bytes")}))
    check("applied late" not in err, "a missing seq is not a late line (%s)" % err.strip()[-300:])

    # ... and when it comes after all: applied late, counted, noted once with its file:line
    ev = {"type": "event", "seq": 1, "ts": gap.ts + 5, "tid": 1, "op": "alloc", "api": "cudaMalloc",
          "kind": "device", "device": 0, "ptr": "0x7f9000000000", "size": 5 * MiB, "result": 0,
          "stack": 3}
    gap.stack(3)
    gap.lines.append(ev)
    late_path = os.path.join(tmp, "late.jsonl")
    gap.write(late_path)
    late_line = len(gap.lines)
    rc, rep, err = run_report(exe, late_path)
    check(rc == 0 and rep["summary"]["leaked_bytes"] == 7 * MiB and rep["summary"]["events"] == 140002,
          "the late allocation still counts: 7 MiB leaked (%s)" % (rep and rep["summary"]["leaked_bytes"]))
    want = "%s:%d: note: 1 line applied late, the first with seq 1" % (late_path, late_line)
    check(want in err and err.count("applied late") == 1, "noted once: %r in %r" % (want, err[-400:]))

    # a repeated seq, and a snapshot behind the events before it: also late
    dup = Trace()
    dup.alloc(0x7f0000000000, MiB, stack=1)
    dup.alloc(0x7f0010000000, MiB, stack=1)
    dup.lines.append(dict(dup.lines[-2], ptr="0x7f0020000000"))  # seq 1 again, after seq 2
    dup.lines.append({"type": "snapshot", "ts": dup.ts - 500, "seq": 1, "events": 1, "dropped": 0,
                      "live": [], "nvml": [{"device": 0, "total": 80 * GiB, "used": GiB,
                                            "process_used": GiB}]})
    dup_path = os.path.join(tmp, "dup.jsonl")
    dup.write(dup_path)
    rc, rep, err = run_report(exe, dup_path)
    check(rc == 0 and rep["summary"]["leaked_bytes"] == 3 * MiB, "a repeated seq still counts")
    check("2 lines applied late, the first with seq 1" in err, "repeat and snapshot noted (%r)" % err[-400:])


def case_progress(exe, tmp):
    """On a terminal the reader shows where it is, then erases the line; in a pipe, nothing."""
    import pty
    t = Trace()
    for i in range(40000):
        t.alloc(0x7f0000000000, MiB, stack=1)
        t.free(0x7f0000000000)
    path = os.path.join(tmp, "progress.jsonl")
    t.write(path)
    master, slave = pty.openpty()
    rc, tty_rep, _ = run_report(exe, path, env={"GMT_PROGRESS_INTERVAL_S": "0"}, stderr=slave)
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    text = shown.decode(errors="replace")
    want = "\rgpumemtrace: reading %s: " % path
    check(rc == 0 and want in text, "progress line on a terminal (%r)" % text[:200])
    check(" lines, " in text and "% (" in text and "MB/s)" in text, "it says lines, percent and MB/s")
    check(text.endswith("\r\x1b[K"), "the line is erased at the end (%r)" % text[-40:])
    rc2, pipe_rep, err = run_report(exe, path, env={"GMT_PROGRESS_INTERVAL_S": "0"})
    check(rc2 == 0 and "reading" not in err, "no progress line into a pipe (%r)" % err[:200])
    check(tty_rep == pipe_rep, "the report is the same either way")


CASES = {"growth": case_growth, "growth-sites": case_growth_sites,
         "growth-snapshots": case_growth_snapshots, "oom": case_oom,
         "range": case_range, "timeline": case_timeline, "fragmentation": case_fragmentation,
         "ranks": case_ranks, "ranges": case_ranges, "order": case_order, "progress": case_progress}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("case", choices=sorted(CASES) + ["all"])
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gmt-analyses-") as tmp:
        for name, fn in CASES.items():
            if a.case in (name, "all"):
                print("--- %s" % name)
                fn(a.exe, tmp)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
