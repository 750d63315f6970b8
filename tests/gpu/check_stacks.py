#!/usr/bin/env python3
"""The GPU check of call stacks: in a PyTorch run traced by gpumemtrace, the call sites holding the
most memory at the peak, and those of the allocations still live at exit, are lines of the
training script itself (its file, a line > 0), not torch's internals.

    check_stacks.py --build BUILD --script tests/gpu/torch_check.py TRACE_DIR

Prints the top sites; exits 1 when the top site (by bytes) of the peak or of the live-at-exit
memory is not in the script, or when any stack is missing its Python frames.
"""
import argparse
import json
import os
import subprocess
import sys


def describe(site):
    f = site or {}
    return f"{f.get('file') or f.get('module') or '?'}:{f.get('line') or 0} in {f.get('function') or '?'}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--script", required=True)
    ap.add_argument("trace")
    args = ap.parse_args()
    exe = os.path.join(args.build, "tools", "gpumemtrace")
    p = subprocess.run([exe, "report", "--format", "json", args.trace], capture_output=True, text=True)
    if p.returncode != 0:
        print(f"check_stacks: gpumemtrace report failed ({p.returncode}): {p.stderr.strip()[:400]}")
        return 1
    rep = json.loads(p.stdout)
    script = os.path.abspath(args.script)
    problems = []
    proc = (rep.get("processes") or [{}])[0]
    print(f"stack capture: {proc.get('stack_capture')}")
    for key, what in (("peak_sites", "held at the peak"), ("leak_sites", "live at exit")):
        groups = sorted(rep.get(key) or [], key=lambda g: -g.get("bytes", 0))
        total = sum(g.get("bytes", 0) for g in groups)
        print(f"top sites {what} ({len(groups)} sites, {total} bytes):")
        for g in groups[:6]:
            print(f"  {g.get('bytes', 0):>12}  {g.get('allocations', g.get('failures', 0)):>5}  {g.get('api')}  "
                  f"{describe(g.get('site'))}")
        if not groups:
            problems.append(f"no {key}")
            continue
        top = groups[0].get("site") or {}
        if os.path.abspath(top.get("file") or "") != script or not top.get("line"):
            problems.append(f"the top site {what} is {describe(top)}, not a line of {script}")
        in_script = sum(g.get("bytes", 0) for g in groups
                        if os.path.abspath((g.get("site") or {}).get("file") or "") == script)
        print(f"  {in_script / total * 100 if total else 0:.1f}% of the bytes {what} are at lines of the script")
    stacks = rep.get("call_stacks") or []
    no_py = [s for s in stacks if not any(f.get("kind") == "python" for f in s.get("call_stack") or [])
             and s.get("pystate") != "empty"]
    print(f"call stacks: {len(stacks)}; without Python frames (and not an autograd thread): {len(no_py)}")
    if no_py:
        problems.append(f"{len(no_py)} stacks of the Python program have no Python frames")
    for pr in problems:
        print(f"FAIL: {pr}")
    print("check_stacks: " + ("FAIL" if problems else "PASS"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
