#!/usr/bin/env python3
"""The trace reader's paths agree. Every event line the fast path (src/analysis/flatjson.c) takes
must mean what jansson reads from it, and the streamed replay (events handed to the model through
the reorder window, not kept) must conclude what a replay of the whole stored, sorted trace
concludes.

For every trace of tests/golden/traces and every input of the fuzz corpus, `report --format
json` is run four ways: fast or jansson only (GMT_TRACE_SLOW=1), streamed or stored and then
replayed (GMT_TRACE_STORED=1). Same bytes on stdout and stderr and the same exit status:
- fast streamed (the default) and jansson streamed, always: the two parsers read alike;
- fast streamed and jansson stored, unless the streamed reader said it applied a line late (a
  seq that repeats, or one that comes after the window gave up on it: only the stored replay,
  which sorts everything, puts it in place); then fast stored and jansson stored instead.

    fast_path.py --exe BUILD/tools/gpumemtrace DIR...
"""
import argparse
import concurrent.futures
import os
import subprocess
import sys

LATE_NOTE = b"applied late"


def run(exe, path, slow, stored):
    env = dict(os.environ)
    env["GMT_TRACE_SLOW"] = "1" if slow else "0"
    env["GMT_TRACE_STORED"] = "1" if stored else "0"
    p = subprocess.run([exe, "report", "--format", "json", path], env=env, capture_output=True,
                       timeout=120)
    return p.returncode, p.stdout, p.stderr


def check(exe, path):
    """What differs on @path (a list of messages; empty when the paths agree), and whether the
    streamed reader applied a line late."""
    fast = run(exe, path, slow=False, stored=False)
    problems = []
    if run(exe, path, slow=True, stored=False) != fast:
        problems.append("fast and jansson, both streamed, differ")
    late = LATE_NOTE in fast[2]
    if not late:
        if run(exe, path, slow=True, stored=True) != fast:
            problems.append("fast streamed and jansson stored differ")
    elif run(exe, path, slow=False, stored=True) != run(exe, path, slow=True, stored=True):
        problems.append("fast and jansson, both stored, differ (a line applied late)")
    return problems, late


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    files = sorted(os.path.join(root, f) for d in a.dirs for root, _, fs in os.walk(d) for f in fs)
    bad = late = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for f, (problems, was_late) in zip(files, pool.map(lambda f: check(a.exe, f), files)):
            late += was_late
            bad += bool(problems)
            for p in problems:
                print("FAIL: %s: %s" % (f, p))
    print("%d files, %d differ; %d with a line applied late" % (len(files), bad, late))
    return 1 if bad or not files else 0


if __name__ == "__main__":
    sys.exit(main())
