#!/usr/bin/env python3
"""The trace reader's paths agree. Every event line the fast path (src/analysis/flatjson.c) takes
must mean what jansson reads from it, and the streamed replay (events handed to the model through
the reorder window, not kept) must conclude what a replay of the whole stored trace concludes.
For every trace of tests/golden/traces and every input of the fuzz corpus, `report --format
json` by default (fast, streamed) and with GMT_TRACE_SLOW=1 GMT_TRACE_STORED=1 (jansson only,
stored, then replayed) must give the same bytes on stdout and stderr, and the same exit status.

    fast_path.py --exe BUILD/tools/gpumemtrace DIR...
"""
import argparse
import os
import subprocess
import sys


def run(exe, path, slow):
    env = dict(os.environ)
    env["GMT_TRACE_SLOW"] = "1" if slow else "0"
    env["GMT_TRACE_STORED"] = "1" if slow else "0"
    p = subprocess.run([exe, "report", "--format", "json", path], env=env, capture_output=True,
                       timeout=120)
    return p.returncode, p.stdout, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    files = sorted(os.path.join(root, f) for d in a.dirs for root, _, fs in os.walk(d) for f in fs)
    bad = 0
    for f in files:
        if run(a.exe, f, True) != run(a.exe, f, False):
            bad += 1
            print("FAIL: the fast streamed and the slow stored reader differ on %s" % f)
    print("%d files, %d differ" % (len(files), bad))
    return 1 if bad or not files else 0


if __name__ == "__main__":
    sys.exit(main())
