#!/usr/bin/env python3
"""PyTorch memory snapshot pickles read by report, check and diff (src/analysis/reader/snapshot.c),
against what real torch said:

    test_snapshots.py --exe GPUMEMTRACE --fixtures DIR CASE

  figures    each pickle real torch 2.11 wrote on the H200 (tests/gpu/make_snapshots.py: history,
             no history, expandable segments, an OOM, CUDA graphs and a MemPool): the report's
             replayed cache at the end (tensors.devices[0].end) has the allocated and reserved
             bytes and the segment count torch's memory_allocated(), memory_reserved() and
             memory_snapshot() gave at the dump (figures.json), with every entry fitting
  oom        the OOM pickle: one tensor-level OOM, asking for what the program asked (1 << 50
             bytes), at the program's line, with torch's device free bytes
  sites      the history pickle: the sites name lines of make_snapshots.py (the training loop's
             lines), not torch's own files; the text report names the pickle, not a pid
  roundtrip  our own export of a real trace (report --format pytorch-snapshot of gpt2.jsonl)
             read back: the same tensor peak and end figures as the trace, every entry fitting,
             the memory that was not PyTorch's back as CUDA-level allocations
  inputs     standard input, a directory holding a pickle, check and diff on pickles
  hostile    pickles whose memo references share parts (tests/analysis/snapshot_pickles.py):
             a 14 KB DAG of one segment, block, entry and frame referenced a thousand times
             at each level (read in seconds, not hours: each part once, the repeats said and
             skipped), frames looked up in a dict of 100k keys (refused: "FILE: refused: ...
             lookups", exit 3, beside a good pickle still reported), many distinct API names
             of our export's CUDA-level entries; each within a timeout the reader before the
             fix ran past
  descending one segment of 600k live blocks listed in descending address order: read in
             seconds (was quadratic), every block in the replayed cache
  ubsan      entry times further apart than int64 holds, an entry whose "frames" is an int:
             read without undefined behaviour (the ASan+UBSan build fails on a report)
  limits     the work a real snapshot costs is far under the limit: the H200 pickles and a
             generated history are read with no refusal
  bad        a pickle of a plain list, one with an opcode that is not data, a pickle cut short,
             an empty .pickle, a dict that is no snapshot: "FILE: not a PyTorch memory snapshot:
             why", exit 3; beside them in a directory, a good pickle is still reported (exit 0, as
             for a directory of traces with a bad one)
"""
import argparse
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


def run(exe, *args, stdin=None):
    return subprocess.run([exe, *args], capture_output=True, text=True, stdin=stdin)


def report(exe, path, fmt="json"):
    p = run(exe, "report", "--format", fmt, path)
    check(p.returncode == 0, f"report {path} exit {p.returncode}: {p.stderr[-500:]}")
    if fmt == "json":
        return (json.loads(p.stdout) if p.returncode == 0 else {}), p.stderr
    return p.stdout, p.stderr


def tensors_of(doc):
    t = [p["tensors"] for p in doc.get("processes", []) if "tensors" in p]
    check(len(t) == 1, f"one process with tensors (got {len(t)})")
    return t[0] if t else {"devices": [{"end": {}, "peak": {}}], "ooms": []}


def case_figures(exe, fx):
    figs = json.load(open(os.path.join(fx, "figures.json")))
    check(len(figs) == 5, "five snapshots in the fixture")
    for name, want in sorted(figs.items()):
        doc, err = report(exe, os.path.join(fx, name + ".pickle"))
        t = tensors_of(doc)
        end = t["devices"][0]["end"]
        for k in ("allocated", "reserved", "segments"):
            check(end.get(k) == want[k], f"{name}: {k} at the end {end.get(k)} != torch's {want[k]}")
        check(t.get("inconsistent") == 0, f"{name}: every entry fits the replay ({t.get('inconsistent')})")
        check("do not fit" not in err and "skipped" not in err, f"{name}: no complaint: {err[-300:]}")
        snap = pickle.load(open(os.path.join(fx, name + ".pickle"), "rb"))
        n = sum(len(d) for d in snap["device_traces"])
        check(t.get("block_events", 0) >= n, f"{name}: every trace entry is a block event ({t.get('block_events')} < {n})")


def case_oom(exe, fx):
    doc, _ = report(exe, os.path.join(fx, "oom.pickle"))
    t = tensors_of(doc)
    ooms = t.get("ooms", [])
    if not check(len(ooms) == 1, f"one tensor-level OOM (got {len(ooms)})"):
        return
    o = ooms[0]
    check(o["requested"] == 1 << 50, f"the OOM asked for 1 << 50 bytes: {o['requested']}")
    check(o["site"].endswith("make_snapshots.py:68 in main"), f"the OOM's site is the program's line: {o['site']}")
    snap = pickle.load(open(os.path.join(fx, "oom.pickle"), "rb"))
    free = [e["device_free"] for e in snap["device_traces"][0] if e["action"] == "oom"][0]
    check(o["device_free"] == free, f"device free bytes {o['device_free']} == torch's {free}")
    # our export of it: every trace entry has the keys torch's own entries of its action have
    # (memory_viz reads an OOM's free bytes from device_free: "NaN" and KeyError without it)
    tmp = tempfile.mkdtemp(prefix="gmt-snapoom-")
    out = os.path.join(tmp, "oom.pickle")
    p = run(exe, "report", "--format", "pytorch-snapshot", "-o", out, os.path.join(fx, "oom.pickle"))
    if check(p.returncode == 0, f"export exit {p.returncode}: {p.stderr[-300:]}"):
        ours = pickle.load(open(out, "rb"))
        theirs = {}
        for e in snap["device_traces"][0]:
            theirs.setdefault(e["action"], set(e))
        for e in ours["device_traces"][0]:
            want = theirs.get(e["action"])
            if want is not None and set(e) != want:
                check(False, f"our {e['action']} entry has keys {sorted(e)}, torch's {sorted(want)}")
                break
        mine = [e for e in ours["device_traces"][0] if e["action"] == "oom"]
        check(len(mine) == 1 and mine[0].get("device_free") == free and "addr" not in mine[0],
              f"the exported OOM carries device_free as torch's does ({mine})")
    shutil.rmtree(tmp, ignore_errors=True)


def case_sites(exe, fx):
    src = open(os.path.join(os.path.dirname(__file__), "..", "gpu", "make_snapshots.py")).read().split("\n")
    doc, _ = report(exe, os.path.join(fx, "history.pickle"))
    t = tensors_of(doc)
    sites = [s["site"] for s in t.get("peak_sites", [])]
    ours = [s for s in sites if "/tests/gpu/make_snapshots.py:" in s]
    check(len(ours) >= 3, f"sites at the peak on make_snapshots.py lines: {sites}")
    check(not any("site-packages/torch" in s for s in sites), f"no site inside torch: {sites}")
    for s in ours:
        line = int(s.split("make_snapshots.py:")[1].split()[0])
        code = src[line - 1] if 0 < line <= len(src) else ""
        check(code.strip() and not code.strip().startswith("#"), f"{s}: a line of code ({code!r})")
    check(any(":29 in loop" in s for s in ours), f"the forward pass (line 29) holds tensors at the peak: {ours}")
    text, _ = report(exe, os.path.join(fx, "history.pickle"), fmt="text")
    check("make_snapshots.py:29 in loop" in text, "the text report names the line")
    check("PyTorch snapshot" in text, "the text report says it read a PyTorch snapshot")


# The C++ frames torch's recorder puts innermost in every stack of _record_memory_history()'s
# default (stacks="all"), file "??" or a source path, as torch 2.11 writes them.
TORCH_CPP = [{"name": "torch::unwind::unwind()", "filename": "??", "line": 0},
             {"name": "torch::CapturedTraceback::gather(bool, bool, bool)", "filename": "??",
              "line": 0},
             {"name": "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc("
                      "signed char, unsigned long, CUstream_st*)", "filename": "??", "line": 0},
             {"name": "at::native::empty_cuda(c10::ArrayRef<long>, ...)",
              "filename": "/pytorch/aten/src/ATen/native/cuda/EmptyTensor.cpp", "line": 52}]


def case_cppframes(exe, fx):
    """torch's own unwinder and allocator frames are never a site: a stack with Python frames
    keeps its Python site; one without (autograd's threads) shows the first ATen frame."""
    tmp = tempfile.mkdtemp(prefix="gmt-snapcpp-")
    snap = pickle.load(open(os.path.join(fx, "history.pickle"), "rb"))
    n = 0
    for seg in snap["segments"]:
        for b in seg["blocks"]:
            if b.get("frames"):
                b["frames"] = TORCH_CPP + ([] if n % 2 else b["frames"])
                n += 1
    for e in snap["device_traces"][0]:
        if e.get("frames"):
            e["frames"] = TORCH_CPP + ([] if n % 2 else e["frames"])
            n += 1
    path = os.path.join(tmp, "cpp.pickle")
    with open(path, "wb") as f:
        pickle.dump(snap, f, protocol=4)
    doc, _ = report(exe, path)
    t = tensors_of(doc)
    sites = [s["site"] for s in t.get("peak_sites", []) + t.get("live_at_exit", [])]
    check(sites and not any("unwind" in s or "CapturedTraceback" in s or
                            "CUDACachingAllocator" in s for s in sites),
          f"no site in torch's recorder or allocator: {sites}")
    check(any("empty_cuda" in s for s in sites) and any("make_snapshots.py:" in s for s in sites),
          f"C++-only stacks name ATen's frame, the others their Python line: {sites}")
    text, _ = report(exe, path, fmt="text")
    check("torch::unwind" not in text, "the text report shows no torch::unwind frame as a site")
    shutil.rmtree(tmp)


def case_roundtrip(exe, fx):
    tmp = tempfile.mkdtemp(prefix="gmt-snapread-")
    src = os.path.join(fx, "..", "tensors", "gpt2.jsonl")
    out = os.path.join(tmp, "gpt2.pickle")
    p = run(exe, "report", "--format", "pytorch-snapshot", "-o", out, src)
    if not check(p.returncode == 0, f"export exit {p.returncode}: {p.stderr[-300:]}"):
        return
    a, _ = report(exe, src)
    b, err = report(exe, out)
    ta, tb = tensors_of(a), tensors_of(b)
    da, db = ta["devices"][0], tb["devices"][0]
    check(da["peak"]["allocated"] == db["peak"]["allocated"],
          f"the peak: {db['peak']['allocated']} read back, {da['peak']['allocated']} in the trace")
    check(da["peak"]["cache"] == db["peak"]["cache"], f"the cache at the peak: {db['peak']['cache']} vs {da['peak']['cache']}")
    check(da["end"] == db["end"], f"the end: {db['end']} read back, {da['end']} in the trace")
    check(tb.get("inconsistent") == 0 and "do not fit" not in err, f"every entry fits: {tb.get('inconsistent')} {err[-200:]}")
    # what the cache did not make (cuBLAS, ...) is CUDA-level memory again, not tensors
    pb = b["processes"][0]
    snap = pickle.load(open(out, "rb"))
    ext = [e for e in snap["device_traces"][0] if e["action"] == "alloc" and e["frames"]
           and e["frames"][0]["name"].startswith("[not PyTorch's]")]
    check(len(ext) > 0 and pb["allocations"] == len(ext),
          f"the non-PyTorch allocations as CUDA-level ones: {pb['allocations']} of {len(ext)}")
    shutil.rmtree(tmp)


def case_inputs(exe, fx):
    path = os.path.join(fx, "history.pickle")
    want = json.load(open(os.path.join(fx, "figures.json")))["history"]
    with open(path, "rb") as f:
        p = subprocess.run([exe, "report", "--format", "json", "-"], stdin=f, capture_output=True, text=True)
    check(p.returncode == 0, f"standard input: exit {p.returncode}: {p.stderr[-300:]}")
    if p.returncode == 0:
        end = tensors_of(json.loads(p.stdout))["devices"][0]["end"]
        check(end["allocated"] == want["allocated"], "standard input: the same figures")
    tmp = tempfile.mkdtemp(prefix="gmt-snapdir-")
    shutil.copy(path, os.path.join(tmp, "a.pickle"))
    shutil.copy(os.path.join(fx, "expandable.pickle"), os.path.join(tmp, "b.pickle"))
    doc, _ = report(exe, tmp)
    check(len(doc.get("processes", [])) == 2, f"a directory's two pickles: {len(doc.get('processes', []))} processes")
    p = run(exe, "check", "--max-failed", "0", path)
    check(p.returncode == 0 and "PASS complete-traces" in p.stdout,
          f"check on a pickle: exit {p.returncode}: {p.stdout[-200:]} {p.stderr[-300:]}")
    p = run(exe, "diff", path, os.path.join(fx, "expandable.pickle"))
    check(p.returncode == 0, f"diff of two pickles: exit {p.returncode}: {p.stderr[-300:]}")
    shutil.rmtree(tmp)


def case_bad(exe, fx):
    tmp = tempfile.mkdtemp(prefix="gmt-snapbad-")
    good = open(os.path.join(fx, "history.pickle"), "rb").read()
    bad = {
        "list.pickle": (pickle.dumps([1, 2, 3], protocol=4), "holds a list"),
        "global.pickle": (pickle.dumps(os.path.join, protocol=4), "GLOBAL"),
        "opcode.pickle": (b"\x80\x04\xff.", "0xff"),
        "cut.pickle": (good[: len(good) // 2], "not a PyTorch memory snapshot"),
        "empty.pickle": (b"", "empty file"),
        "dict.pickle": (pickle.dumps({"a": 1}, protocol=2), "no \"segments\""),
    }
    for name, (data, why) in bad.items():
        path = os.path.join(tmp, name)
        open(path, "wb").write(data)
        p = run(exe, "report", path)
        first = p.stderr.strip().split("\n")[0] if p.stderr.strip() else ""
        check(p.returncode == 3, f"{name}: exit {p.returncode}, not 3: {p.stderr[-200:]}")
        check(first.startswith(f"{path}: not a PyTorch memory snapshot: ") and why in first,
              f"{name}: the message names the file and why ({why}): {first!r}")
        check(p.stdout == "", f"{name}: no report: {p.stdout[:200]!r}")
    # nothing else lost: a good trace in the same directory is still reported
    shutil.copy(os.path.join(fx, "history.pickle"), os.path.join(tmp, "zgood.pickle"))
    p = run(exe, "report", "--format", "json", tmp)
    check(p.returncode == 0, f"a directory with bad pickles and a good one: exit {p.returncode}, as for traces")
    doc = json.loads(p.stdout) if p.stdout.strip() else {}
    check(len(doc.get("processes", [])) == 1, "the good pickle beside them is reported")
    check(p.stderr.count("not a PyTorch memory snapshot") == len(bad), f"one line per bad pickle: {p.stderr}")
    shutil.rmtree(tmp)


GEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "snapshot_pickles.py")
# before the fix each of these ran for minutes (issue 28 item 3); after it, well under a second
HOSTILE_TIMEOUT = 60


def generated(tmp, kind, n=None):
    path = os.path.join(tmp, f"{kind}.pickle")
    subprocess.run([sys.executable, GEN, kind, path] + ([str(n)] if n else []), check=True,
                   capture_output=True)
    return path


def run_bounded(exe, *args):
    try:
        return subprocess.run([exe, *args], capture_output=True, text=True,
                              timeout=HOSTILE_TIMEOUT)
    except subprocess.TimeoutExpired:
        check(False, f"{' '.join(args)}: still running after {HOSTILE_TIMEOUT} s")
        return None


def no_ub(p, what):
    check("runtime error" not in p.stderr and "Sanitizer" not in p.stderr,
          f"{what}: undefined behaviour or a sanitizer report: {p.stderr[-600:]}")


def case_hostile(exe, fx):
    tmp = tempfile.mkdtemp(prefix="gmt-snaphostile-")
    dag = generated(tmp, "dag", 1000)
    check(os.path.getsize(dag) < 16 * 1024, f"the DAG pickle is small ({os.path.getsize(dag)})")
    p = run_bounded(exe, "report", "--format", "json", dag)
    if p:
        no_ub(p, "dag")
        check(p.returncode == 0, f"dag: read (exit {p.returncode}): {p.stderr[-400:]}")
        check(f"{dag}: segments[0].blocks[1]: a block read already (a memo reference to it): "
              "skipped" in p.stderr, f"dag: the repeated block is said: {p.stderr[:400]}")
        check("more entries not as torch writes them, not shown" in p.stderr,
              f"dag: the repeats past the first 20 counted: {p.stderr[-300:]}")
        doc = json.loads(p.stdout) if p.returncode == 0 else {}
        t = tensors_of(doc)
        # one segment, one live block of 512 bytes, one entry: nothing multiplied
        check(t["devices"][0]["end"].get("allocated") == 512,
              f"dag: one block of 512 bytes at the end: {t['devices'][0]['end']}")
    big = generated(tmp, "bigdict", 100000)
    p = run_bounded(exe, "report", big)
    if p:
        no_ub(p, "bigdict")
        first = ([ln for ln in p.stderr.split("\n") if "refused" in ln] or [""])[0]
        check(p.returncode == 3, f"bigdict: refused, exit 3 (got {p.returncode}): {p.stderr[-300:]}")
        check(first.startswith(f"{big}: refused: ") and "lookups" in first and "Limits" in first,
              f"bigdict: one line naming the file, the reason and the documented limit: {first!r}")
        check(p.stdout == "", f"bigdict: no report: {p.stdout[:200]!r}")
    # refused, and nothing else lost: a good snapshot beside it is still reported
    shutil.copy(os.path.join(fx, "history.pickle"), os.path.join(tmp, "zgood.pickle"))
    os.unlink(dag)
    p = run_bounded(exe, "report", "--format", "json", tmp)
    if p:
        check(p.returncode == 0, f"a directory with the refused pickle and a good one: exit {p.returncode}")
        doc = json.loads(p.stdout) if p.stdout.strip() else {}
        check(len(doc.get("processes", [])) == 1, "the good pickle beside it is reported")
    foreign = generated(tmp, "foreign", 30000)
    p = run_bounded(exe, "report", foreign)
    if p:
        no_ub(p, "foreign")
        check(p.returncode in (0, 3), f"foreign: exit {p.returncode}: {p.stderr[-300:]}")
    shutil.rmtree(tmp)


def case_descending(exe, fx):
    tmp = tempfile.mkdtemp(prefix="gmt-snapdesc-")
    n = 600000
    path = generated(tmp, "descending", n)
    p = run_bounded(exe, "report", "--format", "json", path)
    if p:
        no_ub(p, "descending")
        check(p.returncode == 0, f"descending: exit {p.returncode}: {p.stderr[-300:]}")
        end = tensors_of(json.loads(p.stdout) if p.returncode == 0 else {})["devices"][0]["end"]
        check(end.get("allocated") == n * 512 and end.get("segments") == 1,
              f"descending: every block in the one segment at the end: {end}")
    shutil.rmtree(tmp)


def case_ubsan(exe, fx):
    tmp = tempfile.mkdtemp(prefix="gmt-snapubsan-")
    for kind in ("time", "noframes"):
        path = generated(tmp, kind)
        p = run_bounded(exe, "report", "--format", "json", path)
        if p:
            no_ub(p, kind)
            check(p.returncode == 0, f"{kind}: exit {p.returncode}: {p.stderr[-400:]}")
            t = tensors_of(json.loads(p.stdout) if p.returncode == 0 else {})
            want = 2 if kind == "time" else 1
            check(t.get("block_events", 0) >= want, f"{kind}: the entries read: {t.get('block_events')}")
    shutil.rmtree(tmp)


def case_limits(exe, fx):
    tmp = tempfile.mkdtemp(prefix="gmt-snaplimits-")
    paths = [os.path.join(fx, f) for f in sorted(os.listdir(fx)) if f.endswith(".pickle")]
    paths.append(generated(tmp, "legit", 20000))
    for path in paths:
        p = run_bounded(exe, "report", path)
        if p:
            check(p.returncode == 0 and "refused" not in p.stderr,
                  f"{os.path.basename(path)}: read in full (exit {p.returncode}): {p.stderr[-300:]}")
    shutil.rmtree(tmp)


CASES = {"cppframes": case_cppframes, "figures": case_figures, "oom": case_oom, "sites": case_sites, "roundtrip": case_roundtrip,
         "inputs": case_inputs, "bad": case_bad, "hostile": case_hostile,
         "descending": case_descending, "ubsan": case_ubsan, "limits": case_limits}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("case", choices=sorted(CASES))
    a = ap.parse_args()
    CASES[a.case](a.exe, a.fixtures)
    print(f"snapshots {a.case}: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
