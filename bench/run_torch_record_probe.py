#!/usr/bin/env python3
"""What the PyTorch layer's block-event path costs per tensor, without torch (bench/
torch_record_probe.c; docs/performance.md, "The block-event path in isolation").

    run_torch_record_probe.py --build BUILD [--rounds 7] [--triples 5000] [--reps 9]
        [--py-depth 20] [--native-depth 30] [--jitter J] [--variants plain,none,native,...]
        [--base-lib OLD/libgpumemtrace.so] [--compress none|zstd] [--quick]

A child Python process loads the probe library, recurses --py-depth Python frames, calls
gmt_probe_run() through ctypes, which recurses --native-depth C frames and then calls the
tracer's exported gmt_torch_record() for ALLOC, FREE_REQUESTED and FREE_COMPLETED of one block
(what the bridge sends for one tensor), --triples times (--jitter J: each triple from
--native-depth + 0..J frames, a fixed pseudo-random sequence: allocations from several depths). Per repetition it times the same loop
twice, into a no-op and into the tracer, then sleeps --gap-ms so the writer drains the ring (a
run of 3 x triples events stays below the ring's 65536 slots: no drops; every traced child's
trailer must say dropped 0 and count every event).

Variants (one child process each, every round runs them all, the order rotating):
  plain            no tracer: gmt_torch_record is not there, both loops call the no-op
  none             LD_PRELOAD=libgpumemtrace.so, GPUMEMTRACE_STACKS=none
  native, python, all
                   the same with those stacks, under the tracer's start-up hook (its
                   sitecustomize is on PYTHONPATH, as LD_PRELOAD or `gpumemtrace run` put it), and
                   the child calls gmt_py_watch as that hook does: the 3.12+ code watcher is on
  python-nowatch, all-nowatch
                   GPUMEMTRACE_TORCH=off (no start-up hook) and no gmt_py_watch: the Python walk
                   hashes each code object's contents (the watcher's effect)

Each traced child's trace also gives its count of stack lines (distinct stacks): a few at one
depth (the warm-up's call and the loop's), up to 2 x (J + 1) with --jitter J; many more would mean
that the same call site interned a new stack at every event (a misread frame).

Per child: the median over repetitions of ns per triple into the tracer ("rec"), into the no-op
("noop"), and of the per-repetition difference ("added": what the tracer adds, measured inside
one process). Over rounds: medians of those, and per-round differences between variants
(stack modes over none, none over plain, nowatch over watch). The last line is JSON.
--base-lib: each traced variant also runs with that tracer library as VARIANT@base, in the same
rounds (before/after a change, interleaved; "after over before" differences per round).
--quick: a smoke run (2 rounds, small loops) that only checks that it works.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from gpumemtrace import tracefile  # noqa: E402 (.jsonl and .jsonl.zst, the default, alike)

CHILD = r'''
import ctypes, json, sys, time
probe, py_depth, native_depth, triples, reps, gap_ms, watch, jitter = sys.argv[1:9]
py_depth, native_depth, triples, reps = int(py_depth), int(native_depth), int(triples), int(reps)
gap = float(gap_ms) / 1000
lib = ctypes.CDLL(probe)
jitter = int(jitter)
lib.gmt_probe_run.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int, ctypes.c_int]
lib.gmt_probe_run.restype = ctypes.c_int64
tracer = lib.gmt_probe_tracer()
watched = None
if tracer and watch == "1":
    # what the start-up hook does (python/gpumemtrace/_site/sitecustomize.py); once it has, this
    # only reads the state: 0 = the code watcher is on
    fn = getattr(ctypes.CDLL(None), "gmt_py_watch", None)
    if fn is not None:
        watched = ctypes.PYFUNCTYPE(ctypes.c_int)(ctypes.cast(fn, ctypes.c_void_p).value)()
site = getattr(sys.modules.get("sitecustomize"), "__file__", None) or ""

def at_depth(k, *args):
    if k > 1:
        return at_depth(k - 1, *args)
    return lib.gmt_probe_run(*args)

warm = max(triples // 4, 100)
at_depth(py_depth, native_depth, warm, tracer, jitter)  # the stacks interned, the code registered
time.sleep(gap)
noop, rec = [], []
for r in range(reps):
    noop.append(at_depth(py_depth, native_depth, triples, 0, jitter) / triples)
    rec.append(at_depth(py_depth, native_depth, triples, tracer, jitter) / triples)
    time.sleep(gap)
print(json.dumps({"tracer": tracer, "watch": watched, "site": "gpumemtrace" in site,
                  "events": 3 * (warm + reps * triples) if tracer else 0,
                  "noop": noop, "rec": rec}))
'''

# name: (GPUMEMTRACE_STACKS or None for no tracer, start-up hook and code watcher)
VARIANTS = {
    "plain": (None, False),
    "none": ("none", True),
    "native": ("native", True),
    "python": ("python", True),
    "all": ("all", True),
    "python-nowatch": ("python", False),
    "all-nowatch": ("all", False),
}
DEFAULT = "plain,none,native,python,all,python-nowatch,all-nowatch"
# per-round differences reported: (label, variant, minus variant)
DIFFS = [
    ("none over plain", "none", "plain"),
    ("native stacks over none", "native", "none"),
    ("python stacks over none", "python", "none"),
    ("all stacks over none", "all", "none"),
    ("all over plain", "all", "plain"),
    ("python, no watcher, over python", "python-nowatch", "python"),
    ("all, no watcher, over all", "all-nowatch", "all"),
]


def trailer_of(outdir):
    """(header, trailer, stack lines, pycode lines) of the one trace in outdir."""
    files = glob.glob(os.path.join(outdir, "*.jsonl")) + glob.glob(os.path.join(outdir, "*.jsonl.zst"))
    if len(files) != 1:
        return None, None, 0, 0
    lines = list(tracefile.lines(files[0]))
    header = json.loads(lines[0])
    stacks = sum(1 for line in lines if line.startswith(b'{"type":"stack"'))
    pycode = sum(1 for line in lines if line.startswith(b'{"type":"pycode"'))
    for line in reversed(lines):
        if line.startswith(b'{"type":"trailer"'):
            return header, json.loads(line), stacks, pycode
    return header, None, stacks, pycode


def run_child(a, name, tmp, seq):
    stacks, hook = VARIANTS[name.split("@")[0]]
    lib = a.base_lib if name.endswith("@base") else os.path.join(a.build, "src",
                                                                  "libgpumemtrace.so")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUMEMTRACE_")}
    env.pop("LD_PRELOAD", None)
    outdir = os.path.join(tmp, "%s-%d" % (name, seq))
    if stacks is not None:
        os.mkdir(outdir)
        env["LD_PRELOAD"] = lib
        env["GPUMEMTRACE_OUTPUT_DIR"] = outdir
        env["GPUMEMTRACE_STACKS"] = stacks
        if not hook:
            env["GPUMEMTRACE_TORCH"] = "off"  # no start-up hook on PYTHONPATH
        if a.compress:
            env["GPUMEMTRACE_COMPRESS"] = a.compress
    probe = os.path.join(a.build, "bench", "libgmt_torch_record_probe.so")
    p = subprocess.run([a.python, "-c", CHILD, probe, str(a.py_depth), str(a.native_depth),
                        str(a.triples), str(a.reps), str(a.gap_ms), "1" if hook else "0",
                        str(a.jitter)],
                       env=env, capture_output=True, text=True, timeout=120)
    doc = None
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            doc = json.loads(line)
            break
    problems = []
    if p.returncode != 0 or doc is None:
        return None, ["%s: child exit %d: %s" % (name, p.returncode, p.stderr[-600:])]
    if (stacks is not None) != bool(doc["tracer"]):
        problems.append("%s: gmt_torch_record %s" % (name, "missing" if stacks else "present"))
    if stacks is not None:
        header, trailer, doc["stacks"], doc["pycode"] = trailer_of(outdir)
        if trailer is None:
            problems.append("%s: no trace file or no trailer: %s" % (name, p.stderr[-400:]))
        else:
            if trailer["dropped"] != 0:
                problems.append("%s: the tracer dropped %d events" % (name, trailer["dropped"]))
            if trailer["events"] != doc["events"]:
                problems.append("%s: %d events in the trailer, %d sent" % (
                    name, trailer["events"], doc["events"]))
            doc["py_stacks"] = (header.get("stacks") or {}).get("python")
            doc["native_stacks"] = (header.get("stacks") or {}).get("native")
        if hook and doc["py_stacks"] and sys.version_info >= (3, 12) and doc["watch"] != 0:
            problems.append("%s: the code watcher is not on (gmt_py_watch %r)" % (
                name, doc["watch"]))
    doc["added"] = [r - n for r, n in zip(doc["rec"], doc["noop"])]
    return doc, problems


def med(xs):
    return statistics.median(xs) if xs else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--python", default=sys.executable, help="the child's interpreter")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--triples", type=int, default=5000)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--gap-ms", type=float, default=40)
    ap.add_argument("--py-depth", type=int, default=20)
    ap.add_argument("--native-depth", type=int, default=30)
    ap.add_argument("--jitter", type=int, default=0,
                    help="J > 0: each triple from native depth + 0..J frames (several call depths)")
    ap.add_argument("--variants", default=DEFAULT)
    ap.add_argument("--base-lib", help="a second tracer library: VARIANT@base variants")
    ap.add_argument("--compress", help="GPUMEMTRACE_COMPRESS of the traced children (default: the "
                    "tracer's default)")
    ap.add_argument("--quick", action="store_true", help="a smoke run: it works, figures aside")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    if a.quick:
        a.rounds, a.triples, a.reps, a.gap_ms = 2, 500, 3, 20
    if 3 * a.triples > 60000:
        ap.error("--triples: 3 x triples events must fit in the ring (65536 slots)")
    names = [v for v in a.variants.split(",") if v]
    for n in names:
        if n not in VARIANTS:
            ap.error("unknown variant %s (known: %s)" % (n, ", ".join(VARIANTS)))
    if a.base_lib:
        a.base_lib = os.path.abspath(a.base_lib)
        names += [n + "@base" for n in names if VARIANTS[n][0] is not None]
        DIFFS.extend(("%s over %s@base" % (n, n), n, n + "@base") for n in list(names)
                     if n + "@base" in names)
    rounds, problems = [], []
    with tempfile.TemporaryDirectory(prefix="gmt-record-probe-") as tmp:
        for r in range(a.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            row = {}
            for n in order:
                doc, why = run_child(a, n, tmp, r)
                problems += why
                if doc is not None:
                    row[n] = doc
            rounds.append(row)
    py = subprocess.run([a.python, "-c", "import sys; print(sys.version.split()[0])"],
                        capture_output=True, text=True).stdout.strip()
    print("block-event path, %d rounds x %d repetitions of %d triples (ALLOC, FREE_REQUESTED, "
          "FREE_COMPLETED), Python %s, %d Python frames, %d native frames%s; ns per triple:" % (
              a.rounds, a.reps, a.triples, py, a.py_depth, a.native_depth,
              " (+0..%d)" % a.jitter if a.jitter > 0 else ""))
    out = {"bench": "torch_record_probe", "python": py, "py_depth": a.py_depth,
           "native_depth": a.native_depth, "jitter": a.jitter, "triples": a.triples, "reps": a.reps,
           "rounds": a.rounds, "variants": {}, "diffs": {}}
    per = {}
    for n in names:
        docs = [row[n] for row in rounds if n in row]
        if not docs:
            continue
        rec = [med(d["rec"]) for d in docs]
        noop = [med(d["noop"]) for d in docs]
        added = [med(d["added"]) for d in docs]
        per[n] = {i: med(row[n]["rec"]) for i, row in enumerate(rounds) if n in row}
        v = {"rec_ns": med(rec), "noop_ns": med(noop), "added_ns": med(added),
             "added_min_ns": min(added), "added_max_ns": max(added),
             "watch": docs[0].get("watch"), "site": docs[0].get("site"),
             "stacks": max(d.get("stacks", 0) for d in docs),
             "pycode": max(d.get("pycode", 0) for d in docs),
             "py_stacks": docs[0].get("py_stacks"), "native_stacks": docs[0].get("native_stacks")}
        out["variants"][n] = v
        print("  %-15s %8.1f into the tracer, %6.1f into the no-op, added %8.1f (rounds %.1f .. "
              "%.1f)%s" % (n, v["rec_ns"], v["noop_ns"], v["added_ns"], v["added_min_ns"],
                           v["added_max_ns"],
                           "" if VARIANTS[n.split("@")[0]][0] is None else
                           ", watcher %s, python stacks %s, %d stack lines" % (
                               "on" if v["watch"] == 0 else "off" if v["py_stacks"] else "n/a",
                               v["py_stacks"], v["stacks"])))
    for label, x, y in DIFFS:
        if x in per and y in per:
            d = [per[x][i] - per[y][i] for i in per[x] if i in per[y]]
            ratio = [per[x][i] / per[y][i] for i in per[x] if i in per[y] and per[y][i] > 0]
            out["diffs"][label] = {"ns": med(d), "x": med(ratio)}
            print("  %-40s %+8.1f ns per triple (median of per-round differences), x%.3f" % (
                label, med(d), med(ratio)))
    for p in problems:
        print("PROBLEM:", p)
    out["problems"] = problems
    print(json.dumps(out))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
