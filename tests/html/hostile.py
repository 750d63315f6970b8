"""Inputs shared by the html and perfetto tests: a trace whose names are HTML, and a report
document with the analysis keys of docs/report-json.md (timeline, oom, growth, marker ranges)
added by hand, so the formats are tested on them before the analysis writes them."""
import copy
import json
import subprocess

# Every name a trace carries reaches the page: each must stay text.
FUNC = "<script>alert(1)</script>"
FILE = "/home/u/</script><img src=x onerror=alert(2)>.py"
QUAL2 = "Cls.q\"uo'te &amp; <b>bold</b>"
FILE2 = "/home/u/a&amp;b \"c\" 'd'.py"
LABEL = "</script><img src=x onerror=\"document.title='pwned'\">&amp;"
ARGV = ["python3", "<script>document.title='argv'</script>", "a&amp;b"]
EXPLANATION = "<i>not italic</i>: the process holds 3.0 MiB & asked for 80.0 GiB."

PEAK = 3145728        # 1 MiB + 2 MiB, both live at the end
FAILED_SIZE = 85899345920


def write_trace(path):
    lines = [
        {"type": "header", "format": "gpumemtrace", "version": 1, "tracer": "0.1.0",
         "pid": 777, "ppid": 1, "host": "node<1>", "argv": ARGV, "start_ts": 1000000000,
         "start_unix_ns": 1796228579000000000, "coverage": "full", "capture": ["cupti"],
         "stacks": {"native": True, "python": "3.11", "depth": 64}},
        {"type": "modules", "seq": 0, "modules": [
            {"path": "/nonexistent/gmt-html/python3.11", "base": "0x555500000000",
             "build_id": "0123456789abcdef0123456789abcdef01234567", "segments": [[0, 65536]]}]},
        {"type": "pycode", "id": 1, "file": FILE, "name": FUNC, "qualname": FUNC,
         "firstlineno": 40, "python": "3.11", "linetable": "ef00"},
        {"type": "pycode", "id": 2, "file": FILE2, "name": "q\"uo'te", "qualname": QUAL2,
         "firstlineno": 7, "python": "3.11", "linetable": "ef00"},
        {"type": "stack", "id": 1, "frames": ["0x555500001234"], "py": [[1, 4, 1]]},
        {"type": "stack", "id": 2, "frames": ["0x555500001234"], "py": [[2, 4, 0], [1, 4, 1]]},
        {"type": "event", "seq": 1, "ts": 1010000000, "tid": 777, "op": "alloc",
         "api": "cudaMalloc", "driver": "cuMemAlloc_v2", "kind": "device", "device": 0,
         "context": 1, "stream": "0x0", "ptr": "0x7f5500000000", "size": 1048576, "result": 0,
         "stack": 1},
        {"type": "marker", "seq": 2, "ts": 1015000000, "tid": 777, "label": LABEL},
        {"type": "event", "seq": 3, "ts": 1020000000, "tid": 777, "op": "alloc",
         "api": "cudaMalloc", "driver": "cuMemAlloc_v2", "kind": "device", "device": 0,
         "context": 1, "stream": "0x0", "ptr": "0x7f5500100000", "size": 2097152, "result": 0,
         "stack": 2},
        {"type": "event", "seq": 4, "ts": 1030000000, "tid": 777, "op": "alloc",
         "api": "cudaMalloc", "driver": "cuMemAlloc_v2", "kind": "device", "device": 0,
         "context": 1, "stream": "0x0", "ptr": "0x0", "size": FAILED_SIZE, "result": 2,
         "free_bytes": 1073741824, "total_bytes": 85899345920, "stack": 2},
        {"type": "trailer", "ts": 1050000000, "events": 4, "dropped": 0, "reason": "exit"},
    ]
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")


def report_doc(exe, trace):
    p = subprocess.run([exe, "report", "--format", "json", trace], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, check=True, timeout=60)
    return json.loads(p.stdout)


CACHED = 20 << 20


def with_analyses(doc):
    """@p doc with timeline[], oom[], growth[] and growth_sites[] and a push/pop marker range, as
    specified."""
    d = copy.deepcopy(doc)
    d["timeline"] = [
        {"process": 0, "pid": 777, "device": 0, "kind": "held", "exact": True,
         "points": [[0.01, 1048576], [0.02, PEAK], [0.04, PEAK]]},
        {"process": 0, "pid": 777, "device": 0, "kind": "device", "exact": True,
         "points": [[0.01, 1048576], [0.02, PEAK]]},
    ]
    f = d["failed"][0]
    site = f["site"]
    d["oom"] = [dict(f, held_bytes=PEAK, by_kind={"device": PEAK}, live_allocations=2,
                     cache_bytes=0, pool_slack_bytes=None, nvml=None,
                     untracked_bytes=f["total_bytes"] - f["free_bytes"] - PEAK,
                     largest_gap_bytes=0, cause="held_outside", explanation=EXPLANATION,
                     top_sites=[{"site": site, "api": "cudaMalloc", "driver": "cuMemAlloc_v2",
                                 "kind": "device", "bytes": 2097152, "allocations": 1,
                                 "cache": None, "stack": 2}])]
    d["growth"] = [{"process": 0, "pid": 777, "api": "cudaMalloc", "driver": "cuMemAlloc_v2",
                    "kind": "device", "site": site, "stack": 2, "cache": None,
                    "basis": "markers", "samples": 3, "first_bytes": 1048576,
                    "last_bytes": PEAK, "growth_bytes": PEAK - 1048576, "rises": 2, "falls": 0,
                    "first_label": LABEL, "last_label": "epoch 2"}]
    g = {k: v for k, v in d["growth"][0].items() if k not in ("stack", "rises", "falls")}
    d["growth_sites"] = [dict(g, min_rises=2, max_rises=2, stacks=[
        {"stack": 2, "first_bytes": 1048576, "last_bytes": PEAK, "growth_bytes": PEAK - 1048576,
         "rises": 2, "falls": 0}])]
    # PyTorch's cache at exit: listed, but not the program's leak (the summary card says so)
    pt = copy.deepcopy(d["leak_sites"][0])
    pt.update(bytes=CACHED, allocations=1, cache="pytorch", cached_bytes=CACHED,
              cached_allocations=1,
              stacks=[dict(pt["stacks"][0], bytes=CACHED, allocations=1, cache="pytorch",
                           cached=True)])
    d["leak_sites"].append(pt)
    d["summary"]["cached_at_exit_bytes"] = CACHED
    d["summary"]["cached_at_exit_allocations"] = 1
    d["summary"]["cached_at_exit"] = {"pytorch": {"bytes": CACHED, "allocations": 1},
                                      "cupy": {"bytes": 0, "allocations": 0},
                                      "xla": {"bytes": 0, "allocations": 0}}
    marks = d["processes"][0]["markers"]
    marks.insert(0, {"seq": 0, "time_s": 0.005, "label": "step", "range": "push"})
    marks.append({"seq": 5, "time_s": 0.03, "label": "step", "range": "pop"})
    marks.append({"seq": 6, "time_s": 0.035, "label": "unclosed", "range": "push"})
    return d


# The tensor trace: PyTorch block lines whose site (stack 1) is the hostile FUNC in FILE, 40
# markers close together (labels that would overlap), a range, and an OOM inside a fragmented
# segment.
TENSOR_MARKS = 40
TENSOR_BLOCKS = 6
SEG = 0x7f6600000000
MiB = 1 << 20


def write_tensor_trace(path):
    head = [
        {"type": "header", "format": "gpumemtrace", "version": 1, "tracer": "0.1.0",
         "pid": 778, "ppid": 1, "host": "node<1>", "argv": ARGV, "start_ts": 1000000000,
         "coverage": "full", "capture": ["cupti"],
         "stacks": {"native": True, "python": "3.11", "depth": 64}},
        {"type": "modules", "seq": 0, "modules": [
            {"path": "/nonexistent/gmt-html/python3.11", "base": "0x555500000000",
             "build_id": "0123456789abcdef0123456789abcdef01234567", "segments": [[0, 65536]]}]},
        {"type": "pycode", "id": 1, "file": FILE, "name": FUNC, "qualname": FUNC,
         "firstlineno": 40, "python": "3.11", "linetable": "ef00"},
        {"type": "stack", "id": 1, "frames": ["0x555500001234"], "py": [[1, 4, 1]]},
    ]
    lines, seq, ts = [], [1], [1100000000]

    def add(d, dt=1000000):
        seq[0] += 1
        ts[0] += dt
        d.update(seq=seq[0], ts=ts[0], tid=778)
        lines.append(d)

    add({"type": "torch", "version": "2.11.0", "backend": "native", "alloc_conf": "",
         "layer": "blocks"})
    add({"type": "event", "op": "alloc", "api": "cudaMalloc", "driver": "cuMemAlloc_v2",
         "kind": "device", "device": 0, "context": 1, "stream": "0x0", "ptr": hex(SEG),
         "size": 64 * MiB, "result": 0, "stack": 1})
    add({"type": "block", "action": "segment_alloc", "device": 0, "ptr": hex(SEG),
         "size": 64 * MiB, "stream": "0x0", "pool": [0, 0]})
    for k in range(TENSOR_BLOCKS):
        add({"type": "block", "action": "alloc", "device": 0, "ptr": hex(SEG + k * 8 * MiB),
             "size": 8 * MiB, "stream": "0x0", "pool": [0, 0], "stack": 1})
    add({"type": "marker", "label": "range<b>", "range": "push", "depth": 1})
    for k in range(TENSOR_MARKS):
        add({"type": "marker", "label": (LABEL if k == 0 else "step %d <u>long label</u>" % k)},
            dt=20000)
    add({"type": "marker", "label": "range<b>", "range": "pop", "depth": 1})
    for k in range(0, TENSOR_BLOCKS, 2):
        for action in ("free_requested", "free_completed"):
            add({"type": "block", "action": action, "device": 0,
                 "ptr": hex(SEG + k * 8 * MiB), "size": 8 * MiB, "stream": "0x0",
                 "pool": [0, 0]})
    add({"type": "block", "action": "oom", "device": 0, "size": 24 * MiB,
         "device_free": 0, "stream": "0x0", "pool": [0, 0], "stack": 1})
    lines.append({"type": "trailer", "ts": ts[0] + 1000000, "events": 1, "dropped": 0,
                  "reason": "exit"})
    with open(path, "w", encoding="utf-8") as f:
        for line in head + lines:
            f.write(json.dumps(line) + "\n")
