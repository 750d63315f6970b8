#!/usr/bin/env python3
"""Offline call stacks (meson suite 'golden'): traces made from real binaries, the report's names.

    test_symbolize.py --exe BUILD/tools/gpumemtrace --srcdir tests/stacks --victim ... [--libcxx ...]

make_trace.py writes traces whose addresses are return addresses in the victims built with this
tree (and Python frames from this interpreter's line tables); this script runs
`gpumemtrace report --format json` on them and checks every frame's function and file:line
against the SITE: markers of the sources, the call-site groups, build-id mismatches, the
splicing of Python frames, then `--format folded` against expected/*.folded (paths relative to
this directory, which is where the commands run). GMT_GOLDEN_UPDATE=1 rewrites expected/.
"""
import argparse
import difflib
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_trace  # noqa: E402

UPDATE = os.environ.get("GMT_GOLDEN_UPDATE") == "1"
failures = []


def check(cond, what, detail=""):
    if cond:
        print("ok: %s" % what)
        return True
    failures.append(what)
    print("FAIL: %s" % what)
    if detail:
        print(detail.rstrip("\n"))
    return False


def report(exe, srcdir, args):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env["DEBUGINFOD_URLS"] = ""
    p = subprocess.run([exe, "report"] + args, cwd=srcdir, env=env, capture_output=True,
                       text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def same_file(a, b):
    return a is not None and b is not None and os.path.realpath(a) == os.path.realpath(b)


def frame_ok(got, want):
    """Whether a report frame is the expected one; the reason when not."""
    for k in ("function", "line", "inlined", "module", "offset", "status"):
        if k in want and want[k] is not None and got.get(k) != want[k]:
            return "%s is %r, expected %r" % (k, got.get(k), want[k])
    if want.get("file") and not same_file(got.get("file"), want["file"]):
        return "file is %r, expected %r" % (got.get("file"), want["file"])
    if "file" in want and want["file"] is None and got.get("file") is not None:
        return "file is %r, expected none" % got.get("file")
    return None


def shown(call_stack):
    return [f for f in call_stack if not f["hidden"]]


def check_stack(name, sid, call_stack, want):
    got = shown(call_stack)
    brief = "\n".join("  got: %s %s:%s %s" % (f["function"], f["file"], f["line"], f["status"])
                      for f in got)
    if not check(len(got) == len(want), "%s stack %s: %d frames shown" % (name, sid, len(want)),
                 brief):
        return
    for i, (g, w) in enumerate(zip(got, want)):
        why = frame_ok(g, w)
        check(why is None, "%s stack %s frame %d is %s" % (name, sid, i, w.get("function") or
                                                          w.get("module")), why or "")


def stacks_of(doc):
    """{stack id: call_stacks[] entry} of the first process."""
    return {str(e["stack"]): e for e in doc["call_stacks"] if e["process"] == 0}


def load(exe, srcdir, path, name):
    rc, out, err = report(exe, srcdir, ["--format", "json", path])
    if not check(rc == 0, "%s: report exits 0" % name, err):
        return None, err
    return json.loads(out), err


def check_native(exe, srcdir, tmp, exp):
    doc, err = load(exe, srcdir, os.path.join(tmp, "native.jsonl"), "native")
    if not doc:
        return
    by = stacks_of(doc)
    for sid, want in exp["stacks"].items():
        check_stack("native", sid, by[sid]["call_stack"], want)
    sites = doc["leak_sites"]
    check(len(sites) == len(exp["leak_sites"]), "native: %d leak sites" % len(exp["leak_sites"]),
          json.dumps([s["site"] for s in sites], indent=1))
    for w in exp["leak_sites"]:
        g = [s for s in sites if s["site"] and frame_ok(s["site"], w["site"]) is None]
        if not check(len(g) == 1, "native: one leak site %s" % w["site"]["function"]):
            continue
        g = g[0]
        check(g["bytes"] == w["bytes"], "native: site %s holds %d bytes" % (w["site"]["function"],
                                                                           w["bytes"]))
        check([s["stack"] for s in g["stacks"]] == w["stacks"],
              "native: site %s groups stacks %s" % (w["site"]["function"], w["stacks"]),
              repr([s["stack"] for s in g["stacks"]]))
        if w.get("pystate"):
            check(by[str(g["stacks"][0]["stack"])]["pystate"] == w["pystate"],
                  "native: site %s has pystate %s" % (w["site"]["function"], w["pystate"]))
    inl = [s for s in sites if s["site"] and s["site"]["function"] == "pick_and_alloc"]
    check(inl and inl[0]["site"]["inlined"], "native: the inlined site is marked inlined")
    f = doc["failed_sites"]
    check(len(f) == 1 and frame_ok(f[0]["site"], exp["failed_sites"][0]["site"]) is None and
          f[0]["failures"] == 1, "native: the failed allocation's site is lib_alloc_huge")
    peak = doc["peak_sites"]
    check(sum(s["bytes"] for s in peak) == doc["peaks"][0]["bytes"],
          "native: peak sites add up to the peak")
    weights = [s for s in peak if s["site"]["function"] == "lib_alloc_weights"]
    check(weights and weights[0]["bytes"] == 13 << 20,
          "native: the weights site held 13 MiB at the peak (the freed 8 MiB included)")
    first = by["1"]["call_stack"]
    check(first[0]["hidden"] and first[0]["status"] == "file_missing" and
          first[0]["module"].endswith("libcudart.so.13"),
          "native: the CUDA runtime frame is kept, hidden, as module+offset")
    check("libcudart.so.13: cannot read it" in err, "native: the missing module is noted once",
          err)
    check(doc["processes"][0]["stack_capture"] == {"native": True, "python": None, "depth": 64},
          "native: processes[].stack_capture from the header")
    rc, text, _ = report(exe, srcdir, ["--stack", "full", os.path.join(tmp, "native.jsonl")])
    check("at libvictim.c:" in text and "in lib_alloc_weights (2 stacks)" in text,
          "native text: the site line names file:line and function", text)
    check("→ libvictim.c:" in text and "in pick_and_alloc (inlined)" in text,
          "native text: --stack full shows the inlined frame", text)
    check(make_trace.GMT_PYSTATE_LABEL in text, "native text: the pystate empty label", text)


def check_simple(exe, srcdir, tmp, exp, name):
    doc, err = load(exe, srcdir, os.path.join(tmp, name + ".jsonl"), name)
    if not doc:
        return doc, err
    by = stacks_of(doc)
    for sid, want in exp["stacks"].items():
        check_stack(name, sid, by[sid]["call_stack"], want)
    return doc, err


def check_mismatch(exe, srcdir, tmp, exp):
    doc, err = check_simple(exe, srcdir, tmp, exp, "mismatch")
    if not doc:
        return
    site = doc["leak_sites"][0]["site"]
    check(site["status"] == "build_id_mismatch" and site["function"] is None,
          "mismatch: the site is the library's frame, unresolved")
    check("libvictim.so: not the file the trace saw" in err and "00000000" in err,
          "mismatch: the build-id difference is noted", err)
    rc, text, _ = report(exe, srcdir, [os.path.join(tmp, "mismatch.jsonl")])
    check("at libvictim.so+0x" in text, "mismatch text: module+offset", text)


def check_python(exe, srcdir, tmp, exp):
    doc, err = check_simple(exe, srcdir, tmp, exp, "python")
    if not doc:
        return
    by = stacks_of(doc)
    for sid, want in exp["placement"].items():
        check(by[sid]["python_placement"] == want, "python stack %s: placement %s" % (sid, want),
              repr(by[sid]["python_placement"]))
    site = [e["site"] for e in doc["leaks"] if e["stack"] == 1][0]
    check(site["kind"] == "python" and site["function"] == "alloc_weights" and
          by["1"]["site_index"] == site["index"],
          "python: the site is the innermost Python frame")
    glue = [f for f in by["1"]["call_stack"] if f["function"] == "PyObject_Call"]
    check(len(glue) == 1 and glue[0]["hidden"], "python: interpreter glue is kept, hidden")
    check("names Python code 999" in err, "python: the undefined code is noted", err)


def compare(srcdir, name, actual):
    path = os.path.join(srcdir, "expected", name)
    if UPDATE:
        with open(path, "w", encoding="utf-8") as f:
            f.write(actual)
        print("updated: %s" % name)
        return
    expected = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
    diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                        "expected/" + name, "actual"))
    check(actual == expected, "%s matches" % name, diff)


def check_folded(exe, srcdir, tmp):
    traces = [os.path.join(tmp, n) for n in ("native.jsonl", "dlopen.jsonl", "python.jsonl")]
    for weight in ("peak", "leaked", "allocated"):
        rc, out, err = report(exe, srcdir, ["--format", "folded", "--weight", weight] + traces)
        check(rc == 0, "folded --weight %s: exit 0" % weight, err)
        for line in out.splitlines():
            stack, _, w = line.rpartition(" ")
            if not check(stack and w.isdigit() and int(w) > 0 and "\t" not in stack,
                         "folded line is 'frames weight'", line):
                break
        compare(srcdir, "%s.folded" % weight, out)
    rc, out, err = report(exe, srcdir, ["--format", "json", "--weight", "peak", traces[0]])
    check(rc == 2, "--weight without --format folded is a usage error")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exe", required=True)
    ap.add_argument("--srcdir", required=True)
    ap.add_argument("--victim", required=True)
    ap.add_argument("--libvictim", required=True)
    ap.add_argument("--libother", required=True)
    ap.add_argument("--fakepython", required=True)
    ap.add_argument("--libcxx")
    a = ap.parse_args()
    exe, srcdir = os.path.abspath(a.exe), os.path.abspath(a.srcdir)
    with tempfile.TemporaryDirectory(prefix="gmt-stacks-") as tmp:
        argv = [sys.executable, os.path.join(srcdir, "make_trace.py"), "--victim", a.victim,
                "--libvictim", a.libvictim, "--libother", a.libother, "--fakepython",
                a.fakepython]
        if a.libcxx:
            argv += ["--libcxx", a.libcxx]
        subprocess.run(argv + [tmp], check=True)
        with open(os.path.join(tmp, "expected.json"), encoding="utf-8") as f:
            exp = json.load(f)
        check_native(exe, srcdir, tmp, exp["native"])
        check_mismatch(exe, srcdir, tmp, exp["mismatch"])
        check_simple(exe, srcdir, tmp, exp["dlopen"], "dlopen")
        check_python(exe, srcdir, tmp, exp["python"])
        if "cxx" in exp:
            check_simple(exe, srcdir, tmp, exp["cxx"], "cxx")
        else:
            print("note: no C++ compiler, the demangling case is skipped")
        check_folded(exe, srcdir, tmp)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
