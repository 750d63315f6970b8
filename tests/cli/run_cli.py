#!/usr/bin/env python3
"""The gpumemtrace CLI under hostile input and faults (meson suite 'cli', issue 13).

    run_cli.py --exe BUILD/tools/gpumemtrace --traces tests/golden/traces [...] GROUP

GROUP is one of:
  fifo      FIFOs in a trace directory, named on the command line, as a modules line's file, as
            a suppression or baseline file: skipped with a message, never waited on
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

# A command that has not finished by then hangs: the test fails instead of waiting forever.
HANG_S = 20


class Cli:
    def __init__(self, args):
        self.exe = os.path.abspath(args.exe)
        self.traces = os.path.abspath(args.traces)
        self.args = args
        self.failures = 0
        self.tmp = tempfile.mkdtemp(prefix="gmt-cli-")

    def env(self, extra=None):
        env = dict(os.environ)
        # Neither a sanitizer's preload nor the caller's LD_PRELOAD belongs in these runs.
        env.pop("LD_PRELOAD", None)
        env.pop("GPUMEMTRACE_LIB", None)
        if extra:
            env.update(extra)
        return env

    def run(self, args, env=None, cwd=None, timeout=HANG_S):
        """(exit status, stdout, stderr) as bytes decoded leniently; exit None on a hang."""
        try:
            p = subprocess.run([self.exe] + args, cwd=cwd or self.tmp, env=self.env(env),
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            return None, (e.stdout or b"").decode("utf-8", "replace"), \
                (e.stderr or b"").decode("utf-8", "replace")
        return p.returncode, p.stdout.decode("utf-8", "replace"), \
            p.stderr.decode("utf-8", "replace")

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def write(self, name, text):
        p = self.path(name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w" if isinstance(text, str) else "wb") as f:
            f.write(text)
        return p

    def golden(self, name):
        return os.path.join(self.traces, name)

    def check(self, cond, what, detail=""):
        if cond:
            print("ok: %s" % what)
        else:
            self.failures += 1
            print("FAIL: %s" % what)
            if detail:
                print(str(detail).rstrip("\n"))

    def done(self):
        shutil.rmtree(self.tmp, ignore_errors=True)
        if self.failures:
            print("%d check(s) failed" % self.failures)
            return 1
        return 0


def lines(*records):
    return "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records)


HEADER = {"type": "header", "format": "gpumemtrace", "version": 1, "tracer": "0.1.0",
          "pid": 777, "ppid": 1, "host": "h", "argv": ["prog"], "start_ts": 1000000000,
          "start_unix_ns": 1796228579000000000, "rank": None, "forked_from": None,
          "coverage": "full", "capture": ["cupti"]}


def alloc(seq, ptr, size=1 << 20, stack=0, ts=None):
    ev = {"type": "event", "seq": seq, "ts": ts or 1000000000 + seq * 1000000, "tid": 777,
          "op": "alloc", "api": "cudaMalloc", "kind": "device", "device": 0, "stream": "0x0",
          "ptr": ptr, "size": size, "result": 0}
    if stack:
        ev["stack"] = stack
    return ev


def trailer(events, ts=2000000000):
    return {"type": "trailer", "ts": ts, "events": events, "dropped": 0, "reason": "exit"}


# --- fifo ---------------------------------------------------------------------------------------

def group_fifo(c):
    d = c.path("dir")
    os.mkdir(d)
    shutil.copy(c.golden("basic.jsonl"), os.path.join(d, "basic.jsonl"))
    fifo = os.path.join(d, "waits.jsonl")
    os.mkfifo(fifo)
    named = "dir/waits.jsonl: cannot open: not a regular file (a FIFO)"

    rc, out, err = c.run(["report", "dir"])
    c.check(rc == 0 and "1 process, 14 events" in out,
            "report DIR with a FIFO in it: the other trace is reported", "exit %s\n%s" % (rc, err))
    c.check(named in err, "report DIR: the FIFO is named as skipped", err)
    rc, out, err = c.run(["report", "--format", "json", "dir"])
    c.check(rc == 0, "report --format json DIR with a FIFO: exit 0", "exit %s\n%s" % (rc, err))
    rc, out, err = c.run(["report", "dir/waits.jsonl"])
    c.check(rc == 3 and named in err, "report FIFO: exit 3, named", "exit %s\n%s" % (rc, err))
    rc, out, err = c.run(["check", "--max-leaked-bytes", "1G", "dir"])
    c.check(rc == 0 and named in err, "check DIR with a FIFO: exit 0, the FIFO named",
            "exit %s\n%s" % (rc, err))
    rc, out, err = c.run(["check", "--max-leaked-bytes", "1G", "dir/waits.jsonl"])
    c.check(rc == 3 and named in err, "check FIFO: exit 3", "exit %s\n%s" % (rc, err))
    rc, out, err = c.run(["diff", "dir", "dir"])
    c.check(rc == 0 and "No call site changed" in out, "diff DIR DIR with a FIFO: exit 0",
            "exit %s\n%s%s" % (rc, out, err))
    rc, out, err = c.run(["check", "--max-leaked-bytes", "1G", "--suppressions",
                          "dir/waits.jsonl", "dir/basic.jsonl"])
    c.check(rc == 2 and "dir/waits.jsonl: cannot read: not a regular file (a FIFO)" in err,
            "check --suppressions FIFO: exit 2, named", "exit %s\n%s" % (rc, err))
    rc, out, err = c.run(["check", "--baseline", "dir/waits.jsonl", "dir/basic.jsonl"])
    c.check(rc is not None and rc != 0 and named in err, "check --baseline FIFO: refused",
            "exit %s\n%s" % (rc, err))

    # A modules line naming a FIFO: the symbolizer must not open it for reading and wait.
    mod = {"type": "modules", "seq": 0, "modules": [
        {"path": fifo, "base": "0x400000", "build_id": "", "segments": [[0, 65536]]}]}
    stack = {"type": "stack", "id": 1, "frames": ["0x401000"]}
    c.write("modfifo.jsonl", lines(HEADER, mod, stack, alloc(1, "0x7f0000000000", stack=1),
                                   trailer(1)))
    for fmt in ("text", "json", "html", "folded", "perfetto"):
        rc, out, err = c.run(["report", "--format", fmt, "modfifo.jsonl"])
        c.check(rc == 0, "report --format %s: a modules line naming a FIFO" % fmt,
                "exit %s\n%s" % (rc, err))
    rc, out, err = c.run(["report", "modfifo.jsonl"])
    c.check("%s: cannot read it (not a regular file (a FIFO))" % fifo in err,
            "the FIFO module is noted, not read", err)
    rc, out, err = c.run(["check", "--max-leaked-bytes", "0", "modfifo.jsonl"])
    c.check(rc == 1, "check on a trace whose module is a FIFO: the gate runs (exit 1)",
            "exit %s\n%s" % (rc, err))


GROUPS = {
    "fifo": group_fifo,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exe", required=True)
    ap.add_argument("--traces", required=True, help="tests/golden/traces")
    ap.add_argument("group", choices=sorted(GROUPS))
    a = ap.parse_args()
    c = Cli(a)
    GROUPS[a.group](c)
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
