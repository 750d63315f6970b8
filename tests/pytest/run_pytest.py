#!/usr/bin/env python3
"""pytest suite: the pytest plugin (python/gpumemtrace/pytest_plugin.py) on real pytest runs.

    run_pytest.py --build BUILD --source SRC ctypes|xdist|torch|usage

Each case copies test files into a temporary directory and runs pytest there with the plugin
(`-p gpumemtrace.pytest_plugin`, the module found on PYTHONPATH as the source tree's python/,
the CLI as BUILD/tools/gpumemtrace on PATH), on tests/simcuda:

  ctypes  cases_ctypes.py (GPU memory through ctypes): pytest started without the tracer execs
          itself under `gpumemtrace run`; the tests over their limit_gpu_memory/limit_gpu_leaks
          fail naming their call sites (file:line of the allocation, and of the test), the others
          pass; every JUnit testcase carries its figures; the markers are in the trace; without
          --gpumemtrace the markers are ignored; under `gpumemtrace run` already, no second exec
  xdist   the same with pytest-xdist -n 2: one trace per worker, the same verdicts
  torch   cases_torch.py on the torch double (tests/torchsim): a tensor kept past its test is a
          leak at its line; a segment PyTorch's cache keeps is not, unless count_cached=True
  usage   a limit that is no size, or a fraction of a byte, stops the session (exit 4) naming
          the test and the marker; --gpumemtrace without any gpumemtrace command says so (exit
          4); `gpumemtrace run` by its full path with no CLI on PATH: the plugin uses run's CLI
          and the tests over their limits fail; the tracer preloaded with no CLI anywhere: the
          tests with limits fail (cannot be checked), never pass

Skips (77) when no interpreter here has pytest (xdist: pytest-xdist).
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)
    return cond


def finish():
    if failures:
        print("\n%d check(s) failed:" % len(failures))
        for f in failures:
            print("  " + f)
        return 1
    return 0


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def python_with(*modules):
    for exe in dict.fromkeys([sys.executable, "/usr/bin/python3"]):
        if os.access(exe, os.X_OK) and subprocess.run(
                [exe, "-c", "import " + ", ".join(modules)], capture_output=True).returncode == 0:
            return exe
    return None


def env_for(build, src, extra_path=None, cli=True):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GPUMEMTRACE_") and not k.startswith("PYTEST_") and k not in
           ("LD_PRELOAD", "CUDA_INJECTION64_PATH", "GMT_PYTEST_CLI")}
    path = [d for d in env.get("PATH", "").split(os.pathsep)
            if d and not os.access(os.path.join(d, "gpumemtrace"), os.X_OK)]
    if cli:
        path.insert(0, os.path.join(build, "tools"))
    env.update({
        "PATH": os.pathsep.join(path),
        "PYTHONPATH": os.pathsep.join([os.path.join(src, "python")] + (extra_path or [])),
        "LD_LIBRARY_PATH": os.path.join(build, "tests", "simcuda"),
        "SIMCUDA_MEM_BYTES": "1G",
        "SIMCUDA_DEVICES": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    return env


def lines_of(path):
    """{name: line number} of the `# LINE name` comments of a case file."""
    out = {}
    for n, line in enumerate(open(path), 1):
        m = re.search(r"# LINE (\w+)", line)
        if m:
            out[m.group(1)] = n
    return out


def def_line(path, fn):
    for n, line in enumerate(open(path), 1):
        if re.match(r"\s*def %s\(" % fn, line):
            return n
    return None


SCHEMAS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "check", "schemas")


def junit(path):
    """{test name: (failure message or None, {property: value})}: the testcase's own properties
    (junit_family xunit1) and the testsuite's NAME:NODEID ones (xunit2, pytest's default). The
    file must validate against Jenkins' and Ant's JUnit schemas."""
    out = {}
    if not os.path.exists(path):
        return out
    ours = "gpumemtrace_" in open(path, encoding="utf-8", errors="replace").read()
    for xsd in ("junit-jenkins.xsd", "junit-ant-strict.xsd"):
        if xsd == "junit-ant-strict.xsd" and not ours:
            continue  # pytest's file alone: nothing of the plugin to judge
        if shutil.which("xmllint"):
            p = subprocess.run(["xmllint", "--noout", "--schema", os.path.join(SCHEMAS, xsd), path],
                               capture_output=True, text=True, timeout=60)
            # pytest's own file breaks Ant's strict schema whatever the plugin does (<failure>
            # without `type`, testsuite's `skipped`, `timestamp` with microseconds, no
            # `package`): there, only errors about properties (the plugin's part) count
            errors = [l for l in p.stderr.splitlines() if "validity error" in l and
                      (xsd == "junit-jenkins.xsd" or "propert" in l.lower())]
            check(not errors, "%s validates against %s: %s" % (os.path.basename(path), xsd,
                                                              errors[:3]))
    root = ET.parse(path).getroot()
    suite = {}
    for s in root.iter("testsuite"):
        props = s.find("properties")
        for p in (props.iter("property") if props is not None else ()):
            name, _, nodeid = (p.get("name") or "").partition(":")
            if nodeid:
                suite.setdefault(nodeid.split("::")[-1], {})[name] = p.get("value")
    for tc in root.iter("testcase"):
        fail = tc.find("failure")
        props = {p.get("name"): p.get("value") for p in tc.iter("property")}
        props.update(suite.get(tc.get("name"), {}))
        out[tc.get("name")] = (fail.get("message") if fail is not None else None, props)
    return out


def pytest_run(py, args, env, cwd, timeout=300):
    p = subprocess.run([py, "-m", "pytest", "-p", "gpumemtrace.pytest_plugin", "-p",
                        "no:cacheprovider"] + args, env=env, cwd=cwd, capture_output=True,
                       text=True, timeout=timeout)
    print("--- pytest %s: exit %d\n%s\n%s---" % (" ".join(args), p.returncode, p.stdout[-4000:],
                                                 p.stderr[-2000:]))
    return p


ZCAT = None  # tests/preload/gmt-zcat of the build (main)


def traces(outdir):
    """{path: records} of the traces in outdir: compressed (the default, read through the
    reader's module, tests/preload/gmt-zcat) or plain."""
    out = {}
    for path in sorted(glob.glob(os.path.join(outdir, "*.jsonl")) +
                       glob.glob(os.path.join(outdir, "*.jsonl.zst"))):
        text = open(path).read() if path.endswith(".jsonl") else subprocess.run(
            [ZCAT, path],
            capture_output=True, text=True, timeout=120, check=True).stdout
        out[path] = [json.loads(l) for l in text.splitlines() if l.strip()]
    return out


def test_markers(recs):
    return [r["label"] for r in recs if r.get("type") == "marker"
            and re.match(r"pytest \d+ (start|end): ", r.get("label", ""))]


# --- ctypes and xdist -------------------------------------------------------------------------

EXPECT_FAIL = {"test_peak_over": "peak_over", "test_leaks": "leaks",
               "test_method_leaks": "method_leaks"}
EXPECT_PASS = ["test_small", "test_peak_under", "test_no_leak", "test_leak_within_limit"]


def check_verdicts(results, case_file, what):
    lines = lines_of(case_file)
    alloc_line = def_line(case_file, "alloc") + 2  # the cudaMalloc line of alloc()
    for test, tag in EXPECT_FAIL.items():
        msg = results.get(test, (None, {}))[0] or ""
        check(msg.startswith("GPU memory: "), "%s: %s fails on its GPU memory limit (%r)"
              % (what, test, msg[:200]))
        check("test_gpu.py:%d in alloc, from test_gpu.py:%d in " % (alloc_line, lines[tag])
              in msg, "%s: %s's message names the allocation (test_gpu.py:%d in alloc) and the "
              "test's line (%d)" % (what, test, alloc_line, lines[tag]))
        check("--from 'pytest " in msg and "gpumemtrace report" in msg,
              "%s: %s's message gives the report command for the test's window" % (what, test))
    msg = results.get("test_peak_over", (None, {}))[0] or ""
    check("held 6.0 MiB" in msg and "limit of 4.0 MiB" in msg,
          "%s: test_peak_over: the peak held and the limit" % what)
    msg = results.get("test_leaks", (None, {}))[0] or ""
    check("left 512.0 KiB" in msg and "in 1 allocation" in msg,
          "%s: test_leaks: the bytes and allocations left live" % what)
    for test in EXPECT_PASS:
        check(test in results and results[test][0] is None, "%s: %s passes" % (what, test))
    msg = results.get("test_own_failure", (None, {}))[0] or ""
    check("the test's own failure" in msg and "GPU memory" not in msg,
          "%s: a test that fails by itself keeps its own failure (%r)" % (what, msg[:200]))
    for test, (_, props) in results.items():
        check(props.get("gpumemtrace_peak_bytes", "").isdigit() and
              "gpumemtrace_leaked_bytes" in props and props.get("gpumemtrace_trace"),
              "%s: %s's JUnit testcase has its figures (%s)" % (what, test, props))
    peak = {t: int(p.get("gpumemtrace_peak_bytes", -1)) for t, (_, p) in results.items()}
    check(peak.get("test_peak_over", 0) >= 6 << 20 and 1 << 20 <= peak.get("test_small", 0)
          < 6 << 20, "%s: the peaks are the tests' own (%s)" % (what, peak))
    leaked = {t: int(p.get("gpumemtrace_leaked_bytes", -1)) for t, (_, p) in results.items()}
    check(leaked.get("test_leaks") == 512 << 10 and leaked.get("test_no_leak") == 0 and
          leaked.get("test_leak_within_limit") == 256 << 10,
          "%s: the bytes left live are the tests' own (%s)" % (what, leaked))


def ctypes_case(build, src):
    py = python_with("pytest")
    if not py:
        skip("no Python with pytest here (Debian: python3-pytest)")
    top = tempfile.mkdtemp(prefix="gmt-pytest-")
    try:
        case = os.path.join(top, "test_gpu.py")
        shutil.copy(os.path.join(src, "tests", "pytest", "cases_ctypes.py"), case)
        env = env_for(build, src)
        out = os.path.join(top, "traces")
        p = pytest_run(py, ["--gpumemtrace", "--gpumemtrace-dir", out, "--junitxml",
                            os.path.join(top, "junit.xml"), "test_gpu.py"], env, top)
        check(p.returncode == 1, "pytest exits 1: tests failed (%d)" % p.returncode)
        check_verdicts(junit(os.path.join(top, "junit.xml")), case, "serial")
        tr = traces(out)
        check(len(tr) == 1, "one trace: the session re-executed itself under the tracer (%s)"
              % list(tr))
        for path, recs in tr.items():
            labels = test_markers(recs)
            check(len(labels) == 16 and labels[0] == "pytest 1 start: test_gpu.py::test_small",
                  "the trace has a start and an end marker per test (%s)" % labels[:3])
            argv = next((r.get("argv") for r in recs if r.get("type") == "header"), [])
            check("--gpumemtrace" in argv and argv[-1] == "test_gpu.py",
                  "the traced process is pytest with the same arguments (%s)" % argv)
        check(re.search(r"-+ gpumemtrace -+\nGPU memory: test_gpu.py::test_own_failure left 64.0 "
                        r"KiB .*\n.*\n.*test_gpu.py:%d in test_own_failure"
                        % lines_of(case)["own_failure"], p.stdout),
              "... and its leak is a section of its failure's report, at its line")
        check("tests that held the most GPU memory" in p.stdout and
              re.search(r"6\.0 MiB .*test_gpu.py::test_peak_over", p.stdout),
              "the session ends with the tests that held the most")

        # without --gpumemtrace: the markers are declared and ignored, nothing traced
        j0 = os.path.join(top, "junit0.xml")
        p = pytest_run(py, ["--strict-markers", "--junitxml", j0, "test_gpu.py"], env, top)
        failed = sorted(t for t, (m, _) in junit(j0).items() if m)
        check(p.returncode == 1 and failed == ["test_own_failure"],
              "without --gpumemtrace the limits are ignored: only the test that fails by itself "
              "fails (%d, %s)" % (p.returncode, failed))
        check(not glob.glob(os.path.join(top, "gpumemtrace-*")), "... and nothing is traced")

        # --gpumemtrace-only-marked: figures only for the tests with a limit
        j1 = os.path.join(top, "junit1.xml")
        p = pytest_run(py, ["--gpumemtrace", "--gpumemtrace-only-marked", "--gpumemtrace-dir",
                            os.path.join(top, "traces1"), "--junitxml", j1, "test_gpu.py"],
                       env, top)
        res = junit(j1)
        measured = sorted(t for t, (_, props) in res.items() if props)
        check(measured == sorted(["test_peak_over", "test_peak_under", "test_leaks",
                                  "test_no_leak", "test_leak_within_limit", "test_method_leaks",
                                  "test_own_failure"]) and res.get("test_leaks", ("",))[0],
              "--gpumemtrace-only-marked: the marked tests are measured and judged, the others "
              "not (%s)" % measured)

        # under `gpumemtrace run` already: no second exec, the same verdicts
        out2 = os.path.join(top, "traces2")
        j2 = os.path.join(top, "junit2.xml")
        p = subprocess.run([os.path.join(build, "tools", "gpumemtrace"), "run", "-o", out2, "--",
                            py, "-m", "pytest", "-p", "gpumemtrace.pytest_plugin", "-p",
                            "no:cacheprovider", "--gpumemtrace", "--junitxml", j2, "test_gpu.py"],
                           env=env, cwd=top, capture_output=True, text=True, timeout=300)
        check(p.returncode == 1, "under gpumemtrace run: exit 1 (%d: %s)" % (p.returncode,
                                                                          p.stderr[-2000:]))
        check(len(traces(out2)) == 1, "under gpumemtrace run: one trace, no second exec")
        check_verdicts(junit(j2), case, "under gpumemtrace run")
    finally:
        shutil.rmtree(top, ignore_errors=True)
    return finish()


def xdist_case(build, src):
    py = python_with("pytest", "xdist")
    if not py:
        skip("no Python with pytest and pytest-xdist here (Debian: python3-pytest-xdist)")
    top = tempfile.mkdtemp(prefix="gmt-pytest-xdist-")
    try:
        case = os.path.join(top, "test_gpu.py")
        shutil.copy(os.path.join(src, "tests", "pytest", "cases_ctypes.py"), case)
        out = os.path.join(top, "traces")
        p = pytest_run(py, ["-n", "2", "--gpumemtrace", "--gpumemtrace-dir", out, "--junitxml",
                            os.path.join(top, "junit.xml"), "test_gpu.py"],
                       env_for(build, src), top)
        check(p.returncode == 1, "pytest -n 2 exits 1: tests failed (%d)" % p.returncode)
        check_verdicts(junit(os.path.join(top, "junit.xml")), case, "xdist")
        tr = traces(out)
        per = {path: test_markers(recs) for path, recs in tr.items()}
        with_tests = {p: l for p, l in per.items() if l}
        check(len(with_tests) == 2, "one trace per worker, each with its tests' markers (%s)"
              % {os.path.basename(p): len(l) for p, l in per.items()})
        ran = sorted(l.split("::", 1)[1] for ls in per.values() for l in ls if " start: " in l)
        check(len(ran) == 8, "every test's window is in one worker's trace (%s)" % ran)
        argvs = [next((r.get("argv") for r in tr[path] if r.get("type") == "header"), [])
                 for path in with_tests]
        check(all("-n" not in a for a in argvs),
              "the traces with tests are the workers', not the controller's (%s)" % argvs)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    return finish()


# --- torch ------------------------------------------------------------------------------------

def torch_case(build, src):
    py = python_with("pytest")
    if not py:
        skip("no Python with pytest here (Debian: python3-pytest)")
    if not shutil.which(os.environ.get("CXX", "c++")):
        skip("no C++ compiler: the PyTorch layer's bridge cannot be built")
    sys.path.insert(0, os.path.join(src, "tests", "torchsim"))
    import run_torchsim
    top = tempfile.mkdtemp(prefix="gmt-pytest-torch-")
    try:
        # the double where a real torch is: in site-packages (the report's call sites skip it)
        site = run_torchsim.make_torch(build, src, os.path.join(top, "lib", "site-packages"))
        case = os.path.join(top, "test_torch.py")
        shutil.copy(os.path.join(src, "tests", "pytest", "cases_torch.py"), case)
        env = env_for(build, src, [site])
        env["GPUMEMTRACE_CACHE_DIR"] = os.path.join(top, "cache")
        out = os.path.join(top, "traces")
        p = pytest_run(py, ["--gpumemtrace", "--gpumemtrace-dir", out, "--junitxml",
                            os.path.join(top, "junit.xml"), "test_torch.py"], env, top)
        check(p.returncode == 1, "pytest exits 1: tests failed (%d)" % p.returncode)
        res = junit(os.path.join(top, "junit.xml"))
        tr = traces(out)
        check(any(r.get("type") == "torch" and r.get("layer") == "blocks"
                  for recs in tr.values() for r in recs),
              "the PyTorch layer was on in the session (a torch line saying blocks)")
        make_line = def_line(case, "make") + 1
        msg = res.get("test_tensor_leak", (None, {}))[0] or ""
        check("left 1.0 MiB" in msg and "1 tensor (PyTorch blocks)" in msg and
              "test_torch.py:%d in make, from test_torch.py:%d in test_tensor_leak"
              % (make_line, lines_of(case)["tensor_leak"]) in msg,
              "a tensor kept past its test is a leak, named at its lines (%r)" % msg)
        check(res.get("test_cache_keeps_segment", ("?",))[0] is None,
              "a tensor freed while PyTorch's cache keeps its segment is no leak")
        msg = res.get("test_matmul_workspace", ("?",))[0]
        check(msg is None, "cuBLAS's workspace, kept by torch for the handle's life, is no leak "
              "of the test that made the first matmul (%r)" % msg)
        # the same verdict in the report of that test's range, text and JSON
        paths = glob.glob(os.path.join(out, "gpumemtrace.*"))
        label = [r["label"] for recs in tr.values() for r in recs
                 if r.get("type") == "marker" and "test_matmul_workspace" in r.get("label", "")]
        if len(paths) == 1 and len(label) == 2:
            cli = os.path.join(build, "tools", "gpumemtrace")
            rng = ["--from", label[0], "--to", label[1], paths[0]]
            text = subprocess.run([cli, "report"] + rng, capture_output=True, text=True,
                                  timeout=120).stdout
            check("made in the range and live at its end: 0 B in 0 tensors; and 4.0 MiB in 1 "
                  "library workspace" in text, "the text report of the test's range says the "
                  "workspace is no leak (%r)" % text[-600:])
            rep = json.loads(subprocess.run([cli, "report", "--format", "json"] + rng,
                                            capture_output=True, text=True, timeout=120).stdout)
            got = [(e["bytes"], e["tensors"], e["category"]) for p in rep["processes"]
                   for e in p["tensors"]["leaked_in_range"]]
            check(got == [(4 << 20, 1, "workspace")],
                  "the JSON's leaked_in_range: the workspace, as a workspace (%r)" % got)
        else:
            check(False, "one trace and the test's two markers (%r, %r)" % (paths, label))
        msg = res.get("test_cache_counted", (None, {}))[0] or ""
        check("left 96.0 MiB" in msg and "cudaMalloc" in msg and "in test_cache_counted" in msg,
              "count_cached=True counts the segment the cache kept (%r)" % msg)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    return finish()


# --- usage ------------------------------------------------------------------------------------

BAD_LIMIT = '''import pytest


@pytest.mark.limit_gpu_memory("2 parsecs")
def test_bad():
    pass
'''


UNCHECKED = '''import ctypes

import pytest

cudart = ctypes.CDLL("libcudart.so.13")
kept = []


def alloc(n):
    p = ctypes.c_void_p()
    assert cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)) == 0
    return p


@pytest.mark.limit_gpu_leaks("0 B")
def test_keeps():
    kept.append(alloc(8 << 20))


@pytest.mark.limit_gpu_memory("256 KiB")
def test_peaks():
    assert cudart.cudaFree(alloc(512 << 10)) == 0


def test_plain():
    assert cudart.cudaFree(alloc(1 << 20)) == 0
'''


def outcomes(text):
    """{test name: PASSED/FAILED/ERROR} from pytest -rA's short summary."""
    return {m.group(2): m.group(1) for m in
            re.finditer(r"^(PASSED|FAILED|ERROR) \S*::(\w+)", text, re.M)}


def unchecked_cases(py, build, src, top):
    with open(os.path.join(top, "test_unchecked.py"), "w") as f:
        f.write(UNCHECKED)
    # `gpumemtrace run` by its full path, no gpumemtrace on PATH: run hands the plugin its CLI
    env = env_for(build, src, cli=False)
    p = subprocess.run([os.path.join(build, "tools", "gpumemtrace"), "run", "-o",
                        os.path.join(top, "t-run"), "--", py, "-m", "pytest", "-p",
                        "gpumemtrace.pytest_plugin", "-p", "no:cacheprovider", "-rA",
                        "--gpumemtrace", "test_unchecked.py"], env=env, cwd=top,
                       capture_output=True, text=True, timeout=300)
    print("--- run pytest: exit %d\n%s\n%s---" % (p.returncode, p.stdout[-4000:], p.stderr[-2000:]))
    got = outcomes(p.stdout)
    check(p.returncode == 1 and got == {"test_keeps": "FAILED", "test_peaks": "FAILED",
                                        "test_plain": "PASSED"} and
          "not found" not in p.stdout + p.stderr and "over the limit of 256.0 KiB" in p.stdout,
          "under `gpumemtrace run` with no CLI on PATH: the limits are checked, the two tests "
          "over them fail (%s)" % got)
    # the tracer preloaded by hand, no CLI anywhere: limits cannot be checked -> those tests fail
    env = dict(env, LD_PRELOAD=os.path.join(build, "src", "libgpumemtrace.so"),
               GPUMEMTRACE_OUTPUT_DIR=os.path.join(top, "t-preload"))
    os.makedirs(env["GPUMEMTRACE_OUTPUT_DIR"])
    p = pytest_run(py, ["-rA", "--gpumemtrace", "test_unchecked.py"], env, top)
    got = outcomes(p.stdout)
    check(p.returncode == 1 and got == {"test_keeps": "FAILED", "test_peaks": "FAILED",
                                        "test_plain": "PASSED"} and
          p.stdout.count("cannot be checked") >= 2,
          "no CLI to measure with: a test with a limit fails saying it cannot be checked, "
          "never passes; a test without one passes (%s)" % got)


def usage_case(build, src):
    py = python_with("pytest")
    if not py:
        skip("no Python with pytest here (Debian: python3-pytest)")
    top = tempfile.mkdtemp(prefix="gmt-pytest-usage-")
    try:
        with open(os.path.join(top, "test_bad.py"), "w") as f:
            f.write(BAD_LIMIT)
        p = pytest_run(py, ["--gpumemtrace", "--gpumemtrace-dir", os.path.join(top, "t"),
                            "test_bad.py"], env_for(build, src), top)
        both = p.stdout + p.stderr
        check(p.returncode == 4 and "test_bad.py::test_bad" in both and
              "limit_gpu_memory" in both and "'2 parsecs' is not a size" in both,
              "a limit that is no size: exit 4, naming the test, the marker and the value")
        with open(os.path.join(top, "test_ok.py"), "w") as f:
            f.write("def test_ok():\n    pass\n")
        p = pytest_run(py, ["--gpumemtrace", "test_ok.py"], env_for(build, src, cli=False), top)
        check(p.returncode == 4 and "gpumemtrace command was not found" in p.stdout + p.stderr,
              "--gpumemtrace without a gpumemtrace command: exit 4, saying so")
        with open(os.path.join(top, "test_bad.py"), "w") as f:
            f.write(BAD_LIMIT.replace('"2 parsecs"', "1.5"))
        p = pytest_run(py, ["--gpumemtrace", "--gpumemtrace-dir", os.path.join(top, "t2"),
                            "test_bad.py"], env_for(build, src), top)
        both = p.stdout + p.stderr
        check(p.returncode == 4 and "1.5 is not a whole number of bytes" in both,
              "limit_gpu_memory(1.5): a fraction of a byte is refused (exit 4), not read as 1 byte")
        os.unlink(os.path.join(top, "test_bad.py"))
        unchecked_cases(py, build, src, top)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    return finish()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("case", choices=["ctypes", "xdist", "torch", "usage"])
    a = ap.parse_args()
    build, src = os.path.abspath(a.build), os.path.abspath(a.source)
    global ZCAT
    ZCAT = os.path.join(build, "tests", "preload", "gmt-zcat")
    return {"ctypes": ctypes_case, "xdist": xdist_case, "torch": torch_case,
            "usage": usage_case}[a.case](build, src)


if __name__ == "__main__":
    sys.exit(main())
