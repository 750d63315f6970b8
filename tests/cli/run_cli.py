#!/usr/bin/env python3
"""The gpumemtrace CLI under hostile input and faults (meson suite 'cli', issue 13).

    run_cli.py --exe BUILD/tools/gpumemtrace --traces tests/golden/traces [...] GROUP

GROUP is one of:
  fifo      FIFOs in a trace directory, named on the command line, as a modules line's file, as
            a suppression or baseline file: skipped with a message, never waited on
  signals   `run` sent SIGTERM, SIGHUP, SIGINT, SIGQUIT (as SLURM, Kubernetes and CI runners
            do): passed on to the program, which is not orphaned; the launcher waits, prints
            its summary and exits with the program's status; killed outright, the program
            still gets SIGTERM
  args      argument errors and edge cases of every command (empty values, empty
            directories, nothing to compare): the documented exit code and message, and in
            the ASan+UBSan build no sanitizer report
  escape    ESC sequences, newlines, C1 and bidirectional controls and invalid UTF-8 in a
            trace's names, in trace file names and on the command line: report, check, diff,
            folded, run's summary and usage errors print them escaped (as ls -b), never raw;
            a trace file's name that is not UTF-8 is named in JSON (U+FFFD) and by check
  inputs    silent wrong input made loud: a --from/--to label no marker has (exit 2, the
            labels there are), `run -o` on a regular file or a read-only directory (exit 2
            before the program runs), a trace of only a header (ends at 0 s), a file of only
            pyinfo or stack lines (exit 3), a trace cut by a full disk (said so, not "did not
            exit normally"), a failed allocation of (size_t)-1 bytes (read, on either line
            path; not lost as a bad line), allocations of 2^63 - 1 bytes (diff and live
            hold their sums there, never wrap them)
  trust     a trace path that is a symlink to a file that is not a trace (a password file, a
            JSON config): "not a gpumemtrace trace", nothing of its content quoted, in report,
            check and diff; a trace cut at its start (tail -c) is still read
  compressed  .jsonl.zst (several frames, as the tracer writes), .jsonl.gz (several members)
            and - (standard input, plain or compressed) read as the plain file, by report,
            check, diff, a directory and run's summary; a file cut inside its last frame or
            member, or with garbage after a good one, is read up to there and the message
            names the file and the byte; a second - is refused
  long-lines  a line of 512 MiB (a sparse plain file; 8 zstd frames or gzip members of 64 MiB
            of zeros each: decompression bombs of 17 KB and 520 KB): skipped past the 64 MiB limit
            with a message naming the file and line, the lines around it read, in bounded
            memory (peak RSS under 256 MiB); the report says the trace was damaged and
            `check` fails complete-traces (--allow-incomplete lets it pass); a bomb after
            the trailer without a final newline too
  outputs   a symlink planted at an output's name (`report -o FILE` in every format, a table
            name of `--format csv -o DIR`, `check --junit FILE`), dangling or to a victim
            file: refused with exit 2 naming it, the victim unchanged, no table or temporary
            file left; an existing file is replaced keeping its mode, -o /dev/null is written
"""
import argparse
import gzip
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

# A command that has not finished by then hangs: the test fails instead of waiting forever. Sized
# for a loaded 2-core CI machine: a clean-clone run there saw `run` take over 20 s to summarize a
# killed program's trace while other suites ran (cli-signals, SIGHUP and SIGQUIT).
HANG_S = 90


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

    def run_raw(self, args, env=None, cwd=None, timeout=HANG_S):
        """(exit status or None on a hang, stdout bytes, stderr bytes)."""
        try:
            p = subprocess.run([self.exe] + args, cwd=cwd or self.tmp, env=self.env(env),
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            return None, e.stdout or b"", e.stderr or b""
        self.no_sanitizer_report(args, p.stderr.decode("utf-8", "replace"))
        return p.returncode, p.stdout, p.stderr

    def run(self, args, env=None, cwd=None, timeout=HANG_S):
        """run_raw() with stdout and stderr decoded leniently."""
        rc, out, err = self.run_raw(args, env, cwd, timeout)
        return rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")

    def no_sanitizer_report(self, args, err):
        """ASan and UBSan findings fail the test even where a sanitizer does not halt."""
        for mark in ("runtime error:", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer"):
            if mark in err:
                self.check(False, "no sanitizer report: %s" % " ".join(args)[:200], err)
                return

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
    rc, out, err = c.run(["check", "--max-leaked-bytes", "1G", "dir"])
    c.check(rc == 0 and named in err, "check DIR with a FIFO: exit 0, the FIFO named",
            "exit %s\n%s" % (rc, err))

    # A FIFO or pipe the user names is read as standard input is: `report <(zstdcat T)`, or
    # a FIFO a writer fills (its open waits for the writer, as `cat FIFO` does).
    with open(c.golden("basic.jsonl"), "rb") as f:
        blob = f.read()
    rc, want, err = c.run(["report", "--format", "json", "dir/basic.jsonl"])
    for cmd in (["report", "--format", "json", "dir/waits.jsonl"],
                ["check", "--max-leaked-bytes", "1G", "dir/waits.jsonl"],
                ["check", "--baseline", "dir/waits.jsonl", "dir/basic.jsonl"]):
        writer = threading.Thread(target=lambda: open(fifo, "wb").write(blob))
        writer.start()
        rc, out, err = c.run(cmd)
        if rc is None:  # the reader hung: let the writer go
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
        writer.join(timeout=HANG_S)
        if cmd[0] == "report":
            c.check(rc == 0 and out.replace("dir/waits.jsonl", "dir/basic.jsonl") == want,
                    "report FIFO with a writer: the file's report", "exit %s\n%s" % (rc, err))
        else:
            c.check(rc == 0, "%s with a writer: the gate runs (exit 0)" % " ".join(cmd[:2]),
                    "exit %s\n%s" % (rc, err))
    r, w = os.pipe()
    writer = threading.Thread(target=lambda: (os.write(w, blob), os.close(w)))
    writer.start()
    try:
        p = subprocess.run([c.exe, "report", "--format", "json", "/dev/fd/%d" % r], cwd=c.tmp,
                           env=c.env(), stdin=subprocess.DEVNULL, capture_output=True,
                           pass_fds=(r,), timeout=HANG_S)
        rc, out, err = p.returncode, p.stdout.decode(), p.stderr.decode()
    except subprocess.TimeoutExpired:
        rc, out, err = None, "", "hangs"
    os.close(r)
    writer.join(timeout=HANG_S)
    c.check(rc == 0 and out.replace("/dev/fd/%d" % r, "dir/basic.jsonl") == want,
            "report /dev/fd/N (a pipe, as <(...) names it): the file's report",
            "exit %s\n%s" % (rc, err))

    # summarize: a pipe named is read too; its summary goes where -o says (beside /dev/fd/N
    # cannot be written: said, with the way out)
    def summarize_pipe(args):
        r, w = os.pipe()
        writer = threading.Thread(target=lambda: (os.write(w, blob), os.close(w)))
        writer.start()
        try:
            p = subprocess.run([c.exe, "summarize"] + args + ["/dev/fd/%d" % r], cwd=c.tmp,
                               env=c.env(), stdin=subprocess.DEVNULL, capture_output=True,
                               pass_fds=(r,), timeout=HANG_S)
            res = (p.returncode, p.stdout.decode(), p.stderr.decode())
        except subprocess.TimeoutExpired:
            res = (None, "", "hangs")
        os.close(r)
        writer.join(timeout=HANG_S)
        return r, res
    os.mkdir(c.path("sums"))
    rc, out, err = c.run(["summarize", "-o", "sums", "dir/basic.jsonl"])
    c.check(rc == 0, "summarize -o DIR FILE: exit 0", "exit %s\n%s" % (rc, err))
    fd, (rc, out, err) = summarize_pipe(["-o", "sums"])
    got = os.path.join(c.path("sums"), "%d.summary.json" % fd)
    c.check(rc == 0 and os.path.isfile(got), "summarize -o DIR /dev/fd/N: a summary of the pipe",
            "exit %s\n%s" % (rc, err))
    if rc == 0 and os.path.isfile(got):
        with open(got) as f:
            piped = json.load(f)
        with open(os.path.join(c.path("sums"), "basic.summary.json")) as f:
            plain = json.load(f)
        for doc in (piped, plain):
            doc.pop("file", None)
            doc.get("process", {}).pop("file", None)
        c.check(piped == plain, "summarize of the pipe: the file's summary, but for its name",
                json.dumps(piped)[:300])
    fd, (rc, out, err) = summarize_pipe([])
    c.check(rc == 2 and "its trace is a pipe: give -o DIR" in err,
            "summarize /dev/fd/N without -o: exit 2, says to give -o DIR", "exit %s\n%s" % (rc, err))
    rc, out, err = c.run(["diff", "dir", "dir"])
    c.check(rc == 0 and "No call site changed" in out, "diff DIR DIR with a FIFO: exit 0",
            "exit %s\n%s%s" % (rc, out, err))
    rc, out, err = c.run(["check", "--max-leaked-bytes", "1G", "--suppressions",
                          "dir/waits.jsonl", "dir/basic.jsonl"])
    c.check(rc == 2 and "dir/waits.jsonl: cannot read: not a regular file (a FIFO)" in err,
            "check --suppressions FIFO: exit 2, named", "exit %s\n%s" % (rc, err))

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


# --- signals ------------------------------------------------------------------------------------

def children_of(pid):
    """The pids whose parent is @pid (from /proc)."""
    kids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses
        if int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
            kids.append(int(d))
    return kids


def alive(pid):
    """Running, not a zombie nobody reaped."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # The signals the test sends act as they do by default whatever this test was started
    # under: `nohup` leaves SIGHUP ignored, a shell's background job SIGINT and SIGQUIT, and an
    # ignored disposition is inherited through exec (run then rightly passes it on).
    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


class Launch:
    """`gpumemtrace run -o OUT -- CMD...` in the background, once CMD has printed "ready"."""

    def __init__(self, c, out, cmd, env):
        self.p = subprocess.Popen([c.exe, "run", "-o", out, "--"] + cmd, cwd=c.tmp,
                                  env=c.env(env), stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  preexec_fn=no_core)
        self.ready = False
        deadline = time.time() + HANG_S
        while time.time() < deadline:
            line = self.p.stdout.readline()
            if not line:
                break
            if line.strip() == b"ready":
                self.ready = True
                break
        kids = children_of(self.p.pid)
        self.child = kids[0] if len(kids) == 1 else None

    def finish(self):
        """(exit status or None after a hang, stdout, stderr, the program still ran)."""
        try:
            rc = self.p.wait(timeout=HANG_S)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = None
            self.p.wait()
        # An orphaned program keeps the pipes open: it goes before they are read to the end.
        orphan = bool(self.child and alive(self.child))
        self.cleanup()
        out, err = self.p.communicate()
        return rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), orphan

    def cleanup(self):
        for pid in ([self.child] if self.child else []) + [self.p.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def gone(pid, within=5.0):
    deadline = time.time() + within
    while time.time() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def group_signals(c):
    a = c.args
    # A program that sleeps until a signal ends it: the preload victim on tests/simcuda under
    # the real tracer, or (a sanitizer build, whose tracer cannot be preloaded into an
    # uninstrumented program) a shell under a stand-in library.
    if a.victim:
        cmd = [a.victim, "hang"]
        env = {"GPUMEMTRACE_LIB": a.tracer_lib, "LD_LIBRARY_PATH": a.simcuda,
               "SIMCUDA_MEM_BYTES": "1G", "SIMCUDA_DEVICES": "1",
               "GPUMEMTRACE_FLUSH_MS": "20"}
    else:
        cmd = ["sh", "-c", "echo ready; exec sleep 1000"]
        env = {"GPUMEMTRACE_LIB": a.tracer_lib}
    for n, sig in enumerate((signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT)):
        name = signal.Signals(sig).name
        out = c.path("sig%d" % n)
        run = Launch(c, out, cmd, env)
        try:
            c.check(run.ready and run.child, "%s: the program runs under run" % name)
            if not (run.ready and run.child):
                continue
            time.sleep(0.2)  # past GPUMEMTRACE_FLUSH_MS: the allocations are in the trace
            os.kill(run.p.pid, sig)
            rc, _, err, orphan = run.finish()
            c.check(rc == 128 + sig, "%s to run: exit %d, the program's (killed by it)" %
                    (name, 128 + sig), "exit %s\n%s" % (rc, err))
            c.check(not orphan, "%s to run: the program is not left running" % name)
            if a.victim:
                c.check("gpumemtrace: 1 trace file in %s" % out in err and
                        "1 did not exit normally" in err,
                        "%s to run: the summary of the killed program's trace" % name, err)
            else:
                c.check("gpumemtrace: no trace was written to %s" % out in err,
                        "%s to run: the launcher still summarizes" % name, err)
        finally:
            run.cleanup()

    # A program that catches SIGTERM and exits with its own status: that status is run's.
    trap = ["sh", "-c", "trap 'echo caught; exit 7' TERM; echo ready; "
            "while :; do sleep 0.05; done"]
    run = Launch(c, c.path("trap"), trap, {"GPUMEMTRACE_LIB": a.dummy_lib})
    try:
        c.check(run.ready, "a program that handles SIGTERM runs")
        os.kill(run.p.pid, signal.SIGTERM)
        rc, out, err, _ = run.finish()
        c.check(rc == 7 and "caught" in out, "SIGTERM to run: the program handles it, run "
                "exits with its status (7)", "exit %s\n%s%s" % (rc, out, err))
    finally:
        run.cleanup()

    # The launcher killed outright: SIGKILL cannot be passed on, the program gets SIGTERM.
    run = Launch(c, c.path("kill"), cmd, env)
    try:
        c.check(run.ready and run.child, "SIGKILL: the program runs under run")
        if run.child:
            os.kill(run.p.pid, signal.SIGKILL)
            run.p.wait()
            c.check(gone(run.child), "SIGKILL to run: the program gets SIGTERM, not orphaned")
    finally:
        run.cleanup()


# --- args ---------------------------------------------------------------------------------------

def group_args(c):
    basic = c.golden("basic.jsonl")
    os.mkdir(c.path("empty"))
    c.write("nosites.jsonl", lines(HEADER, trailer(0)))
    cases = [
        # arguments, exit status, text stderr must hold (None: not looked at)
        (["run", "-o", "", "true"], 2, "-o needs a directory, not an empty value"),
        (["run", "-o", c.path("r"), "--", ""], 127, "command not found"),
        (["run", "--"], 2, "no command given"),
        (["report", "empty"], 3,
         "empty: no trace files (*.jsonl, *.jsonl.zst, *.jsonl.gz, *.pickle) in this directory"),
        (["report", ""], 3, ": cannot open: No such file or directory"),
        (["report", "-o", "", basic], 2, "cannot write"),
        (["report", "--from", "", basic], 2, "--from needs seconds or a marker label"),
        (["report", "--to", "", basic], 2, "--to needs seconds or a marker label"),
        (["report", "--format=", basic], 2, "unknown format ''"),
        (["report", "-f"], 2, "missing argument: -f"),
        (["report", "--stack", "", basic], 2, "unknown stack view ''"),
        (["check", "--max-leaked-bytes", "0", "empty"], 3, "no readable trace in empty"),
        (["check", "--max-peak-bytes", "", basic], 2, "invalid size ''"),
        (["check", "--max-peak-bytes", "=5", basic], 2, "invalid device ''"),
        (["check", "--max-leaked-bytes", "-1", basic], 2, "invalid size '-1'"),
        (["check", "--max-leaked-bytes", "0", "--suppressions", "", basic], 2, "cannot read"),
        (["check", "--max-leaked-bytes", "0", "--junit", "", basic], 2, "cannot write"),
        (["check", "--baseline", "", basic], 3, "cannot read the baseline"),
        (["check", basic], 2, "no gate given"),
        (["diff", "empty", "empty"], 3, "no readable trace in empty"),
        (["diff", "nosites.jsonl", "nosites.jsonl"], 0, None),
        (["diff", "--format", "json", "nosites.jsonl", "nosites.jsonl"], 0, None),
        (["diff", "--top", "", basic, basic], 2, "invalid count ''"),
        (["diff", basic], 2, "expected BASE and NEW"),
        ([""], 2, "unknown command"),
        (["-"], 2, "unknown option"),
    ]
    for args, want, text in cases:
        # `run` finds a library to preload before it looks at -o: give it one
        rc, out, err = c.run(args, env={"GPUMEMTRACE_LIB": c.args.dummy_lib})
        shown = " ".join(repr(a) if not a or " " in a else a for a in args)
        c.check(rc == want, "%s: exit %d" % (shown, want), "exit %s\n%s" % (rc, err))
        if text is not None:
            c.check(text in err, "%s: says '%s'" % (shown, text), err)
    rc, out, err = c.run(["diff", "nosites.jsonl", "nosites.jsonl"])
    c.check("No call site changed (0 compared)" in out, "diff without call sites", out + err)

    # --version after every command (before run's CMD only: after it, it is the program's);
    # `help CMD` is `CMD --help`; the top-level help names every report format
    rc, version, err = c.run(["--version"])
    c.check(rc == 0 and version.startswith("gpumemtrace "), "--version", version + err)
    for cmd in ("report", "check", "diff", "run"):
        for flag in ("--version", "-V"):
            rc, out, err = c.run([cmd, flag], env={"GPUMEMTRACE_LIB": c.args.dummy_lib})
            c.check(rc == 0 and out == version and err == "", "%s %s: the version, exit 0" % (cmd, flag),
                    "exit %s\n%s%s" % (rc, out, err))
        rc, help_out, err = c.run(["help", cmd])
        rc2, direct, _ = c.run([cmd, "--help"])
        c.check(rc == 0 and help_out == direct and help_out.startswith("Usage: gpumemtrace " + cmd),
                "help %s: the command's help" % cmd, help_out + err)
        c.check("--version" in direct, "%s --help lists --version" % cmd, direct)
    rc, out, err = c.run(["run", "-o", c.path("v"), "--", "sh", "-c", "echo \"$1\"", "sh", "--version"],
                         env={"GPUMEMTRACE_LIB": c.args.dummy_lib})
    c.check(rc == 0 and out.strip() == "--version", "run -- CMD --version: the program's option", out + err)
    rc, out, err = c.run(["help", "nope"])
    c.check(rc == 2 and "unknown command: nope" in err, "help of an unknown command: exit 2", err)
    rc, out, err = c.run(["help"])
    for fmt in ("text", "json", "folded", "html", "perfetto"):
        c.check(rc == 0 and fmt in out, "the top-level help lists the %s format" % fmt, out)
    c.check("gpumemtrace help COMMAND" in out and "JUnit" in out, "the top-level help lists help and JUnit", out)


# --- escape -------------------------------------------------------------------------------------

# What a terminal would act on: a window title, colours, an 8-bit CSI clearing the screen, a
# right-to-left override, and a newline that forges a line of the report.
HOSTILE = "\x1b]0;pwned\x07\x1b[31mred\u009b2J\u202eevil"
FORGED = "x\nleaked at exit: 0 B"


def raw_controls(data):
    """What in @data would reach a terminal as control: a list of descriptions, [] when clean."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return ["invalid UTF-8 at byte %d: %r" % (e.start, data[max(0, e.start - 20):e.end + 20])]
    bad = []
    for i, ch in enumerate(text):
        o = ord(ch)
        if (o < 0x20 and ch != "\n") or 0x7f <= o <= 0x9f or 0x202a <= o <= 0x202e or \
                0x2066 <= o <= 0x2069:
            bad.append("U+%04X at %d: %r" % (o, i, text[max(0, i - 30):i + 30]))
    return bad


def hostile_trace(died=False, pid=777):
    """A trace whose every name holds HOSTILE: argv, coverage, API, kind, module, Python file,
    function and qualified name, marker label; and a bad line with raw bytes."""
    h = dict(HEADER, pid=pid, argv=["prog" + HOSTILE, FORGED], host="h" + HOSTILE,
             tracer="0.1.0" + HOSTILE, coverage="runtime API only" + HOSTILE,
             coverage_reason="why" + HOSTILE, capture=["interpose"],
             stacks={"native": True, "depth": 8, "python": "3.11"})
    recs = [h,
            {"type": "modules", "seq": 0, "modules": [
                {"path": "/nonexistent/lib" + HOSTILE + ".so", "base": "0x400000",
                 "build_id": "", "segments": [[0, 65536]]}]},
            {"type": "pycode", "id": 1, "file": "/home/u/train" + HOSTILE + ".py",
             "name": "step" + HOSTILE, "qualname": "T.step" + HOSTILE, "firstlineno": 40,
             "python": "3.11", "linetable": "ef00"},
            {"type": "stack", "id": 1, "frames": ["0x401000"], "py": [[1, 0, 1]]},
            {"type": "stack", "id": 2, "frames": ["0x401100"]},
            dict(alloc(1, "0x7f0000000000", stack=1), api="cudaMalloc" + HOSTILE),
            {"type": "marker", "seq": 2, "ts": 1002000000, "tid": 777, "label": "e" + HOSTILE},
            dict(alloc(3, "0x7f0000100000", stack=2), kind="device" + HOSTILE),
            alloc(4, "0x7f0000200000", stack=2),
            {"type": "marker", "seq": 5, "ts": 1005000000, "tid": 777, "label": "f" + HOSTILE},
            dict(alloc(6, "0x0", size=1 << 40, stack=1), result=2)]
    if not died:
        recs.append(trailer(6))
    return (lines(*recs) + '{"type":"event","api":"\x1b[2J\\').encode() + \
        b'\xff\xfe "garbage\n'


def group_escape(c):
    c.write("h.jsonl", hostile_trace())
    d = c.path("dir")
    os.mkdir(d)
    # a trace file whose own name is hostile (and not UTF-8), of a process that died
    with open(os.path.join(d.encode(), b"t\x1b[2J\xff.jsonl"), "wb") as f:
        f.write(hostile_trace(died=True, pid=778))
    # ... and one whose name is valid UTF-8 (check names such a trace when it died)
    os.mkdir(c.path("dir-utf8"))
    with open(c.path("dir-utf8", "t" + HOSTILE + ".jsonl"), "wb") as f:
        f.write(hostile_trace(died=True, pid=779))
    supp = c.write("s.supp", "leak:never" + HOSTILE + "\n")
    bad_supp = c.write("bad.supp", "lick" + HOSTILE + ":x\n")
    run_script = 'cp h.jsonl "$GPUMEMTRACE_OUTPUT_DIR/"; exit 0'
    cases = [
        ("report", ["report", "h.jsonl"]),
        ("report --stack full", ["report", "--stack", "full", "h.jsonl", "dir"]),
        ("report of a dying process in a hostile file name", ["report", "dir"]),
        ("report --from/--to hostile markers",
         ["report", "--from", "e" + HOSTILE, "--to", "f" + HOSTILE, "h.jsonl"]),
        ("report --format folded", ["report", "--format", "folded", "h.jsonl"]),
        ("report of a missing hostile path", ["report", "no" + HOSTILE]),
        ("check", ["check", "--max-leaked-bytes", "0", "--max-peak-bytes", "0",
                   "--max-failed", "0", "--suppressions", supp, "h.jsonl"]),
        ("check --max-growth-bytes", ["check", "--max-growth-bytes", "0", "h.jsonl"]),
        ("check of a dying process in a hostile file name",
         ["check", "--max-leaked-bytes", "0", "dir-utf8"]),
        ("check with a bad hostile suppression", ["check", "--max-leaked-bytes", "0",
                                                   "--suppressions", bad_supp, "h.jsonl"]),
        ("diff", ["diff", c.golden("basic.jsonl"), "h.jsonl"]),
        ("run's summary", ["run", "-o", c.path("out"), "--", "sh", "-c", run_script]),
        ("run of a hostile command", ["run", "-o", c.path("out2"), "--", "no" + HOSTILE]),
        ("an unknown short option", ["report", "-\t"]),
        ("an unknown ESC option", ["report", "-\x1b"]),
        ("an unknown long option", ["report", "--\x1b[31mred", "h.jsonl"]),
        ("an unknown command", ["\x1b[2Jcmd"]),
        ("an unknown option of gpumemtrace", ["-\x1b[2J"]),
        ("an unknown format", ["report", "--format", "\x1b[2J", "h.jsonl"]),
        ("a bad size", ["check", "--max-peak-bytes", "\x1b[2J=1", "h.jsonl"]),
        ("a bad count", ["diff", "--top", "\x1b[2J", "h.jsonl", "h.jsonl"]),
        ("a bad diff format", ["diff", "--format", "\x1b[2J", "h.jsonl", "h.jsonl"]),
    ]
    env = {"GPUMEMTRACE_LIB": c.args.dummy_lib}
    for what, args in cases:
        rc, out, err = c.run_raw(args, env=env)
        c.check(rc is not None, "%s: finishes" % what)
        for name, data in (("stdout", out), ("stderr", err)):
            bad = raw_controls(data)
            c.check(not bad, "%s: nothing raw on %s" % (what, name), "\n".join(bad[:5]))
    # ... and what is escaped is shown, as ls -b shows it
    rc, out, err = c.run_raw(["report", "--stack", "full", "h.jsonl", "dir"])
    text = (out + err).decode("utf-8", "replace")
    shown = "\\033]0;pwned\\a\\033[31mred\\302\\2332J\\342\\200\\256evil"
    for where in ("train" + shown + ".py:40 in T.step" + shown, "cudaMalloc" + shown,
                  "coverage: runtime API only" + shown, "why not CUPTI: why" + shown,
                  "lib" + shown + ".so", "prog" + shown + " x\\nleaked at exit: 0 B",
                  "t\\033[2J\\377.jsonl"):
        c.check(where in text, "report shows %r escaped" % where[:40], text[-3000:])
    c.check(not any(l.startswith("leaked at exit: 0 B") for l in text.splitlines()),
            "a newline in argv does not forge a report line")
    rc, out, err = c.run_raw(["report", "-\t", "h.jsonl"])
    c.check(b"unknown option or missing argument: -\\t" in err, "usage error: -\\t shown",
            err)
    # the JSON report keeps the names as they are (jansson escapes them for JSON)
    rc, out, err = c.run_raw(["report", "--format", "json", "h.jsonl"])
    doc = json.loads(out)
    c.check(doc["processes"][0]["argv"][0] == "prog" + HOSTILE,
            "the JSON report keeps the names unchanged")
    # a trace file's name that is not UTF-8 is still named where JSON carries it (U+FFFD for
    # the stray byte, as a module's path): the report's file, check's messages, diff's inputs
    named = "dir/t\x1b[2J\ufffd.jsonl"
    rc, out, err = c.run(["report", "--format", "json", "dir"])
    c.check(rc == 0 and json.loads(out)["processes"][0].get("file") == named,
            "the JSON report names a trace whose file name is not UTF-8", out[:300] + err)
    rc, out, err = c.run(["check", "--max-leaked-bytes", "0", "dir"])
    c.check(rc == 1 and "dir/t\\033[2J\ufffd.jsonl (pid 778): did not exit normally" in out and
            "? (pid" not in out, "check names it", "exit %s\n%s%s" % (rc, out, err))
    os.mkdir(os.path.join(c.tmp.encode(), b"d\xff"))
    shutil.copy(c.golden("basic.jsonl"), os.path.join(c.tmp.encode(), b"d\xff", b"b.jsonl"))
    rc, out, err = c.run_raw(["diff", "--format", "json",
                              b"d\xff".decode("utf-8", "surrogateescape"), "h.jsonl"])
    doc = json.loads(out) if rc == 0 else {}
    c.check(doc.get("base") == "d\ufffd" and doc.get("new") == "h.jsonl",
            "diff --format json names an input whose name is not UTF-8",
            (out[:300] + err).decode("utf-8", "replace"))
    # a ';' in a name (a Python file's path, a forged API name) would split its frame in two
    # for flame-graph tools: --format folded writes it \073
    c.write("semi.jsonl", lines(
        HEADER,
        {"type": "pycode", "id": 1, "file": "/home/u/a;b.py", "name": "step", "qualname": "step",
         "firstlineno": 1, "python": "3.11", "linetable": "ef00"},
        {"type": "stack", "id": 1, "frames": ["0x401000"], "py": [[1, 0, 1]]},
        dict(alloc(1, "0x7f0000000000", stack=1), api="cuda;Malloc"), trailer(1)))
    rc, out, err = c.run(["report", "--format", "folded", "semi.jsonl"])
    rows = [l for l in out.splitlines() if l.strip()]
    frames = rows[0].rsplit(" ", 1)[0].split(";") if len(rows) == 1 else []
    c.check(rc == 0 and "cuda\\073Malloc" in frames and
            any("a\\073b.py" in f for f in frames) and
            not any(f in ("cuda", "Malloc", "b.py") or f.startswith("b.py") for f in frames),
            "report --format folded: a ';' in a name does not split its frame",
            "exit %s\n%s%s" % (rc, out, err))


# --- inputs -------------------------------------------------------------------------------------

def in_mount_ns(c, script, args=(), env=None):
    """Run sh @script (with $1... = @args) as root of a new user and mount namespace, where it
    may mount a tmpfs; (exit status, stdout, stderr), or None where namespaces are not allowed."""
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True)
    if probe.returncode != 0:
        return None
    p = subprocess.run(["unshare", "-rm", "sh", "-c", script, "sh"] + list(args), cwd=c.tmp,
                       env=c.env(env), stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=120)
    err = p.stderr.decode("utf-8", "replace")
    c.no_sanitizer_report(["(in a mount namespace)", script[:60]], err)
    return p.returncode, p.stdout.decode("utf-8", "replace"), err


def group_inputs(c):
    basic = c.golden("basic.jsonl")
    # --from/--to a label that no marker has: not a report of an empty range
    for opt in ("--from", "--to"):
        for fmt in ("text", "json"):
            rc, out, err = c.run(["report", "--format", fmt, opt, "no-such-marker", basic])
            c.check(rc == 2 and out == "", "report %s %s no-such-marker: exit 2, no report" %
                    (fmt, opt), "exit %s\n%s" % (rc, err))
            c.check("%s 'no-such-marker': no marker has this label in %s; the labels there "
                    "are: 'epoch 1'" % (opt, basic) in err,
                    "report %s %s: names the label, the file and the labels there are" %
                    (fmt, opt), err)
    rc, out, err = c.run(["report", "--from", "epoch 1", "--to", "nope", basic,
                          c.golden("died.jsonl")])
    c.check(rc == 2 and "--to 'nope': no marker has this label in the 2 traces; the labels "
            "there are: 'epoch 1', 'step 1'" in err, "report --to over two traces",
            "exit %s\n%s" % (rc, err))
    rc, out, err = c.run(["report", "--from", "epoch 1", basic])
    c.check(rc == 0 and "range: from epoch 1 to the end" in out, "an existing label still works",
            "exit %s\n%s" % (rc, err))
    c.write("nomarks.jsonl", lines(HEADER, alloc(1, "0x7f0000000000"), trailer(1)))
    rc, out, err = c.run(["report", "--from", "x", "nomarks.jsonl"])
    c.check(rc == 2 and "(it has no markers; seconds work too: --from 2.5)" in err,
            "a trace without markers says so", "exit %s\n%s" % (rc, err))

    # run -o where the tracer cannot write: exit 2 before the program runs
    env = {"GPUMEMTRACE_LIB": c.args.dummy_lib}
    c.write("plain-file", "x\n")
    rc, out, err = c.run(["run", "-o", "plain-file", "--", "echo", "RAN"], env=env)
    c.check(rc == 2 and "RAN" not in out and "cannot write into the output directory "
            "plain-file: Not a directory" in err,
            "run -o FILE: exit 2, the program not run", "exit %s\n%s%s" % (rc, out, err))
    os.mkdir(c.path("mnt-ro"))
    ro = in_mount_ns(c, 'mount -t tmpfs tmpfs "$1" && mkdir "$1/ro" && '
                     'mount -o remount,ro "$1" && shift && exec "$@"',
                     [c.path("mnt-ro"), c.exe, "run", "-o", c.path("mnt-ro", "ro"), "--",
                      "echo", "RAN"], env=env)
    if ro is None:
        print("note: no user namespaces here: the read-only mount is not tried")
    else:
        rc, out, err = ro
        c.check(rc == 2 and "RAN" not in out and "cannot write into the output directory %s: "
                "Read-only file system" % c.path("mnt-ro", "ro") in err,
                "run -o a read-only directory: exit 2, the program not run",
                "exit %s\n%s%s" % (rc, out, err))
    if os.geteuid() != 0:
        os.mkdir(c.path("ro"), 0o555)
        rc, out, err = c.run(["run", "-o", "ro", "--", "echo", "RAN"], env=env)
        c.check(rc == 2 and "RAN" not in out and "Permission denied" in err,
                "run -o a directory without write permission: exit 2",
                "exit %s\n%s%s" % (rc, out, err))

    # a failed cudaMalloc of (size_t)-1 bytes (a count computed negative), as the tracer writes
    # it: a size past 2^63 - 1, which jansson refuses. The failure is read, on either path; a
    # successful allocation of that size is still a bad line
    huge = (1 << 64) - 1
    c.write("huge-request.jsonl", lines(HEADER, alloc(1, "0x7f0000000000"),
                                        dict(alloc(2, "0x0", size=huge), result=2), trailer(2)))
    c.write("huge-granted.jsonl", lines(HEADER, alloc(1, "0x7f0000000000", size=huge),
                                        trailer(1)))
    for slow in ("0", "1"):
        env = {"GMT_TRACE_SLOW": slow}
        rc, out, err = c.run(["check", "--max-failed", "0", "huge-request.jsonl"], env=env)
        c.check(rc == 1 and "PASS complete-traces" in out and
                "FAIL max-failed: failed allocations 1 > limit 0" in out and err == "",
                "a failed allocation of 2^64 - 1 bytes is read (GMT_TRACE_SLOW=%s)" % slow,
                "exit %s\n%s%s" % (rc, out, err))
        rc, out, err = c.run(["report", "huge-request.jsonl"], env=env)
        c.check(rc == 0 and "failed allocations: 1 (cudaMalloc 16.0 EiB on device 0" in out,
                "... and reported (GMT_TRACE_SLOW=%s)" % slow, "exit %s\n%s%s" % (rc, out, err))
        rc, out, err = c.run(["check", "--max-leaked-bytes", "0", "huge-granted.jsonl"], env=env)
        c.check(rc == 1 and "huge-granted.jsonl:2: " in err and "FAIL complete-traces" in out,
                "a granted allocation of 2^64 - 1 bytes is a bad line (GMT_TRACE_SLOW=%s)" % slow,
                "exit %s\n%s%s" % (rc, out, err))

    # allocations of 2^63 - 1 bytes (a damaged trace's sizes), two at one site: diff and live
    # hold their sums at what a report says (2^63 - 1), never wrapped into a shrink or nothing
    big = (1 << 63) - 1
    os.mkdir(c.path("big-two"))
    for pid in (777, 778):
        c.write(os.path.join("big-two", "%d.jsonl" % pid),
                lines(dict(HEADER, pid=pid), alloc(1, "0x7f0000000000", size=big), trailer(1)))
    c.write("big-one.jsonl", lines(HEADER, alloc(1, "0x7f0000000000", size=big),
                                   alloc(2, "0x7f8000000000", size=big), trailer(2)))
    c.write("small.jsonl", lines(HEADER, alloc(1, "0x7f0000000000"), trailer(1)))
    rc, out, err = c.run(["diff", "--format", "json", "small.jsonl", "big-two"])
    sites = json.loads(out)["sites"] if rc == 0 else []
    c.check(len(sites) == 1 and sites[0]["peak"]["after"] == big and
            sites[0]["leaked"]["after"] == big and sites[0]["leaked"]["delta"] > 0,
            "diff: two sites of 2^63 - 1 bytes add up to 2^63 - 1, a growth",
            "exit %s\n%s%s" % (rc, out, err))
    rc, out, err = c.run(["live", "--once", "big-one.jsonl"])
    c.check(rc == 0 and "8.0 EiB       2 live" in out and "(nothing live)" not in out,
            "live: a site of 2 x (2^63 - 1) bytes is shown", "exit %s\n%s%s" % (rc, out, err))
    # leaks of 2 + 2 x (2^63 - 1) bytes: a plain sum wraps to 0, and the leak gate passed; the
    # report's and check's sums are held at their most (util/sat.h)
    c.write("big-leaks.jsonl", lines(HEADER, alloc(1, "0x7f0000000000", size=2),
                                     alloc(2, "0x7f1000000000", size=big),
                                     alloc(3, "0x7f2000000000", size=big), trailer(3)))
    rc, out, err = c.run(["check", "--max-leaked-bytes", "0", "big-leaks.jsonl"])
    c.check(rc == 1 and "FAIL max-leaked-bytes" in out,
            "check: leaks that wrap a plain sum to 0 still fail the leak gate",
            "exit %s\n%s%s" % (rc, out, err))
    rc, out, err = c.run(["report", "big-leaks.jsonl"])
    c.check(rc == 0 and "leaked at exit: 16.0 EiB in 3 allocations" in out and
            "0 B in 3" not in out, "report: those leaks are not 0 B", "exit %s\n%s" % (rc, out))
    rc, out, err = c.run(["report", "--format", "json", "big-leaks.jsonl"])
    doc = json.loads(out) if rc == 0 else {}
    c.check(doc.get("summary", {}).get("leaked_bytes", 0) >= big,
            "report --format json: leaked_bytes held at its most",
            "exit %s\n%s" % (rc, json.dumps(doc.get("summary"))[:300]))

    # a header and nothing else: the trace ends where it starts, and the reader says why
    c.write("header.jsonl", lines(HEADER))
    rc, out, err = c.run(["report", "header.jsonl"])
    c.check(rc == 0 and "the trace ends at 0.000 s" in out and "ends at -" not in out,
            "a header-only trace ends at 0 s, not before its start", out)
    c.check("header.jsonl: note: nothing after the header" in err, "a header-only trace: noted",
            err)
    # files that describe no process: not traces
    c.write("pyinfo.jsonl", '{"type":"pyinfo","python":"3.12"}\n')
    c.write("stacks.jsonl", lines({"type": "stack", "id": 1, "frames": ["0x401000"]},
                                  {"type": "pyinfo", "python": "3.12"}))
    for name in ("pyinfo.jsonl", "stacks.jsonl"):
        rc, out, err = c.run(["report", name])
        c.check(rc == 3 and "%s: no header and no event, marker, snapshot or trailer line, not "
                "a trace" % name in err, "%s: exit 3, not a trace" % name,
                "exit %s\n%s" % (rc, err))

    # cut by a full disk: the file ends mid-line at a block boundary
    body = lines(HEADER, alloc(1, "0x7f0000000000"))
    pad = 8192 - len(body)
    ev = json.dumps(alloc(2, "0x7f0000100000"), separators=(",", ":"))
    cut = body + (ev * (pad // len(ev) + 1))[:pad]
    c.write("cut.jsonl", cut)
    c.write("killed.jsonl", cut[:-1])
    rc, out, err = c.run(["report", "cut.jsonl"])
    c.check(rc == 0 and "the trace was cut short at 0.001 s, most likely by a full disk" in out,
            "a trace cut at a block boundary: the report says a full disk", out)
    c.check("cut.jsonl: note: no trailer, and the file ends in the middle of a line at a "
            "4096-byte block boundary" in err, "... and the reader says why", err)
    rc, out, err = c.run(["report", "killed.jsonl"])
    c.check(rc == 0 and "did not exit normally" in out and "full disk" not in out + err,
            "a torn trace elsewhere: the process died", out + err)
    # a real full file system: a tmpfs filled by cp, and (with the tracer) by the tracer itself
    big = "".join(json.dumps(alloc(i, "0x%x" % (0x7f0000000000 + (i << 20))),
                             separators=(",", ":")) + "\n" for i in range(1, 3000))
    c.write("big.jsonl", lines(HEADER) + big)
    script = ('mount -t tmpfs -o size=64k tmpfs "$1" && cp big.jsonl "$1/t.jsonl"; '
              '"$2" report "$1"')
    os.mkdir(c.path("mnt-full"))
    full = in_mount_ns(c, script, [c.path("mnt-full"), c.exe])
    if full is not None:
        rc, out, err = full
        c.check(rc == 0 and "most likely by a full disk" in out and "no trailer" in err,
                "a trace on a file system cp filled: cut by a full disk", out + err)
    # a trace that ends with a whole line, on a file system something else filled: the file
    # system's state is the sign; once it is mounted read-only, it is not one any more
    c.write("small.jsonl", lines(HEADER, alloc(1, "0x7f0000000000")))
    script = ('mount -t tmpfs -o size=64k tmpfs "$1" && cp small.jsonl "$1/" && '
              'cat big.jsonl > "$1/filler" 2>/dev/null; "$2" report "$1/small.jsonl"; '
              'echo =====; mount -o remount,ro "$1" && "$2" report "$1/small.jsonl"')
    os.mkdir(c.path("mnt-filled"))
    filled = in_mount_ns(c, script, [c.path("mnt-filled"), c.exe])
    if filled is not None:
        rc, out, err = filled
        rw, _, ro = out.partition("=====")
        c.check("most likely by a full disk" in rw and "file system holding it is full" in err,
                "a died trace on a full file system: cut by a full disk", out + err)
        c.check("did not exit normally" in ro and "full disk" not in ro,
                "... not on a read-only mount (those say 0 free)", out + err)
    if full is not None and c.args.victim:
        script = ('mount -t tmpfs -o size=64k tmpfs "$1" && "$2" run -o "$1" -- "$3" burst '
                  '>/dev/null 2>&1; "$2" report "$1"')
        rc, out, err = in_mount_ns(c, script, [c.path("mnt-full"), c.exe, c.args.victim],
                                   env={"GPUMEMTRACE_LIB": c.args.tracer_lib,
                                        "LD_LIBRARY_PATH": c.args.simcuda,
                                        "SIMCUDA_MEM_BYTES": "1G", "SIMCUDA_DEVICES": "1"})
        c.check(rc == 0 and "most likely by a full disk" in out,
                "the tracer on a full file system: the report says so", out + err)


# --- trust --------------------------------------------------------------------------------------

def group_trust(c):
    # Files only their owner should read, reached through a trace directory's symlinks: the
    # tool may run with more rights (root, a CI service) than whoever made the directory.
    secrets = {
        # the first word of a line is what a JSON parser's error quotes ("near 'root'")
        "shadow": "SECRETHASHroot:$6$SECRETHASH1$xyz:19000:0:99999:7:::\n"
                  "SECRETHASHalice:SECRETHASH2:19000::::::\n",
        "config.json": '{"SECRETHASH_password": "SECRETHASH3",\n "SECRETHASH_token": 4}\n',
        "oneline.json": '{"SECRETHASH_password": "SECRETHASH5"}\n',
        "notes": "SECRETHASH6 first line\n" + "".join("SECRETHASH7 %d\n" % i for i in range(50)),
        "noeol": "SECRETHASH8 without a newline",
    }
    d = c.path("traces")
    os.mkdir(d)
    shutil.copy(c.golden("basic.jsonl"), os.path.join(d, "basic.jsonl"))
    for name, text in secrets.items():
        p = c.write(os.path.join("private", name), text)
        os.chmod(p, 0o600)
        os.symlink(p, os.path.join(d, name + ".jsonl"))

    def no_secret(what, rc, out, err, want_rc):
        c.check(rc == want_rc, "%s: exit %d" % (what, want_rc), "exit %s\n%s" % (rc, err))
        c.check("SECRETHASH" not in out + err, "%s: nothing of the files is quoted" % what,
                out + err)

    for name in secrets:
        link = "traces/%s.jsonl" % name
        rc, out, err = c.run(["report", link])
        no_secret("report %s" % link, rc, out, err, 3)
        c.check("%s: not a gpumemtrace trace" % link in err, "report %s: not a trace" % link,
                err)
    rc, out, err = c.run(["report", "traces"])
    no_secret("report DIR", rc, out, err, 0)
    c.check(err.count("not a gpumemtrace trace") == len(secrets) and
            "1 process, 14 events" in out, "report DIR: each link named, the trace reported",
            out + err)
    rc, out, err = c.run(["report", "--format", "json", "traces"])
    no_secret("report --format json DIR", rc, out, err, 0)
    rc, out, err = c.run(["check", "--max-leaked-bytes", "1G", "traces"])
    no_secret("check DIR", rc, out, err, 0)
    rc, out, err = c.run(["check", "--max-leaked-bytes", "1G", "traces/config.json.jsonl"])
    no_secret("check a JSON file", rc, out, err, 3)
    rc, out, err = c.run(["check", "--baseline", "traces/oneline.json.jsonl", "traces/basic.jsonl"])
    no_secret("check --baseline a JSON file", rc, out, err, 3)
    rc, out, err = c.run(["diff", "traces/shadow.jsonl", "traces/basic.jsonl"])
    no_secret("diff", rc, out, err, 3)

    # A trace cut at its start (tail -c): the partial first line is skipped, unquoted, and
    # the rest is read.
    with open(c.golden("basic.jsonl"), "rb") as f:
        data = f.read()
    c.write("tail.jsonl", data[-1500:])
    rc, out, err = c.run(["report", "tail.jsonl"])
    c.check(rc == 0 and "tail.jsonl:1: 1 line before the first trace line skipped" in err and
            "0 dropped" in out, "a trace cut at its start is read", "exit %s\n%s" % (rc, err))
    # After a trace line, bad lines are reported as before (they are the trace's).
    c.write("bad.jsonl", lines(HEADER) + "not json at all\n")
    rc, out, err = c.run(["report", "bad.jsonl"])
    c.check(rc == 0 and "bad.jsonl:2: invalid JSON" in err, "a trace's bad line is still shown",
            "exit %s\n%s" % (rc, err))


# --- compressed ---------------------------------------------------------------------------------

def zstd_frame(data):
    """One zstd frame of @data, by the zstd command (with its checksum, as the tracer's)."""
    return subprocess.run(["zstd", "-q", "-c", "--check"], input=data, stdout=subprocess.PIPE,
                          check=True).stdout


def run_stdin(c, args, data):
    p = subprocess.run([c.exe] + args, cwd=c.tmp, env=c.env(), input=data,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=HANG_S)
    err = p.stderr.decode("utf-8", "replace")
    c.no_sanitizer_report(args, err)
    return p.returncode, p.stdout.decode("utf-8", "replace"), err


def same_report(out):
    """A JSON report without its file names (a compressed copy, or -, has another name)."""
    doc = json.loads(out)
    for p in doc.get("processes", []):
        p.pop("file", None)
    return doc


def group_compressed(c):
    if not shutil.which("zstd"):
        c.check(False, "the zstd command is installed (scripts/setup installs it)")
        return
    if c.args.no_gzip:
        # a build without zlib: a gzip'd trace is refused with the way out, nothing else
        with open(c.golden("basic.jsonl"), "rb") as f:
            c.write("basic.jsonl.gz", gzip.compress(f.read()))
        rc, out, err = c.run(["report", "basic.jsonl.gz"])
        c.check(rc == 3 and "built without zlib" in err and "gzip -dc" in err,
                "without zlib: a .gz is unreadable, and the message says why and what to do",
                "exit %s\n%s" % (rc, err))
        return
    plain = {}
    for name in ("basic.jsonl", "died.jsonl", "pool.jsonl", "vmm.jsonl"):
        with open(c.golden(name), "rb") as f:
            data = f.read()
        rc, out, err = c.run(["report", "--format", "json", c.golden(name)])
        want = same_report(out)
        plain[name] = (data, out)
        # as the tracer writes: a frame per flush; and a gzip member per piece (cat a.gz b.gz)
        cut = [data[:len(data) // 3], data[len(data) // 3:2 * len(data) // 3],
               data[2 * len(data) // 3:]]
        zst = b"".join(zstd_frame(p) for p in cut)
        gz = b"".join(gzip.compress(p) for p in cut)
        c.write(name + ".zst", zst)
        c.write(name + ".gz", gz)
        for path, what in ((name + ".zst", "zstd, 3 frames"), (name + ".gz", "gzip, 3 members")):
            rc, out, err = c.run(["report", "--format", "json", path])
            c.check(rc == 0 and same_report(out) == want,
                    "report %s (%s): the plain file's report" % (path, what),
                    "exit %s\n%s" % (rc, err))
        for blob, what in ((data, "plain"), (zst, "zstd"), (gz, "gzip")):
            rc, out, err = run_stdin(c, ["report", "--format", "json", "-"], blob)
            c.check(rc == 0 and same_report(out) == want,
                    "report - (%s %s on standard input): the file's report" % (what, name),
                    "exit %s\n%s" % (rc, err))
    # check and diff read them too
    basic = c.golden("basic.jsonl")
    rc, out, err = c.run(["check", "--max-leaked-bytes", "0", basic])
    for path in ("basic.jsonl.zst", "basic.jsonl.gz"):
        rc2, out2, err2 = c.run(["check", "--max-leaked-bytes", "0", path])
        c.check(rc2 == rc == 1 and out2.replace(path, "X") == out.replace(basic, "X"),
                "check %s: the plain file's verdict" % path, "exit %s\n%s%s" % (rc2, out2, err2))
    rc, out, err = c.run(["diff", "--format", "json", basic, c.golden("died.jsonl")])
    rc2, out2, err2 = c.run(["diff", "--format", "json", "basic.jsonl.zst", "died.jsonl.gz"])
    strip = lambda d: {k: v for k, v in json.loads(d).items() if k not in ("base", "new")}
    c.check(rc2 == rc == 0 and strip(out2) == strip(out),
            "diff of a .zst and a .gz: the plain files' diff", "exit %s\n%s" % (rc2, err2))
    rc, out, err = run_stdin(c, ["diff", "-", "-"], plain["basic.jsonl"][0])
    c.check(rc == 3 and "-: cannot open: standard input was read already" in err,
            "diff - -: the second - refused (exit 3)", "exit %s\n%s" % (rc, err))
    # a directory of rank traces, one compressed each way
    multi = os.path.join(c.traces, "multi")
    os.mkdir(c.path("ranks"))
    names = sorted(os.listdir(multi))
    with open(os.path.join(multi, names[0]), "rb") as f:
        c.write(os.path.join("ranks", names[0] + ".zst"), zstd_frame(f.read()))
    with open(os.path.join(multi, names[1]), "rb") as f:
        c.write(os.path.join("ranks", names[1] + ".gz"), gzip.compress(f.read()))
    rc, out, err = c.run(["report", "--format", "json", multi])
    rc2, out2, err2 = c.run(["report", "--format", "json", "ranks"])
    c.check(rc2 == rc == 0 and len(json.loads(out2)["processes"]) == 2 and
            same_report(out2) == same_report(out),
            "a directory of .jsonl.zst and .jsonl.gz ranks: the plain directory's report",
            "exit %s\n%s" % (rc2, err2))

    # cut inside the last frame / member: every line before it is read, the byte is named
    data = plain["basic.jsonl"][0]
    body = data.splitlines(keepends=True)
    head, tail = b"".join(body[:-4]), b"".join(body[-4:])
    c.write("head.jsonl", head)
    rc, out, err = c.run(["report", "--format", "json", "head.jsonl"])
    events_before = json.loads(out)["summary"]["events"]
    c.check(0 < events_before < json.loads(plain["basic.jsonl"][1])["summary"]["events"],
            "the lines before the cut hold fewer events (%d) than the trace" % events_before)
    for kind, pack, word in (("zst", zstd_frame, "zstd frame"), ("gz", gzip.compress,
                                                                  "gzip member")):
        good = pack(head)
        last = pack(tail)
        c.write("cut.jsonl." + kind, good + last[:len(last) // 2])
        rc, out, err = c.run(["report", "--format", "json", "cut.jsonl." + kind])
        doc = json.loads(out) if rc == 0 else {}
        c.check(rc == 0 and "cut.jsonl.%s: note: %s compressed trace truncated: the file ends "
                "inside a %s (at byte " % (kind, "zstd" if kind == "zst" else "gzip", word)
                in err, "a .%s cut inside its last %s: read, and said so" % (kind, word),
                "exit %s\n%s" % (rc, err))
        c.check(rc == 0 and doc["summary"]["events"] == events_before,
            "... with every event of the complete %ss" % word, out[:400])
        c.write("junk.jsonl." + kind, good + b"this is not compressed data\n" + last)
        rc, out, err = c.run(["report", "--format", "json", "junk.jsonl." + kind])
        c.check(rc == 0 and ("junk.jsonl.%s: %s compressed trace corrupt at byte %d: " %
                             (kind, "zstd" if kind == "zst" else "gzip", len(good))) in err and
                "read as far as it is good" in err,
                "a .%s with garbage after a %s: read up to it, the byte named" % (kind, word),
                "exit %s\n%s" % (rc, err))
        c.check(rc == 0 and json.loads(out)["summary"]["events"] == events_before,
            "... with every event before it", out[:400])

    # run's summary finds the tracer's .jsonl.zst
    if c.args.victim:
        env = {"GPUMEMTRACE_LIB": c.args.tracer_lib, "LD_LIBRARY_PATH": c.args.simcuda,
               "SIMCUDA_MEM_BYTES": "1G", "SIMCUDA_DEVICES": "1", "GPUMEMTRACE_COMPRESS": "zstd"}
        rc, out, err = c.run(["run", "-o", "zrun", "--", c.args.victim, "basic"], env=env)
        files = os.listdir(c.path("zrun")) if os.path.isdir(c.path("zrun")) else []
        c.check(rc == 0 and len(files) == 1 and files[0].endswith(".jsonl.zst") and
                "gpumemtrace: 1 trace file in" in err and "no trace was written" not in err,
                "run with GPUMEMTRACE_COMPRESS=zstd: its summary reads the .jsonl.zst",
                "exit %s %s\n%s" % (rc, files, err))
        rc, out, err = c.run(["report", "zrun"])
        c.check(rc == 0 and "1 process" in out, "report of run's directory of a .jsonl.zst",
                "exit %s\n%s" % (rc, err))
        # a trace file of the run that yielded nothing (empty: a process ended before its
        # tracer wrote a line) is said in the summary, as check's complete-traces fails on it
        script = c.args.victim + ' basic && : > "$GPUMEMTRACE_OUTPUT_DIR/gpumemtrace.host.4242.jsonl"'
        rc, out, err = c.run(["run", "-o", "lostrun", "--", "sh", "-c", script], env=env)
        c.check(rc == 0 and "gpumemtrace: 2 trace files in" in err and
                "gpumemtrace.host.4242.jsonl: empty file, not a trace" in err and
                "gpumemtrace: 1 trace file yielded nothing (said above): its process is in none "
                "of the figures below" in err,
                "run's summary says a trace file that yielded nothing", "exit %s\n%s" % (rc, err))


# --- long lines ---------------------------------------------------------------------------------

BOMB = 512 << 20  # a line of 512 MiB: 8 times the limit
BOMB_PIECE = 64 << 20  # one zstd frame or gzip member: 64 MiB of zeros


def run_rss(c, args):
    """(exit status, stdout, stderr, peak RSS in KiB) of one run (wait4's rusage of the child;
    meson's timeout stands for a hang)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen([c.exe] + args, cwd=c.tmp, env=c.env(), stdin=subprocess.DEVNULL,
                             stdout=out, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        e = err.read().decode("utf-8", "replace")
        c.no_sanitizer_report(args, e)
        return p.returncode, out.read().decode("utf-8", "replace"), e, ru.ru_maxrss


def group_long_lines(c):
    have_zstd = shutil.which("zstd") is not None
    c.check(have_zstd, "the zstd command is installed (scripts/setup installs it)")
    # lines 1-3 good, line 4 the bomb (512 MiB of zeros), lines 5-6 good: a leak on either side
    before = lines(HEADER, alloc(1, "0x7f0000000000"), alloc(2, "0x7f0000100000"))
    after = lines(alloc(3, "0x7f0000200000"), trailer(3))
    sparse = c.path("bomb.jsonl")
    with open(sparse, "wb") as f:
        f.write(before.encode())
        f.seek(len(before) + BOMB)  # a hole: 512 MiB of zeros on no disk
        f.write(b"\n" + after.encode())
    zeros = bytes(BOMB_PIECE)
    cases = [("plain", sparse)]
    if have_zstd:
        piece = zstd_frame(zeros)
        c.write("bomb.jsonl.zst", zstd_frame(before.encode()) + piece * (BOMB // BOMB_PIECE) +
                zstd_frame(b"\n" + after.encode()))
        cases.append(("zstd", "bomb.jsonl.zst"))
    if not c.args.no_gzip:
        piece = gzip.compress(zeros, 9)
        c.write("bomb.jsonl.gz", gzip.compress(before.encode()) + piece * (BOMB // BOMB_PIECE) +
                gzip.compress(b"\n" + after.encode()))
        cases.append(("gzip", "bomb.jsonl.gz"))
    del zeros
    for kind, path in cases:
        name = os.path.basename(path)
        rc, out, err, rss = run_rss(c, ["report", "--format", "json", path])
        c.check(rc == 0, "%s: a 512 MiB line: report exit 0 (%s)" % (kind, rc), err)
        c.check("%s:4: line of %d bytes, longer than the 64 MiB a line may have: skipped"
                % (name, BOMB) in err, "%s: the message names %s:4 and the length" % (kind, name),
                err)
        c.check(rss < 256 * 1024, "%s: peak RSS %d KiB < 256 MiB for a 512 MiB line" % (kind, rss))
        doc = json.loads(out) if rc == 0 else {}
        s = doc.get("summary", {})
        c.check(s.get("leaked_allocations") == 3 and s.get("bad_lines") == 1 and
                doc["processes"][0]["complete"],
                "%s: the lines on both sides read (3 leaks, the trailer), 1 bad line" % kind,
                json.dumps(s)[:400])
        rc, out, err = c.run(["report", path])
        c.check(rc == 0 and "1 unreadable trace line was skipped" in out,
                "%s: the text report says the trace was damaged" % kind, out[:600])
        rc, out, err = c.run(["check", "--max-leaked-bytes", "1T", path])
        c.check(rc == 1 and "FAIL complete-traces" in out and "1 unreadable line" in out and
                name in out, "%s: check fails complete-traces, naming the file" % kind,
                "exit %s\n%s" % (rc, out))
        rc, out, err = c.run(["check", "--max-leaked-bytes", "1T", "--allow-incomplete", path])
        c.check(rc == 0 and "(allowed: --allow-incomplete)" in out,
                "%s: --allow-incomplete lets it pass, still naming it" % kind,
                "exit %s\n%s" % (rc, out))
    # a whole trace, then a bomb with no newline at its end: not a torn line to ignore quietly
    tail = c.path("tail-bomb.jsonl")
    whole = before + after
    with open(tail, "wb") as f:
        f.write(whole.encode())
        f.truncate(len(whole) + BOMB)
    rc, out, err, rss = run_rss(c, ["check", "--max-leaked-bytes", "1T", tail])
    c.check(rc == 1 and "tail-bomb.jsonl:6: line of %d bytes (the file ends inside it)" % BOMB
            in err and rss < 256 * 1024,
            "a bomb after the trailer, no final newline: named, check fails, RSS %d KiB" % rss,
            "exit %s\n%s%s" % (rc, out, err))
    # just under the limit is a line like any other (a million-frame stack is 17 MB)
    near = c.path("near.jsonl")
    frames = ",".join('"0x%x"' % (0x7f1100001000 + i) for i in range(3 * 1000 * 1000))
    with open(near, "w") as f:
        f.write(before + '{"type":"stack","id":1,"frames":[%s]}\n' % frames + after)
    rc, out, err = c.run(["report", near], timeout=120)
    c.check(rc == 0 and "longer than" not in err and "more frames than" in err,
            "a %d MB stack line (under 64 MiB) is read, its innermost frames kept"
            % (len(frames) // 1000000), "exit %s\n%s" % (rc, err))


# --- outputs ------------------------------------------------------------------------------------

CSV_TABLES = ["processes.csv", "allocations.csv", "failures.csv", "readings.csv", "markers.csv",
              "blocks.csv", "segments.csv", "sites.csv", "lost_traces.csv"]


def group_outputs(c):
    basic = c.golden("basic.jsonl")
    victim = c.write("victim", "precious\n")
    gone = c.path("created-through-link")

    def victim_intact(what):
        with open(victim) as f:
            c.check(f.read() == "precious\n", "%s: the victim file is unchanged" % what)
        c.check(not os.path.exists(gone), "%s: nothing created through a dangling link" % what)

    def no_temporaries(d, what):
        left = [n for n in os.listdir(d) if n.startswith(".gpumemtrace-")]
        c.check(not left, "%s: no temporary file left" % what, left)

    for fmt in ("text", "json", "html", "perfetto", "pytorch-snapshot", "folded"):
        for target, kind in ((victim, "a file"), (gone, "nothing (dangling)")):
            link = c.path("out-%s" % fmt)
            if os.path.lexists(link):
                os.unlink(link)
            os.symlink(target, link)
            rc, out, err = c.run(["report", "--format", fmt, "-o", link, basic])
            c.check(rc == 2 and "cannot write %s: a symbolic link" % link in err,
                    "report --format %s -o LINK to %s: exit 2, the link named" % (fmt, kind),
                    "exit %s\n%s" % (rc, err))
            victim_intact("report --format %s" % fmt)
            c.check(os.path.islink(link), "%s: the link is left as it was" % fmt)
    no_temporaries(c.tmp, "report -o")

    # a table name of --format csv -o DIR, each in turn
    for table in CSV_TABLES:
        d = c.path("csv-" + table)
        os.makedirs(d)
        os.symlink(victim, os.path.join(d, table))
        rc, out, err = c.run(["report", "--format", "csv", "-o", d, basic])
        c.check(rc == 2 and "cannot write %s: a symbolic link" % os.path.join(d, table) in err,
                "csv: a link at %s: exit 2, named" % table, "exit %s\n%s" % (rc, err))
        victim_intact("csv " + table)
        c.check(sorted(os.listdir(d)) == [table],
                "csv %s: no table written (all or none), no temporary file" % table,
                sorted(os.listdir(d)))
    os.symlink(victim, c.path("junit.xml"))
    rc, out, err = c.run(["check", "--max-leaked-bytes", "1T", "--junit", c.path("junit.xml"),
                          basic])
    c.check(rc == 2 and "cannot write %s: a symbolic link" % c.path("junit.xml") in err,
            "check --junit LINK: exit 2, named", "exit %s\n%s" % (rc, err))
    victim_intact("check --junit")

    # what is not planted is written as before
    d = c.path("csv-fresh")
    rc, out, err = c.run(["report", "--format", "csv", "-o", d, basic])
    c.check(rc == 0 and sorted(os.listdir(d)) == sorted(CSV_TABLES),
            "csv into a new directory: every table", "exit %s %s\n%s" % (
                rc, sorted(os.listdir(d)) if os.path.isdir(d) else None, err))
    rc, out, err = c.run(["report", "--format", "csv", "-o", d, basic])
    c.check(rc == 0 and sorted(os.listdir(d)) == sorted(CSV_TABLES),
            "csv again into it: the tables replaced, nothing else", sorted(os.listdir(d)))
    mine = c.write("mine.json", "old\n")
    os.chmod(mine, 0o600)
    rc, out, err = c.run(["report", "--format", "json", "-o", mine, basic])
    with open(mine) as f:
        doc = f.read()
    c.check(rc == 0 and doc.startswith("{") and os.stat(mine).st_mode & 0o777 == 0o600,
            "-o an existing file: replaced, its mode 0600 kept (%o)" % (os.stat(mine).st_mode & 0o777),
            err)
    rc, out, err = c.run(["report", "--format", "json", "-o", "/dev/null", basic])
    c.check(rc == 0 and os.path.exists("/dev/null") and not os.path.isfile("/dev/null"),
            "-o /dev/null: written into the device, exit 0", "exit %s\n%s" % (rc, err))
    rc, out, err = c.run(["report", "-o", c.tmp + "/", basic])
    c.check(rc == 2 and "a directory" in err, "-o DIR/: exit 2, a directory", err)

    # an output that names an input: refused before anything is written (the report was
    # renamed over the trace it was read from: the trace lost)
    with open(basic, "rb") as f:
        trace = f.read()
    mine = c.write("run.jsonl", trace.decode())
    tdir = c.path("traces")
    os.makedirs(tdir)
    shutil.copy(basic, os.path.join(tdir, "rank0.jsonl"))
    os.link(mine, c.path("hard.jsonl"))
    base = c.path("base.json")
    rc, out, err = c.run(["report", "--format", "json", "-o", base, basic])
    c.check(rc == 0, "a baseline report written", err)
    for args, victim_path, said in (
            (["report", "-o", mine, mine], mine, "-o %s is the input %s" % (mine, mine)),
            (["report", "--format", "html", "-o", c.path("hard.jsonl"), mine], mine,
             "is the input %s" % mine),
            (["report", "-o", os.path.join(tdir, ".", "rank0.jsonl"), basic, tdir],
             os.path.join(tdir, "rank0.jsonl"),
             "is the trace %s of the input directory" % os.path.join(tdir, "rank0.jsonl")),
            (["check", "--max-leaked-bytes", "1T", "--junit", mine, mine], mine,
             "--junit %s is the input" % mine),
            (["check", "--baseline", base, "--junit", base, basic], base,
             "--junit %s is the input %s" % (base, base)),
            (["check", "--max-leaked-bytes", "1T", "--junit",
              os.path.join(tdir, "rank0.jsonl"), tdir], os.path.join(tdir, "rank0.jsonl"),
             "of the input directory")):
        with open(victim_path, "rb") as f:
            before = f.read()
        rc, out, err = c.run(args)
        with open(victim_path, "rb") as f:
            after = f.read()
        c.check(rc == 2 and said in err and "replace it" in err,
                "%s: exit 2, both named" % " ".join(args[:3]), "exit %s\n%s" % (rc, err))
        c.check(after == before, "%s: the input left as it was" % " ".join(args[:3]))
    # a new name beside the inputs is written as before
    rc, out, err = c.run(["report", "-o", os.path.join(tdir, "report.txt"), tdir])
    c.check(rc == 0 and os.path.getsize(os.path.join(tdir, "report.txt")) > 0,
            "-o a new file in the input directory: written", "exit %s\n%s" % (rc, err))
    no_temporaries(c.tmp, "all")


GROUPS = {
    "outputs": group_outputs,
    "long-lines": group_long_lines,
    "compressed": group_compressed,
    "args": group_args,
    "trust": group_trust,
    "inputs": group_inputs,
    "escape": group_escape,
    "fifo": group_fifo,
    "signals": group_signals,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exe", required=True)
    ap.add_argument("--traces", required=True, help="tests/golden/traces")
    ap.add_argument("--victim", help="tests/preload/victim (none: a shell stands in)")
    ap.add_argument("--tracer-lib", help="libgpumemtrace.so for the victim, else a stand-in")
    ap.add_argument("--dummy-lib", help="a library that does nothing, preloaded as the tracer")
    ap.add_argument("--simcuda", help="the directory of tests/simcuda's libraries")
    ap.add_argument("--no-gzip", action="store_true", help="gpumemtrace was built without zlib")
    ap.add_argument("group", choices=sorted(GROUPS))
    a = ap.parse_args()
    for k in ("victim", "tracer_lib", "dummy_lib", "simcuda"):
        if getattr(a, k):
            setattr(a, k, os.path.abspath(getattr(a, k)))
    c = Cli(a)
    GROUPS[a.group](c)
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
