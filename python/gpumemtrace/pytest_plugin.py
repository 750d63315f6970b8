"""pytest plugin: the GPU memory of each test, under gpumemtrace.

    pytest --gpumemtrace                            trace the session, GPU memory per test

    @pytest.mark.limit_gpu_memory("2 GiB")          fail when the test's peak exceeds this
    def test_forward(): ...

    @pytest.mark.limit_gpu_leaks("0 B")             fail when the test leaves more than this
    def test_step(): ...

Registered by the wheel (entry point pytest11), else `-p gpumemtrace.pytest_plugin` or
`pytest_plugins = ["gpumemtrace.pytest_plugin"]` in a conftest.py. Without --gpumemtrace it only
declares the markers (they are then ignored). docs/pytest.md.

How: the tracer must be in the process from its start (LD_PRELOAD), so a pytest started without
it execs itself again, same arguments, under `gpumemtrace run`; pytest-xdist's workers inherit
it (one trace per worker). Around each test's call the plugin puts two markers in the trace,
`pytest N start: NODEID` and `pytest N end: NODEID`, waits until the writer thread has written
the end one, and runs `gpumemtrace report --format json --from START --to END` on its own trace:

- the peak: device memory held (the report's `peak_held_bytes`, what was live before counts),
  with the call sites live at that moment;
- the leaks: allocations made during the call and live at its end (`leaks[]` of counted kinds),
  less what a caching allocator keeps (PyTorch's cache holds its segments for the process: not a
  test's leak), plus, with the PyTorch layer, the caching allocator's blocks (tensors) allocated
  during the call and not freed by its end (the report's `tensors.leaked_in_range`), less a
  library's workspace (category `workspace`: cuBLAS's and cuDNN's, which torch keeps for the
  handle's life), the same verdict as every other report of the trace.

The figures go into the test's report and pytest's --junitxml file in the form the file's
junit_family allows: with xunit2 (pytest's default, the one Jenkins' and Ant's schemas accept)
as properties of the testsuite named `gpumemtrace_peak_bytes:NODEID` (what
record_testsuite_property writes; a <testcase> may not hold <properties> there); with xunit1 or
legacy as the testcase's own properties (record_property). A test over its limit fails with the
call sites, and the session ends with the tests that held the most.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

import gpumemtrace
from gpumemtrace import __main__ as _install
from gpumemtrace import tracefile

# Set in the environment of the re-executed session: the CLI it runs under (also the guard
# against a second exec). Not a GPUMEMTRACE_ name: the tracer warns about those it does not know.
CLI_ENV = "GMT_PYTEST_CLI"
# Set by `gpumemtrace run` for the program it runs: its own path (a build tree's CLI, or one run
# by its full path, is on no PATH).
RUN_CLI_ENV = "GMT_CLI"
LABEL_MAX = 63  # the tracer keeps 63 bytes of a label (include/gpumemtrace.h)
WAIT_MIN_S = 5.0  # how long the end marker may take to reach the file, at least
REEXEC_FLUSH_MS = "20"  # the re-executed session's flush interval, unless the user chose one


def pytest_addoption(parser):
    group = parser.getgroup("gpumemtrace", "GPU memory (gpumemtrace)")
    group.addoption("--gpumemtrace", action="store_true", default=False,
                    help="trace the session's GPU memory: the peak and the leaks of each test, "
                    "limit_gpu_memory and limit_gpu_leaks markers enforced")
    group.addoption("--gpumemtrace-dir", metavar="DIR", default=None,
                    help="where the traces go (default: a new gpumemtrace-YYYYmmdd-HHMMSS "
                    "directory, as `gpumemtrace run` makes)")
    group.addoption("--gpumemtrace-top", metavar="N", type=int, default=5,
                    help="list the N tests that held the most at the end (default 5, 0: none)")
    group.addoption("--gpumemtrace-only-marked", action="store_true", default=False,
                    help="measure only the tests with a limit_gpu_memory or limit_gpu_leaks "
                    "marker (each measured test costs one `gpumemtrace report` of the trace so "
                    "far)")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "limit_gpu_memory(limit): with --gpumemtrace, fail the test when the device "
        "memory held at its peak during the test exceeds limit (\"2 GiB\", \"512MiB\", bytes)")
    config.addinivalue_line(
        "markers", "limit_gpu_leaks(limit, count_cached=False): with --gpumemtrace, fail the test "
        "when more than limit of GPU memory allocated during it is still live at its end "
        "(a caching allocator's segments do not count unless count_cached=True; tensors do)")
    if not config.getoption("gpumemtrace"):
        return
    if not gpumemtrace.enabled():
        _reexec(config)  # does not return
    config.pluginmanager.register(Session(config), "gpumemtrace-session")


# --- running under the tracer -----------------------------------------------------------------

def _cli():
    """The gpumemtrace executable: the session's, the `gpumemtrace run` this process runs under,
    the one installed with this package, else the one on PATH."""
    for var in (CLI_ENV, RUN_CLI_ENV):
        exe = os.environ.get(var)
        if exe and os.access(exe, os.X_OK):
            return exe
    return _install.cli() or shutil.which("gpumemtrace")


def _reexec(config):
    if os.environ.get(CLI_ENV):
        raise pytest.UsageError(
            "--gpumemtrace: this pytest runs under %s run, but the tracer library did not load "
            "(see its message above)" % os.environ[CLI_ENV])
    cli = _cli()
    if not cli:
        raise pytest.UsageError(
            "--gpumemtrace: the gpumemtrace command was not found (not installed with this "
            "package, not on PATH): install gpumemtrace (docs/install.md)")
    argv = list(getattr(sys, "orig_argv", None) or [sys.executable] + sys.argv)
    cmd = [cli, "run"]
    out = config.getoption("gpumemtrace_dir")
    if out:
        cmd += ["-o", out]
    cmd += ["--"] + argv
    env = _install.environ()
    env[CLI_ENV] = os.path.abspath(cli)
    env.setdefault("GPUMEMTRACE_FLUSH_MS", REEXEC_FLUSH_MS)
    capman = config.pluginmanager.getplugin("capturemanager")
    if capman is not None:
        capman.suspend_global_capture(in_=True)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(cli, cmd, env)
    except OSError as e:
        raise pytest.UsageError("--gpumemtrace: cannot run %s: %s" % (cli, e.strerror))


# --- sizes ------------------------------------------------------------------------------------

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
          "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
          "kb": 10 ** 3, "mb": 10 ** 6, "gb": 10 ** 9, "tb": 10 ** 12}


def parse_size(value):
    """Bytes from 2048, "2 GiB", "512MiB", "1.5G" (K, M, G, T, KiB...: powers of 1024; KB, MB,
    GB, TB: powers of 1000, as `gpumemtrace check` reads them; rounded to the nearest byte).
    ValueError otherwise, and for a fraction of a byte (1.5, "1.5 B")."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, float):
        if value < 0 or not value.is_integer():  # a number alone is bytes
            raise ValueError("%r is not a whole number of bytes" % (value,))
        return int(value)
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([A-Za-z]*)\s*", str(value))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError("%r is not a size (bytes, or a number with B, KiB, MiB, GiB, TiB, K, M, "
                         "G, T, KB, MB, GB, TB)" % (value,))
    num, unit = m.group(1), _UNITS[m.group(2).lower()]
    whole, _, frac = num.partition(".")
    frac = frac.rstrip("0")
    if frac and unit == 1:  # 1.5 is no number of bytes (it was once taken as 1)
        raise ValueError("%r is not a whole number of bytes" % (value,))
    # exact, rounded to the nearest byte as `gpumemtrace check` does (1.3 GiB)
    scale = 10 ** len(frac)
    return int(whole) * unit + ((int(frac or 0) * unit * 2 + scale) // (2 * scale))


def fmt_bytes(n):
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return "%.1f %s (%d bytes)" % (n / size, unit, n)
    return "%d B" % n


def _label(n, what, nodeid):
    """`pytest N what: NODEID`, cut to what the tracer keeps (never inside a UTF-8 character),
    so that the label --from/--to are given is the trace's."""
    raw = ("pytest %d %s: %s" % (n, what, nodeid)).encode("utf-8", "replace")[:LABEL_MAX]
    return raw.decode("utf-8", "ignore")


# --- reading our own trace while it is written -------------------------------------------------

class Trace:
    """This process's trace file, read as the writer appends to it: markers (label -> seq), the
    PyTorch layer's blocks, and the stack and code lines that name their call sites."""

    def __init__(self, outdir):
        self.outdir = outdir
        self.path = None
        self.offset = 0
        self.frames = None  # a .jsonl.zst trace's decoder
        self.rest = b""
        self.markers = {}
        self.stacks = {}  # id -> py frames
        self.codes = {}  # id -> pycode line

    def _find(self):
        pid = os.getpid()
        best = None
        try:
            names = os.listdir(self.outdir)
        except OSError:
            return None
        for name in names:
            if not (name.startswith("gpumemtrace.") and name.endswith((".jsonl", ".jsonl.zst"))
                    and (".%d." % pid) in name):
                continue
            path = os.path.join(self.outdir, name)
            try:
                with open(path, "rb") as f:
                    first = f.read(1 << 20)
                if path.endswith(".zst"):
                    first = tracefile.Frames().feed(first)
                head = json.loads(first.split(b"\n", 1)[0] or b"{}")
                mtime = os.stat(path).st_mtime
            except (OSError, ValueError):
                continue
            if head.get("type") == "header" and head.get("pid") == pid and (
                    best is None or mtime > best[0]):
                best = (mtime, path)
        return best[1] if best else None

    def read(self):
        if self.path is None:
            self.path = self._find()
            if self.path is None:
                return
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return
        self.offset += len(data)
        if self.path.endswith(".zst"):
            if self.frames is None:
                self.frames = tracefile.Frames()
            data = self.frames.feed(data)
        lines = (self.rest + data).split(b"\n")
        self.rest = lines.pop()
        for line in lines:
            if not (b'"type":"marker"' in line or b'"type":"stack"' in line
                    or b'"type":"pycode"' in line):
                continue
            try:
                r = json.loads(line)
            except ValueError:
                continue
            t = r.get("type")
            if t == "marker" and "range" not in r:
                self.markers.setdefault(r.get("label"), r.get("seq"))
            elif t == "stack" and r.get("py"):
                self.stacks[r.get("id")] = r["py"]
            elif t == "pycode":
                self.codes[r.get("id")] = r

    def wait_for(self, label, timeout):
        deadline = time.monotonic() + timeout
        while True:
            self.read()
            if label in self.markers:
                return self.markers[label]
            if time.monotonic() > deadline:
                return None
            time.sleep(0.005)


# --- call sites -------------------------------------------------------------------------------

def _skip_dirs():
    """Directories whose Python frames are not the test's own: the standard library, installed
    packages, and the packages the frames of a tensor's allocation go through."""
    import sysconfig
    dirs = {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    for name in ("torch", "gpumemtrace", "_pytest", "pytest", "pluggy"):
        mod = sys.modules.get(name)
        if getattr(mod, "__file__", None):
            dirs.add(os.path.dirname(os.path.abspath(mod.__file__)))
    return tuple(d.rstrip("/") + "/" for d in dirs if d)


def _code_line(code, offset):
    """The line of the instruction at byte @p offset of a live code object with that file,
    qualified name and first line (found among the loaded modules' functions), else None."""
    for mod in list(sys.modules.values()):
        if getattr(mod, "__file__", None) != code.get("file"):
            continue
        todo = [v for v in vars(mod).values()]
        seen = set()
        while todo:
            v = todo.pop()
            if id(v) in seen:
                continue
            seen.add(id(v))
            co = getattr(v, "__code__", None) or (v if hasattr(v, "co_lines") else None)
            if isinstance(v, type):
                todo.extend(vars(v).values())
            if co is None:
                continue
            if (co.co_firstlineno == code.get("firstlineno") and getattr(
                    co, "co_qualname", co.co_name) == code.get("qualname", code.get("name"))):
                for lo, hi, line in co.co_lines():
                    if line is not None and lo <= offset < hi:
                        return line
                return None
            todo.extend(c for c in co.co_consts if hasattr(c, "co_lines"))
    return None


def _frame_text(file, line, function, root):
    where = _rel(file, root) + (":%s" % line if line is not None else "")
    return "%s in %s" % (where, function) if function else where


def _chain(frames, test_fn, root):
    """@p frames (innermost first, the call site first) as text: the site, and when the test
    function is further out, the test's line that led there ("a.py:3 in alloc, from a.py:9 in
    test_x"); frames in between are elided."""
    if not frames:
        return "(no call stack)"
    first = frames[0]
    text = _frame_text(first[0], first[1], first[2], root)
    if first[2] == test_fn:
        return text
    for f in frames[1:]:
        if f[2] == test_fn:
            between = ", ..." if f is not frames[1] else ""
            return "%s%s, from %s" % (text, between, _frame_text(f[0], f[1], f[2], root))
    return text


def _report_frames(rep, group):
    """The frames of a report's site group (its largest stack), from its call site outward:
    [(file, line, function)]; the site alone when the stack is not in call_stacks[]."""
    site = group.get("site")
    stacks = group.get("stacks") or []
    if stacks:
        for cs in rep.get("call_stacks", []):
            if cs.get("process") == group.get("process") and cs.get("stack") == stacks[0].get(
                    "stack") and cs.get("site_index") is not None:
                frames = cs["call_stack"][cs["site_index"]:]
                return [(f.get("file") or f.get("module") or "?", f.get("line"),
                         f.get("function")) for i, f in enumerate(frames)
                        if i == 0 or f.get("kind") == "python"]
    if not site:
        return []
    return [(site.get("file") or site.get("module") or "?", site.get("line"),
             site.get("function"))]


def _block_frames(trace, stack, skip):
    """The Python frames of a block's stack from the innermost one of the tests' own code (not
    the standard library, installed packages, torch, pytest, gpumemtrace) outward."""
    out = []
    for code_id, offset, _entry in trace.stacks.get(stack, ()):
        code = trace.codes.get(code_id)
        if not code or (not out and (code.get("file") or "").startswith(skip)):
            continue
        line = _code_line(code, offset)
        out.append((code.get("file"), line if line is not None else
                    "%s (def)" % code.get("firstlineno"), code.get("qualname") or code.get("name")))
    return out


def _rel(path, root):
    if path and root and path.startswith(root.rstrip("/") + "/"):
        return path[len(root.rstrip("/")) + 1:]
    return path or "?"


# --- the session ------------------------------------------------------------------------------

class Session:
    def __init__(self, config):
        self.config = config
        self.root = str(config.rootpath) if hasattr(config, "rootpath") else str(config.rootdir)
        self.cli = _cli()
        self.outdir = os.path.abspath(os.environ.get("GPUMEMTRACE_OUTPUT_DIR", "."))
        self.trace = Trace(self.outdir)
        try:
            flush_ms = int(os.environ.get("GPUMEMTRACE_FLUSH_MS", "100"))
        except ValueError:
            flush_ms = 100
        self.wait_s = max(WAIT_MIN_S, 50 * flush_ms / 1000.0)
        self.count = 0
        self.broken = None  # why per-test figures are off for the rest of the session
        self.results = []  # (peak, leaked, nodeid) of every test, on the controller
        self.skip = None
        self.worker = hasattr(config, "workerinput")
        try:
            self.junit_family = config.getini("junit_family")
        except ValueError:
            self.junit_family = "xunit2"
        self.only_marked = config.getoption("gpumemtrace_only_marked")

    def _off(self, why):
        if self.broken is None:
            self.broken = why
            sys.stderr.write("gpumemtrace: no per-test GPU memory figures from here on: %s\n" % why)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        if self.broken or not self.cli or (self.only_marked and not _limits(item)):
            if not self.cli:
                self._off("the gpumemtrace command was not found (not on PATH, not installed "
                          "with this package, not given by `gpumemtrace run`)")
            if self.broken and _limits(item):
                # a limit that cannot be checked fails the test: it never passes unchecked
                item._gpumemtrace = {"error": "gpumemtrace: the limits of this test cannot be "
                                              "checked: " + self.broken}
            yield
            return
        self.count += 1
        start = _label(self.count, "start", item.nodeid)
        end = _label(self.count, "end", item.nodeid)
        gpumemtrace.mark(start)
        yield
        gpumemtrace.mark(end)
        try:
            item._gpumemtrace = self._measure(start, end)
        except Exception as e:  # noqa: BLE001 (a figure we cannot get must not stop the session)
            item._gpumemtrace = {"error": "gpumemtrace: %s: %s" % (type(e).__name__, e)}

    def _measure(self, start, end):
        end_seq = self.trace.wait_for(end, self.wait_s)
        if end_seq is None:
            self._off("the trace did not show the marker %r within %.0f s (%s)" % (
                end, self.wait_s, self.trace.path or "no trace file of this process in "
                + self.outdir))
            return {"error": self.broken}
        env = {k: v for k, v in os.environ.items()
               if k not in ("LD_PRELOAD", "CUDA_INJECTION64_PATH", "PYTHONPATH")}
        p = subprocess.run([self.cli, "report", "--format", "json", "--from", start, "--to", end,
                            self.trace.path], env=env, capture_output=True, text=True)
        if p.returncode != 0:
            return {"error": "gpumemtrace report failed (%d): %s" % (p.returncode,
                                                                     p.stderr.strip())}
        try:
            rep = json.loads(p.stdout)
        except ValueError as e:
            return {"error": "gpumemtrace report wrote no JSON: %s" % e}
        if self.skip is None:
            self.skip = _skip_dirs()
        return {"report": rep, "blocks": _tensor_leaks(rep), "start": start, "end": end,
                "trace": self.trace.path}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        m = getattr(item, "_gpumemtrace", None)
        if call.when != "call" or m is None:
            return
        del item._gpumemtrace
        if "error" not in m:
            try:
                peak, leaked, problems = self._judge(item, m)
            except Exception as e:  # noqa: BLE001
                m = {"error": "gpumemtrace: the report of this test could not be read: %s: %s"
                     % (type(e).__name__, e)}
        if "error" in m:
            problems = [m["error"]] if _limits(item) else []
        else:
            props = [("gpumemtrace_peak_bytes", peak), ("gpumemtrace_leaked_bytes", leaked),
                     ("gpumemtrace_trace", m["trace"])]
            # carried to the controller with the report (pytest-xdist serializes its __dict__)
            report.gpumemtrace = dict(props)
            if self.junit_family in ("xunit1", "legacy"):
                # the item's list goes into the teardown report, whose properties --junitxml
                # writes on the testcase (valid in those families only)
                item.user_properties.extend(props)
                report.user_properties.extend(props)
        if not problems or report.skipped:
            return
        text = "\n\n".join(problems)
        if report.passed:
            report.outcome = "failed"
            report.longrepr = text
        else:
            report.sections.append(("gpumemtrace", text))

    def _judge(self, item, m):
        rep, root = m["report"], self.root
        peak = rep["summary"]["peak_held_bytes"]
        leaks = _leaks(rep, count_cached=False)
        blocks = m["blocks"]
        leaked = sum(b for b, *_ in leaks) + sum(b for b, _, _ in blocks)
        problems = []
        limits = _limits(item)
        test_fn = getattr(getattr(item, "obj", None), "__qualname__", None) or item.name
        again = ("gpumemtrace report --from %r --to %r %s" % (m["start"], m["end"], m["trace"]))
        if "memory" in limits:
            limit, spec = limits["memory"]
            if peak > limit:
                lines = ["GPU memory: %s held %s at its peak, over the limit of %s "
                         "(limit_gpu_memory(%r))" % (item.nodeid, fmt_bytes(peak),
                                                      fmt_bytes(limit), spec),
                         "live at the peak, by call site:"]
                for g in rep.get("peak_sites", [])[:10]:
                    lines.append("    %s  %d allocation%s  %s  %s" % (
                        fmt_bytes(g["bytes"]), g["allocations"], "" if g["allocations"] == 1
                        else "s", g["api"], _chain(_report_frames(rep, g), test_fn, root)))
                lines.append("the whole report: " + again)
                problems.append("\n".join(lines))
        if "leaks" in limits:
            limit, spec, count_cached = limits["leaks"]
            counted = _leaks(rep, count_cached)
            total = sum(b for b, *_ in counted) + sum(b for b, _, _ in blocks)
            if total > limit:
                n = sum(a for _, a, *_ in counted) + sum(t for _, t, _ in blocks)
                lines = ["GPU memory: %s left %s live in %d allocation%s made during the test, "
                         "over the limit of %s (limit_gpu_leaks(%r))" % (
                             item.nodeid, fmt_bytes(total), n, "" if n == 1 else "s",
                             fmt_bytes(limit), spec),
                         "still live at its end, by call site:"]
                for b, a, api, g in sorted(counted, key=lambda x: -x[0])[:10]:
                    lines.append("    %s  %d allocation%s  %s  %s" % (
                        fmt_bytes(b), a, "" if a == 1 else "s", api,
                        _chain(_report_frames(rep, g), test_fn, root)))
                sites = {}
                for b, t, stack in blocks:
                    key = _chain(_block_frames(self.trace, stack, self.skip), test_fn, root)
                    got = sites.setdefault(key, [0, 0])
                    got[0] += b
                    got[1] += t
                for key, (b, a) in sorted(sites.items(), key=lambda x: -x[1][0])[:10]:
                    lines.append("    %s  %d tensor%s (PyTorch blocks)  %s" % (
                        fmt_bytes(b), a, "" if a == 1 else "s", key))
                lines.append("the whole report: " + again)
                problems.append("\n".join(lines))
        return peak, leaked, problems

    def pytest_collection_modifyitems(self, items):
        for item in items:  # a bad limit stops the session before any test runs
            _limits(item)

    def pytest_runtest_logreport(self, report):
        if report.when != "call":
            return
        props = getattr(report, "gpumemtrace", None) or {}
        if "gpumemtrace_peak_bytes" in props:
            self.results.append((props["gpumemtrace_peak_bytes"],
                                 props["gpumemtrace_leaked_bytes"], report.nodeid))
            xml = self._junit_xml()
            if xml is not None and self.junit_family not in ("xunit1", "legacy"):
                for name, value in props.items():
                    xml.add_global_property("%s:%s" % (name, report.nodeid), value)

    def _junit_xml(self):
        """pytest's --junitxml writer (what record_testsuite_property adds to), or None."""
        try:
            from _pytest.junitxml import xml_key
        except ImportError:
            return None
        stash = getattr(self.config, "stash", None)
        return stash.get(xml_key, None) if stash is not None else None

    def pytest_terminal_summary(self, terminalreporter):
        if self.worker:
            return
        top = self.config.getoption("gpumemtrace_top")
        tr = terminalreporter
        tr.section("gpumemtrace")
        if self.broken:
            tr.write_line("per-test figures stopped: " + self.broken)
        if top and self.results:
            tr.write_line("tests that held the most GPU memory at their peak:")
            for peak, leaked, nodeid in sorted(self.results, key=lambda r: -r[0])[:top]:
                tr.write_line("    %s  %s%s" % (fmt_bytes(peak), nodeid,
                                                "  (left %s live)" % fmt_bytes(leaked)
                                                if leaked else ""))
        tr.write_line("traces in %s (one per process; pytest-xdist: one per worker)"
                      % self.outdir)


def _tensor_leaks(rep):
    """[(bytes, tensors, stack)]: the PyTorch blocks the report's range left live (made in it,
    allocated at its end: `tensors.leaked_in_range`), less a library's workspace (the report's
    category rules decide, as in its every view)."""
    out = []
    for proc in rep.get("processes", []):
        for e in (proc.get("tensors") or {}).get("leaked_in_range", []):
            if e.get("category") != "workspace":
                out.append((e["bytes"], e["tensors"], e["stack"]))
    return out


def _limits(item):
    out = {}
    mark = item.get_closest_marker("limit_gpu_memory")
    if mark is not None:
        spec = mark.args[0] if mark.args else mark.kwargs.get("limit")
        out["memory"] = (_marker_size(item, "limit_gpu_memory", spec), spec)
    mark = item.get_closest_marker("limit_gpu_leaks")
    if mark is not None:
        spec = mark.args[0] if mark.args else mark.kwargs.get("limit", 0)
        out["leaks"] = (_marker_size(item, "limit_gpu_leaks", spec), spec,
                        bool(mark.kwargs.get("count_cached", False)))
    return out


def _marker_size(item, name, spec):
    try:
        return parse_size(spec)
    except ValueError as e:
        raise pytest.UsageError("%s: @pytest.mark.%s: %s" % (item.nodeid, name, e))


def _leaks(rep, count_cached):
    """[(bytes, allocations, api, site)] of the report's leak sites that count: kinds the
    process allocated, what a caching allocator keeps only with @p count_cached, never what CUDA
    libraries hold for their handles (the report's `library`: a cuBLAS handle made during the
    first test that multiplies is kept for the process, as `report` and `check` say)."""
    out = []
    for s in rep.get("leak_sites", []):
        if not s.get("counted"):
            continue
        b = s["bytes"] - s.get("library_bytes", 0)
        a = s["allocations"] - s.get("library_allocations", 0)
        if not count_cached:
            b -= s.get("cached_bytes", 0)
            a -= s.get("cached_allocations", 0)
        if b > 0:
            out.append((b, a, s.get("api"), s))
    return out
