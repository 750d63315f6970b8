#!/usr/bin/env python3
"""The GPU proof's checker: does a trace say exactly what a program did, and what CUPTI saw?

    check_trace.py --expect EXPECT.json --trace DIR|FILE [--ref REF.json [--ref-expect E2.json]]
                   [--build BUILD] [--coverage full|runtime] [--label NAME] [--json-out FILE]

EXPECT.json  what the program did (tests/gpu/static_program.cu --expect): per memory kind the
             allocations, frees, resets and failures it made, per API the calls
DIR|FILE     the trace of that process (the file whose header pid is EXPECT's pid)
REF.json     optional: the reference counter's summary from a separate run of the same program
             under CUDA_INJECTION64_PATH=libcupti_count.so (tests/gpu/cupti_count.c); E2.json is
             that run's own EXPECT (a warning if the two runs did different things)

The trace is replayed here, independently of the gpumemtrace CLI, by the rules of the format
(docs/trace-format.md and the issue-3 additions): events in `seq` order; a successful alloc makes
an allocation live under its namespace (memory addresses; VMM handles for cuMemCreate and
cuMemImportFromShareableHandle; mapped ranges for cuMemMap; reservations; array handles); a free
ends the allocation it names (cuMemUnmap: every mapping starting inside [ptr, ptr+size); a
cuMemRelease of a handle that a `retain` event referenced only drops that reference); a reset
ends the context's device/pinned/registered/managed/array/imported allocations (those with its
`context`, or without one on its device); failed calls change nothing. Per kind that gives:

  allocs, alloc_bytes   successful allocations and their bytes
  frees, free_bytes     allocations ended by a free call, and their bytes
  reset_frees/_bytes    allocations ended by a device reset
  live, live_bytes      allocations live at the end
  failed                failed allocation calls

It prints a table expected / traced / reference per kind and metric, a table of calls per API,
and checks the trace itself: a version 1 header with the expected coverage ("full" with
capture ["cupti", ...], or "runtime API only"), exactly one trailer at the end with
dropped == 0 and events == the event and marker lines, unique `seq`, no allocation recorded
twice (an alloc of a key that is live) and no free of an unknown allocation. Then it runs
`gpumemtrace report --format json` on the file (must exit 0; its figures are shown).

Resets after the program's last allocation or free that the program did not make (a context
torn down at exit) are reported as a warning and do not count towards "live".

Exit status: 0 all checks passed, 1 a check failed, 2 usage or unreadable input.
The module's functions are also used by tests/gpu/torch_cases.py.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from gpumemtrace import tracefile  # noqa: E402 (.jsonl and .jsonl.zst alike)

KINDS = ["device", "pinned", "registered", "managed", "pool", "array", "vmm_reserve",
         "vmm_physical", "vmm_mapped", "imported", "graph"]
METRICS = ["allocs", "alloc_bytes", "frees", "free_bytes", "reset_frees", "reset_bytes", "live",
           "live_bytes", "failed"]
RESET_KINDS = {"device", "pinned", "registered", "managed", "array", "imported"}
CLASS_OF_KIND = {"vmm_physical": "handle", "vmm_mapped": "mapped", "vmm_reserve": "reserve",
                 "array": "array"}
ARRAY_FREES = {"cudaFreeArray", "cudaFreeMipmappedArray", "cuArrayDestroy", "cuMipmappedArrayDestroy"}
EXTERNAL_DESTROYS = {"cudaDestroyExternalMemory", "cuDestroyExternalMemory"}


# --- reading ------------------------------------------------------------------------------------

# the lines the trailer's "events" counts
RING_LINE_TYPES = ("event", "marker", "block", "torch", "holders")

def load_trace(path, problems=None):
    """Every complete line of a trace file as a dict; a torn or invalid line is a problem."""
    problems = problems if problems is not None else []
    recs = []
    if path.endswith(".zst"):  # complete frames hold complete lines
        data = b"".join(line + b"\n" for line in tracefile.lines(path))
    else:
        with open(path, "rb") as f:
            data = f.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    elif lines:
        problems.append(f"{os.path.basename(path)}: last line is torn (no newline)")
        lines = lines[:-1]
    for n, line in enumerate(lines, 1):
        try:
            recs.append(json.loads(line))
        except ValueError as e:
            problems.append(f"{os.path.basename(path)}:{n}: invalid JSON: {e}")
    return recs


def trace_files(where):
    if os.path.isdir(where):
        return sorted(glob.glob(os.path.join(where, "*.jsonl")) +
                      glob.glob(os.path.join(where, "*.jsonl.zst")))
    return [where]


def find_trace(where, pid, problems):
    """(path, records) of the trace of process pid in a directory (or the one file given)."""
    found = []
    for path in trace_files(where):
        try:
            head = json.loads(next(tracefile.lines(path), b"{}"))
        except (OSError, ValueError):
            continue
        if pid is None or head.get("pid") == pid:
            found.append(path)
    if len(found) != 1:
        problems.append(f"expected one trace of pid {pid} in {where}, found {len(found)}: {found}")
        return None, None
    return found[0], load_trace(found[0], problems)


def hexint(v):
    if isinstance(v, int):
        return v
    return int(v, 16) if isinstance(v, str) else 0


# --- replay ---------------------------------------------------------------------------------------

def empty_counts():
    return {k: {m: 0 for m in METRICS + ["peak_bytes"]} for k in KINDS}


def alloc_class(e):
    kind = e.get("kind")
    if kind in CLASS_OF_KIND:
        return CLASS_OF_KIND[kind]
    if kind == "imported":
        if e.get("api", "").startswith("cuMemImport"):
            return "handle"
        if e.get("api") == "cuMemMap":
            return "mapped"
    return "mem"


def free_class(e):
    api = e.get("api", "")
    if api == "cuMemRelease":
        return "handle"
    if api == "cuMemUnmap":
        return "mapped"
    if api == "cuMemAddressFree":
        return "reserve"
    if api in ARRAY_FREES:
        return "array"
    return CLASS_OF_KIND.get(e.get("kind"), "mem")


class Replay:
    """What a trace says happened, up to (not including) seq `until` when given."""

    def __init__(self, recs, until=None):
        self.k = empty_counts()
        self.apis = {}          # api -> {"alloc": n, "free": n, "failed": n}
        self.drivers = {}       # (api, driver) -> n, runtime events joined with their driver call
        self.problems = []      # hard failures found in the trace itself
        self.warnings = []
        self.unmatched_frees = 0
        self.failed_frees = 0
        self.resets = []        # {"seq", "context", "device", "released": {kind: [n, bytes]}}
        self.usage = {}         # (kind, pool/device) -> last size
        self.retains = 0
        self.refs = {}          # ("handle", ptr) -> references added by retain events
        self.contexts = set()
        self.no_context = 0
        self.last_mem_seq = 0
        self.live = {}          # (class, ptr) -> (kind, size, context, device, handle)
        events = [r for r in recs if r.get("type") == "event"]
        for e in events:
            for key in ("seq", "op", "api", "result"):
                if key not in e:
                    self.problems.append(f"event without {key!r}: {e}")
        events = sorted((e for e in events if "seq" in e), key=lambda r: r["seq"])
        for e in events:
            if until is not None and e["seq"] >= until:
                break
            self.apply(e)

    def api(self, name):
        return self.apis.setdefault(name, {"alloc": 0, "free": 0, "failed": 0})

    def end(self, key, how, seq):
        kind, size = self.live.pop(key)[:2]
        c = self.k[kind]
        c["live"] -= 1
        c["live_bytes"] -= size
        if how == "free":
            c["frees"] += 1
            c["free_bytes"] += size
        return kind, size

    def apply(self, e):
        op, api, ok = e.get("op"), e.get("api", "?"), e.get("result") == 0
        if "context" in e:
            self.contexts.add(e["context"])
        elif op in ("alloc", "free"):
            self.no_context += 1
        if op in ("alloc", "free") and ok and "driver" in e:
            self.drivers[(api, e["driver"])] = self.drivers.get((api, e["driver"]), 0) + 1
        if op == "alloc":
            kind = e.get("kind")
            if kind not in self.k:
                self.problems.append(f"seq {e['seq']}: alloc of unknown kind {kind!r} ({api})")
                return
            if not ok:
                self.k[kind]["failed"] += 1
                self.api(api)["failed"] += 1
                return
            key = (alloc_class(e), hexint(e.get("ptr")))
            if api == "cuMemMap":
                # a mapping of an imported handle maps the exporter's memory (trace-format.md)
                held = self.live.get(("handle", hexint(e.get("handle"))))
                if held and held[0] == "imported":
                    kind = "imported"
            if key in self.live:
                old = self.live[key]
                self.problems.append(f"seq {e['seq']}: {api} {kind} {e.get('ptr')} recorded while an "
                                     f"allocation at that {key[0]} key ({old[0]}) is live (duplicate)")
                self.end(key, "dup", e["seq"])
            size = e.get("size", 0)
            self.live[key] = (kind, size, e.get("context"), e.get("device"), e.get("handle"))
            c = self.k[kind]
            c["allocs"] += 1
            c["alloc_bytes"] += size
            c["live"] += 1
            c["live_bytes"] += size
            c["peak_bytes"] = max(c["peak_bytes"], c["live_bytes"])
            self.api(api)["alloc"] += 1
            self.last_mem_seq = e["seq"]
        elif op == "free":
            if not ok:
                self.failed_frees += 1
                self.api(api)["failed"] += 1
                return
            self.api(api)["free"] += 1
            self.last_mem_seq = e["seq"]
            ptr = hexint(e.get("ptr"))
            cls = free_class(e)
            if cls == "handle" and self.refs.get(("handle", ptr), 0) > 0:
                self.refs[("handle", ptr)] -= 1  # drops a retained reference; the handle lives on
                return
            if api in EXTERNAL_DESTROYS:
                keys = [k for k, v in self.live.items() if v[4] is not None and hexint(v[4]) == ptr]
            elif cls == "mapped":
                size = e.get("size", 0)
                keys = [k for k in self.live if k[0] == "mapped" and ptr <= k[1] < ptr + max(size, 1)]
            else:
                keys = [(cls, ptr)] if (cls, ptr) in self.live else []
            if not keys:
                self.unmatched_frees += 1
                self.problems.append(f"seq {e['seq']}: {api} of {e.get('ptr')} frees no live allocation")
            for key in keys:
                self.end(key, "free", e["seq"])
                self.refs.pop(key, None)
        elif op == "reset":
            if not ok:
                return
            ctx, dev = e.get("context"), e.get("device")
            released = {}
            for key, v in list(self.live.items()):
                kind, size, actx, adev = v[:4]
                if kind not in RESET_KINDS:
                    continue
                if ctx is not None:
                    hit = actx == ctx or (actx is None and adev == dev)
                else:
                    hit = adev == dev or dev is None or dev == -1
                if hit:
                    self.live.pop(key)
                    c = self.k[kind]
                    c["live"] -= 1
                    c["live_bytes"] -= size
                    c["reset_frees"] += 1
                    c["reset_bytes"] += size
                    r = released.setdefault(kind, [0, 0])
                    r[0] += 1
                    r[1] += size
            self.resets.append({"seq": e["seq"], "context": ctx, "device": dev, "api": api,
                                "driver": e.get("driver"), "released": released})
        elif op == "usage":
            self.usage[(e.get("kind"), e.get("pool", e.get("device")))] = e.get("size")
        elif op == "retain":
            if not ok:
                return
            self.retains += 1
            key = ("handle", hexint(e.get("ptr")))
            if key not in self.live:
                self.warnings.append(f"seq {e['seq']}: {api} of handle {e.get('ptr')} that is not live")
                return
            self.refs[key] = self.refs.get(key, 0) + 1

    def trailing_resets(self):
        return [r for r in self.resets if r["seq"] > self.last_mem_seq]

    def undo_resets(self, resets):
        """Count the allocations these resets ended as live again (a teardown at exit)."""
        undo_released(self.k, resets)

    def counts(self):
        return self.k


def undo_released(k, resets):
    for r in resets:
        for kind, (n, size) in r["released"].items():
            c = k[kind]
            c["live"] += n
            c["live_bytes"] += size
            c["reset_frees"] -= n
            c["reset_bytes"] -= size


def ref_counts(ref, label=None):
    """A reference summary's per-kind counters (at its mark `label` when given)."""
    if label is not None:
        for m in ref.get("marks", []):
            if m["label"] == label:
                return m["kinds"]
        return None
    return ref.get("kinds")


def ref_trailing_resets(ref):
    return [{"released": r["released"]} for r in ref.get("resets", []) if r.get("after_last_alloc_free")]


# --- checks on the trace itself -----------------------------------------------------------------------

def check_structure(recs, coverage, problems, notes):
    """Header, trailer, drops, unique seq. coverage: "full", "runtime API only" or None."""
    if not recs:
        problems.append("the trace is empty")
        return None
    h = recs[0]
    if h.get("type") != "header" or h.get("format") != "gpumemtrace" or h.get("version") != 1:
        problems.append(f"first line is not a version 1 gpumemtrace header: {str(h)[:120]}")
    notes.append(f"header: coverage {h.get('coverage')!r}, capture {h.get('capture')}, "
                 f"coverage_reason {h.get('coverage_reason')!r}")
    if coverage == "full":
        if h.get("coverage") != "full":
            problems.append(f"header coverage is {h.get('coverage')!r}, expected 'full' "
                            f"(reason: {h.get('coverage_reason')!r})")
        if "cupti" not in (h.get("capture") or []):
            problems.append(f"header capture {h.get('capture')} lacks 'cupti'")
        if h.get("coverage_reason") is not None:
            problems.append(f"coverage_reason should be null under full coverage: {h.get('coverage_reason')!r}")
    elif coverage is not None:
        if h.get("coverage") != coverage:
            problems.append(f"header coverage is {h.get('coverage')!r}, expected {coverage!r}")
    trailers = [i for i, r in enumerate(recs) if r.get("type") == "trailer"]
    if len(trailers) != 1 or trailers[0] != len(recs) - 1:
        problems.append(f"expected exactly one trailer as the last line, found {len(trailers)}")
        trailer = None
    else:
        trailer = recs[-1]
        if trailer.get("dropped") != 0:
            problems.append(f"the tracer dropped {trailer.get('dropped')} events")
        # every line that went through the ring: the CUDA events and marks, and the PyTorch
        # layer's block, torch and holders lines (docs/trace-format.md, trailer)
        lines = sum(1 for r in recs if r.get("type") in RING_LINE_TYPES)
        if trailer.get("events") != lines:
            problems.append(f"trailer says {trailer.get('events')} events, the file has {lines} "
                            f"lines of {', '.join(RING_LINE_TYPES)}")
    seqs = [r["seq"] for r in recs if r.get("type") in ("event", "marker") and "seq" in r]
    if len(seqs) != len(set(seqs)):
        problems.append(f"{len(seqs) - len(set(seqs))} duplicate seq numbers")
    return trailer


def run_report(build, path, notes, problems):
    exe = os.path.join(build, "tools", "gpumemtrace") if build else None
    if not exe or not os.path.exists(exe):
        notes.append("gpumemtrace report: CLI not given/found, skipped")
        return None
    p = subprocess.run([exe, "report", "--format", "json", path], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        problems.append(f"gpumemtrace report --format json exited {p.returncode}: {p.stderr.strip()[:300]}")
        return None
    try:
        rep = json.loads(p.stdout)
    except ValueError:
        problems.append("gpumemtrace report --format json did not print JSON")
        return None
    s = rep.get("summary", {})
    notes.append("report: " + ", ".join(f"{k}={s.get(k)}" for k in (
        "events", "dropped", "leaked_allocations", "leaked_bytes", "failed_allocations",
        "unmatched_frees", "failed_frees", "reused_addresses")))
    if s.get("dropped") not in (0, None):
        problems.append(f"report: summary.dropped = {s.get('dropped')}")
    if s.get("unmatched_frees") not in (0, None):
        notes.append(f"report: WARNING unmatched_frees = {s.get('unmatched_frees')} (the analyzer pairs "
                     "differently from this replay)")
    return rep


# --- tables -------------------------------------------------------------------------------------------

def fmt(v):
    return "-" if v is None else str(v)


def compare_kinds(exp, got, ref, soft_ref_metrics=("failed",), soft_metrics=()):
    """Rows (kind, metric, exp, got, ref, verdict) for every kind/metric where any side is non-zero.
    exp/ref may be None. Returns (rows, failures)."""
    rows, fails = [], []
    for kind in KINDS:
        for m in METRICS:
            e = exp[kind][m] if exp else None
            g = got[kind][m]
            r = ref[kind][m] if ref and kind in ref and m in ref[kind] else None
            if not any(v for v in (e, g, r) if v):
                continue
            verdict = "ok"
            if e is not None and g != e:
                verdict = "TRACE != EXPECTED" if m not in soft_metrics else "warn: trace != expected"
            if r is not None and r != g:
                bad = "REF != TRACE" if m not in soft_ref_metrics else "warn: ref != trace"
                verdict = bad if verdict == "ok" else verdict + ", " + bad
            rows.append((kind, m, e, g, r, verdict))
            if verdict not in ("ok",) and not verdict.startswith("warn"):
                fails.append(f"{kind} {m}: expected {fmt(e)}, traced {g}, reference {fmt(r)}")
    return rows, fails


def print_kind_table(rows, title=("expected", "traced", "reference")):
    print(f"  {'kind':<13}{'metric':<13}{title[0]:>14}{title[1]:>14}{title[2]:>14}  verdict")
    for kind, m, e, g, r, verdict in rows:
        print(f"  {kind:<13}{m:<13}{fmt(e):>14}{fmt(g):>14}{fmt(r):>14}  {verdict}")


def compare_apis(exp_apis, got_apis):
    rows, fails = [], []
    for name in sorted(set(exp_apis) | set(got_apis)):
        e = exp_apis.get(name, {"alloc": 0, "free": 0, "failed": 0})
        g = got_apis.get(name, {"alloc": 0, "free": 0, "failed": 0})
        same = all(e.get(k, 0) == g.get(k, 0) for k in ("alloc", "free", "failed"))
        rows.append((name, e, g, "ok" if same else "MISMATCH"))
        if not same:
            fails.append(f"api {name}: expected {e}, traced {g}")
    return rows, fails


def print_api_table(rows):
    print(f"  {'api':<30}{'expected alloc/free/failed':>28}{'traced alloc/free/failed':>28}  verdict")
    for name, e, g, v in rows:
        es = f"{e.get('alloc', 0)}/{e.get('free', 0)}/{e.get('failed', 0)}"
        gs = f"{g.get('alloc', 0)}/{g.get('free', 0)}/{g.get('failed', 0)}"
        print(f"  {name:<30}{es:>28}{gs:>28}  {v}")


# --- main ---------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--expect", required=True)
    ap.add_argument("--trace", required=True)
    ap.add_argument("--ref")
    ap.add_argument("--ref-expect", help="the program's own EXPECT of the reference run: must say the same")
    ap.add_argument("--build")
    ap.add_argument("--coverage", default="full", choices=["full", "runtime"])
    ap.add_argument("--label", default="")
    ap.add_argument("--json-out")
    args = ap.parse_args()

    try:
        exp = json.load(open(args.expect))
    except (OSError, ValueError) as e:
        print(f"check_trace: cannot read {args.expect}: {e}")
        return 2
    label = args.label or f"{exp.get('program')} {exp.get('mode')}"
    problems, warnings, notes = [], [], []
    print(f"== check_trace: {label} (pid {exp.get('pid')}, cudart {exp.get('cudart')})")
    if exp.get("cudart") != "static":
        warnings.append(f"the program's cudart is {exp.get('cudart')!r}, not static")
    for n in exp.get("notes", []):
        warnings.append(f"program note: {n}")

    path, recs = find_trace(args.trace, exp.get("pid"), problems)
    ref = None
    if args.ref:
        try:
            ref = json.load(open(args.ref))
        except (OSError, ValueError) as e:
            problems.append(f"reference summary {args.ref} unreadable: {e}")
    if args.ref_expect:
        try:
            rexp = json.load(open(args.ref_expect))
            for key in ("kinds", "apis", "resets", "failed_frees"):
                if rexp.get(key) != exp.get(key):
                    warnings.append(f"the reference run's program reports different {key} than this run's: "
                                    "the reference figures may not be comparable")
        except (OSError, ValueError) as e:
            warnings.append(f"reference run's program output {args.ref_expect} unreadable: {e}")
    rep = None
    got = None
    if recs is not None:
        notes.append(f"trace: {path}")
        check_structure(recs, "full" if args.coverage == "full" else "runtime API only", problems, notes)
        rp = Replay(recs)
        problems += rp.problems
        warnings += rp.warnings
        extra = len(rp.resets) - exp.get("resets", 0)
        trailing = rp.trailing_resets()
        if extra > 0 and len(trailing) >= extra:
            warnings.append(f"{extra} reset event(s) after the program's last allocation call (a context torn "
                            f"down at exit?): {trailing[-extra:]}; not counted")
            rp.undo_resets(trailing[-extra:])
            rp.resets = rp.resets[:-extra]
        if len(rp.resets) != exp.get("resets", 0):
            problems.append(f"resets: expected {exp.get('resets', 0)}, traced {len(rp.resets)}: {rp.resets}")
        if "retains" in exp and rp.retains != exp["retains"]:
            problems.append(f"retain events: expected {exp['retains']}, traced {rp.retains}")
        if rp.failed_frees != exp.get("failed_frees", 0):
            problems.append(f"failed frees: expected {exp.get('failed_frees', 0)}, traced {rp.failed_frees}")
        got = rp.counts()
        if args.coverage == "full" and rp.no_context:
            warnings.append(f"{rp.no_context} alloc/free events carry no `context` under full coverage")
        notes.append(f"contexts seen: {sorted(rp.contexts)}; retains: {rp.retains}; "
                     f"usage readings: {[(k, v) for k, v in sorted(rp.usage.items(), key=str)]}")
        if rp.drivers:
            notes.append("runtime->driver pairs: " + ", ".join(f"{a}->{d} x{n}" for (a, d), n in sorted(rp.drivers.items())))
        rep = run_report(args.build, path, notes, problems)

    if ref is not None:
        sub = ref.get("subscribe", {})
        if sub.get("result") != 0:
            problems.append(f"reference counter could not subscribe to CUPTI: {sub}")
            ref = None
        else:
            trailing = ref_trailing_resets(ref)
            extra = len(ref.get("resets", [])) - exp.get("resets", 0)
            if extra > 0 and len(trailing) >= extra:
                warnings.append(f"reference: {extra} context destroy(s) after the last allocation call; not counted")
                undo_released(ref["kinds"], trailing[-extra:])
            elif len(ref.get("resets", [])) != exp.get("resets", 0):
                problems.append(f"reference resets: {len(ref.get('resets', []))}, expected {exp.get('resets', 0)}")
            for key in ("duplicate_allocs", "unmatched_frees", "unknown_retains"):
                if ref.get(key):
                    warnings.append(f"reference {key} = {ref[key]}")
            if ref.get("failed_frees", 0) != exp.get("failed_frees", 0):
                warnings.append(f"reference failed_frees {ref.get('failed_frees')} != expected "
                                f"{exp.get('failed_frees', 0)} (the runtime may reject a bad pointer "
                                "before the driver)")
            act = ref.get("activity", {})
            if act.get("enabled"):
                notes.append(f"reference activity (MEMORY2/MEMORY_POOL, information): memory {act.get('memory')}, "
                             f"pool {act.get('pool')}, async {act.get('async_allocs')}, dropped {act.get('dropped')}")

    result = {"label": label, "ok": False, "kinds": None, "problems": None}
    if got is not None:
        rows, fails = compare_kinds(exp["kinds"], got, ref["kinds"] if ref else None)
        print_kind_table(rows)
        problems += fails
        arows, afails = compare_apis(exp.get("apis", {}), rp.apis)
        print()
        print_api_table(arows)
        problems += afails
        result["kinds"] = got
    for n in notes:
        print(f"  note: {n}")
    for w in warnings:
        print(f"  WARNING: {w}")
    for p in problems:
        print(f"  FAIL: {p}")
    ok = not problems and got is not None
    result.update(ok=ok, problems=problems, warnings=warnings)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(result, f)
    print(f"check_trace: {'PASS' if ok else 'FAIL'} {label}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
