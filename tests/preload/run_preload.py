#!/usr/bin/env python3
"""Preload suite: run a victim program on the simulated runtime under the real tracer and check
that the trace says exactly what the program did.

    run_preload.py --build BUILD SCENARIO

The victim prints one JSON line per process with what it did (allocations and frees per API,
failed allocations, leaked bytes, markers). This script reads the trace files, replays them
independently of the CLI, compares, and then asks `gpumemtrace report --format json` the same
questions, so the analyzer is checked against the same ground truth.
"""
import argparse
import glob
import json
import re
import os
import signal
import shutil
import subprocess
import sys
import tempfile
import time

failures = []
runtime = "sim"  # --runtime: the seq-gap check is strict on tests/simcuda, a note on a GPU


# What a terminal would act on: a window title, a colour, an 8-bit CSI, a newline.
HOSTILE = "\x1b]0;pwned\x07\x1b[31mred\u009b2J\nforged"


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")


def load_trace(path):
    """Parse a trace file strictly: every complete line must be valid JSON."""
    recs = []
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    else:
        check(False, f"{path}: last line is torn")
        lines = lines[:-1]
    for n, line in enumerate(lines, 1):
        try:
            recs.append(json.loads(line))
        except ValueError as e:
            check(False, f"{path}:{n}: invalid JSON: {e}")
    return recs


# Kinds whose `ptr` is a handle, not an address (docs/trace-format.md): their own number space.
HANDLE_KINDS = ("vmm_physical", "array")
# Kinds a context's destruction does not release.
SURVIVE_RESET = ("pool", "vmm_reserve", "vmm_physical", "vmm_mapped", "graph")


def key(e):
    """Handles, reservations and mappings are separate number spaces: a mapping starts at the
    address its reservation does, and a handle may equal an address."""
    if e["kind"] in HANDLE_KINDS or e["api"] in ("cuMemImportFromShareableHandle", "cuMemRelease"):
        return ("handle", e["ptr"])
    if e["kind"] in ("vmm_reserve", "vmm_mapped"):
        return (e["kind"], e["ptr"])
    return ("addr", e["ptr"])


def replay(recs):
    """What the trace says happened, replayed independently of the CLI: counts per API and the
    allocations live at the end (docs/trace-format.md semantics, VMM and resets included)."""
    events = sorted((r for r in recs if r["type"] == "event"), key=lambda r: r["seq"])
    seqs = [r["seq"] for r in recs if r["type"] in ("event", "marker")]
    check(len(seqs) == len(set(seqs)), "sequence numbers are unique")
    out = {"allocs": {}, "frees": {}, "failed": 0, "bad_frees": 0, "resets": 0, "twice": 0}
    live = {}   # key -> event
    refs = {}   # vmm handle -> references
    for e in events:
        api, ok = e["api"], e["result"] == 0
        if e["op"] == "alloc":
            if ok:
                out["allocs"][api] = out["allocs"].get(api, 0) + 1
                if key(e) in live:
                    out["twice"] += 1  # recorded twice, or its free was lost
                live[key(e)] = e
                if e["kind"] == "vmm_physical":
                    refs[e["ptr"]] = 1
            else:
                out["failed"] += 1
                check("free_bytes" in e and "total_bytes" in e, "a failed allocation carries the device's free memory")
        elif e["op"] == "retain" and ok:
            refs[e["ptr"]] = refs.get(e["ptr"], 0) + 1
        elif e["op"] == "free":
            if not ok:
                out["bad_frees"] += 1
                continue
            out["frees"][api] = out["frees"].get(api, 0) + 1
            if e["kind"] == "vmm_mapped" and e.get("size"):
                lo, hi = int(e["ptr"], 16), int(e["ptr"], 16) + e["size"]
                for k, a in list(live.items()):
                    if a["kind"] == "vmm_mapped" and lo <= int(a["ptr"], 16) < hi:
                        del live[k]
            elif e["kind"] == "vmm_physical":
                refs[e["ptr"]] = refs.get(e["ptr"], 1) - 1
                if refs[e["ptr"]] <= 0:
                    live.pop(key(e), None)
            else:
                live.pop(key(e), None)
        elif e["op"] == "reset":
            out["resets"] += 1
            for k, a in list(live.items()):
                same_ctx = "context" not in e or "context" not in a or a["context"] == e["context"]
                if a["device"] == e["device"] and a["kind"] not in SURVIVE_RESET and same_ctx:
                    del live[k]
    out["leaked_bytes"] = sum(a["size"] for a in live.values())
    out["leaked_allocations"] = len(live)
    out["markers"] = sum(1 for r in recs if r["type"] == "marker")
    return out


def run_report(build, path):
    exe = os.path.join(build, "tools", "gpumemtrace")
    if not os.path.exists(exe):
        return None
    p = subprocess.run([exe, "report", "--format", "json", path], capture_output=True, text=True)
    check(p.returncode == 0, f"gpumemtrace report exits 0 on {path} (got {p.returncode}: {p.stderr.strip()})")
    # every line carries the seq of its moment: none is applied out of place
    late = [l for l in p.stderr.splitlines() if "applied late" in l]
    check(not late, f"gpumemtrace report applies no line late: {late}")
    try:
        return json.loads(p.stdout)
    except ValueError:
        check(False, f"gpumemtrace report --format json prints JSON (got {p.stdout[:200]!r})")
        return None


def compare(build, did, path, recs, coverage, expect_trailer=True, expect_drops=False, report_leaks=True):
    got = replay(recs)
    header = recs[0]
    check(header["type"] == "header" and header["format"] == "gpumemtrace" and header["version"] == 1,
          f"{path}: starts with a version 1 header")
    check(header["pid"] == did["pid"], f"{path}: header pid {header['pid']} is the process {did['pid']}")
    check(header["coverage"] == coverage, f"{path}: header coverage {header['coverage']!r} == {coverage!r}")
    if not expect_drops:  # a dropped free makes its address look allocated twice
        check(got["twice"] == 0, f"{path}: every allocation is recorded once ({got['twice']} recorded twice)")
        # one seq per recorded call, taken at its moment: none is 0, none is skipped (a seq
        # that no line carries holds the reader's window up); a fork child continues the count
        seqs = sorted(r["seq"] for r in recs if r["type"] in ("event", "marker"))
        check(not seqs or seqs[0] > 0, f"{path}: no seq is 0")
        missing = sorted(set(range(seqs[0], seqs[-1] + 1)) - set(seqs)) if seqs else []
        if runtime == "sim":
            check(not missing, f"{path}: seqs are consecutive ({len(seqs)} lines, missing {missing[:5]})")
        elif missing:  # the real runtime may reach calls the test double does not make
            print(f"note: {path}: {len(missing)} seqs without a line, the first {missing[:5]}")
    trailers = [r for r in recs if r["type"] == "trailer"]
    if expect_trailer:
        check(len(trailers) == 1 and recs[-1]["type"] == "trailer", f"{path}: ends with one trailer")
    else:
        check(not trailers, f"{path}: no trailer (the process did not exit normally)")
    # every line's time is CLOCK_MONOTONIC, as the header's and the trailer's are (the capture
    # side may read another clock, util/clock.h: the writer converts it)
    start, end = header["start_ts"], trailers[0]["ts"] if trailers else None
    timed = [r for r in recs if r["type"] in ("event", "marker") and "ts" in r]
    late = [r["ts"] for r in timed if r["ts"] < start or (end is not None and r["ts"] > end)]
    check(not late, f"{path}: every line's ts within the header's start {start} and the trailer's "
          f"{end} ({len(late)} of {len(timed)} are not, e.g. {late[:3]})")
    dropped = trailers[0]["dropped"] if trailers else 0
    if not expect_drops:
        check(dropped == 0, f"{path}: nothing dropped (dropped={dropped})")
        allocs = {k: v for k, v in did["allocs"].items()}
        frees = {k: v for k, v in did["frees"].items() if k not in ("cudaFree(bad)", "cudaDeviceReset")}
        check(got["allocs"] == allocs, f"{path}: allocations per API {got['allocs']} == {allocs}")
        check(got["frees"] == frees, f"{path}: frees per API {got['frees']} == {frees}")
        check(got["bad_frees"] == did["frees"].get("cudaFree(bad)", 0), f"{path}: failed frees recorded")
        check(got["resets"] == did["frees"].get("cudaDeviceReset", 0), f"{path}: device resets recorded")
        check(got["failed"] == did["failed"], f"{path}: failed allocations {got['failed']} == {did['failed']}")
        check(got["leaked_bytes"] == did["leaked_bytes"],
              f"{path}: live at end {got['leaked_bytes']} bytes == {did['leaked_bytes']}")
        check(got["leaked_allocations"] == did["leaked_allocations"],
              f"{path}: live allocations at end {got['leaked_allocations']} == {did['leaked_allocations']}")
        check(got["markers"] == did["markers"], f"{path}: markers {got['markers']} == {did['markers']}")
    snaps = [r for r in recs if r["type"] == "snapshot"]
    if expect_trailer and not expect_drops and report_leaks:
        # the writer's own live table, in the last snapshot (written after the last event)
        live = snaps[-1]["live"] if snaps else []
        n, b = sum(x["allocations"] for x in live), sum(x["bytes"] for x in live)
        check(snaps and n == did["leaked_allocations"] and b == did["leaked_bytes"],
              f"{path}: the last snapshot's live {n} allocations, {b} bytes == "
              f"{did['leaked_allocations']}, {did['leaked_bytes']}")
    rep = run_report(build, path)
    if rep is not None:
        s = rep["summary"]
        events = sum(1 for r in recs if r["type"] == "event")
        check(s["events"] in (events, events + got["markers"]), f"report: summary.events {s['events']} ({events} events in the file)")
        check(s["dropped"] == dropped, f"report: summary.dropped {s['dropped']} == {dropped}")
        if not expect_drops and report_leaks:
            if expect_trailer:
                check(s["leaked_bytes"] == did["leaked_bytes"],
                      f"report: summary.leaked_bytes {s['leaked_bytes']} == {did['leaked_bytes']}")
                check(s["leaked_allocations"] == did["leaked_allocations"], "report: summary.leaked_allocations")
            else:
                # a process that died has no "leaks at exit": what was live is reported as such
                check(s["leaked_bytes"] == 0 and s["live_at_end_bytes"] == did["leaked_bytes"],
                      f"report: a dead process's live memory is live_at_end_bytes ({s['live_at_end_bytes']}), not leaked")
                check(s["live_at_end_allocations"] == did["leaked_allocations"], "report: summary.live_at_end_allocations")
            check(s["failed_allocations"] == did["failed"], "report: summary.failed_allocations")
    return got, rep


def gpu_count():
    """The GPUs nvidia-smi lists (0 without a GPU or nvidia-smi)."""
    try:
        p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in p.stdout.splitlines() if line.startswith("GPU ")) if p.returncode == 0 else 0


def have_gpu():
    return gpu_count() > 0


ZCAT_BUILD = None  # the build whose tests/preload/gmt-zcat reads .jsonl.zst traces (main)
DEFAULT_COMPRESS = False  # --compress default


def traces_by_pid(outdir):
    """{pid: (path, records)}; a .jsonl.zst trace is decompressed next to a temporary copy and
    its plain path given (the comparisons read and report it)."""
    found = {}
    paths = sorted(glob.glob(os.path.join(outdir, "*.jsonl")) + glob.glob(os.path.join(outdir, "*.jsonl.zst")))
    if DEFAULT_COMPRESS and paths:
        check(all(p.endswith(".jsonl.zst") for p in paths),
              f"the default writes .jsonl.zst traces: {[os.path.basename(p) for p in paths]}")
    for path in paths:
        if path.endswith(".zst"):
            path, _ = zcat(ZCAT_BUILD, path, tempfile.mkdtemp(prefix="gmt-preload-zcat-"))
        recs = load_trace(path)
        if recs:
            found[recs[0]["pid"]] = (path, recs)
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--runtime", choices=["sim", "real"], default="sim",
                    help="sim: tests/simcuda (CPU); real: the CUDA runtime and a GPU (skips without one)")
    ap.add_argument("--victim", help="program to run instead of the preload victim (it prints the same JSON)")
    ap.add_argument("--capture", choices=["cupti", "interpose"], default="cupti",
                    help="cupti: the default path; interpose: GPUMEMTRACE_CUPTI=0 (the fallback)")
    ap.add_argument("--cuda", choices=["13", "12", "11"], default="13",
                    help="which CUDA's doubles (tests/simcuda, cu12/, cu11/) and victim (victim, victim-cu12, ...)")
    ap.add_argument("--libdir", help="with --runtime real: the directory of the CUDA runtime and CUPTI "
                    "(default $CUDA_HOME/lib64; scripts/gpu-check's cuda12/cuda11 groups use Debian's)")
    ap.add_argument("--compress", choices=["none", "default"], default="none",
                    help="none: plain JSON Lines (what the scenarios read); default: the tracer's "
                    "default, zstd (the traces are decompressed to be read)")
    ap.add_argument("scenario")
    args = ap.parse_args()
    if args.runtime == "real" and not have_gpu():
        print("no GPU here: skipped")
        sys.exit(77)
    if args.runtime == "real" and args.scenario == "devices" and gpu_count() < 2:
        print("devices: the real runtime here has one GPU, the scenario needs two: skipped")
        sys.exit(77)
    global runtime
    runtime = args.runtime
    build = os.path.abspath(args.build)
    global ZCAT_BUILD, DEFAULT_COMPRESS
    ZCAT_BUILD = build
    DEFAULT_COMPRESS = args.compress == "default"
    variant = "" if args.cuda == "13" else f"cu{args.cuda}"
    victim = os.path.abspath(args.victim) if args.victim else \
        os.path.join(build, "tests", "preload", "victim" + (f"-{variant}" if variant else ""))
    # what the header must say the process had (NVIDIA's sonames: CUDA 11's runtime is .so.11.0)
    cudart = {"13": "libcudart.so.13", "12": "libcudart.so.12", "11": "libcudart.so.11.0"}[args.cuda]
    cupti = {"13": "libcupti.so.13", "12": "libcupti.so.12", "11": "libcupti.so.11.8"}[args.cuda]
    lib = os.path.join(build, "src", "libgpumemtrace.so")
    sc = args.scenario

    outdir = tempfile.mkdtemp(prefix=f"gmt-preload-{sc}-")
    env = dict(os.environ)
    runtime_dir = os.path.join(build, "tests", "simcuda", variant)
    if args.runtime == "real":
        runtime_dir = args.libdir or os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "lib64")
    env.update({
        "LD_LIBRARY_PATH": runtime_dir,
        "LD_PRELOAD": lib,
        "GPUMEMTRACE_OUTPUT_DIR": outdir,
        "SIMCUDA_MEM_BYTES": "1G",
        "SIMCUDA_DEVICES": "1",
        # the scenarios read the tracer's lines: plain JSON Lines (the compress* ones choose)
        "GPUMEMTRACE_COMPRESS": "none",
    })
    if args.compress == "default":
        del env["GPUMEMTRACE_COMPRESS"]
    coverage = "full"
    if args.capture == "interpose":
        env["GPUMEMTRACE_CUPTI"] = "0"
        coverage = "runtime API only"
    mode = {"exit": "_exit", "sigkill": "hang", "inject": "basic", "cupti-taken": "basic",
            "no-cupti": "basic", "no-cupti-escape": "basic"}.get(sc, sc)
    if sc == "inject":
        # no LD_PRELOAD: the driver (here the simulated runtime) loads us at CUDA initialisation
        del env["LD_PRELOAD"]
        env["CUDA_INJECTION64_PATH"] = lib
    if sc == "cupti-taken":
        env["SIMCUPTI_OTHER_SUBSCRIBER"] = "Nsight Systems"
        coverage = "runtime API only"
    if sc == "no-cupti":
        env["GPUMEMTRACE_CUPTI_LIB"] = os.path.join(outdir, "no", "libcupti.so.13")
        coverage = "runtime API only"
    if sc == "no-cupti-escape":
        # what a terminal acts on: a window title, a colour, an 8-bit CSI, a forged line
        env["GPUMEMTRACE_CUPTI_LIB"] = os.path.join(outdir, HOSTILE, "libcupti.so.13")
        coverage = "runtime API only"
    if sc == "oom":
        env["SIMCUDA_MEM_BYTES"] = "64M"
    if sc == "devices":
        env["SIMCUDA_DEVICES"] = "2"
    if sc == "drops":
        mode = "burst"
        env["GPUMEMTRACE_RING_SLOTS"] = "1024"
    if sc in ("unwritable", "bad-option", "disabled", "no-cuda"):
        mode = "plain"
    if sc == "unwritable":
        env["GPUMEMTRACE_OUTPUT_DIR"] = os.path.join(outdir, "does", "not", "exist")
    if sc == "bad-option":
        env["GPUMEMTRACE_RING_SLOTS"] = "lots"
        env["GPUMEMTRACE_FLUSHMS"] = "10"  # a typo: warned with the name meant
        env["GPUMEMTRACE_SNAPSHOT_MS"] = "9" * 5000  # the warning still names the variable
    if sc == "disabled":
        env["GPUMEMTRACE_ENABLE"] = "0"

    if sc == "help":
        env["GPUMEMTRACE_HELP"] = "1"
        p = subprocess.run(["sh", "-c", "exit 0"], env=env, capture_output=True, text=True, timeout=60)
        for name in ("ENABLE", "OUTPUT_DIR", "RING_SLOTS", "FLUSH_MS", "SNAPSHOT_MS", "HELP"):
            check(f"GPUMEMTRACE_{name} " in p.stderr, f"GPUMEMTRACE_HELP=1 lists GPUMEMTRACE_{name}")
        check(p.returncode == 0, "the program still runs normally")
        return finish()

    if sc == "secure":
        return secure(build, lib, env)
    if sc == "two-copies":
        return two_copies(build, lib, victim, env)
    if sc == "lookups":
        return lookups(build, lib, victim, env)
    if sc == "pool-readings":
        return pool_readings(build, victim, env)
    if sc.startswith("compress"):
        return compress(build, victim, env, sc)
    if sc == "late-calls":
        return late_calls(build, env)
    if sc == "query-bound":
        return query_bound(victim, env)
    if sc == "self-profile":
        return self_profile(victim, env)
    if sc == "runtime-side":
        return runtime_side(build, victim, env)
    if sc == "run-no-gpu":
        return run_no_gpu(build, env)
    if sc == "run-bad-lib":
        return run_bad_lib(build, victim, env)
    if sc == "stderr-gone":
        return stderr_gone(victim, env, outdir)
    if sc == "bench-writer":
        return bench_writer(build, env, outdir)
    if sc == "exec":
        return exec_scenario(build, victim, env, outdir, coverage)
    if sc == "signals":
        return signals_scenario(build, victim, env, outdir, coverage)

    if sc == "no-cuda":
        # A process that never touches GPU memory leaves no file and no output.
        p = subprocess.run(["sh", "-c", "echo hello"], env=env, capture_output=True, text=True, timeout=60)
        check(p.returncode == 0 and p.stdout == "hello\n" and p.stderr == "", "an untouched process runs unchanged")
        check(not glob.glob(os.path.join(outdir, "*")), "a process without CUDA calls writes no trace")
        return finish()

    if sc == "sigkill":
        proc = subprocess.Popen([victim, mode], env=env, stdout=subprocess.PIPE, text=True)
        lines = []
        for line in proc.stdout:
            if line.strip() == "ready":
                break
            lines.append(line)
        time.sleep(0.4)  # > GPUMEMTRACE_FLUSH_MS
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        check(proc.returncode == -signal.SIGKILL, "the victim was killed by SIGKILL")
        stdout, rc, stderr = "".join(lines), 0, ""
    else:
        argv, cwd = [victim, mode], None
        if sc == "closefds":  # the program's own file, outside the trace directory
            own = os.path.join(tempfile.mkdtemp(prefix="gmt-preload-own-"), "own.txt")
            argv.append(own)
            # the trace directory relative to where the program starts (it then changes to /)
            cwd = os.path.dirname(outdir)
            env["GPUMEMTRACE_OUTPUT_DIR"] = os.path.basename(outdir)
        p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, cwd=cwd)
        stdout, rc, stderr = p.stdout, p.returncode, p.stderr
        check(rc == 0, f"victim {mode} exits 0 (got {rc}; stderr: {stderr.strip()})")

    dids = [json.loads(l) for l in stdout.splitlines() if l.startswith("{")]
    check(len(dids) >= 1, "the victim reported what it did")
    traces = traces_by_pid(outdir)

    # Holding CUPTI is announced on every traced process (other profilers lose their GPU view).
    holding = [l for l in stderr.splitlines() if "holding the CUPTI callback API" in l]
    if sc not in ("unwritable", "sigkill"):  # sigkill: stderr is not captured
        check(len(holding) == (1 if coverage == "full" and sc != "disabled" else 0),
              f"one line says we hold CUPTI exactly when we do: {holding}")
    stderr = "\n".join(l for l in stderr.splitlines() if "holding the CUPTI callback API" not in l)

    if sc == "unwritable":
        warnings = [l for l in stderr.splitlines() if "gpumemtrace" in l]
        check(len(warnings) == 1 and "GPUMEMTRACE_OUTPUT_DIR" in warnings[0] and "untraced" in warnings[0],
              f"one warning line names the output dir and says the program runs untraced: {warnings}")
        check(not traces, "no trace written")
        return finish()
    if sc == "bad-option":
        warnings = [l for l in stderr.splitlines() if "gpumemtrace" in l]
        check(len(warnings) == 3, f"one warning per bad variable: {warnings}")
        check(any("GPUMEMTRACE_RING_SLOTS" in w and "default 65536" in w for w in warnings),
              f"a warning names the variable and the default used: {warnings}")
        check(any("'GPUMEMTRACE_FLUSHMS' is ignored" in w and "did you mean GPUMEMTRACE_FLUSH_MS?" in w
                  for w in warnings), f"an unknown variable is named with the closest option: {warnings}")
        long = [w for w in warnings if "SNAPSHOT_MS" in w]
        check(len(long) == 1 and "GPUMEMTRACE_SNAPSHOT_MS" in long[0] and "(5000 bytes)" in long[0]
              and long[0].endswith("using the default 1000") and len(long[0]) < 300,
              f"a 5000-byte value is cut in its warning, the variable's name and the default are not: {long}")
        check(len(traces) == 1 and traces[next(iter(traces))][1][0]["options"]["ring_slots"] == 65536,
              "the trace was written with the default ring size")
    if sc == "disabled":
        check(not traces and stderr == "", "GPUMEMTRACE_ENABLE=0: no trace, no output")
        return finish()

    for did in dids:
        check(did["pid"] in traces, f"process {did['pid']} has a trace file")
        if did["pid"] not in traces:
            continue
        path, recs = traces[did["pid"]]
        got, rep = compare(build, did, path, recs, coverage,
                           expect_trailer=sc != "sigkill",
                           expect_drops=(sc == "drops"),
                           report_leaks=(sc != "vmm"))  # VA reservations are not leaked memory
        header = recs[0]
        if (args.runtime == "sim" or args.cuda != "13") and sc != "inject":
            cuda = header.get("cuda") or {}
            check(cuda.get("runtime") == [cudart], f"{path}: the header names the runtime {cudart}: {cuda}")
            want = cupti if coverage == "full" else None
            check(cuda.get("cupti") == want, f"{path}: the header names the CUPTI in use ({want}): {cuda}")
        if coverage == "full":
            check(header["capture"] == ["cupti"] and header.get("coverage_reason") is None,
                  f"{path}: captured through CUPTI ({header['capture']}, {header.get('coverage_reason')})")
            runtime = [r for r in recs if r["type"] == "event" and r["api"].startswith("cuda") and r["op"] != "reset"]
            check(all(r.get("driver", "").startswith("cu") for r in runtime),
                  f"{path}: every runtime call names the driver call under it")
        else:
            check(header["capture"] == ["interpose"] and header.get("coverage_reason"),
                  f"{path}: the header says why CUPTI was not used ({header.get('coverage_reason')})")
        if sc == "devices":
            # each event's device is the calling thread's current device, by either path (the
            # wrappers ask libcuda's current context, or cudaGetDevice where there is none)
            want = next((l.split()[1:] for l in stdout.splitlines() if l.startswith("alloc-devices")), [])
            free_dev = next((int(l.split()[1]) for l in stdout.splitlines() if l.startswith("free-device")), None)
            ev = [r for r in recs if r["type"] == "event" and r["op"] in ("alloc", "free")
                  and r.get("kind") in ("device", "pool")]
            allocs = [r["device"] for r in ev if r["op"] == "alloc"]
            check(allocs == [int(d) for d in want],
                  f"{path}: the allocations' devices are the program's ({allocs}, want {want})")
            frees = [(r["api"], r["device"]) for r in ev if r["op"] == "free"]
            check(frees == [("cudaFreeAsync", 1), ("cudaFree", free_dev), ("cudaFree", 0)],
                  f"{path}: the frees' devices: on device 1, by a thread's first call "
                  f"(its device {free_dev}), on device 0 ({frees})")
        if sc == "drops":
            trailer = recs[-1]
            events = sum(1 for r in recs if r["type"] == "event" and r["op"] != "usage")
            total = sum(did["allocs"].values()) + sum(did["frees"].values())
            if args.runtime == "sim":
                # simcuda's calls cost tens of ns: 4 threads outrun the writer and the ring fills.
                # On a GPU (real calls ~0.6 us, many cores) the writer may keep up: then nothing
                # is dropped and the exact-count check below covers every event.
                check(trailer["dropped"] > 0, "a 1024-slot ring under a burst drops events")
            else:
                print(f"real runtime: {trailer['dropped']} of {total} events dropped with a 1024-slot ring")
            # usage readings are not calls of the program: a dropped one is counted in `dropped`
            # and again in `dropped_readings`, and the pool is read again at its next allocation
            readings = trailer.get("dropped_readings", 0)
            check(events + trailer["dropped"] - readings == total,
                  f"every event is either written or counted as dropped: {events} + {trailer['dropped']}"
                  f" - {readings} readings == {total}")
            check(0 <= readings <= trailer["dropped"], f"dropped readings are among the drops: {readings}")
            pool = [r for r in recs if r["type"] == "event" and r["op"] == "usage" and r["kind"] == "pool_reserve"]
            if coverage == "full":  # the readings come from CUPTI's driver callbacks
                check(pool, f"the pool's reservation is in the trace ({readings} readings dropped)")
            check(rep is None or rep["summary"]["dropped"] == trailer["dropped"], "the report shows the drops")
        if sc == "sigkill" and rep is not None:
            procs = rep.get("processes", [])
            check(procs and procs[0].get("complete") is False, "the report says the process did not exit normally")
        if sc == "exit":
            # _exit() runs no destructor: the tracer's _exit ends the trace first (capture/ends.c)
            procs = rep.get("processes", []) if rep is not None else []
            check(recs[-1].get("type") == "trailer" and recs[-1].get("reason") == "_exit",
                  f"_exit: the trace ends with a trailer whose reason is _exit ({recs[-1]})")
            check(procs and procs[0].get("complete") is True, "the report reads a whole trace")

    if sc == "fork":
        check(len(dids) == 2 and len(traces) == 2, f"parent and child each have their own file ({len(traces)} files)")
        parent = [d for d in dids if traces.get(d["pid"]) and traces[d["pid"]][1][0]["forked_from"] is None]
        child = [d for d in dids if traces.get(d["pid"]) and traces[d["pid"]][1][0]["forked_from"] is not None]
        check(len(parent) == 1 and len(child) == 1, "the child's header names its traced parent")
        if parent and child:
            check(traces[child[0]["pid"]][1][0]["forked_from"] == parent[0]["pid"], "forked_from is the parent's pid")
    if sc == "basic" and not args.victim:
        # the arguments that matter for later analysis are in the events
        path, recs = traces[dids[0]["pid"]]
        ev = {r["api"]: r for r in recs if r["type"] == "event" and r["op"] == "alloc"}
        check(ev["cudaHostAlloc"].get("flags") == 1 and ev["cudaMallocManaged"].get("flags") == 1,
              "cudaHostAlloc and cudaMallocManaged record their flags argument")
        check(ev["cudaMallocPitch"].get("requested") == 1000 * 10 and ev["cudaMallocPitch"]["size"] >= 1000 * 10,
              "cudaMallocPitch records the requested and the granted size")
        check(ev["cudaMallocFromPoolAsync"].get("pool", "0x0") != "0x0", "cudaMallocFromPoolAsync records its pool")
        check(ev["cudaMallocAsync"]["stream"] != "0x0", "cudaMallocAsync records its stream")
        if args.capture == "interpose":
            check(all(r["stack"] > 0 for r in ev.values()), "every event names its call site")
        # the bad free comes after the last good free and before the "end" marker, by seq
        bad = [r for r in recs if r["type"] == "event" and r["op"] == "free" and r["result"] != 0]
        good = [r["seq"] for r in recs if r["type"] == "event" and r["op"] == "free" and r["result"] == 0]
        end = [r["seq"] for r in recs if r["type"] == "marker" and r["label"] == "end"]
        check(len(bad) == 1 and good and end and max(good) < bad[0]["seq"] < end[0],
              f"the failed free has the seq of its moment: {[b['seq'] for b in bad]} "
              f"after the frees {good} and before the end marker {end}")
    if sc == "cupti-taken":
        reason = traces[dids[0]["pid"]][1][0].get("coverage_reason") or ""
        check("Nsight Systems" in reason and "39" in reason, f"the header names the other subscriber: {reason!r}")
        lines = [l for l in stderr.splitlines() if "gpumemtrace" in l]
        check(len(lines) == 1 and "Nsight Systems" in lines[0] and "runtime API only" in lines[0],
              f"one warning says CUPTI is taken and what is missed: {lines}")
    if sc == "no-cupti-escape":
        raw = [c for c in stderr if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f]
        check(not raw, f"GPUMEMTRACE_CUPTI_LIB and dlerror() reach stderr escaped: {raw!r} in {stderr!r}")
        lines = [l for l in stderr.splitlines() if "gpumemtrace" in l]
        check(len(lines) == 1 and "GPUMEMTRACE_CUPTI_LIB=" in lines[0] and "\\x1b]0;pwned\\x07" in lines[0]
              and "cannot open shared object file" in lines[0],
              f"one warning names the variable, its value escaped, and the loader's reason: {lines}")
        reason = traces[dids[0]["pid"]][1][0].get("coverage_reason") or ""
        check("\x1b" not in reason and "\\x1b" in reason, f"the header's reason is escaped too: {reason!r}")
    if sc == "no-cupti":
        lines = [l for l in stderr.splitlines() if "gpumemtrace" in l]
        check(len(lines) == 1 and "libcupti.so.13" in lines[0] and "GPUMEMTRACE_CUPTI_LIB" in lines[0],
              f"one warning says libcupti could not be loaded and how to point at it: {lines}")
    if sc == "vmm":
        path, recs = traces[dids[0]["pid"]]
        ev = [r for r in recs if r["type"] == "event"]
        maps = [r for r in ev if r["api"] == "cuMemMap"]
        creates = {r["ptr"] for r in ev if r["api"] == "cuMemCreate"}
        check(len(maps) == 2 and all(m.get("handle") in creates for m in maps),
              "each cuMemMap names the handle it maps (one made by cuMemCreate)")
        check(sum(1 for r in ev if r["op"] == "retain") == 1, "cuMemRetainAllocationHandle is a retain")
        unmap = [r for r in ev if r["api"] == "cuMemUnmap"]
        check(len(unmap) == 1 and unmap[0].get("size", 0) > 0, "cuMemUnmap records the range it unmaps")
    if sc == "closefds":
        # the program closed the trace's descriptor and gave every free number to its own file
        with open(own, "rb") as f:
            mine = f.read()
        check(mine == b"the victim's own line\n",
              f"the program's file holds its own line only, no trace bytes ({len(mine)} bytes: {mine[:80]!r})")
        lines = [l for l in stderr.splitlines() if "gpumemtrace" in l]
        check(len(lines) == 1 and "closed the trace file's descriptor" in lines[0]
              and "opened again" in lines[0], f"one line says the trace file was opened again: {lines}")
        # (the events after the close are in the trace: compare() above counted every call)
    if sc == "oom":
        path, recs = traces[dids[0]["pid"]]
        failed = [r for r in recs if r["type"] == "event" and r["result"] != 0 and r["op"] == "alloc"]
        check(len(failed) == 1 and failed[0]["size"] == 32 << 20 and failed[0]["result"] == 2,
              "the failed request is recorded with its size and cudaErrorMemoryAllocation")
        check(failed and failed[0]["free_bytes"] == 32 << 20 and failed[0]["total_bytes"] == 64 << 20,
              "with the device's free memory at that moment (32 MiB free, in pieces)")
    return finish()


def secure(build, lib, env):
    """A setuid-root copy of the victim run as nobody is a secure-execution process (AT_SECURE):
    the loader drops LD_PRELOAD and LD_LIBRARY_PATH, CUDA_INJECTION64_PATH still brings the
    tracer in (simcuda loads it at cuInit, as the driver does), and the tracer must not open the
    files and libraries the invoker's environment names. A control run of the same binary as
    root (not secure) shows that the same environment would be obeyed."""
    import pwd
    import shutil
    import stat
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        nobody = None
    if os.geteuid() != 0 or not shutil.which("setpriv") or nobody is None:
        print("needs root, setpriv and a nobody user to make a setuid program: skipped")
        sys.exit(77)
    top = tempfile.mkdtemp(prefix="gmt-preload-secure-")
    os.chmod(top, 0o755)
    prog = os.path.join(top, "victim_secure")
    shutil.copy(os.path.join(build, "tests", "preload", "victim_secure"), prog)
    os.chmod(prog, 0o4755 | stat.S_IXGRP | stat.S_IXOTH)
    chosen_dir, cwd = os.path.join(top, "chosen"), os.path.join(top, "cwd")
    for d in (chosen_dir, cwd):
        os.mkdir(d)
        os.chmod(d, 0o777)
    evil = os.path.join(build, "tests", "preload", "libgmt_evil.so")
    senv = {"PATH": env.get("PATH", "/usr/bin:/bin"), "CUDA_INJECTION64_PATH": lib,
            "GPUMEMTRACE_OUTPUT_DIR": chosen_dir, "GPUMEMTRACE_CUPTI_LIB": evil,
            "SIMCUDA_MEM_BYTES": "1G", "SIMCUDA_DEVICES": "1"}

    # control: as root the process is not secure, and the environment's choices are followed
    p = subprocess.run([prog, "basic"], env=senv, cwd=cwd, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"control run exits 0 ({p.returncode}: {p.stderr.strip()})")
    check("evil_lib: loaded" in p.stderr, f"control: GPUMEMTRACE_CUPTI_LIB is loaded when not secure: {p.stderr}")
    # (with that "libcupti" nothing is recorded: no LD_PRELOAD, no interposition) and without it
    p = subprocess.run([prog, "basic"], env={k: v for k, v in senv.items() if k != "GPUMEMTRACE_CUPTI_LIB"},
                       cwd=cwd, capture_output=True, text=True, timeout=120)
    check(len(glob.glob(os.path.join(chosen_dir, "*.jsonl.zst"))) == 1 and not os.listdir(cwd),
          f"control: the trace goes to GPUMEMTRACE_OUTPUT_DIR ({os.listdir(chosen_dir)}, {p.stderr.strip()})")
    for f in os.listdir(chosen_dir) + os.listdir(cwd):
        for d in (chosen_dir, cwd):
            if os.path.exists(os.path.join(d, f)):
                os.unlink(os.path.join(d, f))

    p = subprocess.run(["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}",
                        "--clear-groups", "--", prog, "basic"],
                       env=senv, cwd=cwd, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"the setuid victim exits 0 ({p.returncode}: {p.stderr.strip()})")
    lines = [l for l in p.stderr.splitlines() if "gpumemtrace" in l and "holding the CUPTI" not in l]
    check("evil_lib" not in p.stderr, f"a secure process does not load GPUMEMTRACE_CUPTI_LIB: {p.stderr}")
    check(len(lines) == 1 and "secure-execution" in lines[0] and "GPUMEMTRACE_OUTPUT_DIR" in lines[0]
          and "GPUMEMTRACE_CUPTI_LIB" in lines[0], f"one line says which options were ignored: {lines}")
    check(not os.listdir(chosen_dir), "nothing is written to the GPUMEMTRACE_OUTPUT_DIR a secure process was given")
    traces = glob.glob(os.path.join(cwd, "*.jsonl.zst"))  # the default: compressed
    check(len(traces) == 1, f"the trace is in the working directory ({os.listdir(cwd)})")
    dids = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    if len(traces) == 1 and dids:
        st = os.stat(traces[0])
        check(st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o600,
              f"the trace belongs to the privileged user, readable by it only ({oct(st.st_mode)}, uid {st.st_uid})")
        plain, _ = zcat(build, traces[0], tempfile.mkdtemp(prefix="gmt-preload-zcat-"))
        recs = load_trace(plain)
        compare(build, dids[0], plain, recs, "full")
    return finish()


def two_copies(build, lib, victim, env):
    """Two copies of the tracer (two paths, so two objects) in one process: one traces, the
    other says so in one line and stays quiet. Preloaded in either order, the second one
    injected by CUDA, and both dlopen()ed RTLD_LOCAL (the second one's markers forwarded)."""
    import shutil
    top = tempfile.mkdtemp(prefix="gmt-preload-two-")
    other = os.path.join(top, "other", "libgpumemtrace.so")
    os.mkdir(os.path.dirname(other))
    shutil.copy(lib, other)

    def one(what, extra, cmd, markers=None):
        outdir = tempfile.mkdtemp(prefix="out-", dir=top)
        e = dict(env, GPUMEMTRACE_OUTPUT_DIR=outdir)
        e.pop("LD_PRELOAD", None)
        e.update(extra)
        p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=120)
        check(p.returncode == 0, f"{what}: exits 0 ({p.returncode}: {p.stderr.strip()})")
        said = [l for l in p.stderr.splitlines() if "another copy of the tracer" in l]
        check(len(said) == 1 and other in said[0] and lib in said[0] and "stays inactive" in said[0],
              f"{what}: one line names both copies: {p.stderr.strip()}")
        holding = [l for l in p.stderr.splitlines() if "holding the CUPTI" in l]
        check(len(holding) == 1, f"{what}: one copy holds CUPTI ({len(holding)} lines say so)")
        traces = traces_by_pid(outdir)
        check(len(traces) == 1, f"{what}: one trace file ({sorted(os.listdir(outdir))})")
        if len(traces) != 1:
            return
        path, recs = next(iter(traces.values()))
        if markers is not None:
            got = [r["label"] for r in recs if r["type"] == "marker"]
            check(got == markers, f"{what}: the markers of both copies' symbols, once: {got}")
            return
        dids = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
        check(len(dids) == 1 and dids[0]["markers"] == 3, f"{what}: the victim's markers went through")
        if dids:
            compare(build, dids[0], path, recs, "full")  # every event once

    one("the other copy preloaded first", {"LD_PRELOAD": f"{other}:{lib}"}, [victim, "basic"])
    one("the other copy preloaded second", {"LD_PRELOAD": f"{lib}:{other}"}, [victim, "basic"])
    one("the other copy injected by CUDA", {"LD_PRELOAD": lib, "CUDA_INJECTION64_PATH": other},
        [victim, "basic"])
    script = ("import ctypes, os\n"
              "a = ctypes.CDLL(os.environ['GMT_A'])\n"
              "b = ctypes.CDLL(os.environ['GMT_B'])\n"
              "b.gmt_mark(b'from the second copy')\n"
              "a.gmt_mark(b'from the first copy')\n")
    one("two copies dlopen()ed RTLD_LOCAL", {"GMT_A": lib, "GMT_B": other},
        [sys.executable, "-c", script], markers=["from the second copy", "from the first copy"])
    return finish()


def lookups(build, lib, victim, env):
    """A runtime without a function the wrappers query (simcuda has no cudaDeviceGetPCIBusId):
    the tracer looks it up once, not at every allocation (a dlvsym, a dlopen and a dlclose per
    call, in the application's call). Interposition records here; 200,000 events."""
    shim = os.path.join(build, "tests", "preload", "libgmt_lookup_count.so")
    e = dict(env, LD_PRELOAD=f"{shim}:{lib}", GPUMEMTRACE_CUPTI="0")
    p = subprocess.run([victim, "burst"], env=e, capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, f"victim burst exits 0 ({p.returncode}: {p.stderr.strip()[-300:]})")
    counts = [int(l.split(":")[1]) for l in p.stderr.splitlines() if l.startswith("lookup-count:")]
    check(len(counts) == 1, f"the shim reported its count: {p.stderr.strip()[-300:]}")
    if counts:
        # one per runtime function at most (a few threads may race for the first lookup)
        check(counts[0] <= 40, f"runtime functions are looked up once each: {counts[0]} lookups "
              "for 200000 calls")
    traces = traces_by_pid(env["GPUMEMTRACE_OUTPUT_DIR"])
    check(len(traces) == 1, "one trace")
    return finish()


def pool_readings(build, victim, env):
    """Readings of a pool's reservation after its allocations: at most one per millisecond and
    pool (the query is a driver call inside the application's), the allocations every one
    recorded, and the reservation after a pause read exactly (CUPTI path)."""
    p = subprocess.run([victim, "poolburst"], env=env, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"victim poolburst exits 0 ({p.returncode}: {p.stderr.strip()[-300:]})")
    said = [int(l.split(":")[1]) for l in p.stdout.splitlines() if l.startswith("pool-reserved:")]
    dids = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    traces = traces_by_pid(env["GPUMEMTRACE_OUTPUT_DIR"])
    check(len(traces) == 1 and len(said) == 1 and len(dids) == 1, "one trace, the victim's figures")
    if len(traces) != 1 or len(said) != 1 or len(dids) != 1:
        return finish()
    path, recs = next(iter(traces.values()))
    compare(build, dids[0], path, recs, "full")  # every allocation and free once
    events = sorted((r for r in recs if r["type"] == "event"), key=lambda r: r["seq"])
    readings = [r for r in events if r["op"] == "usage" and r["kind"] == "pool_reserve"]
    allocs = [r for r in events if r["op"] == "alloc"]
    # 100 allocations in a burst, each growing the pool: one reading per allocation before
    burst = [r for r in readings if r["seq"] < allocs[-1]["seq"]] if allocs else readings
    check(1 <= len(burst) <= 50, f"the burst's readings are few ({len(burst)} for 100 growing allocations)")
    after = [r for r in readings if allocs and r["seq"] > allocs[-1]["seq"]]
    check(len(after) >= 1 and after[0]["size"] == said[0],
          f"the allocation after the pause reads the pool's reservation {said[0]}: "
          f"{[r['size'] for r in after]}")
    return finish()


def zcat(build, path, outdir):
    """Decompress @path with the reader's module (tests/preload/gmt-zcat) into outdir; returns
    (the plain file's path, the reader's stderr)."""
    out = os.path.join(outdir, os.path.basename(path)[:-len(".zst")])
    with open(out, "wb") as f:
        p = subprocess.run([os.path.join(build, "tests", "preload", "gmt-zcat"), path], stdout=f,
                           stderr=subprocess.PIPE, text=False, timeout=60)
    err = p.stderr.decode(errors="replace")
    check(p.returncode == 0, f"gmt-zcat reads {path} ({p.returncode}: {err.strip()})")
    return out, err


def compress(build, victim, env, sc):
    """GPUMEMTRACE_COMPRESS=zstd (and compress-default: no GPUMEMTRACE_COMPRESS): one .jsonl.zst file whose frames decompress to the trace the
    program made (compared like every scenario's, then reported); killed by SIGKILL after a
    flush, its frames hold every event; without a usable libzstd.so.1, one warning and plain
    JSON Lines."""
    outdir = env["GPUMEMTRACE_OUTPUT_DIR"]
    e = dict(env, GPUMEMTRACE_COMPRESS="zstd")
    if sc == "compress-default":  # no GPUMEMTRACE_COMPRESS at all: the default is zstd
        del e["GPUMEMTRACE_COMPRESS"]
    if sc == "compress-nolib":
        e["LD_LIBRARY_PATH"] = os.path.join(build, "tests", "preload", "nozstd") + ":" + e["LD_LIBRARY_PATH"]
    if sc == "compress-sigkill":
        proc = subprocess.Popen([victim, "hang"], env=e, stdout=subprocess.PIPE, text=True)
        lines = []
        for line in proc.stdout:
            if line.strip() == "ready":
                break
            lines.append(line)
        time.sleep(0.4)  # > GPUMEMTRACE_FLUSH_MS: the events' frame is on disk
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        check(proc.returncode == -signal.SIGKILL, "the victim was killed by SIGKILL")
        stdout, stderr = "".join(lines), ""
    else:
        p = subprocess.run([victim, "basic"], env=e, capture_output=True, text=True, timeout=120)
        check(p.returncode == 0, f"victim exits 0 ({p.returncode}: {p.stderr.strip()[-300:]})")
        stdout, stderr = p.stdout, p.stderr
    dids = [json.loads(l) for l in stdout.splitlines() if l.startswith("{")]
    zst = glob.glob(os.path.join(outdir, "*.jsonl.zst"))
    plain = glob.glob(os.path.join(outdir, "*.jsonl"))
    warnings = [l for l in stderr.splitlines() if "GPUMEMTRACE_COMPRESS" in l]
    if sc == "compress-nolib":
        check(not zst and len(plain) == 1, f"plain JSON Lines without libzstd: {sorted(os.listdir(outdir))}")
        check(len(warnings) == 1 and "writing plain JSON Lines" in warnings[0] and "ZSTD_" in warnings[0],
              f"one warning says why: {warnings}")
        path = plain[0] if plain else None
    else:
        check(len(zst) == 1 and not plain, f"one .jsonl.zst file: {sorted(os.listdir(outdir))}")
        check(not warnings, f"no warning: {warnings}")
        path = None
        if zst:
            with open(zst[0], "rb") as f:
                check(f.read(4) == b"\x28\xb5\x2f\xfd", "the file starts with a zstd frame")
            path, err = zcat(build, zst[0], tempfile.mkdtemp(prefix="gmt-preload-zcat-"))
            frames = [int(l.rsplit(" ", 1)[1]) for l in err.splitlines() if "frames" in l]
            check(frames and frames[0] >= 1, f"complete frames: {err.strip()}")
            check("zread: truncated" not in err and "corrupt" not in err,
                  f"the file ends after a complete frame: {err.strip()}")
            # the Python package's reader (gpumemtrace.tracefile) gives the same lines
            sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
            from gpumemtrace import tracefile
            with open(path, "rb") as f:
                want = f.read().splitlines()
            check(list(tracefile.lines(zst[0])) == want,
                  "gpumemtrace.tracefile.lines() reads the lines gmt-zcat reads")
            cut = os.path.join(tempfile.mkdtemp(prefix="gmt-preload-cut-"), "cut.jsonl.zst")
            with open(zst[0], "rb") as f, open(cut, "wb") as g:
                g.write(f.read()[:-3])  # inside the last frame
            got = list(tracefile.lines(cut))
            check(got and got == want[:len(got)] and len(got) < len(want),
                  f"... and of a file cut inside its last frame, the lines before it ({len(got)} of {len(want)})")
            # `python -m gpumemtrace.tracefile TRACE | head -1`: no BrokenPipeError traceback
            env_py = dict(os.environ, PYTHONPATH=os.path.join(
                os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
            pipe = subprocess.run(
                ["sh", "-c", 'p=$0; shift; "$p" -m gpumemtrace.tracefile "$@" | head -1',
                 sys.executable] + [zst[0]] * 400,  # more than a pipe holds
                env=env_py, capture_output=True, text=True, timeout=120)
            check(pipe.returncode == 0 and pipe.stdout.count("\n") == 1 and
                  not pipe.stderr.strip(),
                  f"tracefile | head ends quietly ({pipe.stderr[-300:]!r})")
    check(len(dids) == 1, "the victim reported what it did")
    if path and dids:
        recs = load_trace(path)
        compare(build, dids[0], path, recs, "full", expect_trailer=(sc != "compress-sigkill"))
    return finish()


def query_bound(victim, env):
    """The driver queries the tracer makes inside the application's calls (a pool's reservation,
    the memory info...) are real driver calls on a GPU, a few hundred ns each: bounded by time
    (a pool's reservation read at most once a millisecond), not one per allocation. Under
    interposition (--capture interpose) each event's device comes from libcuda's current context,
    not from cudaGetDevice (40-55 ns a call on the H100 host, a query here too). The simulated
    driver counts them (SIMCUDA_QUERY_STATS); untraced, the victim makes none."""
    n = 20000
    counts = {}
    for traced in (False, True):
        stats = os.path.join(env["GPUMEMTRACE_OUTPUT_DIR"], "queries-%d.txt" % traced)
        e = dict(env, SIMCUDA_QUERY_STATS=stats)
        if not traced:
            e.pop("LD_PRELOAD", None)
        p = subprocess.run([victim, "asyncpairs", str(n)], env=e, capture_output=True, text=True,
                           timeout=300)
        check(p.returncode == 0, f"asyncpairs exits 0 ({p.returncode}: {p.stderr[-300:]})")
        m = re.search(r"elapsed-ms: ([0-9.]+)", p.stdout)
        q = re.search(r"queries (\d+)", open(stats).read()) if os.path.exists(stats) else None
        check(m and q, f"the victim's time and the query count ({p.stdout!r})")
        if not (m and q):
            return finish()
        counts[traced] = (int(q.group(1)), float(m.group(1)))
    (q0, _), (q1, ms) = counts[False], counts[True]
    # a reading per millisecond for each of the pool's two events (alloc, free), and the
    # start-up's few (bus ids, memory info)
    bound = q0 + 2 * (int(ms) + 1) + 16
    print(f"queries: untraced {q0}, traced {q1} in {ms:.1f} ms (bound {bound})")
    check(q1 <= bound, f"{n} cudaMallocAsync/cudaFreeAsync pairs in {ms:.1f} ms: the tracer made "
                       f"{q1 - q0} queries, at most {bound - q0} allowed (one per "
                       f"allocation would be {n})")
    return finish()


def self_profile(victim, env):
    """GPUMEMTRACE_SELF_PROFILE=FILE (issue 30: where the time inside the application's calls
    goes, per part, in one run on the GPU host): at exit the file holds one JSON object, each
    part with its count and nanoseconds. Its counts are the trace's: one emit and one stamp per
    recorded allocation and free, one stack per allocation, a driver EXIT callback per call.
    Off (the default) no file; an unwritable path costs one warning, never the trace."""
    n = 3000
    out = env["GPUMEMTRACE_OUTPUT_DIR"]
    prof = os.path.join(out, "self.json")
    e = dict(env, GPUMEMTRACE_SELF_PROFILE=prof, GPUMEMTRACE_COMPRESS="none")
    p = subprocess.run([victim, "asyncpairs", str(n)], env=e, capture_output=True, text=True,
                       timeout=300)
    check(p.returncode == 0, f"asyncpairs exits 0 ({p.returncode}: {p.stderr[-300:]})")
    check(os.path.isfile(prof), f"the self-profile {prof} is written at exit")
    if not os.path.isfile(prof):
        return finish()
    with open(prof) as f:
        doc = json.load(f)
    traces = glob.glob(os.path.join(out, "gpumemtrace.*.jsonl"))
    check(len(traces) == 1, f"one trace ({traces})")
    events = [r for r in load_trace(traces[0]) if r["type"] == "event"] if traces else []
    allocs = sum(1 for r in events if r["op"] == "alloc")
    frees = sum(1 for r in events if r["op"] == "free")
    parts = doc.get("parts", {})
    print("self-profile:", {k: (v["count"], round(v["ns"] / max(v["count"], 1), 1))
                            for k, v in parts.items()})
    check(doc.get("self_profile") == 1 and doc.get("threads", 0) >= 1, "the file says what it is")
    check(allocs >= n and frees >= n, f"the trace has the {n} pairs ({allocs} allocs, {frees} frees)")
    for part, want in (("emit", allocs + frees), ("stamp", allocs + frees), ("stack", allocs)):
        got = parts.get(part, {}).get("count")
        check(got == want, f"part {part}: {got} probes, one per recorded event ({want})")
    drv = parts.get("cupti_driver_exit", {}).get("count", 0)
    check(drv >= allocs + frees, f"a driver EXIT callback per call ({drv} >= {allocs + frees})")
    for name, v in parts.items():
        check(0 < v["ns"] < v["count"] * 1e6,
              f"part {name}: {v['ns']} ns over {v['count']} probes is a time, not noise")
    check(0 < doc.get("probe_ns", 0) < 1000, f"the probe's own cost is given ({doc.get('probe_ns')})")

    # off: no file; a path that cannot be written: one warning, the trace whole
    for label, path in (("off", None), ("unwritable", os.path.join(out, "no", "such", "dir", "p.json"))):
        sub = tempfile.mkdtemp(prefix="gmt-selfprof-")
        e = dict(env, GPUMEMTRACE_OUTPUT_DIR=sub, GPUMEMTRACE_COMPRESS="none")
        e.pop("GPUMEMTRACE_SELF_PROFILE", None)
        if path:
            e["GPUMEMTRACE_SELF_PROFILE"] = path
        p = subprocess.run([victim, "asyncpairs", "200"], env=e, capture_output=True, text=True,
                           timeout=300)
        check(p.returncode == 0, f"{label}: exits 0")
        files = os.listdir(sub)
        check(len(files) == 1 and files[0].startswith("gpumemtrace."),
              f"{label}: the trace and nothing else in the output directory ({files})")
        warned = [ln for ln in p.stderr.splitlines() if "SELF_PROFILE" in ln]
        check(len(warned) == (1 if path else 0),
              f"{label}: {'one warning' if path else 'no warning'} about the self-profile ({warned})")
        if files:
            tr = load_trace(os.path.join(sub, files[0]))
            check(any(r["type"] == "trailer" for r in tr), f"{label}: the trace is complete")
    return finish()


def runtime_side(build, victim, env):
    """Who names the runtime call (GPUMEMTRACE_CUPTI_RUNTIME, src/capture/cupti.c "the runtime
    side"). With the wrappers bound (LD_PRELOAD) the default, auto, leaves CUPTI's runtime
    callbacks off for the calls the wrappers see: two callbacks fewer per call (about 140 ns on
    the H200), the same trace. A driver allocation with no runtime call around it (a static
    cudart, a library calling the driver) turns them back on, and the trace is still the same
    as with the callbacks all along. Without LD_PRELOAD (injection only) nothing changes."""
    out = env["GPUMEMTRACE_OUTPUT_DIR"]

    def run(mode, args, inject=False):
        sub = tempfile.mkdtemp(prefix=f"gmt-rtside-{mode}-", dir=out)
        stats = os.path.join(sub, "cupti-stats.txt")
        e = dict(env, GPUMEMTRACE_OUTPUT_DIR=sub, GPUMEMTRACE_COMPRESS="none",
                 GPUMEMTRACE_CUPTI_RUNTIME=mode, SIMCUPTI_STATS=stats)
        if args[0] == "oom":
            e["SIMCUDA_MEM_BYTES"] = "64M"  # as the oom scenario: the victim's requests fail
        if inject:
            e.pop("LD_PRELOAD", None)
            e["CUDA_INJECTION64_PATH"] = env["LD_PRELOAD"]
        p = subprocess.run([victim] + args, env=e, capture_output=True, text=True, timeout=300)
        check(p.returncode == 0, f"{mode} {args}: exits 0 ({p.returncode}: {p.stderr[-300:]})")
        traces = glob.glob(os.path.join(sub, "gpumemtrace.*.jsonl"))
        check(len(traces) == 1, f"{mode} {args}: one trace ({traces})")
        recs = load_trace(traces[0]) if traces else []
        # what a report reads of each event; addresses, times and stack ids differ run to run
        events = [(r["op"], r["api"], r.get("driver"), r.get("kind"), r.get("size"), r.get("result"),
                   r.get("device"), bool(r.get("stack"))) for r in recs if r["type"] == "event"]
        delivered = {}
        if os.path.exists(stats):
            for line in open(stats):
                _, domain, n = line.split()
                delivered[domain] = int(n)
        check("runtime" in delivered, f"{mode} {args}: the CUPTI double counted its callbacks")
        trailer = [r for r in recs if r["type"] == "trailer"]
        check(trailer and trailer[-1]["dropped"] == 0, f"{mode} {args}: nothing dropped")
        frames = {r["id"]: len(r.get("frames", [])) for r in recs if r["type"] == "stack"}
        depth = [frames.get(r.get("stack"), 0) for r in recs if r["type"] == "event" and r["op"] == "alloc"
                 and r.get("stack")]
        # the sites a report shows for the allocations (file:line of the first frame it keeps)
        rep = run_report(build, traces[0]) if traces else None
        sites = sorted((x["api"], x["bytes"], (x.get("site") or {}).get("file"), (x.get("site") or {}).get("line"))
                       for x in (rep or {}).get("peak_sites", []))
        runs[mode, tuple(args)] = (depth, sites)
        return events, delivered.get("runtime", -1), delivered.get("driver", -1)

    runs = {}

    n = 400
    for args in (["asyncpairs", str(n)], ["basic"], ["oom"], ["reset"], ["vmm"], ["driverfirst"]):
        ev_cb, rt_cb, drv_cb = run("callbacks", args)
        ev_auto, rt_auto, drv_auto = run("auto", args)
        print(f"{' '.join(args)}: {len(ev_cb)} events; runtime callbacks delivered: "
              f"callbacks {rt_cb}, auto {rt_auto}; driver callbacks {drv_cb} / {drv_auto}")
        check(ev_auto == ev_cb, f"{args}: auto records what the runtime callbacks do "
              f"({len(ev_auto)} vs {len(ev_cb)} events; first difference: "
              f"{next((a, b) for a, b in zip(ev_auto + [None], ev_cb + [None]) if a != b) if ev_auto != ev_cb else None})")
        check(drv_auto == drv_cb, f"{args}: the same driver callbacks ({drv_auto} vs {drv_cb})")
        (d_cb, sites_cb), (d_auto, sites_auto) = runs["callbacks", tuple(args)], runs["auto", tuple(args)]
        check(sites_auto == sites_cb and (sites_cb or args[0] == "reset"),
              f"{args}: the report's sites are the same ({sites_auto[:2]} vs {sites_cb[:2]})")
        if args[0] in ("asyncpairs", "basic"):
            # the wrappers take an allocation's stack before the real call: none of the
            # callback's, CUPTI's, the driver's or cudart's frames to unwind and store
            check(d_auto and max(d_auto) < min(d_cb),
                  f"{args}: the stacks start at the program (frames: auto {max(d_auto or [0])}, "
                  f"callbacks {min(d_cb or [0])})")
        if args[0] == "asyncpairs":
            check(rt_cb >= 4 * n, f"callbacks: two runtime callbacks per call ({rt_cb} for {2 * n} calls)")
            check(rt_auto == 0, f"auto: no runtime callback for the wrapped calls ({rt_auto})")
            named = sum(1 for e in ev_auto if e[0] in ("alloc", "free")
                        and e[1] in ("cudaMallocAsync", "cudaFreeAsync")
                        and e[2] in ("cuMemAllocAsync", "cuMemFreeAsync"))
            check(named == 2 * n, f"auto: every pair named by the runtime call over the driver's ({named})")
        if args[0] == "vmm":
            # the driver's VMM calls (PyTorch's expandable segments make them) are no runtime's:
            # they leave the runtime callbacks off
            check(rt_auto == 0, f"vmm: the driver's own VMM calls keep the runtime callbacks off ({rt_auto})")
        if args[0] == "driverfirst":
            # 3 pairs before the driver's own allocation, 20 rounds of 4 calls after it
            check(0 < rt_auto and rt_auto >= 2 * 80 and rt_auto < rt_cb,
                  f"auto: the runtime callbacks came back on after the unwrapped driver call "
                  f"({rt_auto} delivered, {rt_cb} with them on from the start)")
    # a program that reaches cudart only past the wrappers (ctypes looks its functions up in
    # libcudart itself, as dlsym on a dlopen()ed handle does): it makes no wrapped call, so the
    # writer turns the runtime callbacks back on; after a pause, its calls are named by them
    script = (PY_PAIRS + "import time\n"
              "pairs(10)\n"
              "time.sleep(0.3)\n"
              "pairs(10)\n")
    q, traces, recs, events = python_traced(build, dict(env, GPUMEMTRACE_COMPRESS="none"), out,
                                            script)
    later = [(e["api"], e.get("driver")) for e in events[-20:]]
    check(q.returncode == 0 and len(events) == 40 and
          later == [("cudaMalloc", "cuMemAlloc_v2"), ("cudaFree", "cuMemFree_v2")] * 10,
          f"cudart reached past the wrappers (ctypes): after a pause its calls are named by the "
          f"runtime call ({len(events)} events, the last 20: {later[:4]}...)")
    # the option's other values; injection only (no wrappers bound): the callbacks, as always
    ev_off, rt_off, _ = run("off", ["asyncpairs", "50"])
    check(rt_off == 0 and all(e[2] is None and e[1].startswith("cu") for e in ev_off if e[0] in ("alloc", "free")),
          f"off: driver names only, no runtime callback ({rt_off}; {ev_off[:2]})")
    ev_inj, rt_inj, _ = run("auto", ["asyncpairs", "50"], inject=True)
    check(rt_inj >= 200, f"injection only: the runtime callbacks name the calls ({rt_inj} delivered)")
    check(sum(1 for e in ev_inj if e[0] == "alloc" and e[1] == "cudaMallocAsync") == 50,
          "injection only: runtime names")
    sub = tempfile.mkdtemp(prefix="gmt-rtside-bad-", dir=out)
    p = subprocess.run([victim, "asyncpairs", "10"], capture_output=True, text=True, timeout=300,
                       env=dict(env, GPUMEMTRACE_OUTPUT_DIR=sub, GPUMEMTRACE_CUPTI_RUNTIME="sometimes"))
    warned = [ln for ln in p.stderr.splitlines() if "CUPTI_RUNTIME" in ln]
    check(p.returncode == 0 and len(warned) == 1 and "'sometimes'" in warned[0] or
          (len(warned) == 1 and "sometimes" in warned[0]),
          f"a bad value: one warning naming it, and the program runs ({warned})")
    return finish()


def late_calls(build, env):
    """Calls made after the trailer (issue 28 item 2): victim_late's 1000 frees come from a
    library's destructor that runs after the tracer's, once its trailer is written. They were
    counted nowhere (the report said 1000 allocations leaked, 0 dropped); the trailer counts them
    as dropped (the writer had stopped), so the report and check say the trace is incomplete.
    Plain and zstd (the trailer is then a frame of its own, written again)."""
    n = 1000
    cli = os.path.join(build, "tools", "gpumemtrace")
    for compress in ("none", "zstd"):
        outdir = tempfile.mkdtemp(prefix=f"gmt-late-{compress}-")
        p = subprocess.run([os.path.join(build, "tests", "preload", "victim_late"), str(n)],
                           env=dict(env, GPUMEMTRACE_OUTPUT_DIR=outdir, GPUMEMTRACE_COMPRESS=compress),
                           capture_output=True, text=True, timeout=120)
        check(p.returncode == 0, f"{compress}: victim_late exits 0 ({p.returncode}: {p.stderr.strip()})")
        files = glob.glob(os.path.join(outdir, "gpumemtrace.*"))
        check(len(files) == 1, f"{compress}: one trace ({files})")
        if len(files) != 1:
            continue
        path = files[0]
        plain = path
        if compress == "zstd":
            check(path.endswith(".zst"), f"a zstd trace: {path}")
            plain, err = zcat(build, path, tempfile.mkdtemp(prefix="gmt-late-plain-"))
            check("truncated" not in err and "corrupt" not in err and "garbage" not in err,
                  f"zstd: the frames read cleanly ({err.strip()})")
        recs = load_trace(plain)
        tr = [r for r in recs if r["type"] == "trailer"]
        check(len(tr) == 1 and recs and recs[-1]["type"] == "trailer",
              f"{compress}: one trailer, the last line")
        events = [r for r in recs if r["type"] == "event"]
        frees = sum(1 for r in events if r["op"] == "free")
        dropped = tr[0]["dropped"] if tr else 0
        check(len(events) + dropped == 2 * n,
              f"{compress}: every call is in the trace or counted: {len(events)} events + "
              f"{dropped} dropped = {2 * n}")
        check(frees + dropped >= n, f"{compress}: the {n} frees at teardown are written or "
                                    f"counted ({frees} + {dropped})")
        rep = subprocess.run([cli, "report", path], capture_output=True, text=True, timeout=120)
        check(rep.returncode == 0 and dropped > 0 and f"{dropped} dropped" in rep.stdout and
              "incomplete" in rep.stdout,
              f"{compress}: the report says events are missing: {rep.stdout[:400]} {rep.stderr[:400]}")
        chk = subprocess.run([cli, "check", "--max-leaked-bytes", "0", path], capture_output=True,
                             text=True, timeout=120)
        check(chk.returncode != 0 and "drop" in chk.stdout,
              f"{compress}: check does not pass the trace as clean: {chk.returncode} {chk.stdout[:400]}")
    return finish()


def run_cli(build, args, env, cwd=None):
    e = {k: v for k, v in env.items() if k not in ("LD_PRELOAD", "GPUMEMTRACE_OUTPUT_DIR")}
    return subprocess.run([os.path.join(build, "tools", "gpumemtrace"), "run"] + args, env=e,
                          cwd=cwd, capture_output=True, text=True, timeout=120)


def run_no_gpu(build, env):
    """`gpumemtrace run` of a program that makes no GPU call leaves no empty output directory:
    -o DIR (with parents it made), the default gpumemtrace-DATE directory; a directory that
    existed before, or that the program put a file in, stays."""
    work = tempfile.mkdtemp(prefix="gmt-run-no-gpu-")
    for args, gone in ((["-o", "out"], "out"), (["-o", "a/b/c/"], "a"), ([], None)):
        p = run_cli(build, args + ["--", "true"], env, cwd=work)
        check(p.returncode == 0, f"run {args} -- true exits 0 ({p.returncode}: {p.stderr.strip()})")
        check("no trace was written" in p.stderr and "the empty directory was removed" in p.stderr,
              f"run {args}: says no trace was written and the empty directory was removed: {p.stderr.strip()}")
        check(os.listdir(work) == [], f"run {args} -- true leaves nothing in the working directory: "
                                      f"{os.listdir(work)}")
    os.mkdir(os.path.join(work, "there"))
    p = run_cli(build, ["-o", "there/new", "--", "true"], env, cwd=work)
    check(p.returncode == 0 and os.listdir(work) == ["there"] and os.listdir(os.path.join(work, "there")) == [],
          f"a parent that existed stays, the directory made for the run goes ({os.listdir(work)})")
    p = run_cli(build, ["-o", "kept", "--", "sh", "-c", "touch kept/note"], env, cwd=work)
    check(p.returncode == 0 and os.listdir(os.path.join(work, "kept")) == ["note"],
          "a directory the program wrote into stays")
    check("the empty directory was removed" not in p.stderr, f"and is not said removed: {p.stderr.strip()}")
    shutil.rmtree(work, ignore_errors=True)
    return finish()


def run_bad_lib(build, victim, env):
    """`gpumemtrace run` with a GPUMEMTRACE_LIB that is not the tracer (a text file, a directory,
    another shared library, a FIFO) refuses to start the program: exit 2, one line naming the
    variable, the file and what is wrong; the real tracer still runs the program."""
    work = tempfile.mkdtemp(prefix="gmt-run-bad-lib-")
    fifo = os.path.join(work, "fifo.so")
    os.mkfifo(fifo)
    libc = ctypes_libc_path()
    for lib, why in (("/etc/passwd", "not an ELF file"), (work, "not a regular file"),
                     (fifo, "not a regular file"), (libc, "does not define gmt_mark"),
                     (os.path.join(work, "missing.so"), "No such file or directory")):
        p = run_cli(build, ["-o", os.path.join(work, "out"), "--", "sh", "-c", "echo RAN"],
                    dict(env, GPUMEMTRACE_LIB=lib), cwd=work)
        check(p.returncode == 2, f"GPUMEMTRACE_LIB={lib}: run exits 2 ({p.returncode}: {p.stderr.strip()})")
        check("RAN" not in p.stdout, f"GPUMEMTRACE_LIB={lib}: the program is not run untraced")
        check(f"GPUMEMTRACE_LIB={lib}: " in p.stderr and why in p.stderr,
              f"GPUMEMTRACE_LIB={lib}: the message names it and says '{why}': {p.stderr.strip()}")
        check("no GPU memory call" not in p.stderr, "not 'no GPU memory call'")
    lib = os.path.join(build, "src", "libgpumemtrace.so")
    p = run_cli(build, ["-o", os.path.join(work, "good"), "--", victim, "basic"],
                dict(env, GPUMEMTRACE_LIB=lib), cwd=work)
    check(p.returncode == 0 and "1 trace file in" in p.stderr,
          f"the tracer library itself is accepted ({p.returncode}: {p.stderr.strip()[-500:]})")
    shutil.rmtree(work, ignore_errors=True)
    return finish()


def plain_traces(build, d):
    """The trace files in @d, shortest name first (NAME before NAME.1), a compressed one
    decompressed with the reader's module (its plain copy's path in its place)."""
    paths = sorted(glob.glob(os.path.join(d, "*.jsonl")) + glob.glob(os.path.join(d, "*.jsonl.zst")),
                   key=lambda x: (len(x), x))
    return [zcat(build, x, tempfile.mkdtemp(prefix="gmt-preload-zcat-"))[0] if x.endswith(".zst") else x
            for x in paths]


# The start of the Python programs these scenarios run: libcudart's own functions through ctypes
# (past the interposed wrappers: CUPTI sees them) and pairs(n, size) of cudaMalloc + cudaFree.
PY_PAIRS = ("import ctypes\n"
            "rt = ctypes.CDLL('libcudart.so.13')\n"
            "p = ctypes.c_void_p()\n"
            "def pairs(n, size=4096):\n"
            "    for _ in range(n):\n"
            "        assert rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(size)) == 0\n"
            "        assert rt.cudaFree(p) == 0\n")


def python_traced(build, env, outdir, script):
    """Run a Python script under the tracer into a directory of its own: (the process, its
    traces, the only one's lines (none unless exactly one), its allocations and frees)."""
    d = tempfile.mkdtemp(prefix="gmt-preload-py-", dir=outdir)
    p = subprocess.run([sys.executable, "-c", script], env=dict(env, GPUMEMTRACE_OUTPUT_DIR=d),
                       capture_output=True, text=True, timeout=300)
    traces = plain_traces(build, d)
    recs = load_trace(traces[0]) if len(traces) == 1 else []
    events = [r for r in recs if r.get("type") == "event" and r.get("op") in ("alloc", "free")]
    return p, traces, recs, events


def exec_scenario(build, victim, env, outdir, coverage):
    """exec: the victim execs itself (the same pid) after its allocations; then a Python program
    whose subprocesses exec from a vfork child (CPython's subprocess), between its own calls."""
    p = subprocess.run([victim, "exec"], env=env, capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, f"victim exec exits 0 (got {p.returncode}: {p.stderr.strip()[-300:]})")
    dids = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    check(len(dids) == 2 and dids[0]["pid"] == dids[1]["pid"],
          f"both images said what they did, under one pid: {[d['pid'] for d in dids]}")
    # NAME, then NAME.1 (the same pid)
    paths = plain_traces(build, outdir)
    check(len(paths) == 2, f"one trace per image ({[os.path.basename(x) for x in paths]})")
    if len(dids) == 2 and len(paths) == 2:
        for did, path, reason in zip(dids, paths, ("exec", "exit")):
            recs = load_trace(path)
            compare(build, did, path, recs, coverage)
            check(recs and recs[-1].get("type") == "trailer" and recs[-1].get("reason") == reason
                  and recs[-1].get("dropped") == 0,
                  f"{os.path.basename(path)}: the trailer says {reason}, nothing dropped "
                  f"({recs[-1] if recs else None})")
    # a vfork child shares the parent's memory and its tracer: its exec must not end the
    # parent's trace (through CUPTI: ctypes finds libcudart's own cudaMalloc, which no
    # interposer sees)
    if coverage != "full":
        return finish()
    script = (PY_PAIRS + "import subprocess\n"
              "pairs(50, 4096)\n"
              "subprocess.run(['true'], check=True)\n"
              "subprocess.run(['sh', '-c', 'exit 0'], check=True)\n"
              "pairs(50, 8192)\n")
    p, traces, recs, events = python_traced(build, env, outdir, script)
    check(p.returncode == 0, f"python with subprocesses exits 0 ({p.stderr.strip()[-300:]})")
    check(len(traces) == 1 and recs[-1].get("reason") == "exit" and recs[-1].get("dropped") == 0
          and len(events) == 200,
          f"the parent's trace goes on past its subprocesses' execs: one trace, 200 events, "
          f"ended at exit ({len(traces)} traces, {len(events)} events, {recs[-1] if recs else None})")
    check("failed" not in p.stderr, f"no exec is said to have failed: {p.stderr.strip()[-300:]}")
    # execs that cannot succeed (a tool that is not installed, tried through PATH by Python's
    # os.execvp, one os.execv per directory; a path that is not there; a file that is not
    # executable) fail as they would, and the trace goes on: the program carries on without
    script = (PY_PAIRS + "import os, tempfile\n"
              "plain = tempfile.NamedTemporaryFile(prefix='gmt-not-executable-')\n"
              "os.chmod(plain.name, 0o644)\n"
              "pairs(50, 4096)\n"
              "for f, a in ((os.execvp, 'gmt-no-such-tool'), (os.execv, '/nonexistent/tool'),\n"
              "             (os.execv, plain.name), (os.execvp, '')):\n"
              "    try:\n"
              "        f(a, [a or 'x'])\n"
              "    except OSError:\n"
              "        pass\n"
              "    else:\n"
              "        raise SystemExit('exec of %r returned' % a)\n"
              "pairs(50, 8192)\n")
    p, traces, recs, events = python_traced(build, env, outdir, script)
    check(p.returncode == 0 and len(traces) == 1 and recs[-1].get("reason") == "exit"
          and recs[-1].get("dropped") == 0 and len(events) == 200,
          f"execs that cannot succeed leave the trace running: one trace, 200 events, ended "
          f"at exit (exit {p.returncode}, {len(traces)} traces, {len(events)} events, "
          f"{recs[-1] if recs else None}) {p.stderr.strip()[-300:]}")
    check("failed" not in p.stderr, f"no exec is said to have failed: {p.stderr.strip()[-300:]}")
    # os._exit at the end of a script (skipping a slow teardown), after a forked worker that
    # _exits too (multiprocessing's fork: the child's _exit ends nothing of the parent's)
    script = (PY_PAIRS + "import os, multiprocessing as mp\n"
              "pairs(100)\n"
              "w = mp.get_context('fork').Process(target=print, args=('worker',))\n"
              "w.start(); w.join()\n"
              "assert rt.cudaMalloc(ctypes.byref(p), 1 << 20) == 0\n"
              "os._exit(0)\n")
    p, traces, recs, events = python_traced(build, env, outdir, script)
    check(p.returncode == 0 and len(traces) == 1 and recs[-1].get("reason") == "_exit"
          and recs[-1].get("dropped") == 0 and len(events) == 201,
          f"os._exit: the whole trace, ended by _exit (exit {p.returncode}, {len(traces)} traces, "
          f"{len(events)} events, {recs[-1] if recs else None})")
    return finish()


def ended_by_signal(build, did, path, coverage, name):
    """The trace of a process @name ended: every call in it, the trailer's reason the signal's
    name, and the report's verdict: ended by it, what was live not leaks."""
    recs = load_trace(path)
    _, rep = compare(build, did, path, recs, coverage, report_leaks=False)
    check(recs and recs[-1].get("type") == "trailer" and recs[-1].get("reason") == name
          and recs[-1].get("dropped") == 0,
          f"{os.path.basename(path)}: the trailer says {name}, nothing dropped "
          f"({recs[-1] if recs else None})")
    if rep:
        pr, s = rep["processes"][0], rep["summary"]
        check(pr.get("ended_by") == name and pr.get("complete") is False,
              f"report: processes[0] ended_by {pr.get('ended_by')!r}, complete "
              f"{pr.get('complete')!r}")
        check(s["leaked_bytes"] == 0 and s["live_at_end_bytes"] == did["leaked_bytes"],
              f"report: what was live is live_at_end_bytes ({s['live_at_end_bytes']}), not leaked")
    exe = os.path.join(build, "tools", "gpumemtrace")
    p = subprocess.run([exe, "report", path], capture_output=True, text=True, timeout=120)
    check(f"was ended by {name} at" in p.stdout,
          f"report text: the process 'was ended by {name}' ({p.stdout[:300]!r})")
    p = subprocess.run([exe, "check", "--max-leaked-bytes", "1G", path], capture_output=True,
                       text=True, timeout=120)
    check(p.returncode == 1 and f"did not exit normally (ended by {name})" in p.stdout,
          f"check: complete-traces fails, naming {name} (exit {p.returncode}: {p.stdout[-300:]!r})")
    p = subprocess.run([exe, "live", "--once", path], capture_output=True, text=True, timeout=120)
    check(p.returncode == 0 and "1 trace, 0 running" in p.stdout and f" {name} " in p.stdout,
          f"live --once: not running, its state {name} ({p.stdout[-400:]!r})")


def signals_scenario(build, victim, env, outdir, coverage):
    """signals: a process ended by a signal whose default action ends it (abort after a failed
    allocation, a segfault, SIGTERM raised or sent at once by a scheduler, Ctrl-C, a hangup):
    the trace holds every call, the failed allocation too, and ends with the signal's name; the
    process dies of the same signal. Before, nothing flushed was lost: a short run left no file."""
    # chain-term: a handler installed after ours calls it as the one before it (crash
    # reporters, language runtimes): the process must still die of the signal, not loop
    cases = [("abort", "SIGABRT"), ("segv", "SIGSEGV"), ("term", "SIGTERM"),
             ("chain-term", "SIGTERM")]
    for how, name in cases:
        d = tempfile.mkdtemp(prefix=f"gmt-preload-die-{how}-", dir=outdir)
        p = subprocess.run([victim, "die", how], env=dict(env, GPUMEMTRACE_OUTPUT_DIR=d),
                           capture_output=True, text=True, timeout=120)
        sig = getattr(signal, name)
        check(p.returncode == -sig, f"victim die {how}: dies of {name} as untraced "
              f"(exit {p.returncode}: {p.stderr.strip()[-300:]})")
        dids = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
        paths = plain_traces(build, d)
        check(len(dids) == 1 and len(paths) == 1, f"victim die {how}: one trace "
              f"({[os.path.basename(x) for x in paths]})")
        if len(dids) == 1 and len(paths) == 1:
            ended_by_signal(build, dids[0], paths[0], coverage, name)
    # sent from outside as soon as the program says it is ready (before a flush is due)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        d = tempfile.mkdtemp(prefix="gmt-preload-sent-", dir=outdir)
        proc = subprocess.Popen([victim, "hang"], env=dict(env, GPUMEMTRACE_OUTPUT_DIR=d),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = []
        for line in proc.stdout:
            if line.strip() == "ready":
                break
            lines.append(line)
        proc.send_signal(sig)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        check(proc.returncode == -sig, f"victim hang: {sig.name} ends it (exit {proc.returncode})")
        dids = [json.loads(l) for l in lines if l.startswith("{")]
        paths = plain_traces(build, d)
        check(len(dids) == 1 and len(paths) == 1, f"{sig.name}: one trace")
        if len(dids) == 1 and len(paths) == 1:
            ended_by_signal(build, dids[0], paths[0], coverage, sig.name)
    # SIGTERM while another thread is inside its CUDA calls: ended, no hang
    d = tempfile.mkdtemp(prefix="gmt-preload-die-thread-", dir=outdir)
    p = subprocess.run([victim, "die", "thread-term"], env=dict(env, GPUMEMTRACE_OUTPUT_DIR=d),
                       capture_output=True, text=True, timeout=120)
    paths = plain_traces(build, d)
    recs = load_trace(paths[0]) if len(paths) == 1 else []
    check(p.returncode == -signal.SIGTERM and recs and recs[-1].get("reason") == "SIGTERM",
          f"SIGTERM while a thread is in its CUDA calls: dies of it, the trace ended by it "
          f"(exit {p.returncode}, {recs[-1] if recs else None})")
    if coverage != "full":  # ctypes reaches libcudart's own functions: CUPTI sees them
        return finish()
    # a Python program: SIGTERM's default (Python leaves it), and a handler of its own
    script = (PY_PAIRS + "import os, signal, sys\n"
              "if sys.argv[1:] == ['own']:\n"
              "    signal.signal(signal.SIGTERM, lambda *a: sys.exit(3))\n"
              "pairs(100)\n"
              "os.kill(os.getpid(), signal.SIGTERM)\n"
              "signal.pause()\n")
    p, traces, recs, events = python_traced(build, env, outdir, script)
    check(p.returncode == -signal.SIGTERM and len(traces) == 1 and len(events) == 200
          and recs[-1].get("reason") == "SIGTERM",
          f"python killed by SIGTERM: 200 events, ended by SIGTERM (exit {p.returncode}, "
          f"{len(events)} events, {recs[-1] if recs else None})")
    d = tempfile.mkdtemp(prefix="gmt-preload-py-own-", dir=outdir)
    q = subprocess.run([sys.executable, "-c", script, "own"],
                       env=dict(env, GPUMEMTRACE_OUTPUT_DIR=d), capture_output=True, text=True,
                       timeout=300)
    paths = plain_traces(build, d)
    recs = load_trace(paths[0]) if len(paths) == 1 else []
    check(q.returncode == 3 and recs and recs[-1].get("reason") == "exit",
          f"a program's own SIGTERM handler is left alone: it exits 3, the trace ends at exit "
          f"(exit {q.returncode}, {recs[-1] if recs else None})")
    return finish()


def stderr_gone(victim, env, outdir):
    """A C program (SIGPIPE at its default: it ends the process) whose standard error is a pipe
    nobody reads any more: the tracer's lines there must not kill it (untraced it writes nothing
    there and exits 0), and its trace is complete."""
    for mode in ("plain", "basic"):
        d = tempfile.mkdtemp(prefix="gmt-preload-stderr-gone-", dir=outdir)
        r, w = os.pipe()
        os.close(r)  # the reader is gone before the program starts
        try:
            p = subprocess.run([victim, mode], env=dict(env, GPUMEMTRACE_OUTPUT_DIR=d), stderr=w,
                               stdout=subprocess.PIPE, text=True, timeout=300, restore_signals=True)
        finally:
            os.close(w)
        check(p.returncode == 0, f"victim {mode}, its stderr a pipe with no reader: exits 0 "
              f"(got {p.returncode}; -13 is SIGPIPE)")
        traces = traces_by_pid(d)
        dids = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
        check(len(dids) == 1 and dids[0]["pid"] in traces
              and traces[dids[0]["pid"]][1][-1].get("type") == "trailer",
              f"victim {mode}: its trace is complete ({sorted(traces)})")
    return finish()


def bench_writer(build, env, outdir):
    """The benchmarks' writer hold (gmt_bench_writer(), bench/run_torch_async_inprocess.py
    --held): while held nothing recorded reaches the file, though the writer flushes every 10 ms,
    not even across a dlclose (its barrier waits out its 100 ms bound, api.c says so); released,
    the ring is emptied before the call returns and its events reach the file; at exit the trace
    has every event and drops none."""
    script = PY_PAIRS + (
        "import _ctypes, glob, json, os, sys, time\n"
        "d = os.environ['GPUMEMTRACE_OUTPUT_DIR']\n"
        "def in_file():\n"
        "    n = 0\n"
        "    for f in glob.glob(os.path.join(d, '*.jsonl')):\n"
        "        for line in open(f):\n"
        "            n += line.startswith('{\"type\":\"event\"') and line.endswith('\\n')\n"
        "    return n\n"
        "def wait_for(n):  # a loaded machine may run the writer late: up to 10 s\n"
        "    end = time.monotonic() + 10\n"
        "    while in_file() < n and time.monotonic() < end:\n"
        "        time.sleep(0.02)\n"
        "    return in_file()\n"
        "pairs(1)\n"
        "me = ctypes.CDLL(None)\n"
        "w = me.gmt_bench_writer\n"
        "w.argtypes, w.restype = [ctypes.c_int], ctypes.c_int\n"
        "before = wait_for(2)\n"
        "w(0)\n"
        "pairs(200)\n"
        "time.sleep(0.3)\n"
        "held = in_file()\n"
        "h = ctypes.CDLL('libm.so.6')._handle\n"
        "_ctypes.dlclose(h)\n"
        "time.sleep(0.2)\n"
        "after_dlclose = in_file()\n"
        "pairs(100)\n"
        "released = w(1)\n"
        "after_release = wait_for(602)\n"
        "print(json.dumps({'before': before, 'held': held, 'after_dlclose': after_dlclose,\n"
        "                  'released': released, 'after_release': after_release}))\n")
    d = tempfile.mkdtemp(prefix="gmt-preload-bench-writer-", dir=outdir)
    p = subprocess.run([sys.executable, "-c", script],
                       env=dict(env, GPUMEMTRACE_OUTPUT_DIR=d, GPUMEMTRACE_FLUSH_MS="10"),
                       capture_output=True, text=True, timeout=300)
    out = [l for l in p.stdout.splitlines() if l.startswith("{")]
    doc = json.loads(out[-1]) if out else {}
    check(p.returncode == 0 and doc, f"the program runs (exit {p.returncode}): {p.stderr[-600:]}")
    if not doc:
        return finish()
    check(doc["before"] == 2, f"before the hold, the first pair is in the file ({doc})")
    check(doc["held"] == doc["before"],
          f"held: none of the 400 events since reaches the file in 300 ms ({doc})")
    check(doc["after_dlclose"] == doc["before"],
          f"a dlclose does not let the held events out: the hold is the benchmark's ({doc})")
    check(doc["released"] == 1 and doc["after_release"] == 602,
          f"released, the ring is emptied before the call returns, all 600 in the file ({doc})")
    traces = plain_traces(build, d)
    recs = load_trace(traces[0]) if len(traces) == 1 else []
    events = [r for r in recs if r.get("type") == "event" and r.get("op") in ("alloc", "free")]
    trailer = recs[-1] if recs else {}
    check(len(events) == 602 and trailer.get("type") == "trailer" and trailer.get("dropped") == 0,
          f"the trace has every event (602) and drops none ({len(events)}, {trailer})")
    return finish()


def ctypes_libc_path():
    """The C library this process runs on (an ELF shared object that is not the tracer)."""
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "/libc.so" in path or "/libc-" in path:
                return path
    return "/lib/x86_64-linux-gnu/libc.so.6"


def finish():
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    print("ok")
    sys.exit(0)


if __name__ == "__main__":
    main()
