#!/usr/bin/env python3
"""Check suite: `gpumemtrace check` (CI gates) and `gpumemtrace diff` (meson suite 'check').

    run_check.py --exe BUILD/tools/gpumemtrace --golden tests/golden/traces \\
                 --victim BUILD/tests/stacks/victim_stacks GROUP

GROUP: usage, gates, suppress, growth, baseline, junit, diff, cached, tensors, integrity,
memory, lost.

Traces are written here, small and synthetic (docs/trace-format.md). Their stacks are real return
addresses of tests/stacks/victim_stacks (built -O0 -g; tests/stacks/make_trace.py finds them), so
the report names real functions and lines: `b (victim_stacks.c:29)`, `a`, `main`. Expected values
come from the trace as written here, never from the tool.
"""
import argparse
import copy
import datetime
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "stacks"))
import make_trace  # noqa: E402  (tests/stacks: objdump/readelf helpers)

MiB = 1 << 20
failures = []
PRELOAD = {}  # --preload-victim, --tracer, --simcuda: for running the real tracer (integrity)


def check(cond, what, detail=""):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)
        if detail:
            print("  " + detail.replace("\n", "\n  "))


class Tool:
    def __init__(self, exe, tmp):
        self.exe = exe
        self.tmp = tmp

    def run(self, *args):
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        p = subprocess.run([self.exe] + list(args), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60, env=env)
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")

    def path(self, name):
        return os.path.join(self.tmp, name)

    def report(self, trace):
        rc, out, err = self.run("report", "--format", "json", trace)
        if rc != 0:
            raise SystemExit("report failed on %s: %s" % (trace, err))
        return json.loads(out)

    def write_json(self, name, doc):
        p = self.path(name)
        with open(p, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        return p

    def write_text(self, name, text):
        p = self.path(name)
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)
        return p


# --- Synthetic traces --------------------------------------------------------------------------

class Victim:
    """Stacks of victim_stacks: S_B = b -> a -> main (site b), S_A = a -> main (site a),
    S_MAIN = main (site main)."""
    S_B, S_A, S_MAIN = 1, 2, 3

    def __init__(self, exe):
        self.exe = os.path.abspath(exe)
        t = make_trace.calls(self.exe)
        ret_b = make_trace.return_after(t, "b", "lib_alloc_weights")
        ret_a = make_trace.return_after(t, "a", "b")
        ret_main = make_trace.return_after(t, "main", "a")
        base = make_trace.BASE_EXE
        self.module = make_trace.module(self.exe, base)
        self.stacks = {self.S_B: [base + ret_b, base + ret_a, base + ret_main],
                       self.S_A: [base + ret_a, base + ret_main],
                       self.S_MAIN: [base + ret_main]}
        self.lines = make_trace.markers(os.path.join(HERE, "..", "stacks", "victim_stacks.c"))


class Trace(make_trace.Trace):
    """A trace with the victim's modules and stacks; allocations by stack, markers."""

    def __init__(self, victim):
        super().__init__(["python3", "train.py"])
        self.modules([victim.module])
        for sid, frames in victim.stacks.items():
            self.stack(sid, frames)

    def alloc(self, stack, size, api="cudaMalloc", kind="device", device=0):
        ptr = self.event("alloc", stack, size)
        self.lines[-1].update({"api": api, "kind": kind, "device": device})
        return ptr

    def free(self, ptr, api="cudaFree", kind="device", device=0):
        self.event("free", 0, ptr=ptr)
        self.lines[-1].update({"api": api, "kind": kind, "device": device})

    def fail(self, stack, size):
        self.event("alloc", stack, size, result=2)

    def mark(self, label):
        self.seq += 1
        self.add({"type": "marker", "seq": self.seq, "ts": 1000000000 + 1000 * self.seq,
                  "tid": 4242, "label": label})


def leaky_trace(tool, victim, name, b_bytes=2 * MiB, a_bytes=MiB, main_bytes=4 * MiB):
    """b leaks b_bytes (two allocations), a leaks a_bytes, main holds main_bytes until the end
    (freed, through the driver API: cuMemAlloc_v2): peak = all three; leaked = b + a."""
    t = Trace(victim)
    t.alloc(Victim.S_B, b_bytes // 2)
    t.alloc(Victim.S_B, b_bytes - b_bytes // 2)
    if a_bytes:
        t.alloc(Victim.S_A, a_bytes)
    p = t.alloc(Victim.S_MAIN, main_bytes, api="cuMemAlloc_v2")
    t.free(p, api="cuMemFree_v2")
    path = tool.path(name)
    t.write(path)
    return path


def last_line(out):
    lines = [ln for ln in out.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


# --- Groups ------------------------------------------------------------------------------------

def group_usage(tool, victim, golden):
    basic = os.path.join(golden, "basic.jsonl")

    rc, out, err = tool.run("check", "--max-peak-bytes", "12QB", basic)
    check(rc == 2, "bad size: exit 2 (%d)" % rc)
    check("--max-peak-bytes" in err and "'12QB'" in err, "bad size: names option and value", err)
    rc, out, err = tool.run("check", "--max-peak-bytes", "x=1G", basic)
    check(rc == 2 and "'x'" in err, "bad device in DEV=N: exit 2, named", err)
    rc, out, err = tool.run("check", "--max-leaked-bytes", "-1", basic)
    check(rc == 2 and "'-1'" in err, "negative size refused", err)
    rc, out, err = tool.run("check", "--max-increase", "abc", "--baseline", basic, basic)
    check(rc == 2 and "--max-increase" in err and "'abc'" in err, "bad percentage refused", err)
    rc, out, err = tool.run("check", "--no-such-option", basic)
    check(rc == 2 and "--no-such-option" in err, "unknown option: exit 2", err)
    rc, out, err = tool.run("check", basic)
    check(rc == 2 and "no gate" in err, "no gate given: exit 2", err)
    rc, out, err = tool.run("check", "--max-leaked-bytes", "0")
    check(rc == 2 and "no trace" in err, "no trace given: exit 2", err)
    rc, out, err = tool.run("check", "--max-leaked-bytes", "0", tool.path("missing.jsonl"))
    check(rc == 3, "unreadable input: exit 3 (%d)" % rc, err)
    rc, out, err = tool.run("check", "--max-leaked-bytes", "0",
                            os.path.join(golden, "empty.jsonl"))
    check(rc == 3, "empty trace: exit 3 (%d)" % rc, err)
    rc, out, err = tool.run("check", "--help")
    check(rc == 0 and "--max-peak-bytes" in out and "Exit status" in out, "--help: exit 0")
    rc, out, err = tool.run("--help")
    check(rc == 0 and "check" in out and "diff" in out, "gpumemtrace --help lists check, diff")

    # A report of another version is refused, not misread.
    doc = tool.report(basic)
    doc["report_version"] = 99
    rc, out, err = tool.run("check", "--max-leaked-bytes", "0", tool.write_json("v99.json", doc))
    check(rc == 3 and "report_version 99" in err, "unknown report_version: exit 3", err)
    # A JSON report cannot be merged with other inputs.
    doc["report_version"] = 2
    rc, out, err = tool.run("check", "--max-leaked-bytes", "0", tool.write_json("r.json", doc),
                            basic)
    check(rc == 2 and "alone" in err, "JSON report with a trace: exit 2", err)

    # Sizes: basic.jsonl peaks at 3 MiB on device 0, 256 KiB (a pool) on device 1.
    for limit, want in [("3MiB", 0), ("3M", 0), ("3145728", 0), ("3145727", 1), ("3.1MB", 1),
                        ("0.003GiB", 0), ("3 MiB", 0), ("3mib", 0), ("4KB", 1)]:
        rc, out, err = tool.run("check", "--max-peak-bytes", limit, basic)
        check(rc == want, "--max-peak-bytes %s: exit %d (%d)" % (limit, want, rc), out + err)
    rc, out, err = tool.run("check", "--max-peak-bytes", "0=3M", "--max-peak-bytes", "1=100K",
                            basic)
    check(rc == 1 and "FAIL max-peak-bytes device 1" in out and
          "PASS max-peak-bytes device 0" in out, "per-device limits", out)
    rc, out, err = tool.run("check", "--max-peak-bytes", "1K", "--max-peak-bytes", "0=3M",
                            basic)
    check("PASS max-peak-bytes device 0" in out and "FAIL max-peak-bytes device 1" in out,
          "DEV= overrides the plain limit for its device", out)

    # diff usage
    rc, out, err = tool.run("diff", basic)
    check(rc == 2 and "BASE and NEW" in err, "diff with one argument: exit 2", err)
    rc, out, err = tool.run("diff", "--format", "xml", basic, basic)
    check(rc == 2 and "'xml'" in err, "diff --format xml: exit 2", err)
    rc, out, err = tool.run("diff", basic, tool.path("missing"))
    check(rc == 3 and "NEW" in err, "diff with NEW unreadable: exit 3", err)


def group_gates(tool, victim, golden):
    path = leaky_trace(tool, victim, "leaky.jsonl")
    b_line = victim.lines["b-weights"]

    rc, out, err = tool.run("check", "--max-leaked-bytes", "0", path)
    check(rc == 1, "leak over 0 bytes: exit 1 (%d)" % rc, out + err)
    check("FAIL max-leaked-bytes: leaked 3.0 MiB (3145728 bytes) > limit 0 B" in out,
          "leak gate states human and exact bytes", out)
    site_b = re.search(r"2\.0 MiB \(2097152 bytes\) in 2 allocations never freed: cudaMalloc "
                       r"device at b \(\S*victim_stacks\.c:%d\)" % b_line, out)
    check(site_b is not None, "violation names site b (victim_stacks.c:%d)" % b_line, out)
    check(re.search(r"1\.0 MiB \(1048576 bytes\) in 1 allocation never freed: .* at a \(", out)
          is not None, "violation names site a", out)
    check(out.find(" at b (") < out.find(" at a ("), "largest leak listed first", out)
    check(last_line(out) == "gpumemtrace check: FAIL: 1 of 2 gates", "summary line", out)
    check(out.startswith("PASS complete-traces: 1 process exited normally, no event dropped\n"),
          "the complete-traces gate comes first and passes", out)

    rc, out, err = tool.run("check", "--max-leaked-bytes", "3MiB", "--max-leaked-allocs", "3",
                            path)
    check(rc == 0 and last_line(out) == "gpumemtrace check: PASS (3 gates)",
          "at the limits: pass", out)
    rc, out, err = tool.run("check", "--max-leaked-allocs", "2", path)
    check(rc == 1 and "leaked allocations 3 > limit 2" in out, "allocation count gate", out)

    # Peak: 7 MiB on device 0, held by main (4 MiB), b, a.
    rc, out, err = tool.run("check", "--max-peak-bytes", "0=6MiB", path)
    check(rc == 1 and "FAIL max-peak-bytes device 0: peak held 7.0 MiB (7340032 bytes) > limit "
          "6.0 MiB (6291456 bytes)" in out, "peak gate fails with sizes", out)
    check(re.search(r"4\.0 MiB \(4194304 bytes\) in 1 allocation live at the peak: "
                    r"cuMemAlloc_v2 device at main \(\S*victim_stacks\.c:%d\)" % victim.lines["main-a"], out)
          is not None, "peak violation names the largest holder, main", out)
    rc, out, err = tool.run("check", "-q", "--max-peak-bytes", "7MiB", "--max-leaked-bytes",
                            "0", path)
    check(rc == 1 and "PASS" not in out.replace("PASS (", "") and "FAIL max-leaked" in out,
          "--quiet prints only the failed gates", out)

    # Failed allocations
    t = Trace(victim)
    t.alloc(Victim.S_A, MiB)
    t.fail(Victim.S_B, 80 << 30)
    failing = tool.path("failing.jsonl")
    t.write(failing)
    rc, out, err = tool.run("check", "--max-failed", "0", failing)
    check(rc == 1 and "failed allocations 1 > limit 0" in out and
          "1 failed call requesting 80.0 GiB (85899345920 bytes) on device 0" in out and
          " at b (" in out, "failed-allocation gate names size and site", out)
    rc, out, err = tool.run("check", "--max-failed", "1", failing)
    check(rc == 0, "one failure allowed: pass", out)

    # A directory of traces: the peak gate covers every process.
    d = tool.path("dir")
    os.mkdir(d)
    leaky_trace(tool, victim, "dir/p0.jsonl", main_bytes=MiB)
    leaky_trace(tool, victim, "dir/p1.jsonl", main_bytes=8 * MiB)
    rc, out, err = tool.run("check", "--max-peak-bytes", "5MiB", d)
    check(rc == 1 and "process 1 (pid 4242) held 11.0 MiB" in out and
          "process 0 (pid" not in out, "directory: the process over the limit is named", out)

    # A JSON report is read like its traces.
    doc = tool.report(path)
    rc2, out2, _ = tool.run("check", "--max-leaked-bytes", "0", "--max-peak-bytes", "6M",
                            tool.write_json("leaky.json", doc))
    rc, out, _ = tool.run("check", "--max-leaked-bytes", "0", "--max-peak-bytes", "6M", path)
    check(rc2 == rc == 1 and out2 == out, "a saved JSON report gives the same result", out2)


def write_supp(tool, name, lines):
    return tool.write_text(name, "\n".join(lines) + "\n")


def group_suppress(tool, victim, golden):
    path = leaky_trace(tool, victim, "leaky.jsonl")

    supp = write_supp(tool, "b.supp", ["# known: b's weights are kept for the process's life",
                                       "", "leak:^b$", "leak:no_such_function",
                                       "peak:cuMemAlloc", "growth:b"])
    rc, out, err = tool.run("check", "--max-leaked-bytes", "1MiB", "--suppressions", supp, path)
    check(rc == 0, "leak:^b$ takes b's 2 MiB out: 1 MiB left passes (%d)" % rc, out + err)
    check("(2.0 MiB (2097152 bytes) suppressed)" in out, "suppressed bytes stated", out)
    check(re.search(r"Suppressions used:\n.*\n\s+1\s+2\.0 MiB \(2097152 bytes\)\s+leak:\^b\$ "
                    r"\(\S*b\.supp:3\)", out) is not None, "used suppression listed with hits",
          out)
    check(re.search(r"Suppressions never matched:\n(  .*\n)*  leak:no_such_function "
                    r"\(\S*b\.supp:4\)", out) is not None, "unused suppression listed", out)
    rc, out, err = tool.run("check", "--max-leaked-bytes", "0", "--suppressions", supp, path)
    check(rc == 1 and " at a (" in out and " at b (" not in out,
          "what is left still fails, and only a is named", out)

    # Anywhere in any frame: "^a$" is an outer frame of b's stack too, so both go.
    supp_a = write_supp(tool, "a.supp", ["leak:^a$"])
    rc, out, err = tool.run("check", "--max-leaked-bytes", "0", "--suppressions", supp_a, path)
    check(rc == 0, "leak:^a$ matches every stack through a (%d)" % rc, out)
    # Globs on the source file, and the api.
    for pat, want in [("victim_st?cks.c", 0), ("*/victim_*.c$", 0), ("^victim_stacks.c", 1),
                      ("cudaMalloc", 0), ("^cudaMallocHost$", 1), ("victim_stacks", 0)]:
        s = write_supp(tool, "g.supp", ["leak:" + pat])
        rc, out, err = tool.run("check", "--max-leaked-bytes", "0", "--suppressions", s, path)
        check(rc == want, "leak:%s -> exit %d (%d)" % (pat, want, rc), out)

    # peak: main's 4 MiB out of the peak (7 MiB -> 3 MiB).
    rc, out, err = tool.run("check", "--max-peak-bytes", "3MiB", "--suppressions", supp, path)
    check(rc == 0 and "(4.0 MiB (4194304 bytes) suppressed)" in out,
          "peak:cuMemAlloc takes main's bytes out of the peak", out)
    check(re.search(r"\n\s+1\s+4\.0 MiB \(4194304 bytes\)\s+peak:cuMemAlloc ", out) is not None,
          "peak suppression: 1 hit, 4 MiB", out)
    # Every stack runs through main: a pattern on an outer frame takes them all.
    s = write_supp(tool, "m.supp", ["peak:^main$"])
    rc, out, err = tool.run("check", "--max-peak-bytes", "0", "--suppressions", s, path)
    check(rc == 0 and re.search(r"\n\s+3\s+7\.0 MiB", out) is not None,
          "peak:^main$ matches the outer frame of every stack", out)
    # leak suppressions do not touch the peak gate.
    rc, out, err = tool.run("check", "--max-peak-bytes", "3MiB", "--suppressions", supp_a, path)
    check(rc == 1, "a leak: suppression leaves the peak alone", out)

    # Bad files: FILE:LINE and exit 2.
    bad = write_supp(tool, "bad.supp", ["leak:ok", "# fine", "lek:typo"])
    rc, out, err = tool.run("check", "--max-leaked-bytes", "0", "--suppressions", bad, path)
    check(rc == 2 and re.search(r"bad\.supp:3: unknown suppression type 'lek'", err),
          "bad type: FILE:LINE error, exit 2", err)
    bad = write_supp(tool, "bad2.supp", ["", "just a pattern"])
    rc, out, err = tool.run("check", "--max-leaked-bytes", "0", "--suppressions", bad, path)
    check(rc == 2 and "bad2.supp:2: expected TYPE:PATTERN" in err, "no type: FILE:LINE", err)
    bad = write_supp(tool, "bad3.supp", ["peak:   "])
    rc, out, err = tool.run("check", "--max-leaked-bytes", "0", "--suppressions", bad, path)
    check(rc == 2 and "bad3.supp:1: empty pattern" in err, "empty pattern: FILE:LINE", err)
    rc, out, err = tool.run("check", "--max-leaked-bytes", "0", "--suppressions",
                            tool.path("nope.supp"), path)
    check(rc == 2 and "nope.supp: cannot read" in err, "missing suppression file: exit 2", err)


def growth_doc(tool, victim):
    """A JSON report of a leaky trace with growth_sites[] entries set by hand (docs/report-json.md,
    "growth_sites[]"): b grew 3 MiB, a 512 KiB; and growth[] as a report before growth_sites[]
    had it (one entry per stack)."""
    doc = tool.report(leaky_trace(tool, victim, "leaky.jsonl"))
    by_fn = {}
    for s in doc["leak_sites"]:
        by_fn[s["site"]["function"]] = s

    def entry(fn, first, last):
        s = by_fn[fn]
        return {"process": 0, "pid": 4242, "api": "cudaMalloc", "driver": None,
                "kind": "device", "site": s["site"], "stack": s["stacks"][0]["stack"],
                "cache": None, "basis": "markers", "samples": 4, "first_bytes": first,
                "last_bytes": last, "growth_bytes": last - first, "rises": 3, "falls": 0,
                "first_label": "iter 0", "last_label": "iter 3"}

    def site(e):
        g = {k: v for k, v in e.items() if k not in ("stack", "rises", "falls")}
        g.update(min_rises=e["rises"], max_rises=e["rises"],
                 stacks=[{k: e[k] for k in ("stack", "first_bytes", "last_bytes", "growth_bytes",
                                            "rises", "falls")}])
        return g
    doc["growth"] = [entry("b", MiB, 4 * MiB), entry("a", 0, 512 << 10)]
    doc["growth_sites"] = [site(e) for e in doc["growth"]]
    return doc


def group_growth(tool, victim, golden):
    path = tool.write_json("growth.json", growth_doc(tool, victim))
    rc, out, err = tool.run("check", "--max-growth-bytes", "1MiB", path)
    check(rc == 1 and "FAIL max-growth-bytes: 1 call site grew by more than 1.0 MiB" in out,
          "growth gate fails on one site", out)
    check(re.search(r"grew 3\.0 MiB \(3145728 bytes\) \(1\.0 MiB \(1048576 bytes\) -> 4\.0 MiB "
                    r"\(4194304 bytes\)\) over 4 markers 'iter 0' to 'iter 3', rose 3 times, "
                    r"fell 0: cudaMalloc device at b \(", out) is not None,
          "growth violation names site b, sizes and markers", out)
    check(" at a (" not in out, "the site under the limit is not listed", out)
    rc, out, err = tool.run("check", "--max-growth-bytes", "3MiB", path)
    check(rc == 0 and "largest growth 3.0 MiB" in out, "growth at the limit passes", out)
    supp = write_supp(tool, "growth.supp", ["growth:^b$"])
    rc, out, err = tool.run("check", "--max-growth-bytes", "100K", "--suppressions", supp, path)
    check(rc == 1 and " at a (" in out and " at b (" not in out,
          "growth:^b$ takes b out; a (512 KiB) still fails 100K", out)

    # One line reached through two stacks: gated on the sum (2 + 1.5 MiB > 3 MiB), both named.
    doc = growth_doc(tool, victim)
    b = doc["growth_sites"][0]
    second = dict(b["stacks"][0], stack=b["stacks"][0]["stack"] + 1000, first_bytes=0,
                  last_bytes=1536 << 10, growth_bytes=1536 << 10, rises=2)
    b["stacks"][0].update(first_bytes=MiB, last_bytes=3 * MiB, growth_bytes=2 * MiB)
    b["stacks"].append(second)
    b.update(first_bytes=MiB, last_bytes=(3 * MiB) + (1536 << 10), growth_bytes=(2 * MiB) + (1536 << 10),
             min_rises=2)
    rc, out, err = tool.run("check", "--max-growth-bytes", "3MiB", tool.write_json("two.json", doc))
    check(rc == 1 and "grew 3.5 MiB" in out and "rose 2-3 times (2 stacks)" in out,
          "two stacks of one line: gated on their sum", out)

    # Four stacks of 2^62 bytes each (a forged or damaged report): their sum does not wrap to a
    # small number that passes; it is held at the most a count can say
    doc = growth_doc(tool, victim)
    b = doc["growth_sites"][0]
    huge = 1 << 62
    b["stacks"] = [dict(b["stacks"][0], stack=b["stacks"][0]["stack"] + k, first_bytes=0,
                        last_bytes=huge, growth_bytes=huge) for k in range(4)]
    rc, out, err = tool.run("check", "--max-growth-bytes", "1MiB", tool.write_json("huge.json", doc))
    check(rc == 1 and "FAIL max-growth-bytes" in out and " at b (" in out,
          "growth summed over stacks past 2^64 still fails the gate (%d)" % rc, out + err)

    # A report before growth_sites[]: its growth[] entries, one stack each, are gated.
    doc = growth_doc(tool, victim)
    del doc["growth_sites"]
    rc, out, err = tool.run("check", "--max-growth-bytes", "1MiB", tool.write_json("older.json", doc))
    check(rc == 1 and "over 4 markers 'iter 0' to 'iter 3', rose 3 times, fell 0: cudaMalloc device at b (" in out
          and " at a (" not in out, "an older report: growth[] gated", out)

    # A report without growth[] (an older report): nothing to gate, passes.
    del doc["growth"]
    rc, out, err = tool.run("check", "--max-growth-bytes", "0", tool.write_json("old.json", doc))
    check(rc == 0 and "no growth[]" in out, "no growth[] key: the gate passes and says so", out)

    # From a trace: b grows 1 MiB per iteration across markers, a allocates and frees.
    t = Trace(victim)
    for i in range(5):
        t.mark("iter %d" % i)
        t.alloc(Victim.S_B, MiB)
        t.free(t.alloc(Victim.S_A, 8 * MiB))
    t.mark("end")
    trace = tool.path("grows.jsonl")
    t.write(trace)
    if "growth" not in tool.report(trace):
        print("skip: this build's report has no growth[] yet (the trace part of this group)")
        return
    rc, out, err = tool.run("check", "--max-growth-bytes", "1MiB", trace)
    check(rc == 1 and " at b (" in out and " at a (" not in out,
          "trace with markers: the growing site b fails the gate", out)


def group_baseline(tool, victim, golden):
    base = leaky_trace(tool, victim, "base.jsonl", b_bytes=2 * MiB, main_bytes=4 * MiB)
    same = leaky_trace(tool, victim, "same.jsonl", b_bytes=2 * MiB, main_bytes=4 * MiB)
    # peak 7 -> 7.5 MiB (+7.1%), leaked 3 -> 3.5 MiB (+16.7%)
    worse = leaky_trace(tool, victim, "worse.jsonl", b_bytes=(5 * MiB) // 2, main_bytes=4 * MiB)

    rc, out, err = tool.run("check", "--baseline", base, same)
    check(rc == 0 and last_line(out) == "gpumemtrace check: PASS (3 gates)",
          "same run as the baseline passes", out)
    rc, out, err = tool.run("check", "--baseline", base, worse)
    check(rc == 1, "leak +16.7%% over the default 10%%: exit 1 (%d)" % rc, out)
    check("FAIL baseline leaked-bytes: 3.0 MiB (3145728 bytes) -> 3.5 MiB (3670016 bytes), "
          "+16.7% (limit +10%)" in out, "baseline states before, after, percent", out)
    check("PASS baseline peak process 0 device 0: 7.0 MiB (7340032 bytes) -> 7.5 MiB "
          "(7864320 bytes), +7.1% (limit +10%)" in out, "peak within 10% passes", out)
    rc, out, err = tool.run("check", "--baseline", base, "--max-increase", "5", worse)
    check(rc == 1 and "FAIL baseline peak process 0 device 0" in out, "--max-increase 5", out)
    rc, out, err = tool.run("check", "--baseline", base, "--max-increase", "20%", worse)
    check(rc == 0, "--max-increase 20%: pass", out)
    # Improvements never fail.
    rc, out, err = tool.run("check", "--baseline", worse, "--max-increase", "0", base)
    check(rc == 0, "a smaller run passes with --max-increase 0", out)
    # The baseline as a JSON report.
    bj = tool.write_json("base.json", tool.report(base))
    rc2, out2, _ = tool.run("check", "--baseline", bj, worse)
    check(rc2 == 1 and "FAIL baseline leaked-bytes" in out2, "baseline from a JSON report", out2)
    # Nothing leaked before, something now: no percentage, fails.
    clean = leaky_trace(tool, victim, "clean.jsonl", b_bytes=0, a_bytes=0)
    rc, out, err = tool.run("check", "--baseline", clean, base)
    check(rc == 1 and "FAIL baseline leaked-bytes: 0 B -> 3.0 MiB (3145728 bytes), up from "
          "nothing" in out, "leak from zero fails", out)
    rc, out, err = tool.run("check", "--baseline", tool.path("nope"), base)
    check(rc == 3 and "baseline" in err, "unreadable baseline: exit 3", err)


SCHEMAS = os.path.join(HERE, "schemas")


def junit_valid(xml, what):
    """The JUnit file validates against the strict Ant JUnit schema and Jenkins' (xmllint,
    schemas/: written from their published rules: required attributes and their types, the
    order of a suite's elements)."""
    for xsd in ("junit-ant-strict.xsd", "junit-jenkins.xsd"):
        try:
            p = subprocess.run(["xmllint", "--noout", "--schema", os.path.join(SCHEMAS, xsd), xml],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        except FileNotFoundError:
            check(False, "xmllint is installed (scripts/setup installs libxml2-utils)")
            return
        check(p.returncode == 0, "JUnit %s: valid against %s" % (what, xsd),
              p.stdout.decode("utf-8", "replace"))


def group_junit(tool, victim, golden):
    path = leaky_trace(tool, victim, "leaky.jsonl")
    xml = tool.path("gmt.xml")
    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0, tzinfo=None)
    rc, out, err = tool.run("check", "--max-leaked-bytes", "0", "--max-leaked-allocs", "10",
                            "--max-peak-bytes", "1MiB", "--max-failed", "0", "--junit", xml,
                            path)
    after = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    check(rc == 1, "junit run: exit 1", out)
    junit_valid(xml, "with failures")
    suite = ET.parse(xml).getroot().find("testsuite")
    try:
        stamp = datetime.datetime.strptime(suite.get("timestamp") or "", "%Y-%m-%dT%H:%M:%S")
        check(before <= stamp <= after, "timestamp is when the check ran, in UTC (%s)" % stamp)
    except ValueError:
        check(False, "timestamp is YYYY-MM-DDTHH:MM:SS (%r)" % suite.get("timestamp"))
    host = re.sub(r"[\x00-\x20\x7f]", "?", socket.gethostname()) or "localhost"
    check(suite.get("hostname") == host, "hostname is this machine's (%r, %r)"
          % (suite.get("hostname"), host))
    try:
        t = float(suite.get("time"))
        check(0 <= t < 60, "time is the check's seconds (%s)" % suite.get("time"))
    except (TypeError, ValueError):
        check(False, "time is a number (%r)" % suite.get("time"))
    # The schemas have teeth: what they forbid is refused (an element out of order, a missing
    # hostname, a non-numeric time).
    good = open(xml, encoding="utf-8").read()
    for name, bad in [("order", good.replace("<system-err></system-err>", "").replace(
                           "<system-out>", "<system-err></system-err><system-out>")),
                      ("hostname", re.sub(r' hostname="[^"]*"', "", good)),
                      ("time", re.sub(r' time="[0-9.]*" timestamp', ' time="soon" timestamp', good))]:
        p = subprocess.run(["xmllint", "--noout", "--schema",
                            os.path.join(SCHEMAS, "junit-ant-strict.xsd"),
                            tool.write_text("bad-%s.xml" % name, bad)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        check(p.returncode != 0, "the strict Ant schema refuses a bad %s" % name)
    rc2, out2, _ = tool.run("check", "--max-leaked-bytes", "1G", "--junit", tool.path("pass.xml"),
                            path)
    check(rc2 == 0, "passing junit run: exit 0", out2)
    junit_valid(tool.path("pass.xml"), "all passed")
    root = ET.parse(xml).getroot()
    suites = root.findall("testsuite") if root.tag == "testsuites" else [root]
    cases = [c for s in suites for c in s.findall("testcase")]
    failed = [c for c in cases if c.find("failure") is not None]
    names = [c.get("name") for c in cases]
    check(names == ["complete-traces", "max-leaked-bytes", "max-leaked-allocs",
                    "max-peak-bytes device 0", "max-failed"],
          "one testcase per gate, named: %s" % names)
    check([c.get("name") for c in failed] == ["max-leaked-bytes", "max-peak-bytes device 0"],
          "failures: the two failed gates")
    check(suites[0].get("tests") == "5" and suites[0].get("failures") == "2",
          "testsuite counts (tests=%s failures=%s)" % (suites[0].get("tests"),
                                                        suites[0].get("failures")))
    check(last_line(out) == "gpumemtrace check: FAIL: 2 of 5 gates", "summary line agrees", out)
    msg = failed[0].find("failure").get("message")
    check("leaked 3.0 MiB (3145728 bytes)" in msg, "failure message", msg)
    check(" at b (" in failed[0].find("failure").text, "failure text names the site")

    # Escaping: a site whose name is full of XML.
    doc = tool.report(path)
    doc["leak_sites"][0]["site"]["function"] = "operator<<(A&, \"B\" 'c') ]]> \x01"
    rc, out, err = tool.run("check", "--max-leaked-bytes", "0", "--junit", xml,
                            tool.write_json("xml.json", doc))
    try:
        root = ET.parse(xml).getroot()
        text = "".join(root.itertext())
        check("operator<<(A&, \"B\" 'c') ]]>" in text, "XML special characters round-trip")
    except ET.ParseError as e:
        check(False, "JUnit XML with special characters parses", str(e))
    junit_valid(xml, "with XML's special characters")
    rc, out, err = tool.run("check", "--max-leaked-bytes", "0", "--junit",
                            tool.path("no/such/dir/x.xml"), path)
    check(rc == 2 and "cannot write" in err, "unwritable --junit file: exit 2", err)


def group_diff(tool, victim, golden):
    base = leaky_trace(tool, victim, "base.jsonl", b_bytes=MiB, a_bytes=0, main_bytes=4 * MiB)
    # b +2 MiB (leaked and at peak), a new +1 MiB, main unchanged
    t = Trace(victim)
    t.alloc(Victim.S_B, 3 * MiB)
    t.alloc(Victim.S_A, MiB)
    t.free(t.alloc(Victim.S_MAIN, 4 * MiB, api="cuMemAlloc_v2"), api="cuMemFree_v2")
    new = tool.path("new.jsonl")
    t.write(new)

    rc, out, err = tool.run("diff", base, new)
    check(rc == 0, "diff: exit 0 (%d)" % rc, err)
    check("peak held            5.0 MiB (5242880 bytes) -> 8.0 MiB (8388608 bytes): +3.0 MiB "
          "(+3145728 bytes), +60.0%" in out, "diff totals: peak held", out)
    check(re.search(r"leaked\s+1\.0 MiB \(1048576 bytes\) -> 4\.0 MiB \(4194304 bytes\): "
                    r"\+3\.0 MiB", out) is not None, "diff totals: leaked", out)
    ib, ia = out.find("cudaMalloc device at b ("), out.find("cudaMalloc device at a (")
    check(0 <= ib < ia, "b (+2 MiB) listed before a (+1 MiB)", out)
    check("at main (" not in out, "the unchanged site is not listed", out)
    check("(2 of 2 changed; 1 unchanged)" in out, "counts of changed sites", out)

    rc, out, err = tool.run("diff", "--format", "json", "--top", "1", base, new)
    d = json.loads(out)
    check(rc == 0 and d["totals"]["peak_held_bytes"] == {"before": 5 * MiB, "after": 8 * MiB,
                                                         "delta": 3 * MiB},
          "json totals", out)
    check(d["totals"]["failed_allocations"]["delta"] == 0, "json failed delta")
    check(len(d["sites"]) == 1 and d["sites"][0]["site"]["function"] == "b" and
          d["sites"][0]["peak"]["delta"] == 2 * MiB and
          d["sites"][0]["leaked"] == {"before": MiB, "after": 3 * MiB, "delta": 2 * MiB},
          "--top 1: the largest change, b", out)
    check(d["sites_changed"] == 2 and d["sites_compared"] == 3, "json site counts", out)
    # Reversed: shrinking is listed by absolute change too.
    rc, out, err = tool.run("diff", "--format", "json", new, base)
    d = json.loads(out)
    check([s["site"]["function"] for s in d["sites"]] == ["b", "a"] and
          d["sites"][0]["peak"]["delta"] == -2 * MiB, "reversed: largest absolute change first")
    # A JSON report on one side.
    rc, out, err = tool.run("diff", "--format", "json",
                            tool.write_json("base.json", tool.report(base)), new)
    check(rc == 0 and json.loads(out)["sites"][0]["site"]["function"] == "b",
          "diff of a JSON report against a trace")
    rc, out, err = tool.run("diff", base, base)
    check(rc == 0 and "No call site changed" in out, "diff of a run with itself", out)


def group_cached(tool, victim, golden):
    """Memory live at exit that PyTorch's cache or cuBLAS holds is not a leak by default."""
    t = Trace(victim)
    torch_base, cublas_base = 0x7f1000000000, 0x7f2000000000
    seg = [[0, 1 << 20]]
    t.modules([victim.module,
               {"path": "/opt/torch/lib/libc10_cuda.so", "base": "0x%x" % torch_base,
                "build_id": "", "segments": seg},
               {"path": "/opt/nvidia/lib/libcublas.so.13", "base": "0x%x" % cublas_base,
                "build_id": "", "segments": seg},
               {"path": "/opt/torch/lib/libtorch_cuda.so", "base": "0x%x" % (torch_base + (1 << 24)),
                "build_id": "", "segments": seg}])
    main_ret = victim.stacks[Victim.S_MAIN][0]
    t.stack(10, [torch_base + 0x1234, main_ret])      # CUDACachingAllocator::malloc <- main
    t.stack(11, [cublas_base + 0x5678, main_ret])     # cuBLAS's own workspace <- main
    t.stack(12, [torch_base + (1 << 24) + 0x99, main_ret])  # the pinned host cache (.item())
    t.alloc(10, 20 * MiB)
    t.alloc(11, 8 * MiB)
    t.alloc(12, 4, api="cudaHostAlloc", kind="pinned")
    t.alloc(Victim.S_B, MiB)
    path = tool.path("cached.jsonl")
    t.write(path)
    rc, out, err = tool.run("check", "--max-leaked-bytes", "1MiB", path)
    check(rc == 0, "the cache's 20 MiB and cuBLAS's 8 MiB are not leaks: b's 1 MiB passes (%d)" % rc,
          out + err)
    check("20.0 MiB (20971524 bytes) held by a caching allocator at exit, not counted" in out,
          "the uncounted cache is stated", out)
    check("8.0 MiB (8388608 bytes) held by CUDA libraries for their handles at exit, not "
          "counted: cuBLAS 8.0 MiB (8388608 bytes); --count-libraries counts it" in out,
          "cuBLAS's memory is stated as its own, not a suppression", out)
    check("suppression" not in out, "no built-in suppression is listed", out)
    rc, out, err = tool.run("check", "--max-leaked-bytes", "1MiB", "--count-cached", path)
    check(rc == 1 and "20.0 MiB (20971520 bytes) in 1 allocation never freed" in out, "--count-cached counts the cache (%d)" % rc, out)
    for opt in ("--count-libraries", "--no-default-suppressions"):
        rc, out, err = tool.run("check", "--max-leaked-bytes", "1MiB", opt, path)
        check(rc == 1 and "9.0 MiB (9437184 bytes)" in out,
              "%s counts cuBLAS's memory: 9 MiB leaked (%d)" % (opt, rc), out)
    # One verdict: the text report, the JSON summary and run's summary say the same.
    doc = tool.report(path)
    summ = doc["summary"]
    check(summ["leaked_bytes"] == MiB and summ["library_at_exit_bytes"] == 8 * MiB and
          summ["library_at_exit"]["cublas"] == {"bytes": 8 * MiB, "allocations": 1} and
          summ["cached_at_exit_bytes"] == 20 * MiB + 4,
          "JSON: 1 MiB leaked, cuBLAS's 8 MiB held for its handles, the caches apart (%s)" % summ)
    lib_sites = [g for g in doc["leak_sites"] if g["library_bytes"]]
    check(len(lib_sites) == 1 and lib_sites[0]["stacks"][0]["library"] == "cublas" and
          lib_sites[0]["library_bytes"] == 8 * MiB, "JSON: the leak site says cublas", lib_sites)
    rc, out, err = tool.run("report", path)
    check(rc == 0 and "leaked at exit: 1.0 MiB" in out and
          "held by CUDA libraries for their handles at exit" in out and "(cuBLAS 8.0 MiB" in out,
          "text: 1 MiB leaked, cuBLAS's 8 MiB on its own line", out)
    # A report from before the `library` keys (its leaked_* held cuBLAS's bytes): the same
    # verdicts, told from the frames' modules by the same rule.
    olddoc = copy.deepcopy(doc)
    for k in ("library_at_exit_bytes", "library_at_exit_allocations", "library_at_exit"):
        del olddoc["summary"][k]
    olddoc["summary"]["leaked_bytes"] += 8 * MiB
    olddoc["summary"]["leaked_allocations"] += 1
    for g in olddoc["leak_sites"]:
        g.pop("library_bytes")
        g.pop("library_allocations")
        for st in g["stacks"]:
            st.pop("library")
    old = tool.write_json("old.json", olddoc)
    rc, out, err = tool.run("check", "--max-leaked-bytes", "1MiB", old)
    check(rc == 0 and "held by CUDA libraries" in out,
          "an older report: cuBLAS's memory not counted either (%d)" % rc, out + err)
    rc, out, err = tool.run("check", "--max-leaked-bytes", "1MiB", "--count-libraries", old)
    check(rc == 1 and "9.0 MiB (9437184 bytes)" in out,
          "an older report with --count-libraries: 9 MiB (%d)" % rc, out + err)

    # A report written by report_version 2 (a saved baseline): leaked_bytes held the cache then,
    # and the stacks had only `cache`. It is read as this version: the same gates, the same figures.
    check(doc["report_version"] == 4, "the report is version 4 (%r)" % doc["report_version"])
    # Version 3 lacked only keys added since (docs/report-json.md): read as it is.
    v3doc = copy.deepcopy(doc)
    v3doc["report_version"] = 3
    for p in v3doc["processes"]:
        p.pop("tensors", None)
    v3 = tool.write_json("v3.json", v3doc)
    rc3, out3, err3 = tool.run("check", "--max-leaked-bytes", "1MiB", "--max-tensor-leak", "0",
                               v3)
    rc4, out4, _ = tool.run("check", "--max-leaked-bytes", "1MiB", "--max-tensor-leak", "0", path)
    check(rc3 == 0 and out3 == out4 and "SKIP max-tensor-leak: " in out3,
          "a version 3 report: the same gates as its traces (%d)" % rc3, out3 + err3)
    rc, out, err = tool.run("diff", "--format", "json", v3, path)
    check(rc == 0 and json.loads(out)["sites_changed"] == 0,
          "diff of a version 3 report and its traces: nothing changed (%d)" % rc, out + err)
    s = doc["summary"]
    check(s["leaked_bytes"] == MiB and s["cached_at_exit_bytes"] == 20 * MiB + 4,
          "summary: leaked_bytes leaves the cache out (%d), cached_at_exit_bytes has it (%d)"
          % (s["leaked_bytes"], s["cached_at_exit_bytes"]))
    old = copy.deepcopy(doc)
    old["report_version"] = 2
    for k in ("cached_at_exit_bytes", "cached_at_exit_allocations", "cached_at_exit"):
        del old["summary"][k]
    old["summary"]["leaked_bytes"] += 20 * MiB + 4
    old["summary"]["leaked_allocations"] += 2
    old["summary"]["leak_sites"] += 2
    for e in old["leaks"]:
        del e["cached"]
    for g in old["leak_sites"]:
        del g["cached_bytes"], g["cached_allocations"]
        for st in g["stacks"]:
            del st["cached"]
    v2 = tool.write_json("v2.json", old)
    rc, out, err = tool.run("check", "--max-leaked-bytes", "1MiB", v2)
    check(rc == 0 and "20.0 MiB (20971524 bytes) held by a caching allocator at exit" in out,
          "a version 2 report: the cache is still not a leak (%d)" % rc, out + err)
    rc, out, err = tool.run("check", "--baseline", v2, "--max-increase", "0", path)
    check(rc == 0 and "baseline leaked-bytes: 1.0 MiB (1048576 bytes) -> 1.0 MiB" in out,
          "a version 2 baseline's leaked bytes compare without its cache (%d)" % rc, out + err)
    rc, out, err = tool.run("diff", "--format", "json", v2, path)
    check(rc == 0 and json.loads(out)["totals"]["leaked_bytes"]["delta"] == 0 and
          json.loads(out)["sites_changed"] == 0,
          "diff of a version 2 report and its traces: nothing changed (%d)" % rc, out + err)
    old["report_version"] = 1
    rc, out, err = tool.run("check", "--max-leaked-bytes", "1MiB", tool.write_json("v1.json", old))
    check(rc == 3 and "report_version 1 is not supported" in err, "version 1 is refused (%d)" % rc, err)


def traced(tool, name, mode, env_extra=None, signal_to=None):
    """Run tests/preload's victim in MODE on the simulated runtime under the real tracer, into
    a directory of its own; with SIGNAL_TO, send it that signal once it says it is ready (its
    events are on disk by then). Returns the directory."""
    import signal
    import time
    out = tool.path(name)
    os.makedirs(out)
    env = dict(os.environ)
    env.update({"LD_LIBRARY_PATH": PRELOAD["simcuda"], "LD_PRELOAD": PRELOAD["tracer"],
                "GPUMEMTRACE_OUTPUT_DIR": out, "SIMCUDA_MEM_BYTES": "1G",
                "SIMCUDA_DEVICES": "1"})
    env.update(env_extra or {})
    if signal_to is None:
        p = subprocess.run([PRELOAD["victim"], mode], env=env, capture_output=True, timeout=300)
        check(p.returncode == 0, "victim %s exits 0 (%d)" % (mode, p.returncode))
        return out
    p = subprocess.Popen([PRELOAD["victim"], mode], env=env, stdout=subprocess.PIPE, text=True)
    for line in p.stdout:
        if line.strip() == "ready":
            break
    time.sleep(0.4)  # > GPUMEMTRACE_FLUSH_MS
    p.send_signal(signal_to)
    p.wait(timeout=30)
    check(p.returncode == -signal_to, "victim %s died by signal %d (%s)" % (mode, signal_to, p.returncode))
    return out


def group_integrity(tool, victim, golden):
    """A process that did not exit normally, or a trace that dropped events, fails `check` by
    default, naming the file and the reason (complete-traces), whatever the other gates say;
    --allow-incomplete and --allow-drops let them pass. Real traces of tests/preload's victim:
    `hang` killed by SIGKILL (no trailer, 1 MiB live: SIGSEGV and the other signals a program
    can catch end the trace first, tests/preload `signals`), `_exit` (whole: the tracer's _exit
    ends the trace first), `burst` into a 1024-slot ring."""
    import signal
    clean = traced(tool, "clean", "plain")
    segv = traced(tool, "segv", "hang", signal_to=signal.SIGKILL)
    quick = traced(tool, "quick", "_exit")
    drops = traced(tool, "drops", "burst", {"GPUMEMTRACE_RING_SLOTS": "1024"})

    rc, out, err = tool.run("check", "--max-leaked-bytes", "1MiB", clean)
    check(rc == 0 and "PASS complete-traces: 1 process exited normally, no event dropped" in out,
          "a clean run passes complete-traces (%d)" % rc, out + err)

    rc, out, err = tool.run("check", "--max-leaked-bytes", "0", segv)
    f = [ln for ln in out.splitlines() if "did not exit normally (no trailer" in ln]
    check(rc == 1 and "FAIL complete-traces: 1 of 1 process did not exit normally" in out,
          "a crashed process fails check by default (%d)" % rc, out + err)
    check(len(f) == 1 and os.path.join(segv, "gpumemtrace.") in f[0] and
          "with 1.0 MiB (1048576 bytes) live: its leaks are unknown" in f[0],
          "it names the file, the reason and what was live", out)
    check("PASS max-leaked-bytes: leaked 0 B <= limit 0 B (a lower bound: 1 process did not exit "
          "normally, its leaks unknown; 1.0 MiB (1048576 bytes) live when its trace ended)" in out,
          "the leak gate says its 0 B is a lower bound", out)
    rc, out, err = tool.run("check", "--max-leaked-bytes", "0", "--allow-incomplete", segv)
    check(rc == 0 and "PASS complete-traces: 1 of 1 process did not exit normally (allowed)" in out
          and "(allowed: --allow-incomplete)" in out,
          "--allow-incomplete lets it pass, still named (%d)" % rc, out + err)
    # _exit runs no exit handler, but the tracer's _exit ends the trace first (capture/ends.c):
    # its trace is whole, and the gate says so
    rc, out, err = tool.run("check", "--max-failed", "0", quick)
    check(rc == 0 and "PASS complete-traces: 1 process exited normally, no event dropped" in out,
          "a process ended by _exit has a whole trace: complete-traces passes (%d)" % rc, out + err)

    rc, out, err = tool.run("check", "--max-failed", "0", drops)
    m = re.search(r"\): (\d+) events dropped \(the tracer's ring buffer was full", out)
    check(rc == 1 and m and "FAIL complete-traces: 1 trace dropped %s events" % m.group(1) in out,
          "a trace with dropped events fails check by default (%d)" % rc, out + err)
    rc, out, err = tool.run("check", "--max-failed", "0", "--allow-drops", drops)
    check(rc == 0 and "(allowed: --allow-drops)" in out, "--allow-drops lets it pass (%d)" % rc, out)

    # An empty trace file beside a whole one (a process ended before its tracer wrote a line):
    # the gates see one process of two, so complete-traces fails, the reader names the file
    beside = tool.path("empty-beside")
    shutil.copytree(clean, beside)
    empty = os.path.join(beside, "gpumemtrace.host.4242.jsonl")
    open(empty, "w").close()
    rc, out, err = tool.run("check", "--max-leaked-bytes", "1MiB", beside)
    check(rc == 1 and "FAIL complete-traces: 1 trace file could not be read" in out and
          "the process it stands for is in no gate" in out and
          "%s: empty file, not a trace" % empty in err,
          "an empty trace in the directory fails complete-traces, the file named (%d)" % rc,
          out + err)
    rc, out, err = tool.run("check", "--max-leaked-bytes", "1MiB", "--allow-incomplete", beside)
    check(rc == 0 and "PASS complete-traces: 1 trace file could not be read (allowed)" in out,
          "--allow-incomplete lets it pass, still said (%d)" % rc, out + err)
    rc, out, err = tool.run("check", "--max-failed", "0", "--allow-incomplete", drops)
    check(rc == 1, "--allow-incomplete does not allow drops (%d)" % rc, out)

    # Drops that were only reservation readings (the trailer's dropped_readings) lost no
    # allocation or free: the leak gate is exact, complete-traces still fails and says what was
    # lost; every output says the same. A clean run's trace with its trailer as such a run ends.
    plain = traced(tool, "clean-plain", "plain", {"GPUMEMTRACE_COMPRESS": "none"})

    def with_trailer(name, dropped, readings):
        src = [os.path.join(plain, f) for f in os.listdir(plain) if f.endswith(".jsonl")][0]
        with open(src, encoding="utf-8") as f:
            lines = f.read().splitlines()
        t = json.loads(lines[-1])
        check(t.get("type") == "trailer", "the clean trace ends with its trailer", lines[-1])
        t["dropped"], t["dropped_readings"] = dropped, readings
        lines[-1] = json.dumps(t)
        d = tool.path(name)
        os.makedirs(d)
        with open(os.path.join(d, os.path.basename(src)), "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        return d

    only = with_trailer("readings-only", 3, 3)
    rc, out, err = tool.run("check", "--max-leaked-bytes", "1MiB", only)
    check(rc == 1 and "FAIL complete-traces: 1 trace dropped 3 events" in out and
          "all of them reservation readings: its allocations and frees are all there" in out,
          "dropped readings alone still fail complete-traces, named as readings (%d)" % rc, out + err)
    check("PASS max-leaked-bytes" in out and "not exact" not in out,
          "the leak gate is exact when only readings were dropped", out)
    rc, out, err = tool.run("report", only)
    check("warning: 3 reservation readings were dropped by the tracer (its ring buffer was full): "
          "every allocation and free is there" in out and "are incomplete" not in out,
          "the text report says the same", out)
    doc = tool.report(only)
    check(doc["summary"]["dropped"] == 3 and doc["summary"]["dropped_readings"] == 3 and
          doc["processes"][0]["dropped_readings"] == 3, "the JSON report has the count",
          json.dumps(doc["summary"])[:400])
    mixed = with_trailer("readings-mixed", 5, 2)
    rc, out, err = tool.run("check", "--max-leaked-bytes", "1MiB", mixed)
    check(rc == 1 and "5 events dropped" in out and "(2 of them reservation readings): its figures "
          "are not exact" in out and "(not exact: 3 events dropped)" in out,
          "mixed drops: the leak gate counts the 3 that may have been calls (%d)" % rc, out)
    rc, out, err = tool.run("report", mixed)
    check("warning: 5 events were dropped by the tracer (its ring buffer was full) (2 of them "
          "reservation readings): the numbers below are incomplete" in out,
          "the text report names both counts", out)

    # A saved JSON report gates the same.
    rep = tool.write_json("segv.json", tool.report(segv))
    rc, out, err = tool.run("check", "--max-leaked-bytes", "0", rep)
    check(rc == 1 and "FAIL complete-traces" in out, "from a JSON report: the same (%d)" % rc, out)

    # Several processes: only the one that died is named; JUnit says it too.
    both = tool.path("both")
    os.makedirs(both)
    for d in (clean, segv):
        for n in os.listdir(d):
            os.rename(os.path.join(d, n), os.path.join(both, n))
    xml = tool.path("integrity.xml")
    rc, out, err = tool.run("check", "--max-peak-bytes", "1GiB", "--junit", xml, both)
    check(rc == 1 and "FAIL complete-traces: 1 of 2 processes did not exit normally" in out and
          len([ln for ln in out.splitlines() if "did not exit normally (no trailer" in ln]) == 1,
          "of two processes, the one that died is named (%d)" % rc, out)
    case = [c for c in ET.parse(xml).getroot().iter("testcase") if c.get("name") == "complete-traces"]
    check(len(case) == 1 and case[0].find("failure") is not None and
          "did not exit normally" in case[0].find("failure").text,
          "JUnit: complete-traces is a failed testcase with the reason")


SEG = 0x7f0000000000


def tensor_trace(tool, victim, name, blocks=True, steps=4):
    """The PyTorch layer on one 20 MiB segment of device 0 (docs/trace-format.md, block lines):
    b keeps 1 MiB a step (live 1 -> `steps` MiB at the markers: growth steps-1 MiB; all of it
    live at the end), a's 2 MiB temporary at 10 MiB is freed each step; then main takes 1 MiB
    blocks at 12..17 MiB and frees every other one: free memory 4..12 (a's freed temporary and
    the first freed block merge with it), 14, 16, 18..19 MiB (9 + 1 + 1 + 2 = 13 MiB, the largest
    9 MiB: fragmentation 1 - 9/13 = 0.308 at the end).
    Without `blocks`, the same CUDA-level trace with no block lines."""
    t = Trace(victim)
    t.seq += 1
    t.add({"type": "torch", "seq": t.seq, "ts": 1000000000 + 1000 * t.seq, "version": "2.11.0",
           "backend": "native", "alloc_conf": "", "layer": "blocks"})
    t.event("alloc", Victim.S_MAIN, 20 * MiB, ptr=SEG)

    def block(action, ptr, size, stack=0):
        t.seq += 1
        rec = {"type": "block", "seq": t.seq, "ts": 1000000000 + 1000 * t.seq, "tid": 4242,
               "action": action, "device": 0, "ptr": "0x%x" % ptr, "size": size,
               "stream": "0x0", "pool": [0, 0]}
        if stack:
            rec["stack"] = stack
        t.add(rec)

    if blocks:
        block("segment_alloc", SEG, 20 * MiB)
    for step in range(steps):
        if blocks:
            block("alloc", SEG + step * MiB, MiB, Victim.S_B)
            block("alloc", SEG + 10 * MiB, 2 * MiB, Victim.S_A)
            block("free_requested", SEG + 10 * MiB, 2 * MiB)
            block("free_completed", SEG + 10 * MiB, 2 * MiB)
        t.mark("step %d" % step)
    if blocks:
        for i in range(6):
            block("alloc", SEG + (12 + i) * MiB, MiB, Victim.S_MAIN)
        for i in range(0, 6, 2):
            block("free_requested", SEG + (12 + i) * MiB, MiB)
            block("free_completed", SEG + (12 + i) * MiB, MiB)
    t.mark("end")
    path = tool.path(name)
    t.write(path)
    return path


def group_tensors(tool, victim, golden):
    path = tensor_trace(tool, victim, "tensors.jsonl")
    b_line = victim.lines["b-weights"]
    live = 4 * MiB + 3 * MiB  # b's four blocks and main's three kept ones

    rc, out, err = tool.run("check", "--max-tensor-leak", str(live), path)
    check(rc == 0 and "PASS max-tensor-leak device 0: tensors still referenced at the end "
          "7.0 MiB (7340032 bytes) <= limit" in out, "tensor leak at the limit passes", out + err)
    check("(13.0 MiB (13631488 bytes) cached but free at the end, not counted" in out,
          "the cache's free memory is stated, not counted", out)
    rc, out, err = tool.run("check", "--max-tensor-leak", str(live - 1), path)
    check(rc == 1 and "FAIL max-tensor-leak device 0" in out, "one byte below: fails", out)
    check(re.search(r"4\.0 MiB \(4194304 bytes\) in 4 tensors still referenced: "
                    r"\S*victim_stacks\.c:%d in b\n" % b_line, out) is not None,
          "the leak names b's line (victim_stacks.c:%d)" % b_line, out)
    check(0 <= out.find(" in b\n") < out.find(" in main\n"), "largest tensor site first", out)
    rc, out, err = tool.run("check", "--max-tensor-leak", "1=0", "--max-tensor-leak",
                            "0=%d" % live, path)
    check(rc == 0 and "PASS max-tensor-leak device 0" in out and
          "PASS max-tensor-leak device 1: no process used the device at the tensor level" in out,
          "per-device limits", out)

    rc, out, err = tool.run("check", "--max-tensor-growth", "3MiB", path)
    check(rc == 0 and "largest growth of a tensor site 3.0 MiB (3145728 bytes) <= limit" in out,
          "tensor growth at the limit passes", out)
    rc, out, err = tool.run("check", "--max-tensor-growth", str(3 * MiB - 1), path)
    check(rc == 1 and re.search(r"grew 3\.0 MiB \(3145728 bytes\) \(1\.0 MiB \(1048576 bytes\) -> "
                                r"4\.0 MiB \(4194304 bytes\) over 5 samples.*: \S*victim_stacks"
                                r"\.c:%d in b" % b_line, out) is not None,
          "growing tensor site named, first -> last", out)

    rc, out, err = tool.run("check", "--max-fragmentation", "0.31", path)
    check(rc == 0 and "fragmentation of the cache at most 0.308 <= limit 0.310" in out,
          "fragmentation under the limit passes", out)
    rc, out, err = tool.run("check", "--max-fragmentation", "30%", path)
    check(rc == 1 and "13.0 MiB (13631488 bytes) reserved but unallocated, the largest free "
          "block 9.0 MiB (9437184 bytes)" in out, "fragmentation over 30%: fails with the pieces",
          out)
    for bad in ("1.5", "-0.1", "x", "0=abc"):
        rc, out, err = tool.run("check", "--max-fragmentation", bad, path)
        check(rc == 2 and "--max-fragmentation: invalid fraction" in err,
              "--max-fragmentation %s: exit 2, named" % bad, err)

    # Suppressions take tensor sites as they take others: a frame of the stack, the site line.
    supp = write_supp(tool, "t.supp", ["leak:^b$", "growth:victim_stacks.c"])
    rc, out, err = tool.run("check", "--max-tensor-leak", str(3 * MiB), "--max-tensor-growth", "0",
                            "--suppressions", supp, path)
    check(rc == 0 and "(4.0 MiB (4194304 bytes) suppressed)" in out and
          "(3.0 MiB (3145728 bytes) suppressed)" in out, "leak: and growth: take tensor sites",
          out)
    check(re.search(r"\n\s+1\s+4\.0 MiB \(4194304 bytes\)\s+leak:\^b\$", out) is not None,
          "the suppression counts what it took", out)

    # No block lines: skipped, saying so, not passed silently.
    plain = tensor_trace(tool, victim, "plain.jsonl", blocks=False)
    rc, out, err = tool.run("check", "--max-tensor-leak", "0", "--max-tensor-growth", "0",
                            "--max-fragmentation", "0", "--junit", tool.path("t.xml"), plain)
    check(rc == 0 and out.count("skipped: no tensor level (no block lines)") == 3 and
          "SKIP max-tensor-leak: " in out, "without block lines the three gates are skipped", out)
    check(last_line(out) == "gpumemtrace check: PASS (4 gates, 3 skipped)", "summary counts them",
          out)
    suite = ET.parse(tool.path("t.xml")).getroot().find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    sysout = suite.find("system-out").text or ""
    check(props.get("gpumemtrace.skipped") == "3" and
          sysout.count("skipped: no tensor level (no block lines)") == 3 and
          all(c.find("failure") is None for c in suite.findall("testcase")),
          "JUnit: the skipped gates do not fail, system-out says why (%r)" % props, sysout)
    junit_valid(tool.path("t.xml"), "with skipped gates")
    rc, out, err = tool.run("check", "--max-tensor-leak", "0", "--max-leaked-bytes", "0", plain,
                            path)
    check("note: 1 of 2 processes have no tensor level" in out and
          "max-tensor-leak device 0" in out, "a mix: the note, and the gate on the other", out)

    # diff at the tensor level: two more steps keep 2 MiB more of b's blocks, at the peak and at
    # exit; main's rows are the same; without block lines on both sides there is no tensor part.
    longer = tensor_trace(tool, victim, "tensors6.jsonl", steps=6)
    rc, out, err = tool.run("diff", "--format", "json", path, longer)
    d = json.loads(out) if rc == 0 else {}
    t = d.get("tensors") or {}
    rep4, rep6 = tool.report(path), tool.report(longer)
    peak4 = rep4["processes"][0]["tensors"]["peak"]["allocated"]
    peak6 = rep6["processes"][0]["tensors"]["peak"]["allocated"]
    check(rc == 0 and t.get("totals", {}).get("peak_allocated") ==
          {"before": peak4, "after": peak6, "delta": peak6 - peak4} and peak6 - peak4 == 2 * MiB,
          "diff: PyTorch's peak allocated, the reports' figures (%d -> %d)" % (peak4, peak6), out)
    check(t.get("totals", {}).get("live_at_exit") == {"before": live, "after": live + 2 * MiB,
                                                      "delta": 2 * MiB},
          "diff: tensors live at exit +2 MiB", out)
    sites = t.get("sites", [])
    check(t.get("sites_changed") == 1 and len(sites) == 1 and sites[0]["site"].endswith(" in b")
          and sites[0]["peak"]["delta"] == 2 * MiB and sites[0]["live_at_exit"]["delta"] == 2 * MiB,
          "diff: one tensor site changed, b's, +2 MiB at the peak and at exit", out)
    rc, out, err = tool.run("diff", path, longer)
    check(rc == 0 and "PyTorch tensors (the caching allocator's blocks):" in out and
          re.search(r"live at exit\s+7\.0 MiB \(7340032 bytes\) -> 9\.0 MiB", out) and
          re.search(r"\S*victim_stacks\.c:%d in b( <- [^\n]*)?\n\s+at peak" % b_line, out),
          "diff text: the tensor totals and b's row", out)
    # check --baseline gates PyTorch's peak allocated per process, when both sides have it
    rc, out, err = tool.run("check", "--baseline", path, longer)
    check(rc == 1 and "FAIL baseline tensor peak process 0: 10.0 MiB (10485760 bytes) -> 12.0 MiB "
          "(12582912 bytes), +20.0% (limit +10%)" in out, "baseline: the tensor peak +20% fails",
          out + err)
    rc, out, err = tool.run("check", "--baseline", path, "--max-increase", "25", longer)
    check("PASS baseline tensor peak process 0" in out, "... and passes under a 25% limit", out)
    rc, out, err = tool.run("check", "--baseline", plain, longer)
    check("note: process 0 has no tensor level in the baseline" in out and
          "baseline tensor peak" not in out, "a baseline without block lines: noted, no gate", out)
    rc, out, err = tool.run("diff", "--format", "json", plain, plain)
    check(rc == 0 and json.loads(out)["tensors"] is None, "no block lines: tensors null", out)
    rc, out, err = tool.run("diff", plain, plain)
    check(rc == 0 and "PyTorch tensors" not in out, "no block lines: no tensor part", out)

    # Real traces of the H200 (tests/fixtures/h200-torch2.11/tensors), torch's figures beside.
    fx = os.path.join(HERE, "..", "fixtures", "h200-torch2.11", "tensors")
    with open(os.path.join(fx, "growth.stats.json")) as f:
        marks = json.load(f)["markers"]
    grew = marks[-1]["allocated"] - marks[0]["allocated"]  # memory_allocated(), first to last
    g = os.path.join(fx, "growth.jsonl")
    rc, out, err = tool.run("check", "--max-tensor-growth", str(grew), g)
    check(rc == 0, "H200 growth: torch's growth %d passes at the limit" % grew, out + err)
    rc, out, err = tool.run("check", "--max-tensor-growth", str(grew - 1), g)
    check(rc == 1 and "tensor_answers.py:43 in run_growth" in out,
          "H200 growth: one byte below fails at run_growth's line", out)
    with open(os.path.join(fx, "frag.stats.json")) as f:
        at_oom = json.load(f)["at_oom"]
    unalloc = at_oom["reserved"] - at_oom["allocated"]
    rc, out, err = tool.run("diff", "--format", "json", os.path.join(fx, "blocks-default.jsonl"),
                            os.path.join(fx, "blocks-expandable.jsonl"))
    d = json.loads(out) if rc == 0 else {}
    check(rc == 0 and d["sites_changed"] > 0 and d["tensors"]["sites_changed"] == 0 and
          d["tensors"]["totals"]["peak_allocated"]["delta"] == 0,
          "H200 default vs expandable segments: the segments changed, the tensors did not", out)
    rc, out, err = tool.run("check", "--max-fragmentation", "0.9", os.path.join(fx, "frag.jsonl"))
    check(rc == 1 and "(%s (%d bytes) reserved but unallocated" % ("1.0 GiB", unalloc) in out,
          "H200 frag: fails with torch's reserved-but-unallocated bytes", out)


# --- Memory: check holds what report does ------------------------------------------------------

def many_stacks_trace(path, nstacks, depth, live):
    """@nstacks distinct stacks of @depth native frames, nearly every frame an address of its own
    (the worst case for memory per stack), one allocation at each stack in turn, at most @live of
    them live at once; the last @live are still live at exit (leaks). The modules' files do not
    exist: the cost measured is the analyzer's, not DWARF's."""
    base = 0x7f1400000000
    with open(path, "w") as f:
        f.write('{"type":"header","format":"gpumemtrace","version":1,"pid":4242,"ppid":1,'
                '"start_ts":1000,"argv":["python3","train.py"]}\n')
        f.write('{"type":"modules","seq":0,"modules":[{"path":"/nonexistent/gmt-test/'
                'libtorch_cuda.so","base":"0x%x","build_id":"","segments":[[0,%d]]}]}\n'
                % (base, 1 << 34))
        for s in range(1, nstacks + 1):
            frames = ",".join('"0x%x"' % (base + 0x1000 + (s * depth + i) * 16)
                              for i in range(depth))
            f.write('{"type":"stack","id":%d,"frames":[%s]}\n' % (s, frames))
        seq = 0
        for s in range(1, nstacks + 1):
            seq += 1
            f.write('{"type":"event","seq":%d,"ts":%d,"tid":1,"op":"alloc",'
                    '"api":"cudaMalloc","kind":"device","device":0,"ptr":"0x%x",'
                    '"size":4096,"result":0,"stack":%d}\n'
                    % (seq, 1000 + seq, 0x700000000000 + s * 4096, s))
            if s > live:
                seq += 1
                f.write('{"type":"event","seq":%d,"ts":%d,"tid":1,"op":"free","api":"cudaFree",'
                        '"kind":"device","device":0,"ptr":"0x%x","result":0,"stack":%d}\n'
                        % (seq, 1000 + seq, 0x700000000000 + (s - live) * 4096, s))
        f.write('{"type":"trailer","events":%d,"dropped":0,"reason":"exit"}\n' % seq)


def peak_rss(tool, *args):
    """(exit code, peak resident KiB) of one run of the tool (wait4's rusage of the child)."""
    env = dict(os.environ, DEBUGINFOD_URLS="")
    env.pop("LD_PRELOAD", None)
    p = subprocess.Popen([tool.exe] + list(args), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    return os.waitstatus_to_exitcode(status), ru.ru_maxrss


def group_memory(tool, victim, golden):
    """check on a trace of many distinct deep stacks in about the memory report needs. It built
    call_stacks[] whole for the suppressions, every frame of every stack a JSON object (20,000
    stacks of 64 frames: 935 MiB against report's 131 MiB, docs/performance.md); it now builds
    one stack's frames at a time, when a suppression looks at them."""
    trace = tool.path("many-stacks.jsonl")
    many_stacks_trace(trace, 20000, 64, 1000)
    supp = tool.write_text("none.supp", "leak:no_such_function\npeak:no_such_function\n")
    rc, report = peak_rss(tool, "report", trace)
    check(rc == 0, "report of 20,000 stacks: exit 0 (%d)" % rc)
    rc, chk = peak_rss(tool, "check", "--max-leaked-bytes", "0", "--max-peak-bytes", "1",
                       "--suppressions", supp, trace)
    check(rc == 1, "check: the gates fail (1,000 allocations leak) (%d)" % rc)
    print("  peak RSS: report %d KiB, check %d KiB" % (report, chk))
    check(chk <= 1.5 * report,
          "check's peak RSS %d KiB within 1.5 x report's %d KiB (x%.2f)"
          % (chk, report, chk / report))
    # the same gates on the report written as JSON: its stacks found by (process, stack)
    doc = tool.path("many-stacks.json")
    rc, out, err = tool.run("report", "--format", "json", "-o", doc, trace)
    check(rc == 0, "report --format json -o: exit 0", err)
    args = ["check", "--max-leaked-bytes", "0", "--suppressions", supp]
    rc1, out1, _ = tool.run(*(args + [trace]))
    rc2, out2, _ = tool.run(*(args + [doc]))
    check(rc1 == rc2 == 1 and out1 == out2 and "leaked 3.9 MiB" in out1,
          "check of the trace and of its JSON report agree", out1[-400:] + "\n---\n" + out2[-400:])
    every = tool.write_text("every.supp", "leak:libtorch_cuda.so\n")
    for what, path in (("trace", trace), ("JSON report", doc)):
        rc, out, _ = tool.run("check", "--max-leaked-bytes", "0", "--suppressions", every, path)
        check(rc == 0 and re.search(r"\s1000\s+3\.9 MiB \(4096000 bytes\)\s+leak:libtorch_cuda\.so",
                                    out),
              "%s: a suppression matching every stack's frames takes the 1,000 leaks" % what,
              out[-600:])


def lost_csv(tool, name, inputs):
    """`report --format csv -o NAME INPUTS`: its exit status and its lost_traces.csv (None: no
    such file)."""
    csv = tool.path(name)
    rc, _, _ = tool.run("report", "--format", "csv", "-o", csv, inputs)
    path = os.path.join(csv, "lost_traces.csv")
    if rc != 0 or not os.path.exists(path):
        return rc, None
    with open(path, encoding="utf-8", newline="") as f:
        return rc, f.read()


def group_lost(tool, victim, golden):
    """A trace file that yielded nothing (empty: its process ended before its tracer wrote a
    line) beside a whole one is a process none of the figures has: every output states it, and
    check fails complete-traces on it whatever it reads, the traces, their JSON report or their
    summaries (--allow-incomplete lets it pass, still named). Its name is HTML, to be escaped."""
    d = tool.path("lost")
    os.mkdir(d)
    leaky_trace(tool, victim, os.path.join("lost", "rank0.jsonl"))
    name = "rank1 <b>x<i>&amp;.jsonl"
    empty = os.path.join(d, name)
    open(empty, "w").close()
    # another program's JSON Lines: not a trace at all, only said on stderr (cli-trust)
    tool.write_text(os.path.join("lost", "other.jsonl"), '{"level": "info"}\n')
    why = "empty file, not a trace"
    lost = [{"file": empty, "reason": why}]

    rc, out, err = tool.run("report", "--format", "json", d)
    doc = json.loads(out) if rc == 0 else {}
    check(rc == 0 and doc.get("lost_traces") == lost,
          "report --format json lists the empty trace in lost_traces[], not the foreign file",
          "exit %d: %s\n%s" % (rc, doc.get("lost_traces"), err))
    check(len(doc.get("processes", [])) == 1, "the whole trace is the report's one process")
    rc, out, err = tool.run("report", "--format", "json", os.path.join(d, "rank0.jsonl"))
    check(rc == 0 and json.loads(out).get("lost_traces") == [],
          "a report with no lost trace has lost_traces []", out[-300:])

    rc, out, err = tool.run("report", d)
    check(rc == 0 and "warning: 1 trace file yielded nothing: its process is in none of the "
          "figures below\n  %s: %s\n" % (empty, why) in out and "other.jsonl" not in out,
          "the text report says it near the top, naming the file and why", out[:600])

    page = tool.path("lost.html")
    rc, out, err = tool.run("report", "--format", "html", "-o", page, d)
    with open(page, encoding="utf-8") as f:
        html = f.read()
    data = re.search(r'id="gmt-data">(.*?)</script>', html, re.S)
    check(rc == 0 and data and json.loads(data.group(1)).get("lost_traces") == lost and
          "<b>" not in data.group(1) and "\\u003cb\\u003ex" in data.group(1),
          "the html page carries it, its name escaped in the page's data", err)

    rc, table = lost_csv(tool, "lost-csv", d)
    check(rc == 0 and table == 'path,reason\r\n%s,"%s"\r\n' % (empty, why),
          "csv: lost_traces.csv names it", repr(table))

    # diff of the whole trace (BASE) against the directory (NEW): NEW's lost trace said
    rc, out, err = tool.run("diff", os.path.join(d, "rank0.jsonl"), d)
    check(rc == 0 and out.startswith("warning: NEW: 1 trace file yielded nothing: its process is "
                                      "in none of the figures below\n  %s: %s\n" % (empty, why)),
          "diff's text says NEW's lost trace first (%d)" % rc, out[:600] + err)
    rc, out, err = tool.run("diff", "--format", "json", os.path.join(d, "rank0.jsonl"), d)
    doc = json.loads(out) if rc == 0 else {}
    check(doc.get("base_lost_traces") == [] and doc.get("new_lost_traces") == lost,
          "diff's JSON has each side's lost traces (%d)" % rc, out[:600] + err)

    # check on the JSON report as on the directory: the same gate, the same words
    report = tool.path("lost.json")
    rc, out, err = tool.run("report", "--format", "json", "-o", report, d)
    named = "    %s: yielded nothing (%s): the process it stands for is in no gate" % (empty, why)
    rc1, out1, _ = tool.run("check", "--max-leaked-bytes", "1GiB", d)
    rc2, out2, _ = tool.run("check", "--max-leaked-bytes", "1GiB", report)
    check(rc2 == 1 and "FAIL complete-traces: 1 trace file could not be read" in out2 and
          named + "\n" in out2,
          "check on the JSON report fails complete-traces, naming the file (%d)" % rc2, out2)
    check(rc1 == rc2 and out1 == out2, "check on the directory and on its report agree",
          out1 + "\n---\n" + out2)
    rc, out, err = tool.run("check", "--max-leaked-bytes", "1GiB", "--allow-incomplete", report)
    check(rc == 0 and "PASS complete-traces: 1 trace file could not be read (allowed)" in out and
          named + " (allowed: --allow-incomplete)" in out,
          "--allow-incomplete lets the report pass, the file still named (%d)" % rc, out)
    # a report written before lost_traces: judged on what it has, saying what it cannot know
    with open(report, encoding="utf-8") as f:
        old = json.load(f)
    old.pop("lost_traces", None)
    rc, out, err = tool.run("check", "--max-leaked-bytes", "1GiB", tool.write_json("old.json", old))
    check(rc == 0 and "PASS complete-traces: 1 process exited normally" in out and
          "the input has no lost_traces (written before the key)" in out,
          "a report without the key passes as before, saying it cannot know (%d)" % rc, out)

    # summaries: the empty trace's says it is lost; check over the summaries fails on it
    rc, out, err = tool.run("summarize", d)
    lost_summary = os.path.join(d, name.replace(".jsonl", ".summary.json"))
    check(rc == 0 and lost_summary + "\n" in out and os.path.exists(lost_summary),
          "summarize writes the summary of the empty trace too (%d)" % rc, out + err)
    if os.path.exists(lost_summary):
        with open(lost_summary, encoding="utf-8") as f:
            s = json.load(f)
        check(s.get("kind") == "summary" and s.get("lost_traces") == lost and "process" not in s,
              "the summary carries the lost trace, and no figure", s)
    # the per-rank report over the summaries names it too, as the report of the traces does
    rc, out, err = tool.run("report", d)
    check(rc == 0 and "\nwarning: 1 trace file yielded nothing: its rank is in none of the figures "
          "below\n  %s: %s\n" % (empty, why) in out,
          "the per-rank report's text names the lost trace (%d)" % rc, out[:600] + err)
    rc, out, err = tool.run("report", "--format", "json", d)
    doc = json.loads(out) if rc == 0 else {}
    check(doc.get("kind") == "ranks" and doc.get("lost_traces") == lost and
          doc.get("left_out", 0) >= 1, "the per-rank JSON lists it in lost_traces[] (%d)" % rc,
          out[:600] + err)
    rc, table = lost_csv(tool, "lost-ranks-csv", d)
    check(rc == 0 and table == 'path,reason\r\n%s,"%s"\r\n' % (empty, why),
          "the per-rank csv has lost_traces.csv naming it", repr(table))
    rc, out, err = tool.run("diff", "--format", "json", os.path.join(d, "rank0.summary.json"), d)
    doc = json.loads(out) if rc == 0 else {}
    check(doc.get("base_lost_traces") == [] and doc.get("new_lost_traces") == lost,
          "diff over summaries has each side's lost traces (%d)" % rc, out[:600] + err)
    for what, args in (("the directory of summaries", [d]),
                       ("the summary files", [os.path.join(d, "rank0.summary.json"),
                                              lost_summary])):
        rc, out, err = tool.run("check", "--max-leaked-bytes", "1GiB", *args)
        check(rc == 1 and "FAIL complete-traces: 1 of 2 ranks fail: the trace %s" % empty in out
              and named in out and "PASS max-leaked-bytes: passes on every rank (1 of 2 ranks "
              "have it)" in out,
              "check over %s fails complete-traces on the lost trace (%d)" % (what, rc), out + err)
    rc, out, err = tool.run("check", "--max-leaked-bytes", "1GiB", "--allow-incomplete", d)
    check(rc == 0, "--allow-incomplete lets the summaries pass (%d)" % rc, out)
    # a trace without its summary beside it is summarized on the way, lost the same way
    if os.path.exists(lost_summary):
        os.unlink(lost_summary)
    rc, out, err = tool.run("check", "--max-leaked-bytes", "1GiB", d)
    check(rc == 1 and "FAIL complete-traces: 1 of 2 ranks fail: the trace %s" % empty in out,
          "check over a summary and an empty trace fails complete-traces (%d)" % rc, out + err)


def group_named(tool, victim, golden):
    """An input the user named that yields nothing though it may be a trace (missing, a format
    version this reader does not know, a summary that is not whole) is a lost input as an empty
    trace is: every output names it and check fails complete-traces on it, over traces, their
    report and summaries alike; a gate that cannot read what it was given does not pass. A file
    that is evidently another program's (as a glob names a metrics.jsonl beside the traces) is
    only said on stderr, named or not."""
    good = leaky_trace(tool, victim, "named-good.jsonl")
    missing = tool.path("named-missing.jsonl")
    version2 = os.path.join(golden, "version2.jsonl")
    foreign = tool.write_text("metrics.jsonl", '{"step": 1, "loss": 2.5}\n')
    cannot = "cannot open: No such file or directory"
    v2why = "trace format version 2 is not supported (this gpumemtrace reads version 1)"

    rc, out, err = tool.run("check", "--max-leaked-bytes", "1GiB", good, missing)
    check(rc == 1 and "FAIL complete-traces: 1 trace file could not be read" in out and
          "    %s: yielded nothing (%s): the process it stands for is in no gate" % (missing, cannot)
          in out, "check of a trace and a missing one fails complete-traces naming it (%d)" % rc,
          out + err)
    rc, out, err = tool.run("check", "--max-leaked-bytes", "1GiB", good, version2)
    check(rc == 1 and "%s: yielded nothing (%s)" % (version2, v2why) in out,
          "a trace of an unknown format version fails complete-traces (%d)" % rc, out + err)
    rc, out, err = tool.run("check", "--max-leaked-bytes", "1GiB", good, foreign)
    check(rc == 0 and "PASS complete-traces" in out and "not a gpumemtrace trace" in err,
          "another program's file named beside the trace is only said (%d)" % rc, out + err)
    rc, out, err = tool.run("check", "--max-leaked-bytes", "1GiB", "--allow-incomplete", good,
                            missing)
    check(rc == 0 and "(allowed: --allow-incomplete)" in out,
          "--allow-incomplete lets a missing input pass, still named (%d)" % rc, out)

    rc, out, err = tool.run("report", "--format", "json", good, missing, foreign, version2)
    doc = json.loads(out) if rc == 0 else {}
    check(rc == 0 and doc.get("lost_traces") == [{"file": missing, "reason": cannot},
                                                 {"file": version2, "reason": v2why}] and
          len(doc.get("processes", [])) == 1,
          "report's JSON lists the missing and the unreadable input, not the foreign one (%d)" % rc,
          "%s\n%s" % (doc.get("lost_traces"), err))
    report = tool.path("named.json")
    rc, out, err = tool.run("report", "--format", "json", "-o", report, good, missing)
    rc, out, err = tool.run("check", "--max-leaked-bytes", "1GiB", report)
    check(rc == 1 and "%s: yielded nothing (%s)" % (missing, cannot) in out,
          "check of that report fails complete-traces as the traces do (%d)" % rc, out + err)

    # summaries: a missing or damaged summary file is a rank whose story is lost
    rc, out, err = tool.run("summarize", good)
    summary = tool.path("named-good.summary.json")
    check(rc == 0 and os.path.exists(summary), "summarize the good trace (%d)" % rc, out + err)
    damaged = tool.write_text("named-damaged.summary.json", '{"kind": "summary", "summary_ver')
    for what, bad, why in (("a missing summary", tool.path("named-none.summary.json"), cannot),
                           ("a damaged summary", damaged,
                            "not a complete summary (truncated or damaged)"),
                           ("a missing trace beside a summary", missing, cannot)):
        rc, out, err = tool.run("check", "--max-leaked-bytes", "1GiB", summary, bad)
        kind = "summary" if bad.endswith(".summary.json") else "trace"
        check(rc == 1 and "FAIL complete-traces: 1 of 2 ranks fail: the %s %s" % (kind, bad) in out
              and "%s: yielded nothing (%s)" % (bad, why) in out and
              "PASS max-leaked-bytes: passes on every rank (1 of 2 ranks have it)" in out,
              "check over a summary and %s fails complete-traces naming it (%d)" % (what, rc),
              out + err)
    # a directory the user named with nothing in it, beside traces or beside summaries
    empty_dir = tool.path("named-empty-dir")
    os.mkdir(empty_dir)
    for what, first, why in (
            ("traces", good, "no trace files (*.jsonl, *.jsonl.zst, *.jsonl.gz, *.pickle) in this "
             "directory"),
            ("summaries", summary, "no summaries (*.summary.json) or traces in this directory")):
        rc, out, err = tool.run("check", "--max-leaked-bytes", "1GiB", first, empty_dir)
        check(rc == 1 and "%s: yielded nothing (%s)" % (empty_dir, why) in out,
              "check over %s and an empty directory fails complete-traces naming it (%d)" % (
                  what, rc), out + err)
    # in a directory too, a trace this reader cannot read is a lost one (another tracer
    # version's); another program's file beside it is only said
    vdir = tool.path("named-version-dir")
    os.mkdir(vdir)
    shutil.copy(good, vdir)
    shutil.copy(version2, vdir)
    shutil.copy(foreign, vdir)
    rc, out, err = tool.run("check", "--max-leaked-bytes", "1GiB", vdir)
    check(rc == 1 and "%s: yielded nothing (%s)" % (os.path.join(vdir, "version2.jsonl"), v2why)
          in out and "metrics.jsonl" not in out and "metrics.jsonl" in err,
          "a directory's trace of another version is lost, its foreign file only said (%d)" % rc,
          out + err)
    rc, out, err = tool.run("report", "--format", "json", summary, damaged)
    doc = json.loads(out) if rc == 0 else {}
    check(doc.get("kind") == "ranks" and doc.get("lost_traces") == [
        {"file": damaged, "reason": "not a complete summary (truncated or damaged)"}],
        "the per-rank report lists the damaged summary (%d)" % rc, out[:600] + err)


GROUPS = {"usage": group_usage, "gates": group_gates, "suppress": group_suppress,
          "growth": group_growth, "baseline": group_baseline, "junit": group_junit,
          "diff": group_diff, "cached": group_cached, "integrity": group_integrity,
          "tensors": group_tensors, "memory": group_memory, "lost": group_lost,
          "named": group_named}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--golden", required=True, help="tests/golden/traces")
    ap.add_argument("--victim", required=True)
    ap.add_argument("--preload-victim", help="tests/preload's victim (group integrity)")
    ap.add_argument("--tracer", help="libgpumemtrace.so (group integrity)")
    ap.add_argument("--simcuda", help="the directory of tests/simcuda's libraries (group integrity)")
    ap.add_argument("group", choices=sorted(GROUPS))
    a = ap.parse_args()
    PRELOAD.update(victim=a.preload_victim, tracer=a.tracer, simcuda=a.simcuda)
    victim = Victim(a.victim)
    with tempfile.TemporaryDirectory(prefix="gmt-check-") as tmp:
        GROUPS[a.group](Tool(os.path.abspath(a.exe), tmp), victim, os.path.abspath(a.golden))
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
