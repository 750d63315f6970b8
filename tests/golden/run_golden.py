#!/usr/bin/env python3
"""Golden tests of the gpumemtrace CLI (meson suite 'golden').

    run_golden.py --exe BUILD/tools/gpumemtrace --srcdir tests/golden GROUP

GROUP is one of:
  report      `gpumemtrace report` (text and json) on the checked-in traces in traces/,
              compared with expected/*.expected (stdout and stderr)
  exit-codes  unreadable inputs (exit 3), usage errors (exit 2), --help, --version
  run         `gpumemtrace run`: exit status, LD_PRELOAD kept, output directory, summary

Commands run with the current directory set to SRCDIR and relative trace paths, so the file
names in the outputs are the same on every machine. On a mismatch a unified diff is printed and
the exit status is 1.

Set GMT_GOLDEN_UPDATE=1 to rewrite expected/ from the current outputs (then read the diff before
committing it: the expected files are what a user sees).
"""
import argparse
import difflib
import json
import os
import shutil
import subprocess
import sys
import tempfile

UPDATE = os.environ.get("GMT_GOLDEN_UPDATE") == "1"

# name, arguments after `report`: one trace file, or a directory of them
REPORT_CASES = [
    ("basic", ["traces/basic.jsonl"]),
    ("died", ["traces/died.jsonl"]),
    ("garbled", ["traces/garbled.jsonl"]),
    ("multi", ["traces/multi"]),
    # VMM expandable segments: reserve, create+map pages, one unmap over two pages, release while
    # mapped, retain; a handle numerically equal to the reservation's address; a failed cuMemCreate
    ("vmm", ["traces/vmm.jsonl"]),
    # pools: pool_reserve readings of two pools, trim and destroy; slack at the reservation peak
    ("pool", ["traces/pool.jsonl"]),
    # graph memory nodes and graph_reserve readings (launch, trim)
    ("graph", ["traces/graph.jsonl"]),
    # a context reset keeps pool/VMM/graph and releases device/pinned/managed/registered/array/
    # imported; then a context-less reset of another device
    ("reset", ["traces/reset.jsonl"]),
    # IPC open/close, an imported shareable handle mapped, a pool import, external memory buffers
    ("imported", ["traces/imported.jsonl"]),
    # NVML ledger: with and without process_used, last reading and the one nearest the peak
    ("nvml", ["traces/nvml.jsonl"]),
    # the same in a container (NVML's pids are the host's): the device's used memory when the
    # process is alone on it, no figure on a shared device; the ledger says so
    ("nvml-container", ["traces/nvml-container.jsonl"]),
    # CUPTI coverage: runtime -> driver names, a driver-only call
    ("cupti", ["traces/cupti.jsonl"]),
    # two processes with different coverage
    ("mixed", ["traces/cupti.jsonl", "traces/nvml.jsonl"]),
    # unknown kinds and ops, reading kinds misused, a bad nvml array: reported and skipped
    ("unknown", ["traces/unknown.jsonl"]),
    # call stacks: malformed modules, pycode, pyinfo and stack lines reported by FILE:LINE (the
    # rest used); modules whose files are not on this machine; Python frames with and without
    # their pycode; a pystate "empty" stack
    ("stacks-malformed", ["traces/stacks-malformed.jsonl"]),
]


class Golden:
    def __init__(self, exe, srcdir):
        self.exe = exe
        self.srcdir = srcdir
        self.failures = 0

    def run(self, args, env=None, cwd=None):
        full_env = dict(os.environ)
        # Neither a sanitizer's preload nor the caller's LD_PRELOAD belongs in these runs,
        # except where a test sets it on purpose.
        full_env.pop("LD_PRELOAD", None)
        full_env.pop("GPUMEMTRACE_LIB", None)
        if env:
            full_env.update(env)
        p = subprocess.run([self.exe] + args, cwd=cwd or self.srcdir, env=full_env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")

    def fail(self, what, detail=""):
        self.failures += 1
        print("FAIL: %s" % what)
        if detail:
            print(detail.rstrip("\n"))

    def check(self, cond, what, detail=""):
        if cond:
            print("ok: %s" % what)
        else:
            self.fail(what, detail)

    def compare(self, name, actual):
        """Compare with expected/NAME; an absent file means 'expected empty'."""
        path = os.path.join(self.srcdir, "expected", name)
        expected = ""
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                expected = f.read()
        if UPDATE:
            if actual:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(actual)
            elif os.path.exists(path):
                os.unlink(path)
            print("updated: %s" % name)
            return
        if actual == expected:
            print("ok: %s" % name)
            return
        diff = difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                    "expected/" + name, "actual", n=3)
        self.fail("%s differs" % name, "".join(diff))


def group_report(g):
    for name, paths in REPORT_CASES:
        for fmt in ("text", "json"):
            rc, out, err = g.run(["report", "--format", fmt] + paths)
            g.check(rc == 0, "%s %s: exit 0" % (name, fmt), "exit %d\n%s" % (rc, err))
            g.compare("%s.%s.expected" % (name, fmt), out)
            g.compare("%s.stderr.expected" % name, err)
            if fmt == "json":
                check_json_schema(g, name, out)
    # text is the default; -o writes the same bytes to a file
    rc, out, _ = g.run(["report", "traces/basic.jsonl"])
    g.compare("basic.text.expected", out)
    with tempfile.TemporaryDirectory() as tmp:
        dest = os.path.join(tmp, "report.json")
        rc, out, err = g.run(["report", "--format=json", "-o", dest, "traces/basic.jsonl"])
        g.check(rc == 0 and out == "", "report -o FILE: exit 0, nothing on stdout", err)
        with open(dest, encoding="utf-8") as f:
            g.compare("basic.json.expected", f.read())


KINDS = ["device", "managed", "pool", "pool_reserve", "array", "vmm_physical", "vmm_mapped",
         "vmm_reserve", "graph", "graph_reserve", "imported", "pinned", "registered"]
# the kinds whose leaks add up in leaked_bytes (docs/report-json.md)
COUNTED = {"device", "managed", "pool", "array", "vmm_physical", "pinned"}


def held(by_kind):
    """Device memory held, as docs/report-json.md defines it."""
    return (by_kind["device"] + by_kind["array"] + by_kind["vmm_physical"] +
            max(by_kind["pool"], by_kind["pool_reserve"]) + by_kind["graph_reserve"])


def check_json_schema(g, name, text):
    """The keys docs/report-json.md promises, with the promised types and sums."""
    try:
        doc = json.loads(text)
    except ValueError as e:
        g.fail("%s json: parses" % name, str(e))
        return
    summary_keys = ["processes", "incomplete_processes", "events", "dropped", "bad_lines",
                    "peak_held_bytes", "leaked_bytes", "leaked_allocations", "leak_sites",
                    "live_at_end_bytes", "live_at_end_allocations", "failed_allocations",
                    "unmatched_frees", "failed_frees", "reused_addresses", "unmatched_retains",
                    "cached_at_exit_bytes", "cached_at_exit_allocations", "probe_failures",
                    "recovered_failures"]
    problems = []
    if doc.get("report_version") != 4:
        problems.append("report_version is not 4")
    by = doc.get("summary", {}).get("cached_at_exit")
    if not isinstance(by, dict) or sorted(by) != ["cupy", "pytorch", "xla"]:
        problems.append("summary.cached_at_exit lacks an allocator")
    for k in summary_keys:
        if not isinstance(doc.get("summary", {}).get(k), int):
            problems.append("summary.%s is not an integer" % k)
    lists = {
        "processes": ["file", "pid", "ppid", "host", "argv", "rank", "forked_from", "tracer",
                      "coverage", "coverage_reason", "capture", "complete", "events",
                      "dropped", "end_time_s", "allocations", "frees", "unmatched_frees",
                      "failed_frees", "resets", "reused_addresses", "retains",
                      "unmatched_retains", "readings", "bad_lines", "torn_last_line",
                      "markers", "stack_capture", "modules_lines"],
        "peaks": ["process", "pid", "device", "bytes", "time_s", "seq", "held_terms",
                  "by_kind", "held_at_end_bytes", "kinds", "pool_slack", "allocations"],
        "leaks": ["process", "pid", "at_exit", "bytes", "allocations", "api", "driver", "kind",
                  "counted", "stack", "frames", "site", "pystate", "python_placement", "cache",
                  "cached"],
        "failed": ["process", "pid", "seq", "time_s", "api", "driver", "kind", "device", "size",
                   "result", "free_bytes", "total_bytes", "stack", "frames", "site", "pystate",
                   "python_placement", "class"],
        "call_stacks": ["process", "stack", "known", "site_index", "pystate", "python_placement",
                        "call_stack"],
        "leak_sites": ["process", "pid", "at_exit", "bytes", "allocations", "api", "driver", "kind",
                       "counted", "site", "cached_bytes", "cached_allocations", "stacks"],
        "peak_sites": ["process", "pid", "device", "bytes", "allocations", "api", "driver", "kind",
                       "site", "stacks"],
        "failed_sites": ["process", "pid", "device", "bytes", "failures", "first_seq", "api",
                         "driver", "kind", "site", "stacks"],
        "ledger": ["process", "pid", "device", "reading", "nearest_to_peak", "time_s", "seq",
                   "nvml_index", "total_bytes", "used_bytes", "process_used_bytes", "basis",
                   "process_used_from", "pid_namespace", "nvml_bytes", "tracked_bytes", "tracked_terms", "tracked_by_kind",
                   "untracked_bytes"],
        "kinds": ["kind", "meaning", "held", "counted"],
    }
    kind_keys = ["peak_bytes", "peak_allocations", "peak_time_s", "peak_seq", "live_bytes",
                 "live_allocations", "allocations"]
    for lst, keys in lists.items():
        if not isinstance(doc.get(lst), list):
            problems.append("%s is not a list" % lst)
            continue
        for i, e in enumerate(doc[lst]):
            missing = [k for k in keys if k not in e]
            if missing:
                problems.append("%s[%d] lacks %s" % (lst, i, ", ".join(missing)))
    if [k["kind"] for k in doc.get("kinds", [])] != KINDS:
        problems.append("kinds[] is not the documented list")
    for i, p in enumerate(doc.get("peaks", [])):
        if sorted(p.get("by_kind", {})) != sorted(KINDS) or sorted(p.get("kinds", {})) != sorted(KINDS):
            problems.append("peaks[%d]: by_kind/kinds lack a kind" % i)
            continue
        for k, ks in p["kinds"].items():
            if [x for x in kind_keys if x not in ks]:
                problems.append("peaks[%d].kinds.%s lacks keys" % (i, k))
        if p["bytes"] != held(p["by_kind"]):
            problems.append("peaks[%d].bytes is not the held sum of by_kind" % i)
        if p["bytes"] != sum(p["by_kind"][k] for k in p["held_terms"]):
            problems.append("peaks[%d].bytes is not the sum of its held_terms" % i)
        live = {k: p["kinds"][k]["live_bytes"] for k in KINDS}
        if p["held_at_end_bytes"] != held(live):
            problems.append("peaks[%d].held_at_end_bytes is not the held sum at the end" % i)
    for i, r in enumerate(doc.get("ledger", [])):
        if r["tracked_bytes"] != held(r["tracked_by_kind"]):
            problems.append("ledger[%d].tracked_bytes is not the held sum" % i)
        if r["untracked_bytes"] != r["nvml_bytes"] - r["tracked_bytes"]:
            problems.append("ledger[%d].untracked_bytes is not nvml_bytes - tracked_bytes" % i)
        want = r["process_used_bytes"] if r["basis"] == "process_used" else r["used_bytes"]
        if r["nvml_bytes"] != want or (r["basis"] == "used") != (r["process_used_bytes"] is None):
            problems.append("ledger[%d]: basis and nvml_bytes disagree" % i)
    s = doc.get("summary", {})
    if doc.get("peaks") and s.get("peak_held_bytes") != max(p["bytes"] for p in doc["peaks"]):
        problems.append("summary.peak_held_bytes is not the largest peaks[].bytes")
    for l in doc.get("leaks", []):
        if l["counted"] != (l["kind"] in COUNTED):
            problems.append("leaks[]: counted is wrong for kind %s" % l["kind"])
    frame_keys = ["kind", "function", "file", "line", "module", "offset", "address", "inlined",
                  "status", "hidden"]
    for lst in ("leaks", "failed", "call_stacks"):
        for i, e in enumerate(doc.get(lst, [])):
            for f in e.get("call_stack", []) + ([e["site"]] if e.get("site") else []):
                if [k for k in frame_keys if k not in f]:
                    problems.append("%s[%d]: a frame lacks keys" % (lst, i))
    named = {(e["process"], e["stack"]) for e in doc.get("call_stacks", [])}
    for lst in ("leaks", "failed"):
        for e in doc.get(lst, []):
            if e["stack"] and (e["process"], e["stack"]) not in named:
                problems.append("%s: stack %d of process %d is not in call_stacks[]" %
                                (lst, e["stack"], e["process"]))
    for lst, what in (("leak_sites", "allocations"), ("peak_sites", "allocations"),
                      ("failed_sites", "failures")):
        for i, e in enumerate(doc.get(lst, [])):
            if e["bytes"] != sum(s["bytes"] for s in e["stacks"]) or \
               e[what] != sum(s["allocations"] for s in e["stacks"]):
                problems.append("%s[%d]: bytes/%s are not the sums of its stacks" % (lst, i, what))
    sites = sum(l["bytes"] for l in doc.get("leak_sites", []))
    if sites != sum(l["bytes"] for l in doc.get("leaks", [])):
        problems.append("leak_sites[] and leaks[] hold different bytes")
    classes = [f.get("class") for f in doc.get("failed", [])]
    if [c for c in classes if c not in ("failure", "probe", "recovered")]:
        problems.append("failed[].class is not failure, probe or recovered")
    if classes.count("failure") != sum(f["failures"] for f in doc.get("failed_sites", [])):
        problems.append("failed_sites[] and failed[] count different failures")
    if (s.get("failed_allocations"), s.get("probe_failures"), s.get("recovered_failures")) != \
       (classes.count("failure"), classes.count("probe"), classes.count("recovered")):
        problems.append("summary's failure counts are not those of failed[].class")
    for p in doc.get("peaks", []):
        at_peak = sum(s["bytes"] for s in doc.get("peak_sites", [])
                      if s["process"] == p["process"] and s["device"] == p["device"])
        allocs = sum(p["by_kind"][k] for k in ("device", "array", "vmm_physical", "pool"))
        if at_peak != allocs:
            problems.append("peak_sites[] of process %d device %d hold %d bytes, not the %d "
                            "allocated at the peak" % (p["process"], p["device"], at_peak, allocs))
    leaked = sum(l["bytes"] for l in doc.get("leaks", [])
                 if l["at_exit"] and l["counted"] and not l["cached"])
    if s.get("leaked_bytes") != leaked:
        problems.append("summary.leaked_bytes is not the sum of counted leaks[].bytes at exit")
    cached = sum(l["bytes"] for l in doc.get("leaks", [])
                 if l["at_exit"] and l["counted"] and l["cached"])
    if s.get("cached_at_exit_bytes") != cached or \
       cached != sum(v["bytes"] for v in (by or {}).values()):
        problems.append("summary.cached_at_exit_bytes is not the sum of cached leaks[] at exit")
    g.check(not problems, "%s json: documented keys" % name, "\n".join(problems))


def group_exit_codes(g, version):
    cases = [
        # what, args, expected exit, expected-stderr file (None: not compared)
        ("empty file is unreadable", ["report", "traces/empty.jsonl"], 3, "empty.stderr.expected"),
        ("unknown version is unreadable", ["report", "traces/version2.jsonl"], 3,
         "version2.stderr.expected"),
        ("missing file is unreadable", ["report", "traces/no-such-file.jsonl"], 3, None),
        ("one readable input is enough", ["report", "traces/empty.jsonl", "traces/basic.jsonl"],
         0, None),
        ("report without a trace", ["report"], 2, None),
        ("report with an unknown format", ["report", "--format", "xml", "traces/basic.jsonl"], 2,
         None),
        ("report with an unknown option", ["report", "--bogus", "traces/basic.jsonl"], 2, None),
        ("report with an unknown stack view", ["report", "--stack", "all", "traces/basic.jsonl"],
         2, None),
        ("report with an unknown weight",
         ["report", "--format", "folded", "--weight", "freed", "traces/basic.jsonl"], 2, None),
        ("report --weight without folded", ["report", "--weight", "peak", "traces/basic.jsonl"],
         2, None),
        ("report --format folded", ["report", "--format", "folded", "traces/basic.jsonl"], 0,
         None),
        ("unknown command", ["frobnicate"], 2, None),
        ("no command", [], 2, None),
        ("run without a command", ["run"], 2, None),
        ("run with an unknown option", ["run", "--bogus", "true"], 2, None),
    ]
    for what, args, want, stderr_file in cases:
        rc, out, err = g.run(args)
        g.check(rc == want, "%s: exit %d" % (what, want), "exit %d\nstderr:\n%s" % (rc, err))
        if want == 2:
            g.check("Try 'gpumemtrace" in err or "Usage:" in err, "%s: usage hint" % what, err)
        if stderr_file:
            g.compare(stderr_file, err)
    rc, out, err = g.run(["--version"])
    g.check(rc == 0 and out == "gpumemtrace %s\n" % version, "--version", out + err)
    for args in (["--help"], ["report", "--help"], ["run", "--help"]):
        rc, out, err = g.run(args)
        g.check(rc == 0 and "Usage: gpumemtrace" in out and "Exit status" in out,
                "%s: usage with exit codes" % " ".join(args), out + err)


def group_run(g, dummy_lib):
    with tempfile.TemporaryDirectory() as tmp:
        # A copy under the tracer's name: the launcher resolves symlinks, and the test must tell
        # "our" entry from the pre-existing one.
        lib = os.path.join(tmp, "libgpumemtrace.so")
        shutil.copy(dummy_lib, lib)
        lib = os.path.realpath(lib)
        pre = os.path.realpath(dummy_lib)
        outdir = os.path.join(tmp, "new", "traces")
        script = ('echo "LD_PRELOAD=$LD_PRELOAD"; echo "OUT=$GPUMEMTRACE_OUTPUT_DIR"; '
                  'cp traces/basic.jsonl "$GPUMEMTRACE_OUTPUT_DIR/gpumemtrace.node7.4242.jsonl"; '
                  'exit 3')
        env = {"GPUMEMTRACE_LIB": lib, "LD_PRELOAD": pre}
        # In a -Db_sanitize=address build, gpumemtrace itself runs with that LD_PRELOAD: ASan
        # must not insist on coming first.
        asan = os.environ.get("ASAN_OPTIONS", "")
        env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "verify_asan_link_order=0"
        rc, out, err = g.run(["run", "-o", outdir, "--", "sh", "-c", script], env=env)
        g.check(rc == 3, "run: the command's exit status (3)", "exit %d\n%s" % (rc, err))
        g.check("LD_PRELOAD=%s:%s\n" % (lib, pre) in out,
                "run: LD_PRELOAD is the tracer, then the existing entry", out)
        g.check("OUT=%s\n" % os.path.realpath(outdir) in out,
                "run: GPUMEMTRACE_OUTPUT_DIR is the -o directory, created", out)
        for want in ("gpumemtrace: 1 trace file in %s" % outdir,
                     "gpumemtrace: 1 process, 14 events, 0 dropped",
                     "peak 3.0 MiB device memory held on device 0",
                     "leaked at exit 2.0 MiB in 2 allocations",
                     "1 failed allocation",
                     "gpumemtrace report %s" % outdir):
            g.check(want in err, "run: summary says '%s'" % want, err)

        # Run again into the same directory: the old trace is not reported as this run's.
        rc, out, err = g.run(["run", "-o", outdir, "sh", "-c", "exit 0"], env=env)
        g.check(rc == 0 and "no trace was written" in err,
                "run: only traces of this run are summarized", "exit %d\n%s" % (rc, err))

        rc, out, err = g.run(["run", "-o", outdir, "--", "sh", "-c", "kill -TERM $$"], env=env)
        g.check(rc == 128 + 15, "run: killed by SIGTERM gives 143", "exit %d\n%s" % (rc, err))

        rc, out, err = g.run(["run", "-o", outdir, "--", "gmt-no-such-command-xyz"], env=env)
        g.check(rc == 127 and "command not found" in err, "run: command not found gives 127",
                "exit %d\n%s" % (rc, err))

        rc, out, err = g.run(["run", "-o", outdir, "--", "sh", "-c", "exit 0"],
                             env=dict(env, GPUMEMTRACE_LIB=os.path.join(tmp, "missing.so")))
        g.check(rc == 2 and "GPUMEMTRACE_LIB" in err, "run: a missing tracer library gives 2",
                "exit %d\n%s" % (rc, err))

        # Without -o: a new gpumemtrace-YYYYmmdd-HHMMSS directory in the current directory
        # (kept here by the file put in it: an empty one is removed after the run).
        cwd = os.path.join(tmp, "cwd")
        os.mkdir(cwd)
        rc, out, err = g.run(["run", "sh", "-c", 'echo "$GPUMEMTRACE_OUTPUT_DIR"; '
                              'touch "$GPUMEMTRACE_OUTPUT_DIR/kept"'], env=env, cwd=cwd)
        made = [d for d in os.listdir(cwd) if d.startswith("gpumemtrace-")]
        g.check(rc == 0 and len(made) == 1 and out.strip() == os.path.join(
            os.path.realpath(cwd), made[0] if made else "?"),
            "run: default output directory gpumemtrace-YYYYmmdd-HHMMSS", out + err + repr(made))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exe", required=True)
    ap.add_argument("--srcdir", required=True)
    ap.add_argument("--version", default="0.1.0")
    ap.add_argument("--dummy-lib")
    ap.add_argument("group", choices=["report", "exit-codes", "run"])
    a = ap.parse_args()
    g = Golden(os.path.abspath(a.exe), os.path.abspath(a.srcdir))
    if a.group == "report":
        group_report(g)
    elif a.group == "exit-codes":
        group_exit_codes(g, a.version)
    else:
        if not a.dummy_lib:
            ap.error("the run group needs --dummy-lib")
        group_run(g, os.path.abspath(a.dummy_lib))
    if g.failures:
        print("%d check(s) failed" % g.failures)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
