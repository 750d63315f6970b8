#!/usr/bin/env python3
"""Analyzer memory: what `gpumemtrace report` needs grows with what a trace keeps (live
allocations, distinct stacks at their size), not with a per-stack cost of kilobytes.

    test_memory.py --exe BUILD/tools/gpumemtrace CASE

Each case writes its traces into a temporary directory and runs the report with its address
space limited (RLIMIT_AS), so a report that needs more fails (out of memory, exit 3, or a line
jansson could not parse) instead of passing slowly:

- stacks: 10,000 distinct stacks of 64 native and 4 Python frames, each leaked by one allocation
  (every stack is in call_stacks[]); once drawn from 1,000 return addresses per module (a
  program's stacks share their code), once with nearly every frame an address of its own;
  --format json, html and text in 300 MiB. Before the frames were interned and call_stacks[]
  written one entry at a time, json took 1.3 GB of resident memory and html 1.6 GB (now
  130-170 MiB);
- deep: one stack of 1,000,000 native frames (a 17 MB line) in 64 MiB: its innermost 1024 are
  kept and a note says how many were cut (before: 2 GB for json; under the limit, the line was
  "invalid JSON" and the stack lost);
- directory: 2,000 small traces (a few stacks and allocations each, two devices) in one
  directory, in 180 MiB (before: ~225 MiB of address space, ~105 KB per trace).
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile

MiB = 1 << 20
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def last_line(failed, err):
    """What a failed run said last, for the message."""
    lines = [l for l in err.splitlines() if "invalid JSON" in l] or err.strip().splitlines()
    return ": " + lines[-1][:160] if failed and lines else ""


def report(exe, limit, fmt, path):
    """(exit code, stdout bytes, stderr text) of the report in @limit bytes of address space."""
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    env = dict(os.environ, DEBUGINFOD_URLS="")
    p = subprocess.run([exe, "report", "--format", fmt, path], preexec_fn=cap, env=env,
                       capture_output=True, timeout=600)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


HEADER = ('{"type":"header","format":"gpumemtrace","version":1,"tracer":"0.2.0","pid":%d,'
          '"ppid":1,"host":"test","argv":["python3","train.py"],"start_ts":1000000000,'
          '"start_unix_ns":1800000000000000000,"rank":null,"forked_from":null,'
          '"coverage":"full","capture":["cupti"],'
          '"stacks":{"native":true,"python":"3.12","depth":64}}\n')

# Modules under a path that does not exist: frames stay module+offset (the cost measured is the
# analyzer's, not DWARF's).
MODULES = [("/nonexistent/gmt-test/libcudart.so.13", 0x7f1100000000, 0x9a000),
           ("/nonexistent/gmt-test/libtorch_cuda.so", 0x7f1400000000, 0x40000000),
           ("/nonexistent/gmt-test/libtorch_python.so", 0x7f1500000000, 0x2000000),
           ("/nonexistent/gmt-test/python3.12", 0x555555554000, 0x700000)]


def modules_line():
    mods = ",".join('{"path":"%s","base":"0x%x","build_id":"","segments":[[0,%d]]}' % m
                    for m in MODULES)
    return '{"type":"modules","seq":0,"modules":[%s]}\n' % mods


def pycode_lines():
    # line table of 3.12: entries of code 13 (no columns), 8 code units each, one line apiece
    table = "ef00" + "ef02" * 15
    return "".join('{"type":"pycode","id":%d,"file":"/home/u/train.py","name":"f%d",'
                   '"qualname":"f%d","firstlineno":%d,"python":"3.12","linetable":"%s"}\n'
                   % (c, c, c, 10 * c, table) for c in range(1, 9))


def write_stacks_trace(path, nstacks, pool):
    """nstacks distinct stacks, each leaked by one allocation; frames from @pool addresses per
    module (0: an address of its own for nearly every frame)."""
    rng = 12345

    def rnd():
        nonlocal rng
        rng = (rng * 6364136223846793005 + 1442695040888963407) & (2**64 - 1)
        return rng >> 33

    with open(path, "w") as f:
        f.write(HEADER % 4242 + modules_line() + pycode_lines())
        for s in range(1, nstacks + 1):
            frames = []
            for i in range(64):
                base, size = MODULES[min(i // 16, 3)][1:]
                k = rnd() % pool if pool else rnd()
                frames.append('"0x%x"' % (base + (k * 2654435761 + i * 97) % size))
            py = ",".join("[%d,%d,%d]" % (1 + (s + j) % 8, 16 * (j + s % 7), 1 if j == 3 else 0)
                          for j in range(4))
            f.write('{"type":"stack","id":%d,"frames":[%s],"py":[%s]}\n' % (s, ",".join(frames), py))
            f.write('{"type":"event","seq":%d,"ts":%d,"tid":7,"op":"alloc","api":"cudaMalloc",'
                    '"driver":"cuMemAlloc_v2","kind":"device","device":0,"context":1,'
                    '"ptr":"0x%x","size":%d,"result":0,"stack":%d}\n'
                    % (s, 2000000000 + s * 1000, 0x600000000000 + s * 0x100000, 4096 + s, s))
        f.write('{"type":"trailer","ts":%d,"events":%d,"dropped":0,"reason":"exit"}\n'
                % (2000000000 + (nstacks + 1) * 1000, nstacks))


def case_stacks(exe, tmp):
    for label, pool in (("shared frames", 1000), ("unique frames", 0)):
        path = os.path.join(tmp, "stacks-%d.jsonl" % pool)
        write_stacks_trace(path, 10000, pool)
        for fmt in ("json", "html", "text"):
            rc, out, err = report(exe, 300 * MiB, fmt, path)
            check(rc == 0, "%s, --format %s: 10,000 distinct stacks in 300 MiB (exit %d%s)"
                  % (label, fmt, rc, last_line(rc, err)))
            if rc != 0:
                continue
            if fmt == "json":
                doc = json.loads(out)
                stacks = doc["call_stacks"]
                check(len(stacks) == 10000 and all(s["known"] for s in stacks),
                      "%s: every stack is in call_stacks[] (%d)" % (label, len(stacks)))
                check(all(len(s["call_stack"]) >= 64 for s in stacks),
                      "%s: with all its frames" % label)
                check(doc["summary"]["leaked_allocations"] == 10000,
                      "%s: 10,000 leaked allocations" % label)
            elif fmt == "html":
                check(out.rstrip().endswith(b"</html>"), "%s: the page is complete" % label)


def case_deep(exe, tmp):
    path = os.path.join(tmp, "deep.jsonl")
    with open(path, "w") as f:
        f.write(HEADER % 4242 + modules_line() + pycode_lines())
        base, size = MODULES[1][1:]
        f.write('{"type":"stack","id":1,"frames":[%s],"py":[[1,0,1]]}\n'
                % ",".join('"0x%x"' % (base + (i * 40503) % size) for i in range(1_000_000)))
        f.write('{"type":"event","seq":1,"ts":2000000000,"tid":7,"op":"alloc",'
                '"api":"cudaMalloc","kind":"device","device":0,"ptr":"0x600000000000",'
                '"size":4096,"result":0,"stack":1}\n')
        f.write('{"type":"trailer","ts":2000001000,"events":1,"dropped":0,"reason":"exit"}\n')
    for fmt in ("json", "text", "html"):
        rc, out, err = report(exe, 64 * MiB, fmt, path)
        check(rc == 0 and "invalid JSON" not in err,
              "--format %s: a stack of 1,000,000 frames in 64 MiB (exit %d%s)"
              % (fmt, rc, last_line(rc or "invalid JSON" in err, err)))
        check("stack 1 has 998976 more frames than the 1024 native and 1 Python kept" in err,
              "--format %s: the note says how much of the stack was kept" % fmt)
        if fmt == "json" and rc == 0:
            cs = json.loads(out)["call_stacks"]
            native = [f for f in cs[0]["call_stack"] if f["kind"] == "native"] if cs else []
            check(len(cs) == 1 and cs[0]["known"] and len(native) == 1024,
                  "the stack is known, with its innermost 1024 native frames (%d)" % len(native))


def case_directory(exe, tmp):
    d = os.path.join(tmp, "ranks")
    os.mkdir(d)
    for r in range(2000):
        with open(os.path.join(d, "gpumemtrace.node.%d.jsonl" % (1000 + r)), "w") as f:
            f.write(HEADER % (1000 + r) + modules_line())
            seq = 0
            for s in range(1, 4):
                f.write('{"type":"stack","id":%d,"frames":["0x%x","0x%x"]}\n'
                        % (s, 0x7f1100000100 + s * 16, 0x555555554400 + s * 32))
            for dev in (0, 1):
                for s in range(1, 4):
                    seq += 1
                    f.write('{"type":"event","seq":%d,"ts":%d,"tid":7,"op":"alloc",'
                            '"api":"cudaMalloc","kind":"device","device":%d,"ptr":"0x%x",'
                            '"size":%d,"result":0,"stack":%d}\n'
                            % (seq, 2000000000 + seq * 1000, dev,
                               0x600000000000 + dev * 0x10000000 + s * 0x100000, s << 20, s))
            f.write('{"type":"trailer","ts":2000100000,"events":%d,"dropped":0,"reason":"exit"}\n'
                    % seq)
    rc, out, err = report(exe, 180 * MiB, "text", d)
    check(rc == 0, "2,000 traces of a directory in 180 MiB (exit %d%s)" % (rc, last_line(rc, err)))
    rc, out, err = report(exe, 1 << 40, "json", d)
    check(rc == 0 and json.loads(out)["summary"]["processes"] == 2000,
          "the JSON report counts 2,000 processes")


CASES = {"stacks": case_stacks, "deep": case_deep, "directory": case_directory}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("case", choices=sorted(CASES))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gmt-memory-") as tmp:
        CASES[args.case](os.path.abspath(args.exe), tmp)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
