#!/usr/bin/env python3
"""Golden tests of `report --format html` and `--format perfetto` (meson suite 'golden').

    run_format_golden.py --exe BUILD/tools/gpumemtrace --srcdir tests/golden

Runs in SRCDIR with relative trace paths (as run_golden.py does) and compares stdout with
expected/NAME.FORMAT.expected; both formats are deterministic (no dates, no absolute paths).
GMT_GOLDEN_UPDATE=1 rewrites the expected files.
"""
import argparse
import difflib
import os
import subprocess
import sys

CASES = [
    # name, format, traces
    ("basic", "html", ["traces/basic.jsonl"]),
    ("basic", "perfetto", ["traces/basic.jsonl"]),
    # two processes: one named process each, their markers
    ("multi", "perfetto", ["traces/multi"]),
    # a failed cuMemCreate among VMM calls
    ("vmm", "perfetto", ["traces/vmm.jsonl"]),
    # two traces with different coverage, given on the command line
    ("mixed", "perfetto", ["traces/cupti.jsonl", "traces/nvml.jsonl"]),
    # a trace with Python frames: peaks only (no marker, no failure)
    ("stacks-malformed", "perfetto", ["traces/stacks-malformed.jsonl"]),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exe", required=True)
    ap.add_argument("--srcdir", required=True)
    a = ap.parse_args()
    update = os.environ.get("GMT_GOLDEN_UPDATE") == "1"
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    failures = 0
    for name, fmt, paths in CASES:
        p = subprocess.run([os.path.abspath(a.exe), "report", "--format", fmt] + paths,
                           cwd=a.srcdir, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        out = p.stdout.decode("utf-8")
        expected_name = "%s.%s.expected" % (name, fmt)
        path = os.path.join(a.srcdir, "expected", expected_name)
        if p.returncode != 0:
            failures += 1
            print("FAIL: %s %s: exit %d\n%s" % (name, fmt, p.returncode,
                                                p.stderr.decode("utf-8", "replace")))
            continue
        if update:
            with open(path, "w", encoding="utf-8") as f:
                f.write(out)
            print("updated: %s" % expected_name)
            continue
        expected = ""
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                expected = f.read()
        if out == expected:
            print("ok: %s" % expected_name)
            continue
        failures += 1
        print("FAIL: %s differs" % expected_name)
        sys.stdout.writelines(difflib.unified_diff(expected.splitlines(True),
                                                   out.splitlines(True),
                                                   "expected/" + expected_name, "actual"))
    if failures:
        print("%d check(s) failed" % failures)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
