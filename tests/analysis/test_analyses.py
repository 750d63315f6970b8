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
import re
import subprocess
import sys
import tempfile

MiB = 1 << 20
GiB = 1 << 30
failures = []
FAKES = {}  # the built stand-ins of CuPy's and XLA's allocator modules (--fake-cupy, --fake-xla)


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

    def mark(self, label, rng=None, depth=None, tid=1, dt=1000, auto=False):
        seq, ts = self._next(dt)
        m = {"type": "marker", "seq": seq, "ts": ts, "tid": tid, "label": label}
        if auto:
            m["auto"] = "step"
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


def run(exe, argv):
    p = subprocess.run([exe] + argv, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


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


def leak_steps(t, steps, marks, ranges_only=False):
    """docs/markers.md's pattern: mark("step N"), then range("forward") and range("backward")
    per step; forward keeps 1 MiB (stack 5) and both use a temporary (stack 6). With
    ranges_only, no marks: each step is an outermost range("step") around the two."""
    for step in range(steps):
        if marks:
            t.mark("step %d" % step)
        if ranges_only:
            t.mark("step", "push", 1)
        d = 2 if ranges_only else 1
        t.mark("forward", "push", d)
        t.alloc(0x7f0000000000 + step * 2 * MiB, MiB, stack=5)
        t.alloc(0x7e0000000000, 4 * MiB, stack=6)
        t.free(0x7e0000000000)
        t.mark("", "pop", d)
        t.mark("backward", "push", d)
        t.alloc(0x7e0000000000, 4 * MiB, stack=6)
        t.free(0x7e0000000000)
        t.mark("", "pop", d)
        if ranges_only:
            t.mark("", "pop", 1)


def case_callers(exe, tmp):
    """A user's own allocation helper (helper.py's malloc) called from three lines: every row's
    site is the helper, and under it each caller with its share, so the leak at one line is told
    from the weights at another (text and JSON the same)."""
    t = Trace()
    codes = [(1, "/home/u/helper.py", "malloc", 38), (2, "/home/u/train.py", "load_weights", 10),
             (3, "/home/u/train.py", "step", 89), (4, "/home/u/train.py", "warmup", 120)]
    for cid, f, name, line in codes:
        t.lines.append({"type": "pycode", "id": cid, "file": f, "name": name, "qualname": name,
                        "firstlineno": line, "python": "3.12", "linetable": "e800"})
    for sid, caller in ((11, 2), (12, 3), (13, 4)):
        t.stacks.add(sid)
        t.lines.append({"type": "stack", "id": sid, "frames": [], "py": [[1, 0, 0], [caller, 0, 1]]})
    t.alloc(0x7f0000000000, 64 * MiB, stack=11)  # weights, kept on purpose
    for i in range(5):  # the leak: 2 MiB a step, never freed
        t.alloc(0x7f1000000000 + i * 4 * MiB, 2 * MiB, stack=12)
    t.alloc(0x7f2000000000, MiB, stack=13)
    t.free(0x7f2000000000)
    path = os.path.join(tmp, "callers.jsonl")
    t.write(path)
    rep = report(exe, [path])
    sites = [g for g in rep["leak_sites"] if g["site"] and g["site"]["function"] == "malloc"]
    check(len(sites) == 1, "one leak site: the helper (%s)" % [g["site"] for g in rep["leak_sites"]])
    if sites:
        got = [(c["site"]["function"], c["site"]["line"], c["bytes"], c["allocations"])
               for c in sites[0]["callers"]]
        check(got == [("load_weights", 10, 64 * MiB, 1), ("step", 89, 10 * MiB, 5)],
              "JSON: the helper's callers, largest first, with their shares (%s)" % got)
    text = report(exe, [path], fmt="text")
    check(re.search(r"from /home/u/train\.py:89 in step: 10\.0 MiB in 5 allocations", text) and
          re.search(r"from /home/u/train\.py:10 in load_weights: 64\.0 MiB in 1 allocation\b", text),
          "text: each caller under the helper's row:\n%s" % text[:1500])


def case_growth_auto(exe, tmp):
    """Steps the tracer found itself ("auto":"step", PyTorch's optimizer hook): a program with no
    marks of its own gets its growth sampled at them; a user's marks take precedence; growth and
    check --max-growth-bytes work from them."""
    for name, user in (("auto-only", False), ("user-too", True)):
        t = Trace()
        for step in range(8):
            if user and step % 2 == 0:
                t.mark("epoch %d" % (step // 2))
            t.alloc(0x7f0000000000 + step * 2 * MiB, MiB, stack=5)
            t.alloc(0x7e0000000000, 4 * MiB, stack=6)
            t.free(0x7e0000000000)
            t.mark("optimizer step %d" % (step + 1), auto=True)
        path = os.path.join(tmp, "growth-auto-%s.jsonl" % name)
        t.write(path)
        rep = report(exe, [path])
        g = [e for e in rep["growth"] if e["stack"] == 5]
        want = ("markers", 4) if user else ("auto_steps", 8)
        check(len(g) == 1 and (g[0]["basis"], g[0]["samples"]) == want,
              "%s: the kept site grows, sampled at %s (%s)" % (name, want, g))
        check(not [e for e in rep["growth"] if e["stack"] == 6],
              "%s: the temporary does not grow" % name)
        if not user:
            check(g and g[0]["first_label"] == "optimizer step 1" and
                  g[0]["last_label"] == "optimizer step 8", "auto-only: labelled by the steps")
            rc, out, err = run(exe, ["check", "--max-growth-bytes", "1MiB", path])
            check(rc == 1 and "max-growth-bytes" in out, "auto-only: check fails on the growth")
            rc, out, err = run(exe, ["report", path])
            check("automatic steps (optimizer)" in out, "auto-only: the text says what was sampled")
    # on the tracer's own steps, a site made late (a CUDA graph's pool made in the last of three
    # forwards) is not growth by being made, nor is one that swings with the batch's shape; the
    # same samples as the user's marks are judged as the user placed them (what they kept)
    for user in (False, True):
        label = "step %d" if user else "optimizer step %d"
        t = Trace()  # six steps: a site that swings (3, 5, 2, 6, 4, 7 MiB), a leak of 1 MiB a step
        sizes = [3, 5, 2, 6, 4, 7]
        for step in range(6):
            t.alloc(0x7d0000000000 + step * 16 * MiB, sizes[step] * MiB, stack=7)
            if step:
                t.free(0x7d0000000000 + (step - 1) * 16 * MiB)
            t.alloc(0x7f0000000000 + step * 2 * MiB, MiB, stack=5)
            t.mark(label % (step + 1), auto=not user)
        late = Trace()  # three steps: a site made in the last one, kept
        for step in range(3):
            late.alloc(0x7e0000000000, MiB, stack=6)
            late.free(0x7e0000000000)
            if step == 2:
                late.alloc(0x7c0000000000, 2 * MiB, stack=8)
            late.mark(label % (step + 1), auto=not user)
        for name, tr, want in (("swing", t, [5, 7] if user else [5]),
                               ("late", late, [8] if user else [])):
            path = os.path.join(tmp, "growth-auto-%s-%s.jsonl" % (name, user))
            tr.write(path)
            stacks = sorted(e["stack"] for e in report(exe, [path])["growth"])
            check(stacks == want, "%s, %s: growing stacks %s, want %s" % (
                "user marks" if user else "automatic steps", name, stacks, want))
            rc, out, err = run(exe, ["report", path])
            check((("growing: %d call site" % len(want)) in out) == bool(want) and
                  ("growing:" in out) == bool(want),
                  "%s, %s: the text says the same (%d growing)" % (
                      "user marks" if user else "automatic steps", name, len(want)))
    # a program with no optimizer: the steps are its model's forward() calls, and the text says so
    t = Trace()
    for step in range(4):
        t.alloc(0x7f0000000000 + step * 2 * MiB, MiB, stack=5)
        t.mark("forward %d" % (step + 1), auto=True)
    path = os.path.join(tmp, "growth-auto-forward.jsonl")
    t.write(path)
    rc, out, err = run(exe, ["report", path])
    check("rose in 3 of 3 intervals between automatic steps (forward)" in out,
          "forward steps: the text names them (%s)" % [l for l in out.splitlines() if "rose" in l])
    t = Trace()
    t.mark("x", auto=True, rng="push", depth=1)
    path = os.path.join(tmp, "growth-auto-bad.jsonl")
    t.write(path)
    rc, out, err = run(exe, ["report", path])
    check("auto" in err and "growth-auto-bad.jsonl:" in err, "an auto range is named as bad: %s" % err)


def case_growth_ranges(exe, tmp):
    """Range pushes and pops are not growth samples: with a mark per step and ranges inside
    (docs/markers.md's own pattern) the 1 MiB-per-step leak is found as without the ranges, and
    `check --max-growth-bytes 1MiB` fails on it. A trace with ranges and no marks is sampled at
    the end of each outermost range."""
    for name, marks, ranges_only, samples, first, last in (
            ("marks", True, False, 10, "step 0", "step 9"),
            ("ranges-only", False, True, 10, "step", "step")):
        t = Trace()
        leak_steps(t, 10, marks, ranges_only)
        path = os.path.join(tmp, "growth-ranges-%s.jsonl" % name)
        t.write(path)
        rep = report(exe, [path])
        gs = rep["growth_sites"]
        check(len(gs) == 1 and gs[0]["stacks"][0]["stack"] == 5,
              "%s: the kept site grows, the temporary does not (%s)" % (name, [
                  [s["stack"] for s in g["stacks"]] for g in gs]))
        g = [e for e in rep["growth"] if e["stack"] == 5]
        if g:
            e = g[0]
            check(e["basis"] == ("range_ends" if ranges_only else "markers") and
                  e["samples"] == samples,
                  "%s: sampled %d times (%s, %s)" % (name, samples, e["basis"], e["samples"]))
            check(e["growth_bytes"] == 9 * MiB and e["rises"] == samples - 1 and e["falls"] == 0,
                  "%s: +9 MiB, rose in every interval (%s, %s rises)" % (name, e["growth_bytes"], e["rises"]))
            check(e["first_label"] == first and e["last_label"] == last,
                  "%s: labels %s .. %s (%s .. %s)" % (name, first, last, e["first_label"], e["last_label"]))
        p = subprocess.run([exe, "check", "--max-growth-bytes", "1MiB", path], capture_output=True,
                           text=True, timeout=120)
        check(p.returncode == 1 and "max-growth-bytes" in p.stdout,
              "%s: check --max-growth-bytes 1MiB fails (exit %d: %s)" % (name, p.returncode, p.stdout[-300:]))


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
    # seconds past any trace's end (a double past 2^64 ns, or inf): nothing is counted, as for
    # a start after the last event (the offset was cast unchecked and wrapped into the trace)
    for far in ("1e30", "inf", "1e12"):
        rf = report(exe, [path], "--from", far)
        check(rf["range"]["from"]["time_s"] is None and rf["summary"]["leaked_bytes"] == 0
              and rf["processes"][0]["allocations"] == 0,
              "--from %s: past the end, nothing counted (%s, %d allocations)"
              % (far, rf["range"]["from"], rf["processes"][0]["allocations"]))
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


def case_fragmentation_kinds(exe, tmp):
    """cudaMalloc's and a pool's addresses come from different reservations, terabytes apart:
    each kind is laid out on its own, and a gap of 1 GiB or more starts another address range
    (it is not part of the span), so no span adds up the distance between them."""
    t = Trace()
    t.alloc(0x7f0000000000, 2 * MiB, stack=1)
    t.alloc(0x7f0000300000, 1 * MiB, stack=1)                 # device: a 1 MiB hole
    t.alloc(0x302000000, 2 * MiB, stack=2, kind="pool", api="cudaMallocAsync")
    t.alloc(0x302400000, 1 * MiB, stack=2, kind="pool", api="cudaMallocAsync")  # pool: 2 MiB hole
    t.alloc(0x302800000, 1 * MiB, stack=1)                    # device, next to the pool's
    path = os.path.join(tmp, "frag-kinds.jsonl")
    t.write(path)
    fr = report(exe, [path])["fragmentation"]
    check(len(fr) == 1, "one fragmentation entry")
    if not fr:
        return
    by_kind = {g["kind"]: g for g in fr[0].get("gaps_at_peak_by_kind", [])}
    want = {
        "device": {"live_allocations": 3, "span_bytes": 5 * MiB, "address_ranges": 2,
                   "gap_bytes": 1 * MiB, "largest_gap_bytes": 1 * MiB, "gaps": 1},
        "pool": {"live_allocations": 2, "span_bytes": 5 * MiB, "address_ranges": 1,
                 "gap_bytes": 2 * MiB, "largest_gap_bytes": 2 * MiB, "gaps": 1},
    }
    for kind, w in want.items():
        got = {k: by_kind.get(kind, {}).get(k) for k in w}
        check(got == w, "%s: laid out on its own (%s)" % (kind, by_kind.get(kind)))
    check(set(by_kind) == set(want), "only the kinds held by address (%s)" % sorted(by_kind))
    g = fr[0]["gaps_at_peak"]
    check(g["live_allocations"] == 5 and g["span_bytes"] == 10 * MiB and g["gaps"] == 2
          and g["gap_bytes"] == 3 * MiB and g["largest_gap_bytes"] == 2 * MiB
          and g["address_ranges"] == 3, "gaps_at_peak: the kinds summed, no hole across kinds (%s)" % g)
    text = report(exe, [path], fmt="text")
    line = [l for l in text.splitlines() if l.startswith("  device 0") and "span" in l]
    check(len(line) == 1 and "3 live device allocations span 5.0 MiB in 2 address ranges with "
          "1.0 MiB in 1 hole (largest 1.0 MiB)" in line[0] and "2 live pool allocations span "
          "5.0 MiB with 2.0 MiB in 1 hole" in line[0] and "TiB" not in line[0],
          "the text names each kind's span (%s)" % line)


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
    # what no tracer writes, read alike streamed and stored: a push at a depth still open takes
    # its place (the second pop closes nothing named), a pop at depth 0 closes nothing
    t.mark("a", "push", 1)
    t.mark("b", "push", 1)
    t.mark("", "pop", 1)
    t.mark("", "pop", 1)
    t.mark("z", "push", 0)
    t.mark("", "pop", 0)
    path = os.path.join(tmp, "ranges.jsonl")
    t.write(path)
    want = [("epoch", "push", 1), ("fwd", "push", 2), ("fwd", "pop", 2), ("bwd", "push", 2),
            ("bwd", "pop", 2), ("epoch", "pop", 1), ("other thread", "push", 1), ("other thread", "pop", 1),
            ("a", "push", 1), ("b", "push", 1), ("b", "pop", 1), ("", "pop", 1), ("z", "push", 0),
            ("", "pop", 0)]
    for stored in ("0", "1"):
        rc, rep, err = run_report(exe, path, env={"GMT_TRACE_STORED": stored})
        check(rc == 0, "report (stored %s): exit %d: %s" % (stored, rc, err))
        got = [(m["label"], m.get("range"), m.get("depth")) for m in rep["processes"][0]["markers"]]
        check(got == want, "pops named by their push (stored %s):\n  got  %s\n  want %s"
              % (stored, got, want))


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

    # two allocations that hold past 2^63 together (a broken trace; one size past 2^63 is no
    # JSON integer here) against a reading of 1 GiB: what is tracked exceeds NVML, so untracked
    # is negative (the difference cast to int64 was positive)
    big = Trace()
    big.alloc(0x7f0000000000, 3 << 61, stack=1)
    big.alloc(0x7f8000000000, 3 << 61, stack=1)
    big.lines.append({"type": "snapshot", "ts": big.ts + 10, "seq": big.lines[-1]["seq"] + 1,
                      "events": 1, "dropped": 0,
                      "live": [], "nvml": [{"device": 0, "total": 80 * GiB, "used": GiB,
                                            "process_used": GiB}]})
    big_path = os.path.join(tmp, "big.jsonl")
    big.write(big_path)
    rc, rep, err = run_report(exe, big_path)
    rows = rep["ledger"] if rc == 0 else []
    check(rows and all(r["untracked_bytes"] == -(2 ** 63 - 1) for r in rows),
          "tracked past 2^63 over NVML's 1 GiB: untracked clamped negative (%s)"
          % [r["untracked_bytes"] for r in rows])


def read_pty(master):
    """All a pseudo-terminal's other end was given (its writer closed), then close it."""
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
    return shown


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
    shown = read_pty(master)
    text = shown.decode(errors="replace")
    want = "\rgpumemtrace: reading %s: " % path
    check(rc == 0 and want in text, "progress line on a terminal (%r)" % text[:200])
    check(" lines, " in text and "% (" in text and "MB/s)" in text, "it says lines, percent and MB/s")
    check(text.endswith("\r\x1b[K"), "the line is erased at the end (%r)" % text[-40:])
    rc2, pipe_rep, err = run_report(exe, path, env={"GMT_PROGRESS_INTERVAL_S": "0"})
    check(rc2 == 0 and "reading" not in err, "no progress line into a pipe (%r)" % err[:200])
    check(tty_rep == pipe_rep, "the report is the same either way")
    # a directory read on two threads: one line for the directory, the traces done of all
    d = os.path.join(tmp, "progress-dir")
    os.makedirs(d)
    for name in ("a.jsonl", "b.jsonl"):
        t.write(os.path.join(d, name))
    master, slave = pty.openpty()
    rc, dir_rep, _ = run_report(exe, d, env={"GMT_PROGRESS_INTERVAL_S": "0", "GMT_JOBS": "2"},
                                stderr=slave)
    os.close(slave)
    shown = read_pty(master)
    text = shown.decode(errors="replace")
    check(rc == 0 and ("\rgpumemtrace: reading %s: " % d) in text and " of 2 traces" in text,
          "a directory read in parallel: one progress line for it (%r)" % text[:200])
    check(text.endswith("\r\x1b[K"), "... erased at the end (%r)" % text[-40:])
    check("reading %s/a.jsonl" % d not in text,
          "... and no per-trace line from the workers (%r)" % text[:200])


def case_caches(exe, tmp):
    """What caching allocators hold at exit is their own line, not a leak, in text, JSON and
    html alike: PyTorch (a libc10_cuda frame), CuPy's pool (Cython frames named ...MemoryPool...
    in cupy/cuda/memory, or that module without symbols), XLA's BFC allocator (a
    tsl::BFCAllocator frame, or the CUDA plugin without symbols). CuPy without its pool, XLA's
    `platform` allocator and a bare cudaMallocAsync never freed are leaks."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "stacks"))
    import make_trace  # noqa: E402  (objdump/readelf helpers)
    import shutil

    site = os.path.join(tmp, "site-packages")
    cupy = os.path.join(site, "cupy", "cuda", "memory.cpython-312-x86_64-linux-gnu.so")
    xla = os.path.join(site, "jax_plugins", "xla_cuda12", "xla_cuda_plugin.so")
    for src, dst in ((FAKES["cupy"], cupy), (FAKES["xla"], xla)):
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(src, dst)
    gone = "/nonexistent/gmt-test/site-packages/"
    base = {"cupy": 0x7f5000000000, "xla": 0x7f6000000000, "scupy": 0x7f7000000000,
            "sxla": 0x7f8000000000, "torch": 0x7f9000000000, "app": 0x7fa000000000}
    seg = [[0, 1 << 20]]
    mods = [make_trace.module(cupy, base["cupy"]), make_trace.module(xla, base["xla"]),
            {"path": gone + "cupy/cuda/memory.cpython-311-x86_64-linux-gnu.so",
             "base": "0x%x" % base["scupy"], "build_id": "", "segments": seg},
            {"path": gone + "jax_plugins/xla_cuda13/xla_cuda_plugin.so",
             "base": "0x%x" % base["sxla"], "build_id": "", "segments": seg},
            {"path": "/nonexistent/gmt-test/torch/lib/libc10_cuda.so",
             "base": "0x%x" % base["torch"], "build_id": "", "segments": seg},
            {"path": "/nonexistent/gmt-test/libapp.so", "base": "0x%x" % base["app"],
             "build_id": "", "segments": seg}]
    tc, tx = make_trace.calls(cupy), make_trace.calls(xla)
    c = lambda fn, to: base["cupy"] + make_trace.return_after(tc, fn, to)
    x = lambda fn, to: base["xla"] + make_trace.return_after(tx, fn, to)
    app = lambda k: base["app"] + 0x100 * k
    init, mal = "__pyx_pw_4cupy_4cuda_6memory_6Memory_1__init__", "__pyx_f_4cupy_4cuda_6memory__malloc"
    try_m = "__pyx_f_4cupy_4cuda_6memory_22SingleDeviceMemoryPool__try_malloc"
    pool_m, alloc_m = "__pyx_pw_4cupy_4cuda_6memory_10MemoryPool_5malloc", "__pyx_pw_4cupy_4cuda_6memory_3alloc"
    dev = "_ZN15stream_executor3gpu9GpuDriver14DeviceAllocateEm"
    bfc = "_ZN3tsl12BFCAllocator11AllocateRawEmm"
    plat = "_ZN15stream_executor29StreamExecutorMemoryAllocator8AllocateEim"
    # stack: (frames, bytes, api, kind, cache, cached)
    stacks = {
        1: ([base["torch"] + 0x1234, app(1)], 64 * MiB, "cudaMalloc", "device", "pytorch", True),
        2: ([c(init, "fake_cuda_malloc"), c(mal, init), c(try_m, mal), c(pool_m, try_m), app(2)],
            32 * MiB, "cudaMalloc", "device", "cupy", True),
        3: ([c(init, "fake_cuda_malloc"), c(mal, init), c(alloc_m, mal), app(3)],
            1 * MiB, "cudaMalloc", "device", None, False),
        4: ([base["scupy"] + 0x100, base["scupy"] + 0x200, app(4)], 16 * MiB, "cudaMalloc",
            "device", "cupy", True),
        5: ([x(dev, "fake_cu_mem_alloc"), x(bfc, dev), app(5)], 48 * MiB, "cuMemAlloc_v2",
            "device", "xla", True),
        6: ([x(dev, "fake_cu_mem_alloc"), x(plat, dev), app(6)], 2 * MiB, "cuMemAlloc_v2",
            "device", None, False),
        7: ([base["sxla"] + 0x100, app(7)], 8 * MiB, "cuMemAlloc_v2", "device", "xla", True),
        8: ([app(8)], 4 * MiB, "cudaMalloc", "device", None, False),
        9: ([app(9)], 512 << 10, "cudaMallocAsync", "pool", "cuda_pool", False),
    }
    t = Trace()
    t.lines.append({"type": "modules", "seq": 0, "modules": mods})
    ptr = 0x7e0000000000
    for sid, (frames, size, api, kind, _, _) in stacks.items():
        t.stacks.add(sid)
        t.lines.append({"type": "stack", "id": sid, "frames": ["0x%x" % a for a in frames]})
        ptr += 1 << 30
        t.alloc(ptr, size, stack=sid, api=api, kind=kind)
    t.alloc(0x7d0000000000, MiB, stack=2)  # freed: neither leaked nor cached
    t.free(0x7d0000000000)
    path = os.path.join(tmp, "caches.jsonl")
    t.write(path)

    doc = report(exe, [path])
    s = doc["summary"]
    own = sum(v[1] for v in stacks.values() if not v[5])
    held = {"pytorch": 64 * MiB, "cupy": 48 * MiB, "xla": 56 * MiB}
    got = {e["stack"]: (e.get("cache"), e.get("cached")) for e in doc["leaks"]}
    for sid, v in stacks.items():
        check(got.get(sid) == (v[4], v[5]),
              "stack %d: cache %s, cached %s (%s)" % (sid, v[4], v[5], got.get(sid)))
    check(s["leaked_bytes"] == own and s["leaked_allocations"] == 4 and s["leak_sites"] == 4,
          "summary: leaked_bytes %d is the program's own 7.5 MiB in 4 (%s, %s, %s)"
          % (own, s["leaked_bytes"], s["leaked_allocations"], s["leak_sites"]))
    by = s.get("cached_at_exit") or {}
    check(s.get("cached_at_exit_bytes") == sum(held.values()) and
          s.get("cached_at_exit_allocations") == 5,
          "summary: cached_at_exit_bytes is the caches' 168 MiB in 5 (%s)" % s.get("cached_at_exit_bytes"))
    check({k: v["bytes"] for k, v in by.items()} == held and by["cupy"]["allocations"] == 2,
          "summary.cached_at_exit per allocator: %s" % by)
    sites_cached = sum(g.get("cached_bytes", 0) for g in doc["leak_sites"])
    check(sites_cached == sum(held.values()) and
          all(st.get("cached") == stacks[st["stack"]][5] for g in doc["leak_sites"] for st in g["stacks"]),
          "leak_sites[]: cached_bytes and stacks[].cached agree with leaks[]")

    text = report(exe, [path], fmt="text")
    check("leaked at exit: 7.5 MiB in 4 allocations" in text,
          "text: the leak line counts the program's own memory only", )
    check("held by caching allocators at exit" in text and
          "168.0 MiB in 5 allocations" in text and
          "(PyTorch 64.0 MiB, CuPy 48.0 MiB, JAX/XLA 56.0 MiB)" in text,
          "text: the caches' line, per allocator")
    leak_part = text.split("leaked at exit:")[1].split("held by caching allocators")[0]
    check("64.0 MiB" not in leak_part and leak_part.split("\n")[1].startswith("  4.0 MiB"),
          "text: the cache's sites are not listed as leaks; the largest own one first")

    p = subprocess.run([exe, "report", "--format", "html", path], capture_output=True, text=True,
                       timeout=120)
    m = re.search(r'<script type="application/json" id="gmt-data">(.*?)</script>', p.stdout, re.S)
    check(p.returncode == 0 and m and json.loads(m.group(1))["summary"] == s,
          "html: the page's data has the same summary (its cards read leaked_bytes and "
          "cached_at_exit)")
    rc = subprocess.run([exe, "check", "--max-leaked-bytes", str(own), path],
                        capture_output=True, text=True, timeout=120)
    check(rc.returncode == 0 and "held by a caching allocator at exit, not counted: PyTorch 64.0 "
          "MiB (67108864 bytes), CuPy 48.0 MiB (50331648 bytes), JAX/XLA 56.0 MiB" in rc.stdout,
          "check: the leak gate leaves the caches out and says so (%d: %s)" % (rc.returncode, rc.stdout))
    rc = subprocess.run([exe, "check", "--max-leaked-bytes", str(own), "--count-cached", path],
                        capture_output=True, text=True, timeout=120)
    check(rc.returncode == 1 and "leaked 175.5 MiB" in rc.stdout,
          "check --count-cached counts them (%d: %s)" % (rc.returncode, rc.stdout))

    # An OOM while JAX's preallocation holds the device: explained with JAX's advice, not torch's.
    for name, sid, want in (("xla", 7, "XLA_PYTHON_CLIENT_MEM_FRACTION"),
                            ("cupy", 4, "free_all_blocks()")):
        t = Trace()
        t.lines.append({"type": "modules", "seq": 0, "modules": mods})
        t.stacks.add(sid)
        t.lines.append({"type": "stack", "id": sid, "frames": ["0x%x" % a for a in stacks[sid][0]]})
        t.alloc(0x7e0000000000, 60 * GiB, stack=sid)
        t.fail(4 * GiB, free=1 * GiB, total=80 * GiB)
        p2 = os.path.join(tmp, "oom-%s.jsonl" % name)
        t.write(p2)
        o = report(exe, [p2])["oom"][0]
        check(o["cause"] == "held_by_cache" and want in o["explanation"] and
              "torch" not in o["explanation"],
              "%s OOM: held_by_cache, with %s's advice (%s)" % (name, name, o["explanation"]))


def case_probes(exe, tmp):
    """A capability probe (cuMemCreate refused with 800, the same call succeeding later: PyTorch's
    expandable segments on the H200) and an out-of-memory failure the allocator's retry recovered
    from are listed and explained, but are not failed allocations: not in failed_allocations,
    failed_sites[] or `check --max-failed`. A refusal never followed by a success, and an OOM
    whose retry failed too, count."""
    def vmm(t, seq_api, size, ptr=0, result=0, kind="vmm_physical", **extra):
        t.stack(3)
        seq, ts = t._next(1000)
        ev = {"type": "event", "seq": seq, "ts": ts, "tid": 1, "op": "alloc", "api": seq_api,
              "kind": kind, "device": 0, "ptr": "0x%x" % ptr, "size": size, "result": result,
              "stack": 3}
        ev.update(extra)
        t.lines.append(ev)

    def expandable(t):  # the sequence seen with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
        vmm(t, "cuMemCreate", 20 * MiB, result=800)
        vmm(t, "cuMemAddressReserve", 90 * GiB, ptr=0x7f4000000000, kind="vmm_reserve")
        vmm(t, "cuMemCreate", 20 * MiB, ptr=0x5a0001)
        vmm(t, "cuMemMap", 20 * MiB, ptr=0x7f4000000000, kind="vmm_mapped", handle="0x5a0001")

    def refused(t):  # 800 and the call never succeeds: the program did not get its memory
        t.alloc(0x7f0000000000, MiB)
        vmm(t, "cuMemCreate", 20 * MiB, result=800)

    def retried(t):  # PyTorch: cudaMalloc fails, it frees cached blocks, the retry succeeds
        t.alloc(0x7f0000000000, 30 * GiB)
        t.alloc(0x7f1000000000, 30 * GiB)
        t.fail(40 * GiB, free=20 * GiB, total=80 * GiB)
        t.free(0x7f0000000000)
        t.free(0x7f1000000000)
        t.alloc(0x7f2000000000, 40 * GiB, stack=9)

    def real_oom(t):  # the retry fails as well: torch.OutOfMemoryError, both count
        t.alloc(0x7f0000000000, 30 * GiB)
        t.fail(60 * GiB, free=20 * GiB, total=80 * GiB)
        t.free(0x7f0000000000)
        t.fail(60 * GiB, free=50 * GiB, total=80 * GiB)

    def other_first(t):  # something else is allocated before the same size succeeds: counts
        t.fail(60 * GiB, free=20 * GiB, total=80 * GiB)
        t.alloc(0x7f0000000000, MiB)
        t.alloc(0x7f1000000000, 60 * GiB, stack=9)

    cases = [("expandable", expandable, ["probe"], 0), ("refused", refused, ["failure"], 1),
             ("retried", retried, ["recovered"], 0), ("real_oom", real_oom, ["failure"] * 2, 2),
             ("other_first", other_first, ["failure"], 1)]
    for name, build, classes, counted in cases:
        t = Trace()
        build(t)
        path = os.path.join(tmp, "probe-%s.jsonl" % name)
        t.write(path)
        rep = report(exe, [path])
        s = rep["summary"]
        got = [f.get("class") for f in rep["failed"]]
        check(got == classes and [o.get("class") for o in rep["oom"]] == classes,
              "%s: failed[].class %s (%s)" % (name, classes, got))
        check(s["failed_allocations"] == counted and
              s.get("probe_failures") == classes.count("probe") and
              s.get("recovered_failures") == classes.count("recovered"),
              "%s: summary counts %d failed allocations (%s, %s, %s)"
              % (name, counted, s["failed_allocations"], s.get("probe_failures"),
                 s.get("recovered_failures")))
        check(sum(g["failures"] for g in rep["failed_sites"]) == counted,
              "%s: failed_sites[] holds the %d that count" % (name, counted))
        rc = subprocess.run([exe, "check", "--max-failed", "0", path], capture_output=True,
                            text=True, timeout=120)
        check(rc.returncode == (1 if counted else 0),
              "%s: check --max-failed 0 exits %d (%d: %s)" % (name, 1 if counted else 0,
                                                              rc.returncode, rc.stdout))
        o = rep["oom"][0]
        if name == "expandable":
            check(o["cause"] == "probe" and "capability probe" in o["explanation"] and
                  "800" in o["explanation"] and "out-of-memory" not in o["explanation"].lower(),
                  "expandable: explained as a probe, not an OOM (%s)" % o["explanation"])
            check("not counted: 1 capability probe" in rc.stdout,
                  "expandable: the gate says what it did not count (%s)" % rc.stdout)
            text = report(exe, [path], fmt="text")
            check("[probe]" in text and "capability probe: cuMemCreate 20.0 MiB" in text and
                  "\nfailed allocations:" not in text,
                  "expandable: the text lists the probe apart, no failed allocation")
        if name == "refused":
            check(o["cause"] == "not_out_of_memory", "refused: not_out_of_memory (%s)" % o["cause"])
        if name == "retried":
            check(o["cause"] != "probe" and "retried" in o["explanation"],
                  "retried: an OOM cause, and the retry said (%s: %s)" % (o["cause"], o["explanation"]))
            text = report(exe, [path], fmt="text")
            check(", recovered]" in text and "recovered by a retry: cudaMalloc 40.0 GiB" in text,
                  "retried: the text marks it recovered")


CASES = {"growth": case_growth, "growth-sites": case_growth_sites,
         "growth-ranges": case_growth_ranges, "growth-auto": case_growth_auto,
         "callers": case_callers,
         "growth-snapshots": case_growth_snapshots, "oom": case_oom,
         "range": case_range, "timeline": case_timeline, "fragmentation": case_fragmentation,
         "fragmentation-kinds": case_fragmentation_kinds,
         "ranks": case_ranks, "ranges": case_ranges, "order": case_order, "progress": case_progress,
         "caches": case_caches, "probes": case_probes}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--fake-cupy", help="tests/analysis/fake_cupy.c built (case caches)")
    ap.add_argument("--fake-xla", help="tests/analysis/fake_xla.c built (case caches)")
    ap.add_argument("case", choices=sorted(CASES) + ["all"])
    a = ap.parse_args()
    FAKES.update(cupy=a.fake_cupy, xla=a.fake_xla)
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
