#!/usr/bin/env python3
"""A directory of traces is read on several threads (src/analysis/session/session.c); what the
user gets must not depend on it: every report format, `check` and the messages about bad lines
are byte for byte those of reading one file after another (GMT_JOBS=1), in name order.

    parallel_dir.py --exe GPUMEMTRACE TRACE_DIR...

Copies the traces of the given directories into one directory (with a damaged copy: bad lines,
a torn end, so that several traces have messages), then compares GMT_JOBS=1 with GMT_JOBS=2, 3
and 8.
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

failures = []


def check(cond, what, detail=""):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)
        if detail:
            print(detail)


def run(exe, args, jobs):
    env = dict(os.environ, GMT_JOBS=str(jobs), DEBUGINFOD_URLS="")
    env.pop("LD_PRELOAD", None)
    p = subprocess.run([exe] + args, env=env, capture_output=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gmt-pardir-") as d:
        n = 0
        for src in a.dirs:
            for f in sorted(glob.glob(os.path.join(src, "*.jsonl"))):
                shutil.copy(f, os.path.join(d, "%02d-%s" % (n, os.path.basename(f))))
                n += 1
        first = sorted(os.listdir(d))[0]
        with open(os.path.join(d, first), "rb") as f:
            lines = f.read().split(b"\n")
        # bad lines in the middle and a torn last line: messages from two traces
        bad = lines[:3] + [b'{"type":"alloc","seq":', b"not json"] + lines[3:]
        with open(os.path.join(d, "50-damaged.jsonl"), "wb") as f:
            f.write(b"\n".join(bad)[:-40])
        with open(os.path.join(d, "51-empty.jsonl"), "wb"):
            pass
        check(n >= 3, "%d traces to read" % (n + 2))
        cases = [["report", d], ["report", "--format", "json", d],
                 ["report", "--format", "folded", d], ["report", "--format", "perfetto", d],
                 ["report", "--format", "html", d],
                 ["check", "--max-leaked-bytes", "0", d]]
        for args in cases:
            want = run(a.exe, args, 1)
            check(want[0] in (0, 1), "%s: GMT_JOBS=1 exits %d" % (" ".join(args[:3]), want[0]),
                  want[2].decode(errors="replace")[-2000:])
            for jobs in (2, 3, 8):
                got = run(a.exe, args, jobs)
                check(got == want, "%s: GMT_JOBS=%d gives the same exit, output and messages"
                      % (" ".join(a for a in args if a != d), jobs),
                      "exit %d vs %d\nstderr:\n%s\nvs\n%s" % (
                          got[0], want[0], got[2].decode(errors="replace")[-1500:],
                          want[2].decode(errors="replace")[-1500:]))
        msgs = run(a.exe, ["report", d], 8)[2].decode(errors="replace")
        check("50-damaged.jsonl" in msgs and "51-empty.jsonl" in msgs,
              "the messages name the damaged and the empty trace", msgs[-2000:])
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
