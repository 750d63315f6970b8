#!/usr/bin/env python3
"""Call stacks end to end (meson suite 'stacks'): victims with known call chains run under the
tracer on the simulated runtime; `gpumemtrace report --format json` must name every site.

    run_stacks.py --build BUILD [--capture cupti|interpose] native|dlopen|python

  native  victim_stacks: main -> a() -> b() -> lib_alloc_*() (libvictim.so) -> cudaMalloc, one
          leak per site (one of them inlined), one failed allocation
  dlopen  victim_dlopen: libvictim.so loaded, used, unloaded, then libvictim_other.so: the
          first library's frames must still resolve
  python  victim.py: cudaMalloc through ctypes from known Python functions and lines
  static  victim_static (C++): the runtime linked into the program as with nvcc's default
          static cudart (fake_cudart_static.cpp: cudaMalloc, cudart::..., libcudart_static_<sha1>
          frames in the executable, no debug information); the sites are the user's functions
  dlopen-bytes  dlopen with both libraries copied into a directory whose name is not UTF-8
          (bytes ff fe c3 28), the second library's debug information naming its source in
          another such directory: the trace keeps the path's bytes (modules "path_hex"), the
          report opens that file, shows the path with U+FFFD and still names every frame

Each victim prints the function, file and line of every frame it expects, innermost first
(recorded on the line of each call); the report's call-site groups (leak_sites, failed_sites)
must have that site, and the shown frames of their stacks that chain.

Exit 77 (skipped) when the tracer does not capture stacks yet (the trace header has no
"stacks") or, for python, cannot capture this interpreter's frames (stacks.python is null).
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

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


def finish():
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    return 0


def same_file(a, b):
    """The victim's __FILE__ is as the compiler was given it (relative to the build directory);
    the report's path is absolute: compare the names, and the whole path when both are absolute."""
    if not a or not b:
        return False
    if os.path.isabs(a) and os.path.isabs(b):
        return os.path.realpath(a) == os.path.realpath(b)
    return os.path.basename(a) == os.path.basename(b)


def frame_is(got, want):
    return (got.get("function") == want["function"] and got.get("line") == want["line"] and
            same_file(got.get("file"), want["file"]))


def show(frames):
    return "\n".join("  %s %s:%s (%s, %s)" % (f.get("function"), f.get("file"), f.get("line"),
                                              f.get("kind"), f.get("status")) for f in frames)


def check_chain(what, call_stack, chain, python):
    """The expected frames, innermost first, are the stack's shown frames from the site on (for
    Python: its Python frames, with native frames in between allowed)."""
    shown = [f for f in call_stack if not f["hidden"]]
    if python:
        shown = [f for f in shown if f["kind"] == "python"]
    start = [i for i, f in enumerate(shown) if frame_is(f, chain[0])]
    ok = bool(start) and len(shown) >= start[0] + len(chain) and all(
        frame_is(shown[start[0] + k], w) for k, w in enumerate(chain))
    check(ok, "%s: the stack reads %s" % (what, " <- ".join(
        "%s:%d" % (w["function"], w["line"]) for w in chain)), "got:\n" + show(shown))


def run_victim(build, argv, capture, outdir, extra_env=None):
    env = dict(os.environ)
    env.update({
        "LD_LIBRARY_PATH": os.path.join(build, "tests", "simcuda"),
        "LD_PRELOAD": os.path.join(build, "src", "libgpumemtrace.so"),
        "GPUMEMTRACE_OUTPUT_DIR": outdir,
        "GPUMEMTRACE_STACKS": "all",
        "GPUMEMTRACE_COMPRESS": "none",  # the test reads the tracer's lines
        "SIMCUDA_MEM_BYTES": "1G",
        "SIMCUDA_DEVICES": "1",
        "DEBUGINFOD_URLS": "",
    })
    if capture == "interpose":
        env["GPUMEMTRACE_CUPTI"] = "0"
    env.update(extra_env or {})
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=240)
    check(p.returncode == 0, "the victim exits 0", "exit %d\n%s" % (p.returncode, p.stderr))
    did = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    if not check(len(did) == 1, "the victim says what it did", p.stdout + p.stderr):
        return None, None
    traces = sorted(glob.glob(os.path.join(outdir, "*.jsonl")))
    if not check(len(traces) == 1, "one trace file", repr(traces)):
        return did[0], None
    return did[0], traces[0]


def report(build, trace):
    exe = os.path.join(build, "tools", "gpumemtrace")
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env["DEBUGINFOD_URLS"] = ""
    p = subprocess.run([exe, "report", "--format", "json", trace], env=env, capture_output=True,
                       text=True, timeout=120)
    check(p.returncode == 0, "gpumemtrace report exits 0", p.stderr)
    return json.loads(p.stdout) if p.returncode == 0 else None


def header(trace):
    with open(trace, encoding="utf-8") as f:
        return json.loads(f.readline())


def check_sites(doc, did, python):
    for s in did["sites"]:
        chain = s["frames"]
        site = chain[0]
        name = "%s %s:%d" % (site["function"], os.path.basename(site["file"]), site["line"])
        groups = doc["leak_sites"] if s["ok"] else doc["failed_sites"]
        found = [g for g in groups if g["site"] and frame_is(g["site"], site)]
        if not check(len(found) == 1, "%s site %s is one call-site group" % (
                "leak" if s["ok"] else "failed", name),
                "sites:\n" + show([g["site"] for g in groups if g["site"]])):
            continue
        g = found[0]
        check(g["site"]["kind"] == ("python" if python else "native"),
              "%s: a %s frame" % (name, "Python" if python else "native"))
        if s["ok"]:
            check(g["bytes"] == s["bytes"] and g["allocations"] == 1,
                  "%s: one leak of %d bytes" % (name, s["bytes"]),
                  "%d bytes in %d" % (g["bytes"], g["allocations"]))
        else:
            check(g["bytes"] == s["bytes"] and g["failures"] == 1,
                  "%s: one failure of %d bytes" % (name, s["bytes"]))
        stacks = {(e["process"], e["stack"]): e for e in doc["call_stacks"]}
        check_chain(name, stacks[(g["process"], g["stacks"][0]["stack"])]["call_stack"], chain,
                    python)


BAD_DIR = b"lib-\xff\xfe-\xc3("  # not UTF-8: two stray bytes, a lead byte without its tail


def patch_debug_dirs(path, old, new):
    """Replace @old by @new (the same length) inside the .debug_* sections of the ELF file
    @path; the number of replacements. Its code, strings and build-id note stay as they are."""
    import struct
    assert len(old) == len(new)
    with open(path, "rb") as f:
        data = bytearray(f.read())
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_off = sections[shstrndx][4]
    done = 0
    for name, _, _, _, off, size, *_ in sections:
        sname = data[names_off + name:data.index(b"\0", names_off + name)]
        if not sname.startswith(b".debug_"):
            continue
        part = bytes(data[off:off + size])
        done += part.count(old)
        data[off:off + size] = part.replace(old, new)
    with open(path, "wb") as f:
        f.write(data)
    return done


def bytes_libraries(here, outdir):
    """libvictim.so and libvictim_other.so copied under outdir/BAD_DIR; the second one's debug
    information names its sources under .../st\xffcks/ instead of .../stacks/."""
    import shutil
    bad = os.path.join(os.fsencode(outdir), BAD_DIR)
    os.mkdir(bad)
    libs = []
    for name in ("libvictim.so", "libvictim_other.so"):
        dst = os.path.join(bad, name.encode())
        shutil.copyfile(os.path.join(here, name), dst)
        libs.append(dst)
    n = patch_debug_dirs(libs[1], b"/tests/stacks", b"/tests/st\xffcks")
    check(n > 0, "the copied library's debug information names a directory that is not UTF-8")
    return libs


def check_bytes_paths(exe, trace, doc):
    with open(trace, "rb") as f:
        mods = [m for line in f if b'"type":"modules"' in line
                for m in json.loads(line)["modules"]]
    hexes = {m.get("path_hex") for m in mods if "path_hex" in m}
    check(any(bytes.fromhex(h).endswith(BAD_DIR + b"/libvictim_other.so") for h in hexes if h),
          "the trace keeps the library's path byte for byte (path_hex)", repr(hexes))
    frames = [f for e in doc["call_stacks"] for f in e["call_stack"]
              if f.get("function") == "other_alloc"]
    shown = "\ufffd\ufffd-\ufffd("
    check(frames and all(f.get("status") == "ok" and shown in (f.get("module") or "")
                         for f in frames),
          "the library's frames are resolved, its module shown with U+FFFD",
          show(frames) + "\n" + repr([f.get("module") for f in frames]))
    check(frames and all("/tests/st\ufffdcks/" in (f.get("file") or "") for f in frames),
          "the source file from its debug information is shown with U+FFFD",
          repr([f.get("file") for f in frames]))
    # a path_hex that is not hex bytes: that entry is left out, with the line's message
    bad = trace + ".bad-hex.jsonl"
    with open(trace, "rb") as f, open(bad, "wb") as out:
        for line in f:
            if b'"path_hex":"' in line:
                line = line.replace(b'"path_hex":"', b'"path_hex":"zz', 1)
            out.write(line)
    p = subprocess.run([exe, "report", bad], capture_output=True,
                       env=dict(os.environ, DEBUGINFOD_URLS=""), timeout=120)
    check(p.returncode == 0 and b"malformed entry" in p.stderr,
          "a path_hex that is not hex: the entry is left out, and the report says so",
          p.stderr.decode(errors="replace"))


def frames_of(trace):
    """The native frame count of each stack line of the trace."""
    out = {}
    with open(trace, encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("type") == "stack":
                out[rec["id"]] = len(rec.get("frames", []))
    return out


def python_callback(build, argv, capture):
    """GPUMEMTRACE_INTERPRETER_FRAMES: by default the native stack of a Python thread ends at the
    innermost eval-function frame, and the report still reads every Python frame in order, the
    outer group after the inner one; =1 unwinds the interpreter's frames too (C code between the
    two groups shown). Both name the same site and chain."""
    deepest = {}
    for keep in ("0", "1"):
        with tempfile.TemporaryDirectory(prefix="gmt-stacks-cb-") as outdir:
            did, trace = run_victim(build, argv, capture, outdir,
                                    {"GPUMEMTRACE_INTERPRETER_FRAMES": keep})
            if not did or not trace:
                return finish()
            h = header(trace)
            if not h["stacks"].get("python"):
                print("no Python stacks for %s: skipped" % sys.version.split()[0])
                return 77
            want = 0 if sys.version_info >= (3, 12) else -1
            check(did.get("watch") == want, "the start-up hook %s the code watcher (%s)" % (
                "subscribed" if want == 0 else "did not subscribe", did.get("watch")))
            check(h["stacks"].get("interpreter") is (keep == "1"),
                  "INTERPRETER_FRAMES=%s: the header says stacks.interpreter %s" % (
                      keep, keep == "1"), json.dumps(h["stacks"]))
            doc = report(build, trace)
            if not doc:
                return finish()
            check_sites(doc, did, True)
            site = did["sites"][0]["frames"][0]
            groups = [g for g in doc["leak_sites"] if g["site"] and frame_is(g["site"], site)]
            if not groups:
                continue
            g = groups[0]
            stacks = {(e["process"], e["stack"]): e for e in doc["call_stacks"]}
            shown = [f for f in stacks[(g["process"], g["stacks"][0]["stack"])]["call_stack"]
                     if not f["hidden"]]
            first_py = next(i for i, f in enumerate(shown) if f["kind"] == "python")
            between = [f for f in shown[first_py:] if f["kind"] != "python"]
            if keep == "0":
                check(not between, "INTERPRETER_FRAMES=0: no native frame outside the innermost "
                      "Python call (the unwind ended at its eval frame)", show(shown))
            else:
                check(len(between) > 0, "INTERPRETER_FRAMES=1: the interpreter's native frames "
                      "between and below the Python calls are there", show(shown))
            deepest[keep] = frames_of(trace).get(g["stacks"][0]["stack"], 0)
    if len(deepest) == 2:
        check(deepest["0"] < deepest["1"], "the cut stack has fewer native frames (%d < %d)" % (
            deepest["0"], deepest["1"]))
    return finish()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--capture", choices=["cupti", "interpose"], default="cupti")
    ap.add_argument("scenario", choices=["native", "dlopen", "python", "static", "dlopen-bytes",
                                         "python-callback"])
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    here = os.path.join(build, "tests", "stacks")
    argv = {
        "native": [os.path.join(here, "victim_stacks")],
        "static": [os.path.join(here, "victim_static")],
        "dlopen": [os.path.join(here, "victim_dlopen"), os.path.join(here, "libvictim.so"),
                   os.path.join(here, "libvictim_other.so")],
        "python": [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                "victim.py")],
        "dlopen-bytes": [os.path.join(here, "victim_dlopen")],
        "python-callback": [sys.executable, os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "victim_callback.py")],
    }[a.scenario]
    if a.scenario == "python-callback":
        return python_callback(build, argv, a.capture)
    with tempfile.TemporaryDirectory(prefix="gmt-stacks-%s-" % a.scenario) as outdir, \
            tempfile.TemporaryDirectory(prefix="gmt-stacks-libs-") as libdir:
        if a.scenario == "dlopen-bytes":
            argv = argv + bytes_libraries(here, libdir)
        did, trace = run_victim(build, argv, a.capture, outdir)
        if not did or not trace:
            return finish()
        h = header(trace)
        if "stacks" not in h:
            print("the tracer does not write call stacks yet (no \"stacks\" in the header): "
                  "skipped")
            return 77
        if a.scenario == "python" and not h["stacks"].get("python"):
            pyinfo = None
            with open(trace, encoding="utf-8") as f:
                for line in f:
                    rec = json.loads(line)
                    if rec.get("type") == "pyinfo":
                        pyinfo = rec.get("python")
            if not pyinfo:
                print("no Python stacks for %s: skipped" % sys.version.split()[0])
                return 77
        doc = report(build, trace)
        if not doc:
            return finish()
        check(doc["summary"]["bad_lines"] == 0, "the trace has no bad line")
        check(doc["processes"][0]["modules_lines"] >= (2 if "dlopen" in a.scenario else 1),
              "the trace has modules lines (a new one after dlopen/dlclose)")
        check_sites(doc, did, a.scenario == "python")
        if a.scenario == "dlopen-bytes":
            check_bytes_paths(os.path.join(build, "tools", "gpumemtrace"), trace, doc)
        if a.scenario == "python":
            check(all(e["python_placement"] == "spliced" for e in doc["leaks"]
                      if e["site"] and e["site"]["kind"] == "python"),
                  "the Python frames are spliced at the interpreter's eval frames")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
