#!/usr/bin/env python3
"""One trace read on several threads (src/analysis/reader/pipeline.c: workers parse event lines
ahead, the calling thread takes every line in its order); what the user gets must not depend on
it: the report (json and text), the exit status and every message on stderr, with its FILE:LINE
and in its order, are byte for byte those of GMT_JOBS=1.

    parallel_read.py --exe GPUMEMTRACE --base TRACE [--sample DIR] TRACE_OR_DIR...

Each trace is read with GMT_JOBS=1, 2, 3 and 8, in chunks of a few lines
(GMT_READ_CHUNK_LINES=3 and 7: a small trace has many chunks, every chunk boundary falls
somewhere else) and of the default size (4096 lines). Besides the given traces (golden, fixtures,
compressed ones), every 100th file of --sample (the fuzz corpus: bounded traces, hostile lines),
it makes from --base (a real trace, events and block lines): the same as zstd of many frames,
that cut inside a frame, that with a byte damaged in a middle frame, the same without the frames'
sizes in their headers (decoded as a stream), plain with bad lines in the middle (a hundred of them: past the cap of
messages) and a torn tail, plain with lines too long for a chunk (and one too long to read), and a
directory of two processes (read one per thread: each trace then
read alone).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

failures = []
JOBS = [2, 3, 8]


def check(cond, what, detail=""):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)
        if detail:
            print(detail)


def run(exe, args, jobs, chunk):
    env = dict(os.environ, GMT_JOBS=str(jobs), DEBUGINFOD_URLS="")
    env.pop("LD_PRELOAD", None)
    env.pop("GMT_TRACE_SLOW", None)
    if chunk:
        env["GMT_READ_CHUNK_LINES"] = str(chunk)
    else:
        env.pop("GMT_READ_CHUNK_LINES", None)
    p = subprocess.run([exe] + args, env=env, capture_output=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def first_diff(a, b):
    for i, (x, y) in enumerate(zip(a.split(b"\n"), b.split(b"\n"))):
        if x != y:
            return "line %d:\n  -j1: %r\n  -jN: %r" % (i + 1, x[:300], y[:300])
    return "lengths %d and %d" % (len(a), len(b))


def compare(exe, path, chunks):
    name = os.path.basename(path.rstrip("/"))
    for fmt in ("json", "text"):
        for chunk in chunks:
            want = run(exe, ["report", "--format", fmt, path], 1, chunk)
            for j in JOBS:
                got = run(exe, ["report", "--format", fmt, path], j, chunk)
                what = "%s %s chunk %s GMT_JOBS=%d" % (name, fmt, chunk or "default", j)
                if got == want:
                    check(True, what)
                    continue
                if got[0] != want[0]:
                    check(False, what, "exit %d, GMT_JOBS=1 %d" % (got[0], want[0]))
                elif got[1] != want[1]:
                    check(False, what + " (report)", first_diff(want[1], got[1]))
                else:
                    check(False, what + " (stderr)", first_diff(want[2], got[2]))


def zstd_frames(src, dst, lines_per_frame, sized=True):
    """src as zstd, a frame every lines_per_frame lines (the tracer writes one per flush), each
    with its size in its header as the tracer's are (decoded whole, on the decoder threads), or
    without (sized=False: as zstd writes from a pipe, decoded as a stream)."""
    with open(src, "rb") as f:
        lines = f.read().split(b"\n")
    with open(dst, "wb") as out:
        for i in range(0, len(lines), lines_per_frame):
            part = b"\n".join(lines[i:i + lines_per_frame])
            if i + lines_per_frame < len(lines):
                part += b"\n"
            size = ["--stream-size=%d" % len(part)] if sized else []
            out.write(subprocess.run(["zstd", "-q", "-c", "-3"] + size, input=part, check=True,
                                     capture_output=True).stdout)


def watch(exe, path, env):
    """The threads seen in /proc while `report` reads path: name -> the most CPU ticks (user +
    system) one of them was seen to have."""
    import time
    p = subprocess.Popen([exe, "report", "--format", "json", "-o", os.devnull, path], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen = {}
    while p.poll() is None:
        try:
            for tid in os.listdir("/proc/%d/task" % p.pid):
                with open("/proc/%d/task/%s/stat" % (p.pid, tid)) as f:
                    stat = f.read()
                name = stat[stat.index("(") + 1:stat.rindex(")")]
                fields = stat[stat.rindex(")") + 2:].split()
                ticks = int(fields[11]) + int(fields[12])  # utime, stime
                seen[name] = max(seen.get(name, 0), ticks)
        except (OSError, ValueError, IndexError):
            pass  # the process or a thread ended meanwhile
        time.sleep(0.002)
    check(p.returncode == 0, "%s is read (%s)" % (os.path.basename(path), p.returncode))
    return seen


def helpers_run(exe, gen_trace, d):
    """The equal outputs above would hold as well if the threads never started: from three jobs
    one trace's read runs its parse workers, the filler and the replay thread (named so by
    pipeline.c and feed.c), seen in /proc while a 300,000-event trace is read; and for the same
    trace compressed in frames, the frames' decoder threads."""
    big = os.path.join(d, "big.jsonl")
    subprocess.run([gen_trace, "--events", "300000", "-o", big], check=True)
    env = dict(os.environ, GMT_JOBS="3", DEBUGINFOD_URLS="")
    env.pop("LD_PRELOAD", None)
    seen = watch(exe, big, env)
    want = {"gmt-parse", "gmt-fill", "gmt-replay"}
    check(want <= set(seen), "GMT_JOBS=3 runs the parse workers, the filler and the replay thread",
          "threads seen: %s" % sorted(seen))
    if shutil.which("zstd"):
        # compressed in frames as the tracer writes them: their decoders (util/zread.c) too
        zst = big + ".zst"
        zstd_frames(big, zst, 2000)
        seen = watch(exe, zst, env)
        check(seen.get("gmt-unzstd", 0) > 0,
              "GMT_JOBS=3 decodes a zstd trace's frames on their own threads",
              "threads seen (CPU ticks): %s" % sorted(seen.items()))
        # GMT_THREAD_TIMES=1 (util/cputime.h, for hosts without perf): one line at the end with
        # each kind of thread's CPU, every kind that ran there
        p = subprocess.run([exe, "report", "--format", "json", "-o", os.devnull, zst],
                           env=dict(env, GMT_THREAD_TIMES="1"), capture_output=True, text=True)
        last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
        kinds = {}
        for part in last.split("thread CPU:", 1)[-1].split(";"):
            w = part.split()
            if len(w) >= 4 and w[2] == "s":
                kinds[w[0]] = (float(w[1]), w[3])
        want = {"calling", "gmt-parse", "gmt-fill", "gmt-readahead", "gmt-unzstd", "gmt-replay"}
        check(p.returncode == 0 and last.startswith("gpumemtrace: thread CPU:") and
              want <= set(kinds) and kinds["calling"][0] > 0 and kinds["gmt-parse"][1] == "(2)",
              "GMT_THREAD_TIMES=1 ends stderr with each kind of thread's CPU", last)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--base", required=True)
    ap.add_argument("--sample")
    ap.add_argument("--gen-trace", help="bench/gen_trace: a trace whose snapshots and markers "
                    "come between events while the replay thread runs")
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args()

    traces = []
    for p in a.paths:
        if os.path.isdir(p):
            traces += sorted(os.path.join(p, f) for f in os.listdir(p)
                             if f.endswith((".jsonl", ".jsonl.zst", ".jsonl.gz")))
        else:
            traces.append(p)
    with tempfile.TemporaryDirectory(prefix="gmt-parread-") as d:
        gen = os.path.join(d, "base.jsonl")
        shutil.copy(a.base, gen)
        with open(gen, "rb") as f:
            lines = f.read().split(b"\n")
        # bad lines in the middle (more than the messages shown) and a torn last line
        bad = list(lines)
        for k in range(100):
            at = 50 + k * 53
            bad[at:at] = [b'{"type":"event","seq":"x"}' if k % 3 else b"not json"]
        damaged = os.path.join(d, "damaged.jsonl")
        with open(damaged, "wb") as f:
            f.write(b"\n".join(bad)[:-60])
        # lines longer than a chunk takes (64 KiB: read where the input holds them, the chunks
        # before them first, the filler waiting), alone, two and three in a row, one of 1 MiB, and a
        # long torn last line
        pad = b'{"type":"event","pad":"' + b"a" * 70000 + b'"}'
        long_ = list(lines[:-1])
        for k, at in enumerate((3, 40, 41, 200, 777, 778, 779)):
            if at < len(long_):
                long_[at:at] = [pad if k % 2 else b"x" * (80000 + k)]
        long_[len(long_) // 2:len(long_) // 2] = [b"y" * (1 << 20)]
        longlines = os.path.join(d, "long.jsonl")
        with open(longlines, "wb") as f:
            f.write(b"\n".join(long_) + b"\n" + pad[:100000 - 7])
        if shutil.which("zstd"):
            frames = os.path.join(d, "frames.jsonl.zst")
            zstd_frames(gen, frames, 300)
            cut = os.path.join(d, "cut.jsonl.zst")
            with open(frames, "rb") as f:
                data = f.read()
            with open(cut, "wb") as f:
                f.write(data[:len(data) * 2 // 3])
            # a byte damaged in a frame in the middle: the frames before it, what that frame's
            # good blocks hold, then "corrupt at byte N", whichever thread decoded it
            hurt = os.path.join(d, "hurt.jsonl.zst")
            with open(hurt, "wb") as f:
                f.write(data[:len(data) // 2] + bytes([data[len(data) // 2] ^ 0x5a]) +
                        data[len(data) // 2 + 1:])
            unsized = os.path.join(d, "unsized.jsonl.zst")
            zstd_frames(gen, unsized, 300, sized=False)
            made = [frames, cut, hurt, unsized]
        else:
            print("note: no zstd command: the compressed traces come from the corpus only")
            made = []
        procs = os.path.join(d, "procs")
        os.mkdir(procs)
        shutil.copy(gen, os.path.join(procs, "a.jsonl"))
        shutil.copy(damaged, os.path.join(procs, "b.jsonl"))

        if a.gen_trace:
            # readings (snapshot lines) and markers among thousands of events: the replay thread
            # (session/feed.c) runs while the reader takes them; under ThreadSanitizer a missing
            # sync before a snapshot is a race on the trace's readings
            snaps = os.path.join(d, "snaps.jsonl")
            subprocess.run([a.gen_trace, "--events", "30000", "--snapshot-every", "250",
                            "--marker-every", "100", "--stacks", "50", "-o", snaps], check=True)
            made.append(snaps)
            helpers_run(a.exe, a.gen_trace, d)
        for t in [gen, damaged, longlines] + made:
            compare(a.exe, t, [3, 7, None])
        compare(a.exe, procs, [7])
        for t in traces:
            compare(a.exe, t, [3, 7])
        if a.sample:
            names = sorted(os.listdir(a.sample))
            for f in names[::100]:
                compare(a.exe, os.path.join(a.sample, f), [3])
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
