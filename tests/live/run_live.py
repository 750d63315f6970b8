#!/usr/bin/env python3
"""Suite 'live': `gpumemtrace live` on finished traces and on a trace that grows while it runs.

    run_live.py --exe GPUMEMTRACE --traces DIR --fixtures DIR GROUP

Groups:
  once    `live --once --bytes` on the golden traces (each file, and the two-rank directory) and
          on the H200 PyTorch fixtures: every process's current and peak device memory per
          device, and the PyTorch line (allocated and reserved now, peak allocated), are
          `report --format json`'s (peaks[].held_at_end_bytes and .bytes; processes[].tensors);
          without --bytes the same figures read as `report` prints sizes. Two processes on one
          device: the device's peak is the highest sum at one moment, not the sum of the peaks.
          A trace with terminal escapes in its command line, host and marker label prints none.
  tmux    a trace that grows while `live` runs in tmux (a detached session, read back with
          `tmux capture-pane -p`): this script is the tracer's writer, appending zstd frames
          (one per flush, as the tracer does) and cutting one in the middle; `live` shows the
          new figures, the growth since the step marker, a second process whose trace appears
          in the directory later (plain JSON Lines, its last line torn for a while), and `q`
          quits it. Exit 77 (skipped) without tmux or libzstd.so.1.
  tracer  the real tracer (tests/preload's victim on tests/simcuda under `gpumemtrace run`)
          allocates and sleeps; `live --once` on its directory, the trace still open for
          writing, shows it running with `report`'s figures. Skipped in a sanitizer build.
"""
import argparse
import ctypes
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")
    return cond


def fmt_bytes(b):
    """gmt_format_bytes() (src/analysis/report/units.c): how `report` prints a size."""
    if b < 1024:
        return f"{b} B"
    units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
    v, u = b / 1024.0, 0
    while v >= 1023.95 and u + 1 < len(units):
        v /= 1024.0
        u += 1
    return f"{v:.1f} {units[u]}"


def live_once(exe, path, *extra):
    r = subprocess.run([exe, "live", "--once", *extra, path], capture_output=True, timeout=120)
    return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")


def report_json(exe, path):
    r = subprocess.run([exe, "report", "--format", "json", path], capture_output=True,
                       timeout=120)
    if r.returncode != 0:
        return None
    return json.loads(r.stdout)


ROW = re.compile(r"^(?:rank (\d+) )?pid (\d+)\s+(-?\d+)\s+(\S+(?: \S+)?)\s+(\S+(?: \S+)?)\s+"
                 r"(running|exited)")
TENSORS = re.compile(r"^TENSORS (?:rank \d+ )?pid (\d+) dev (-?\d+): allocated (.+?) reserved "
                     r"(.+?) \(peak allocated (.+?), most reserved (.+?)"
                     r"(?:; allocated ([+-].+?) since the step)?\)$")


def proc_rows(out):
    """{(pid, device): (current, peak)} from the PROCESS table, sizes as printed."""
    rows = {}
    for line in out.splitlines():
        m = ROW.match(line)
        if m:
            rows[(int(m.group(2)), int(m.group(3)))] = (m.group(4), m.group(5))
    return rows


def device_rows(out):
    """{device: (current, peak, processes)} from the DEVICE table."""
    rows, inside = {}, False
    for line in out.splitlines():
        if line.startswith("DEVICE"):
            inside = True
            continue
        if inside:
            m = re.match(r"^(-?\d+)\s+(\S+(?: \S+)?)\s+(\S+(?: \S+)?)\s+(\d+)$", line)
            if not m:
                break
            rows[int(m.group(1))] = (m.group(2), m.group(3), int(m.group(4)))
    return rows


def tensor_rows(out):
    rows = {}
    for line in out.splitlines():
        m = TENSORS.match(line)
        if m:
            rows[(int(m.group(1)), int(m.group(2)))] = m.group(3, 4, 5, 6, 7)
    return rows


def compare_with_report(exe, path):
    doc = report_json(exe, path)
    if not check(doc is not None, f"{path}: report --format json failed"):
        return
    for exact in (True, False):
        show = (lambda b: str(b)) if exact else fmt_bytes
        rc, out, err = live_once(exe, path, *(["--bytes"] if exact else []))
        name = f"{os.path.basename(path)} ({'--bytes' if exact else 'units'})"
        if not check(rc == 0, f"{name}: live --once exit {rc}: {err}"):
            continue
        rows = proc_rows(out)
        want = {(p["pid"], p["device"]): (show(p["held_at_end_bytes"]), show(p["bytes"]))
                for p in doc["peaks"]}
        check(rows == want, f"{name}: process rows {rows} != report's {want}")
        for proc in doc["processes"]:
            t = proc.get("tensors")
            if not t:
                continue
            trows = tensor_rows(out)
            for d in t["devices"]:
                key = (proc["pid"], d["device"])
                # since the step: PyTorch's cache at the last marker (the trace's marks are
                # the user's here: an automatic step would be the later one)
                marks = [k for k in t.get("at_markers", []) if k["device"] == d["device"]]
                since = None
                if marks:
                    delta = d["end"]["allocated"] - marks[-1]["allocated"]
                    since = ("+" if delta >= 0 else "-") + show(abs(delta))
                exp = (show(d["end"]["allocated"]), show(d["end"]["reserved"]),
                       show(d["peak"]["allocated"]), show(d["max_reserved"]), since)
                check(trows.get(key) == exp,
                      f"{name}: tensors of {key}: {trows.get(key)} != report's {exp}")
        # one process per device: the device's row is its process's
        devs = device_rows(out)
        for (pid, dev), (cur, peak) in want.items():
            if sum(1 for k in want if k[1] == dev) == 1:
                check(devs.get(dev) == (cur, peak, 1),
                      f"{name}: device {dev} row {devs.get(dev)} != {(cur, peak, 1)}")


def header(pid, host="node1", argv=("python3", "train.py"), rank=None):
    return {"type": "header", "format": "gpumemtrace", "version": 1, "tracer": "0.1.0",
            "pid": pid, "ppid": 1, "host": host, "argv": list(argv), "start_ts": 1000,
            "start_unix_ns": 1796228579000000000,
            "rank": None if rank is None else {"rank": rank, "local_rank": rank,
                                                "world_size": 2},
            "forked_from": None, "coverage": "full", "capture": ["cupti"],
            "options": {"ring_slots": 65536, "flush_ms": 100, "snapshot_ms": 1000}}


def alloc(seq, ts, ptr, size, stack=1, device=0):
    return {"type": "event", "seq": seq, "ts": ts, "tid": 1, "op": "alloc", "api": "cudaMalloc",
            "kind": "device", "device": device, "stream": "0x0", "ptr": hex(ptr), "size": size,
            "result": 0, "stack": stack}


def free(seq, ts, ptr, device=0):
    return {"type": "event", "seq": seq, "ts": ts, "tid": 1, "op": "free", "api": "cudaFree",
            "kind": "device", "device": device, "stream": "0x0", "ptr": hex(ptr), "result": 0,
            "stack": 0}


def lines(recs):
    return "".join(json.dumps(r) + "\n" for r in recs).encode()


def group_once(a):
    for name in sorted(os.listdir(a.traces)):
        path = os.path.join(a.traces, name)
        if name.endswith(".jsonl") and os.path.getsize(path) and name not in (
                "version2.jsonl", "garbled.jsonl"):
            compare_with_report(a.exe, path)
    compare_with_report(a.exe, os.path.join(a.traces, "multi"))
    for name in ("gpt2.jsonl", "growth.jsonl", "frag.jsonl", "blocks-default.jsonl",
                 "blocks-expandable.jsonl"):
        compare_with_report(a.exe, os.path.join(a.fixtures, "tensors", name))

    with tempfile.TemporaryDirectory() as d:
        # two processes on device 0: A holds 300 MiB from ts 2000 to 4000, B 200 MiB from
        # 3000 on and 500 MiB more from 5000: the device's peak is A+B at 3000 (500 MiB) vs
        # B alone at 5000 (700 MiB)
        mib = 1 << 20
        a_recs = [header(11), {"type": "stack", "id": 1, "frames": ["0x1000"]},
                  alloc(1, 2000, 0x10000000, 300 * mib), free(2, 4000, 0x10000000)]
        b_recs = [header(12), {"type": "stack", "id": 1, "frames": ["0x2000"]},
                  alloc(1, 3000, 0x20000000, 200 * mib), alloc(2, 5000, 0x30000000, 500 * mib)]
        open(os.path.join(d, "gpumemtrace.node1.11.jsonl"), "wb").write(lines(a_recs))
        open(os.path.join(d, "gpumemtrace.node1.12.jsonl"), "wb").write(lines(b_recs))
        rc, out, err = live_once(a.exe, d, "--bytes")
        held = {}
        peak = 0
        for ts, who, b in sorted([(2000, "a", 300), (3000, "b", 200), (4000, "a", 0),
                                  (5000, "b", 700)]):
            held[who] = b
            peak = max(peak, sum(held.values()))
        check(device_rows(out).get(0) == (str(700 * mib), str(peak * mib), 2),
              f"shared device: {device_rows(out).get(0)} != current 700 MiB, peak {peak} MiB")
        b_recs[-1] = alloc(2, 5000, 0x30000000, 100 * mib)  # now the peak is A+B at 3000
        open(os.path.join(d, "gpumemtrace.node1.12.jsonl"), "wb").write(lines(b_recs))
        rc, out, err = live_once(a.exe, d, "--bytes")
        check(device_rows(out).get(0) == (str(300 * mib), str(500 * mib), 2),
              f"shared device, peak at one moment: {device_rows(out).get(0)}")

        # escapes: nothing of a trace reaches the terminal as a control character
        hostile = "\x1b]0;pwned\x07\x1b[31mred\u009b2J\nforged"
        e = os.path.join(d, "esc")
        os.mkdir(e)
        recs = [header(13, host=hostile, argv=["python3", hostile]),
                {"type": "stack", "id": 1, "frames": ["0x1000"]},
                alloc(1, 2000, 0x10000000, 4096),
                {"type": "marker", "seq": 2, "ts": 2500, "tid": 1, "label": hostile},
                alloc(3, 3000, 0x10100000, 8192)]
        open(os.path.join(e, "gpumemtrace.x.13.jsonl"), "wb").write(lines(recs))
        rc, out, err = live_once(a.exe, e)
        check(rc == 0, f"escapes: exit {rc}: {err}")
        check("\x1b" not in out and "\x07" not in out and "\u009b" not in out,
              f"escapes: a control character reached the output: {out!r}")
        check("\\033]0;pwned" in out, f"escapes: the label is not shown escaped: {out!r}")
        check("forged" not in [l.strip() for l in out.splitlines()],
              "escapes: a newline in the trace forged a line")

        # exit codes: a missing path, a directory without traces (--once), usage
        check(live_once(a.exe, os.path.join(d, "none"))[0] == 3, "missing path: exit != 3")
        fifo = os.path.join(d, "fifo.jsonl")
        os.mkfifo(fifo)  # never opened (it would block until a writer came)
        rc, out, err = live_once(a.exe, fifo)
        check(rc == 3 and "not a regular file or a directory" in err, f"a FIFO: {rc} {err!r}")
        empty = os.path.join(d, "empty")
        os.mkdir(empty)
        rc, out, err = live_once(a.exe, empty)
        check(rc == 3 and "waiting for a trace" in out, f"empty dir: exit {rc}, {out!r}")
        # not on a terminal, without --once: frame after frame, plain text, until a signal
        p = subprocess.Popen([a.exe, "live", "--interval", "0.1", d], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(1.5)
        p.terminate()
        out, err = p.communicate(timeout=60)
        frames = out.decode().count("gpumemtrace live: ")
        esc = b"\x1b" in out
        check(p.returncode == 0 and frames >= 2 and not esc,
              f"into a pipe: exit {p.returncode}, {frames} frames, escape sequences: {esc}")
        # a file that is no trace (of a newer format): the reader's reason, file and line
        rc, out, err = live_once(a.exe, os.path.join(a.traces, "version2.jsonl"))
        check(rc == 3 and re.search(r"not readable yet: .*version2.jsonl:1: trace format "
                                    r"version 2 is not supported", out),
              f"version 2: exit {rc}, the reader's reason: {out!r}")
        r = subprocess.run([a.exe, "live"], capture_output=True, timeout=60)
        check(r.returncode == 2, f"no argument: exit {r.returncode}")
        r = subprocess.run([a.exe, "live", "--interval", "x", d], capture_output=True,
                           timeout=60)
        check(r.returncode == 2, f"--interval x: exit {r.returncode}")


# --- tmux ---------------------------------------------------------------------------------------


class Zstd:
    def __init__(self):
        self.lib = ctypes.CDLL("libzstd.so.1")
        self.lib.ZSTD_compressBound.restype = ctypes.c_size_t
        self.lib.ZSTD_compressBound.argtypes = [ctypes.c_size_t]
        self.lib.ZSTD_compress.restype = ctypes.c_size_t
        self.lib.ZSTD_compress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                                           ctypes.c_size_t, ctypes.c_int]
        self.lib.ZSTD_isError.restype = ctypes.c_uint
        self.lib.ZSTD_isError.argtypes = [ctypes.c_size_t]

    def frame(self, data):
        cap = self.lib.ZSTD_compressBound(len(data))
        dst = ctypes.create_string_buffer(cap)
        n = self.lib.ZSTD_compress(dst, cap, data, len(data), 1)
        assert not self.lib.ZSTD_isError(n)
        return dst.raw[:n]


class Tmux:
    def __init__(self, sock):
        self.base = ["tmux", "-L", sock, "-f", "/dev/null"]

    def run(self, *args, check_rc=True):
        return subprocess.run(self.base + list(args), capture_output=True, timeout=60,
                              check=check_rc)

    def pane(self):
        r = self.run("capture-pane", "-p", "-t", "live", check_rc=False)
        return r.stdout.decode("utf-8", "replace")

    def alive(self):
        return self.run("has-session", "-t", "live", check_rc=False).returncode == 0

    def wait(self, cond, what, timeout=60):
        end = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < end:
            screen = self.pane()
            if cond(screen):
                return screen
            time.sleep(0.2)
        check(False, f"tmux: {what} (screen:\n{screen})")
        return screen


def group_tmux(a):
    if not shutil.which("tmux"):
        print("SKIP: tmux is not installed")
        sys.exit(77)
    try:
        z = Zstd()
    except OSError:
        print("SKIP: libzstd.so.1 cannot be loaded")
        sys.exit(77)
    mib = 1 << 20
    with tempfile.TemporaryDirectory() as d:
        zpath = os.path.join(d, "gpumemtrace.node1.21.rank0.jsonl.zst")
        f = open(zpath, "wb")
        # flush 1: 8 MiB on device 0
        f.write(z.frame(lines([header(21, rank=0), {"type": "stack", "id": 1,
                                                     "frames": ["0x1000"]},
                               alloc(1, 2000, 0x10000000, 8 * mib)])))
        f.flush()
        tm = Tmux(f"gmt-live-test-{os.getpid()}")
        try:
            tm.run("new-session", "-d", "-s", "live", "-x", "200", "-y", "50",
                   f"'{os.path.abspath(a.exe)}' live --bytes --no-symbols --interval 0.2 '{d}'")

            def row(screen, pid, dev=0):
                return proc_rows(screen).get((pid, dev))

            tm.wait(lambda s: row(s, 21) == (str(8 * mib), str(8 * mib)),
                    "the first flush: 8 MiB now and at the peak")
            # flush 2: the step marker, a free of 8 MiB, 24 MiB at a new site; written in two
            # halves, the first one a zstd frame cut in the middle, as a reader sees a writer
            frame = z.frame(lines([{"type": "marker", "seq": 2, "ts": 3000, "tid": 1,
                                    "label": "step 1"},
                                   {"type": "stack", "id": 2, "frames": ["0x2000"]},
                                   free(3, 3500, 0x10000000),
                                   alloc(4, 4000, 0x20000000, 24 * mib, stack=2)]))
            f.write(frame[:len(frame) // 2])
            f.flush()
            time.sleep(1.5)  # several refreshes on the cut frame
            s = tm.pane()
            check(row(s, 21) == (str(8 * mib), str(8 * mib)),
                  f"a cut frame: the figures before it stay ({row(s, 21)})")
            check(tm.alive(), "a cut frame: live is still running")
            f.write(frame[len(frame) // 2:])
            f.flush()
            s = tm.wait(lambda s: row(s, 21) == (str(24 * mib), str(24 * mib)),
                        "the rest of the frame: 24 MiB now and at the peak")
            grew = s.split("GREW SINCE LAST STEP", 1)[-1]
            check("'step 1'" in grew and re.search(rf"^\s*\+\s*{24 * mib}\s", grew, re.M),
                  f"growth since 'step 1' shows +24 MiB: {grew!r}")

            # a second process appears: a plain trace whose last line is torn for a while
            ppath = os.path.join(d, "gpumemtrace.node1.22.rank1.jsonl")
            body = lines([header(22, rank=1), {"type": "stack", "id": 1, "frames": ["0x3000"]},
                          alloc(1, 2000, 0x30000000, 2 * mib, device=0),
                          alloc(2, 2500, 0x40000000, 6 * mib, device=0)])
            cut = body.rindex(b"{")
            with open(ppath, "wb") as p:
                p.write(body[:cut + 20])
            s = tm.wait(lambda s: row(s, 22) == (str(2 * mib), str(2 * mib)),
                        "the new process: 2 MiB, its torn last line ignored")
            with open(ppath, "ab") as p:
                p.write(body[cut + 20:])
            s = tm.wait(lambda s: row(s, 22) == (str(8 * mib), str(8 * mib)),
                        "the new process's torn line completed: 8 MiB")
            s = tm.wait(lambda s: device_rows(s).get(0) == (str(32 * mib), str(32 * mib), 2),
                        "device 0 sums both processes: 32 MiB")

            # the trailer: the process exited
            f.write(z.frame(lines([{"type": "trailer", "ts": 5000, "events": 4, "dropped": 0,
                                    "reason": "exit"}])))
            f.flush()
            tm.wait(lambda s: re.search(r"rank 0 pid 21 .* exited", s) is not None,
                    "the trailer: shown as exited")
            check(tm.alive(), "live keeps running after a process exited")
            tm.run("send-keys", "-t", "live", "q")
            end = time.monotonic() + 30
            while tm.alive() and time.monotonic() < end:
                time.sleep(0.1)
            check(not tm.alive(), "q did not quit live")
        finally:
            f.close()
            tm.run("kill-server", check_rc=False)


def group_tracer(a):
    """The real tracer on tests/simcuda: a victim that allocates and then sleeps, its trace
    (zstd, the default) still open for writing while `live --once` reads it."""
    if not (a.victim and a.tracer_lib and a.simcuda):
        print("SKIP: no victim under the tracer in this build (a sanitizer build)")
        sys.exit(77)
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "traces")
        env = dict(os.environ, GPUMEMTRACE_LIB=a.tracer_lib, LD_LIBRARY_PATH=a.simcuda,
                   SIMCUDA_MEM_BYTES="1G", SIMCUDA_DEVICES="1", GPUMEMTRACE_FLUSH_MS="20")
        p = subprocess.Popen([a.exe, "run", "-o", out, "--", a.victim, "hang"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            did = json.loads(p.stdout.readline())
            check(p.stdout.readline().strip() == b"ready", "the victim runs")
            end = time.monotonic() + 60
            rows = {}
            while time.monotonic() < end:
                rc, screen, err = live_once(a.exe, out, "--bytes")
                rows = proc_rows(screen)
                if rc == 0 and (did["pid"], 0) in rows:
                    break
                time.sleep(0.2)
            check((did["pid"], 0) in rows, f"the running victim's row: {rows}")
            check(re.search(rf"pid {did['pid']} .* running ", screen) is not None,
                  f"the victim is shown running:\n{screen}")
            # the trace as `report` reads it at that moment (the victim makes no more events)
            doc = report_json(a.exe, out)
            want = {(q["pid"], q["device"]): (str(q["held_at_end_bytes"]), str(q["bytes"]))
                    for q in doc["peaks"]} if doc else None
            check(rows == want and int(rows[(did["pid"], 0)][0]) > 0,
                  f"the running victim's figures {rows} are report's {want}")
            check(p.poll() is None, "the victim still runs after being read")
        finally:
            p.kill()
            p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--traces", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--victim")
    ap.add_argument("--tracer-lib")
    ap.add_argument("--simcuda")
    ap.add_argument("group", choices=["once", "tmux", "tracer"])
    a = ap.parse_args()
    {"once": group_once, "tmux": group_tmux, "tracer": group_tracer}[a.group](a)
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
