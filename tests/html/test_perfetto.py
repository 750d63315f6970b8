#!/usr/bin/env python3
"""`gpumemtrace report --format perfetto`: the Chrome trace-event structure (meson suite 'html').

On every checked-in golden trace, the hostile trace, and a report document with timeline[],
oom[] and marker ranges added by hand: the file is JSON with "traceEvents"; every event has
ph/ts/pid/tid; counters have numeric args; timestamps never go back on a track; range slices
nest on their thread's track;
there is one named process per traced process. On the hand-made document: the counter values,
the failure's args (size, api, explanation, site) and the range slices are the document's. On a
trace with two threads' overlapping ranges: each on its own thread's track, with its duration.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile  # noqa: E402

failures = 0


def check(cond, what, detail=""):
    global failures
    if cond:
        print("ok: %s" % what)
    else:
        failures += 1
        print("FAIL: %s" % what)
        if detail:
            print(str(detail).rstrip("\n")[:3000])


def structure(name, text, nprocs):
    """Checks what ui.perfetto.dev and chrome://tracing need; returns the events."""
    try:
        doc = json.loads(text)
    except ValueError as e:
        check(False, "%s: parses as JSON" % name, e)
        return []
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    check(isinstance(events, list), "%s: has a traceEvents list" % name)
    if not isinstance(events, list):
        return []
    problems, last, open_ranges = [], {}, {}
    for k, ev in enumerate(events):
        if not all(key in ev for key in ("ph", "ts", "pid", "tid", "name")):
            problems.append("event %d lacks ph/ts/pid/tid/name: %r" % (k, ev))
            continue
        ph = ev["ph"]
        if ph not in ("M", "C", "i", "X"):
            problems.append("event %d: unexpected ph %r" % (k, ph))
        if not isinstance(ev["ts"], (int, float)) or not isinstance(ev["pid"], int):
            problems.append("event %d: ts or pid not a number: %r" % (k, ev))
            continue
        if ph == "C":
            args = ev.get("args")
            if not isinstance(args, dict) or not args or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool)
                    for v in args.values()):
                problems.append("counter %d: args are not numbers: %r" % (k, ev))
            track = ("C", ev["pid"], ev["name"])
        elif ph == "M":
            continue
        else:
            track = ("T", ev["pid"], ev["tid"])
        if ph == "i" and ev.get("s") not in ("g", "p", "t"):
            problems.append("instant %d: scope %r" % (k, ev.get("s")))
        if track in last and ev["ts"] < last[track]:
            problems.append("event %d: ts %s goes back on its track (after %s)" %
                            (k, ev["ts"], last[track]))
        last[track] = ev["ts"]
        if ph == "X":
            # complete slices on a thread track must nest: each one inside the enclosing one
            dur = ev.get("dur")
            if not isinstance(dur, int) or dur < 0:
                problems.append("slice %d: dur %r" % (k, dur))
                continue
            ends = open_ranges.setdefault(track, [])
            while ends and ends[-1] <= ev["ts"]:
                ends.pop()
            if ends and ev["ts"] + dur > ends[-1]:
                problems.append("slice %d (%s) ends at %d, after its enclosing slice (%d)" %
                                (k, ev["name"], ev["ts"] + dur, ends[-1]))
            ends.append(ev["ts"] + dur)
    names = [e for e in events if e.get("ph") == "M" and e.get("name") == "process_name"]
    if len(names) != nprocs or len({e["pid"] for e in names}) != nprocs:
        problems.append("%d process_name events with %d pids for %d processes" %
                        (len(names), len({e["pid"] for e in names}), nprocs))
    check(not problems, "%s: trace-event structure" % name, "\n".join(problems))
    return events


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8", "replace")


def check_analyses(events, doc):
    counters = [e for e in events if e["ph"] == "C"]
    held = [(e["ts"], e["args"]["bytes"]) for e in counters if e["name"] == "GPU 0 held"]
    check(held == [(10000, 1048576), (20000, hostile.PEAK), (40000, hostile.PEAK)],
          "counter 'GPU 0 held': the timeline's points in microseconds", held)
    check(any(e["name"] == "GPU 0 device" for e in counters), "a counter track per kind")
    fails = [e for e in events if e["ph"] == "i" and e.get("cat") == "failed"]
    site = "%s (%s:7)" % (hostile.QUAL2, hostile.FILE2)
    check(len(fails) == 1 and fails[0]["args"].get("size") == hostile.FAILED_SIZE and
          fails[0]["args"].get("api") == "cudaMalloc" and
          fails[0]["args"].get("explanation") == hostile.EXPLANATION and
          fails[0]["args"].get("site") == site and fails[0]["ts"] == 30000,
          "the failed allocation: size, api, explanation, site", fails)
    xs = [(e["name"], e["tid"], e["ts"], e["dur"], e["args"]) for e in events if e["ph"] == "X"]
    check(xs == [("step", 777, 5000, 25000, {"push_seq": 0, "depth": 0, "pop_seq": 5}),
                 ("unclosed", 777, 35000, 15000, {"push_seq": 6, "depth": 0})],
          "marker ranges: one slice per push/pop pair named by its label (a document without "
          "tids: on the process's track), an unclosed one ends with the trace", xs)
    marks = [e["name"] for e in events if e["ph"] == "i" and e.get("cat") == "marker"]
    check(marks == [hostile.LABEL], "a plain marker is an instant", marks)
    procs = [e for e in events if e["ph"] == "M" and e["name"] == "process_name"]
    check(procs and procs[0]["pid"] == 777 and
          procs[0]["args"]["name"] == " ".join(hostile.ARGV),
          "the process: its pid, named by its command line", procs)


def slices(events):
    """The slices a viewer draws, per thread track: (pid, tid, name, ts, dur, args). B/E pair
    innermost-first on their track, as Perfetto and chrome://tracing pair them; X carries dur."""
    out, open_ = [], {}
    for ev in events:
        track = (ev.get("pid"), ev.get("tid"))
        if ev.get("ph") == "X":
            out.append((track[0], track[1], ev["name"], ev["ts"], ev.get("dur"), ev.get("args")))
        elif ev.get("ph") == "B":
            open_.setdefault(track, []).append(ev)
        elif ev.get("ph") == "E" and open_.get(track):
            b = open_[track].pop()
            out.append((track[0], track[1], b["name"], b["ts"], ev["ts"] - b["ts"], b.get("args")))
    return sorted(out, key=lambda s: (s[3], s[1]))


def check_threads(exe, tmp):
    """Two threads' overlapping ranges (A on the main thread 0.1-0.4 s, B on a worker 0.2-0.5 s):
    each on its own thread's track with its own duration, named by its label alone."""
    trace = os.path.join(tmp, "threads.jsonl")
    t0 = 1000000000
    lines = [
        {"type": "header", "format": "gpumemtrace", "version": 1, "tracer": "0.1.0", "pid": 900,
         "ppid": 1, "host": "h", "argv": ["prog"], "start_ts": t0,
         "start_unix_ns": 1796228579000000000, "coverage": "full", "capture": ["cupti"]},
        {"type": "marker", "seq": 1, "ts": t0 + 100000000, "tid": 900, "label": "A",
         "range": "push", "depth": 1},
        {"type": "marker", "seq": 2, "ts": t0 + 200000000, "tid": 901, "label": "B",
         "range": "push", "depth": 1},
        {"type": "marker", "seq": 3, "ts": t0 + 400000000, "tid": 900, "label": "",
         "range": "pop", "depth": 1},
        {"type": "marker", "seq": 4, "ts": t0 + 500000000, "tid": 901, "label": "",
         "range": "pop", "depth": 1},
        {"type": "trailer", "ts": t0 + 600000000, "events": 0, "dropped": 0, "reason": "exit"},
    ]
    with open(trace, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    rc, out, err = run([exe, "report", "--format", "perfetto", trace])
    check(rc == 0, "threads: exit 0", err)
    events = structure("threads", out, 1)
    got = [(s[1], s[2], s[3], s[4]) for s in slices(events)]
    check(got == [(900, "A", 100000, 300000), (901, "B", 200000, 300000)],
          "threads: each range on its thread's track, 300 ms each", got)
    names = {(e.get("tid"), e["args"].get("name")) for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    check((901, "thread 901") in names, "threads: the worker's track is named", names)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--render-doc", required=True)
    ap.add_argument("--golden-traces", required=True)
    ap.add_argument("--outdir", required=True)
    args = ap.parse_args()

    inputs = [[os.path.join(args.golden_traces, f)] for f in sorted(os.listdir(
        args.golden_traces)) if f.endswith(".jsonl") and f not in ("empty.jsonl",
                                                                    "version2.jsonl")]
    inputs.append([os.path.join(args.golden_traces, "multi")])
    for paths in inputs:
        name = os.path.basename(paths[0])
        rc, out, err = run([args.exe, "report", "--format", "json"] + paths)
        nprocs = len(json.loads(out)["processes"]) if rc == 0 else 0
        rc, out, err = run([args.exe, "report", "--format", "perfetto"] + paths)
        check(rc == 0, "%s: exit 0" % name, err)
        structure(name, out, nprocs)

    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "hostile.jsonl")
        hostile.write_trace(trace)
        rc, out, err = run([args.exe, "report", "--format", "perfetto", trace])
        check(rc == 0, "hostile: exit 0", err)
        structure("hostile", out, 1)
        doc = hostile.with_analyses(hostile.report_doc(args.exe, trace))
        fixture = os.path.join(tmp, "analyses.json")
        with open(fixture, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        rc, out, err = run([args.render_doc, "perfetto", fixture])
        check(rc == 0, "render_doc perfetto: exit 0", err)
        check_analyses(structure("analyses", out, 1), doc)
        check_threads(args.exe, tmp)

    if failures:
        print("%d check(s) failed" % failures)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
