#!/usr/bin/env python3
"""PyTorch cases of the GPU proof (scripts/gpu-check): small deterministic workloads run under the
tracer and, separately, under the reference counter (tests/gpu/cupti_count.c), compared with each
other and with PyTorch's own allocator statistics.

    torch_cases.py all --build BUILD --out DIR --ref-lib LIB [--jobs 4] [--cases a,b]
    torch_cases.py workload CASE OUT.json           (what runs inside the traced process)
    torch_cases.py check CASE CASEDIR --build BUILD (compare one case's outputs)

Cases (PYTORCH_CUDA_ALLOC_CONF, workload, what is compared at the marker "end"):

  default         -                       training loop  trace device kind vs torch segments
  expandable      expandable_segments:True training loop  vmm_mapped bytes == torch reserved bytes
  async           backend:cudaMallocAsync training loop   pool kind vs torch allocated bytes
  pinned          -                       DataLoader(pin_memory=True) loop: pinned kind vs
                                                           torch.cuda.host_memory_stats()
  matmul          -                       cuBLAS/cuBLASLt heavy loop: device kind vs torch segments
                                                           (the surplus is NVIDIA libraries' own)
  profiler        -                       torch.profiler (CPU+CUDA) started mid-run while the tracer
                                          holds CUPTI: no crash, trace complete, the profiler warns
                                          about CUPTI, allocations after it are still recorded
  profiler-first  -                       torch.profiler started before any CUDA use: whichever of
                                          Kineto and the tracer gets CUPTI, the trace is right for
                                          its header (torch 2.11's Kineto did not take the callback
                                          API on the H200, so this is normally "full")
  taken           -                       another CUPTI tool (tests/gpu/cupti_count, started before
                                          any CUDA use, as an injected profiler is) holds the callbacks:
                                          header "runtime API only" naming the holder, the runtime
                                          API's allocations still recorded

For every case the trace must have a full header (coverage "full" and capture with "cupti",
except taken), a trailer, 0 dropped events and no allocation recorded twice. For the
first five cases a reference run counts the same workload with CUPTI (cupti_count_mark("end")
at the same point) and the traced counts per kind must equal it exactly (allocs, bytes, frees,
freed bytes; failures and peaks are shown). Workloads mark points with gmt_mark() (the tracer,
through ctypes) and cupti_count_mark() (the reference library, GMT_CUPTI_COUNT_LIB), after
torch.cuda.synchronize() and after reading torch's statistics.

`all` runs every case (traced with `gpumemtrace run`, and the reference run) --jobs at a time
(a case marked "alone" afterwards, with the GPU to itself), checks them, prints one summary table and exits 1 if any case failed.
"""
import argparse
import concurrent.futures
import ctypes
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_trace as ct  # noqa: E402

CASES = {
    "default": {"conf": None, "ref": True},
    "expandable": {"conf": "expandable_segments:True", "ref": True},
    # The reference counter crashed here (SIGSEGV/SIGABRT, "unaligned fastbin chunk") and once
    # counted a pool free as a pinned free torch never made: a free took its entry out of the
    # counter's hash chain but kept the chain's rest behind it, and freed those neighbours too
    # (ASan on the H100, 2026-12-05; fixed in cupti_count.c, tests/gpu/run_count_sim.py). The
    # case also checks torch's own figures.
    "async": {"conf": "backend:cudaMallocAsync", "ref": True},
    "pinned": {"conf": None, "ref": True},
    "matmul": {"conf": None, "ref": True},
    "profiler": {"conf": None, "ref": False},
    "profiler-first": {"conf": None, "ref": False, "env": {"PYTORCH_NVML_BASED_CUDA_CHECK": "1"}},
    # another CUPTI tool (the reference counter, injected by the driver at cuInit, as Nsight is)
    # holds the callbacks before the tracer's first call: the fallback path
    "taken": {"conf": None, "ref": False},
}
TIMEOUT_S = 180


# --- the workloads (run inside the traced or reference process) ----------------------------------

class Marks:
    def __init__(self, torch):
        self.torch = torch
        self.out = []
        self.gmt = getattr(ctypes.CDLL(None), "gmt_mark", None)
        self.ref = None
        lib = os.environ.get("GMT_CUPTI_COUNT_LIB")
        if lib:
            self.ref = getattr(ctypes.CDLL(lib), "cupti_count_mark", None)

    def __call__(self, label):
        torch = self.torch
        torch.cuda.synchronize()
        keys = ["segment.all.allocated", "segment.all.freed", "segment.all.current",
                "reserved_bytes.all.allocated", "reserved_bytes.all.freed", "reserved_bytes.all.current",
                "reserved_bytes.all.peak", "allocated_bytes.all.peak", "allocated_bytes.all.current",
                "num_alloc_retries", "num_device_alloc", "num_device_free"]
        s = torch.cuda.memory_stats()
        host = {}
        hms = getattr(torch.cuda, "host_memory_stats", None) or getattr(torch.cuda.memory, "host_memory_stats", None)
        if hms is not None:
            try:
                host = {k: v for k, v in hms().items() if isinstance(v, int)}
            except Exception as e:  # noqa: BLE001 - report, do not fail the workload
                host = {"error": str(e)}
        self.out.append({"label": label, "stats": {k: s.get(k) for k in keys}, "host": host})
        for fn in (self.gmt, self.ref):
            if fn is not None:
                fn(label.encode())


def build_model(torch):
    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 4096), nn.GELU(),
                          nn.Linear(4096, 1024)).cuda()
    return model, torch.optim.AdamW(model.parameters(), lr=1e-3)


def train(torch, model, opt, steps, batches=None):
    loss = None
    for step in range(steps):
        if batches is not None:
            x, y = batches[step]
        else:
            x = torch.randn(256, 1024, device="cuda")
            y = torch.randn(256, 1024, device="cuda")
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    return loss.item() if loss is not None else None


def cuda_event_count(prof):
    """CUDA-side events the profiler collected (0 when it could not use CUPTI)."""
    try:
        n = 0
        for e in prof.events():
            if str(getattr(e, "device_type", "")).endswith("CUDA"):
                n += 1
        return n
    except Exception as e:  # noqa: BLE001
        return f"unknown ({e})"


def workload(case, out_path):
    result = {"case": case, "pid": os.getpid(), "conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF")}
    prof = None
    if case == "taken":
        # Another CUPTI tool subscribes before anything touches CUDA, as an injected profiler
        # does: the reference counter, started by hand after torch mapped its libcupti.so.13
        # (so both use that one copy), before any CUDA call.
        import torch  # noqa: F401
        holder = ctypes.CDLL(os.environ["GMT_CUPTI_COUNT_LIB"])
        result["holder_started"] = holder.InitializeInjection()
    if case == "profiler-first":
        # Before anything initialises CUDA: Kineto subscribes to CUPTI when the profiler is prepared.
        import torch
        from torch.profiler import ProfilerActivity, profile
        result["cuda_initialized_before_profiler"] = torch.cuda.is_initialized()
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        prof.start()
        result["cuda_initialized_after_profiler_start"] = torch.cuda.is_initialized()
    import torch
    marks = Marks(torch)
    result["backend"] = torch.cuda.memory.get_allocator_backend()
    model, opt = build_model(torch)

    if case in ("default", "expandable", "async", "taken"):
        for epoch in range(3):
            result["loss"] = train(torch, model, opt, 20)
    elif case == "pinned":
        from torch.utils.data import DataLoader, TensorDataset
        g = torch.Generator().manual_seed(1)
        data = TensorDataset(torch.randn(32 * 256, 1024, generator=g), torch.randn(32 * 256, 1024, generator=g))
        # num_workers=0: batches are pinned on this thread, and the synchronize after each step
        # makes the pinned blocks' reuse deterministic (no copies in flight at the next pin)
        loader = DataLoader(data, batch_size=256, shuffle=False, num_workers=0, pin_memory=True)
        for epoch in range(2):
            for x, y in loader:
                x = x.to("cuda", non_blocking=True)
                y = y.to("cuda", non_blocking=True)
                loss = torch.nn.functional.mse_loss(model(x), y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                torch.cuda.synchronize()
        result["loss"] = loss.item()
    elif case == "matmul":
        torch.manual_seed(2)
        acc = torch.zeros((), device="cuda")
        for i in range(10):
            a = torch.randn(2048, 2048, device="cuda")
            b = torch.randn(2048, 2048, device="cuda")
            acc += (a @ b).sum()                                             # cuBLAS sgemm (TF32 off by default)
            h = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
            acc += (h @ h.t()).float().sum()                                 # cuBLASLt bf16
            bm = torch.randn(16, 512, 256, device="cuda", dtype=torch.float16)
            acc += torch.bmm(bm, bm.transpose(1, 2)).float().sum()           # batched half
            acc += torch.addmm(torch.randn(512, device="cuda"), a[:512], b[:, :512]).sum()
            w = torch.randn(1024, 2048, device="cuda", requires_grad=True)
            torch.nn.functional.linear(a[:256], w).square().mean().backward()  # matmuls on the autograd thread
            acc += w.grad.sum()
        result["loss"] = train(torch, model, opt, 10)
        result["acc"] = acc.item()
    elif case == "profiler":
        from torch.profiler import ProfilerActivity, profile
        result["loss"] = train(torch, model, opt, 20)
        marks("before-profiler")
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
            train(torch, model, opt, 5)
        result["profiler_cuda_events"] = cuda_event_count(p)
        marks("after-profiler")
        torch.cuda.empty_cache()  # the steps below must allocate new segments: are they still seen?
        result["loss"] = train(torch, model, opt, 20)
    elif case == "profiler-first":
        result["loss"] = train(torch, model, opt, 20)
        prof.stop()
        result["profiler_cuda_events"] = cuda_event_count(prof)
    else:
        raise SystemExit(f"unknown case {case}")
    marks("end")
    result["marks"] = marks.out
    with open(out_path, "w") as f:
        json.dump(result, f)
    print(f"torch_cases: {case}: {result['backend']} allocator, loss {result.get('loss')}")


# --- checking one case -------------------------------------------------------------------------

class Rows:
    def __init__(self):
        self.rows = []
        self.fails = []

    def add(self, what, torch_v, trace_v, ref_v, good, soft=False):
        verdict = "ok" if good else ("warn" if soft else "MISMATCH")
        self.rows.append((what, torch_v, trace_v, ref_v, verdict))
        if not good and not soft:
            self.fails.append(f"{what}: torch {torch_v}, trace {trace_v}, reference {ref_v}")

    def print(self):
        print(f"  {'check':<52}{'torch':>16}{'trace':>16}{'reference':>16}  verdict")
        for what, t, g, r, v in self.rows:
            print(f"  {what:<52}{ct.fmt(t):>16}{ct.fmt(g):>16}{ct.fmt(r):>16}  {v}")


def mark_of(stats, label):
    for m in stats.get("marks", []):
        if m["label"] == label:
            return m
    return None


def first_key(d, *keys):
    for k in keys:
        if d.get(k) is not None:
            return d[k]
    return None


def check_case(case, cdir, build):
    """Returns (ok, one-line summary)."""
    rows, problems, notes = Rows(), [], []
    print(f"== torch case {case}")
    try:
        stats = json.load(open(os.path.join(cdir, "stats.json")))
    except (OSError, ValueError) as e:
        print(f"  FAIL: the traced workload wrote no statistics ({e}); see {cdir}/run.log")
        return False, "workload failed (see run.log)"
    path, recs = ct.find_trace(os.path.join(cdir, "trace"), stats["pid"], problems)
    if recs is None:
        for p in problems:
            print(f"  FAIL: {p}")
        return False, "no trace"
    coverage = "runtime API only" if case == "taken" else "full"
    if case == "profiler-first" and recs and recs[0].get("coverage") == "runtime API only":
        coverage = "runtime API only"  # Kineto took CUPTI first: the fallback is right too
        notes.append("Kineto held CUPTI before the tracer: fallback to the runtime API")
    ct.check_structure(recs, coverage, problems, notes)
    header = recs[0]
    seq_of = {r["label"]: r["seq"] for r in recs if r.get("type") == "marker"}
    for m in stats["marks"]:
        if m["label"] not in seq_of:
            problems.append(f"marker {m['label']!r} missing from the trace (gmt_mark via ctypes)")
    end = mark_of(stats, "end")
    rp = ct.Replay(recs, until=seq_of.get("end"))
    problems += rp.problems
    k = rp.counts()
    st = end["stats"]

    ref = ref_k = None
    if CASES[case]["ref"]:
        try:
            ref = json.load(open(os.path.join(cdir, "ref.json")))
        except (OSError, ValueError) as e:
            problems.append(f"reference summary missing ({e}); see {cdir}/ref.log")
        if ref is not None:
            if ref.get("subscribe", {}).get("result") != 0:
                problems.append(f"reference counter could not subscribe: {ref.get('subscribe')}")
            ref_k = ct.ref_counts(ref, "end")
            if ref_k is None:
                problems.append("reference has no mark 'end' (cupti_count_mark via ctypes)")

    def kv(kind, metric, src):
        return src[kind][metric] if src else None

    # what torch says against the trace
    if case in ("default", "pinned", "matmul", "profiler", "profiler-first", "taken"):
        dev_allocs = k["device"]["allocs"]
        if coverage != "full":
            dev_allocs = rp.apis.get("cudaMalloc", {}).get("alloc", 0)
        rows.add("device allocs (cudaMalloc) >= torch segments", st["segment.all.allocated"], dev_allocs,
                 kv("device", "allocs", ref_k), dev_allocs >= (st["segment.all.allocated"] or 0))
        rows.add("device frees >= torch segments freed", st["segment.all.freed"], k["device"]["frees"],
                 kv("device", "frees", ref_k), k["device"]["frees"] >= (st["segment.all.freed"] or 0))
        rows.add("device bytes allocated >= torch reserved allocated", st["reserved_bytes.all.allocated"],
                 k["device"]["alloc_bytes"], kv("device", "alloc_bytes", ref_k),
                 k["device"]["alloc_bytes"] >= (st["reserved_bytes.all.allocated"] or 0))
        rows.add("device peak live bytes >= torch reserved peak", st["reserved_bytes.all.peak"],
                 k["device"]["peak_bytes"], kv("device", "peak_bytes", ref_k),
                 k["device"]["peak_bytes"] >= (st["reserved_bytes.all.peak"] or 0))
        rows.add("device live bytes >= torch reserved current", st["reserved_bytes.all.current"],
                 k["device"]["live_bytes"], kv("device", "live_bytes", ref_k),
                 k["device"]["live_bytes"] >= (st["reserved_bytes.all.current"] or 0))
        notes.append(f"device allocations beyond torch's segments (NVIDIA libraries, static cudart): "
                     f"{dev_allocs - (st['segment.all.allocated'] or 0)}")
    if case == "expandable":
        rows.add("vmm_mapped bytes mapped == torch reserved allocated", st["reserved_bytes.all.allocated"],
                 k["vmm_mapped"]["alloc_bytes"], kv("vmm_mapped", "alloc_bytes", ref_k),
                 k["vmm_mapped"]["alloc_bytes"] == st["reserved_bytes.all.allocated"])
        rows.add("vmm_mapped bytes unmapped == torch reserved freed", st["reserved_bytes.all.freed"],
                 k["vmm_mapped"]["free_bytes"], kv("vmm_mapped", "free_bytes", ref_k),
                 k["vmm_mapped"]["free_bytes"] == st["reserved_bytes.all.freed"])
        rows.add("vmm_mapped live bytes == torch reserved current", st["reserved_bytes.all.current"],
                 k["vmm_mapped"]["live_bytes"], kv("vmm_mapped", "live_bytes", ref_k),
                 k["vmm_mapped"]["live_bytes"] == st["reserved_bytes.all.current"])
        rows.add("vmm_mapped peak live bytes == torch reserved peak", st["reserved_bytes.all.peak"],
                 k["vmm_mapped"]["peak_bytes"], kv("vmm_mapped", "peak_bytes", ref_k),
                 k["vmm_mapped"]["peak_bytes"] == st["reserved_bytes.all.peak"])
        rows.add("vmm_physical handles created (> 0)", "> 0", k["vmm_physical"]["allocs"],
                 kv("vmm_physical", "allocs", ref_k), k["vmm_physical"]["allocs"] > 0)
        rows.add("vmm_reserve reservations (> 0)", "> 0", k["vmm_reserve"]["allocs"],
                 kv("vmm_reserve", "allocs", ref_k), k["vmm_reserve"]["allocs"] > 0)
        notes.append(f"failed cuMemCreate calls (PyTorch's fabric-handle probe returns 800): "
                     f"{k['vmm_physical']['failed']}")
    if case == "async":
        rows.add("pool peak live bytes >= torch allocated peak", st["allocated_bytes.all.peak"],
                 k["pool"]["peak_bytes"], kv("pool", "peak_bytes", ref_k),
                 k["pool"]["peak_bytes"] >= (st["allocated_bytes.all.peak"] or 0), soft=True)
        rows.add("pool allocations (per tensor, > 0)", "> 0", k["pool"]["allocs"], kv("pool", "allocs", ref_k),
                 k["pool"]["allocs"] > 0)
        pool_reserve = [v for (kind, _), v in rp.usage.items() if kind == "pool_reserve"]
        notes.append(f"torch reserved_bytes.all.current {st['reserved_bytes.all.current']}; the trace's last "
                     f"pool_reserve readings {pool_reserve}")
    if case == "pinned":
        host = end.get("host", {})
        n_host = first_key(host, "num_host_alloc", "allocations.allocated", "segment.allocated")
        b_host = first_key(host, "allocated_bytes.allocated", "reserved_bytes.allocated")
        if n_host is None:
            problems.append(f"torch.cuda.host_memory_stats() gave no allocation count: {host}")
        rows.add("pinned allocs >= torch host allocator blocks", n_host, k["pinned"]["allocs"],
                 kv("pinned", "allocs", ref_k), n_host is not None and k["pinned"]["allocs"] >= n_host)
        rows.add("pinned bytes >= torch host allocator bytes", b_host, k["pinned"]["alloc_bytes"],
                 kv("pinned", "alloc_bytes", ref_k), b_host is None or k["pinned"]["alloc_bytes"] >= b_host,
                 soft=b_host is None)
        rows.add("pinned allocs > 0", "> 0", k["pinned"]["allocs"], kv("pinned", "allocs", ref_k),
                 k["pinned"]["allocs"] > 0)
    if case == "profiler":
        before, after = mark_of(stats, "before-profiler"), mark_of(stats, "after-profiler")
        if "after-profiler" in seq_of and before and after:
            rp_after = ct.Replay(recs, until=seq_of["after-profiler"])
            new_torch = st["segment.all.allocated"] - after["stats"]["segment.all.allocated"]
            new_trace = k["device"]["allocs"] - rp_after.counts()["device"]["allocs"]
            rows.add("after the profiler: new segments seen", new_torch, new_trace, None,
                     new_torch > 0 and new_trace >= new_torch)
        log = open(os.path.join(cdir, "run.log"), errors="replace").read()
        warned = "MULTIPLE_SUBSCRIBERS" in log or "CUPTI_ERROR_MULTIPLE" in log
        rows.add("torch profiler warned about CUPTI (error 39)", "warning", "yes" if warned else "no", None, warned)
        notes.append(f"profiler CUDA events while the tracer held CUPTI: {stats.get('profiler_cuda_events')}")
    if coverage != "full":
        reason = header.get("coverage_reason") or ""
        named = "subscriber" in reason or "39" in reason
        rows.add("coverage_reason names the other CUPTI subscriber", "subscriber", reason[:40] or None, None, named)
        rows.add("capture is interposition only", "['interpose']", str(header.get("capture")), None,
                 header.get("capture") == ["interpose"])
        notes.append(f"CUDA initialised before/after prof.start(): {stats.get('cuda_initialized_before_profiler')}/"
                     f"{stats.get('cuda_initialized_after_profiler_start')}; profiler CUDA events "
                     f"{stats.get('profiler_cuda_events')} (> 0: Kineto had CUPTI)")

    # the trace against the reference run, kind by kind, at the marker "end"
    if ref_k is not None:
        for kind in ct.KINDS:
            for m in ("allocs", "alloc_bytes", "frees", "free_bytes", "failed", "peak_bytes"):
                g, r = k[kind][m], ref_k[kind][m]
                if g or r:
                    rows.add(f"{kind} {m} == reference", None, g, r, g == r, soft=m in ("failed", "peak_bytes"))
    rows.print()
    for n in notes:
        print(f"  note: {n}")
    problems += rows.fails
    for p in problems:
        print(f"  FAIL: {p}")
    ok = not problems
    kinds = ", ".join(f"{kind} {k[kind]['allocs']}" for kind in ct.KINDS if k[kind]["allocs"])
    ref_bad = sum(1 for what, _, _, _, v in rows.rows if what.endswith("== reference") and v == "MISMATCH")
    summary = f"allocs: {kinds or 'none'}"
    if ref_k is not None:
        summary += "; reference " + ("equal" if not ref_bad else f"DIFFERS in {ref_bad} figures")
    if problems:
        summary += f"; {len(problems)} failed checks"
    print(f"torch_cases: {case}: {'PASS' if ok else 'FAIL'}")
    return ok, summary


# --- running everything ------------------------------------------------------------------------

def run_proc(cmd, env, log, timeout):
    t0 = time.monotonic()
    with open(log, "w") as f:
        try:
            p = subprocess.run(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=timeout)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    return rc, time.monotonic() - t0


def run_case(case, args, gmt, lib):
    cdir = os.path.join(args.out, case)
    os.makedirs(os.path.join(cdir, "trace"), exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUMEMTRACE_")}
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    env.pop("CUDA_INJECTION64_PATH", None)
    if CASES[case]["conf"]:
        env["PYTORCH_CUDA_ALLOC_CONF"] = CASES[case]["conf"]
    env.update(CASES[case].get("env", {}))
    if case == "taken":
        env.update(GMT_CUPTI_COUNT_LIB=lib, GMT_CUPTI_COUNT_OUT=os.path.join(cdir, "holder.json"))
    me = os.path.abspath(__file__)
    out = {}
    rc, secs = run_proc([gmt, "run", "-o", os.path.join(cdir, "trace"), "--", sys.executable, me, "workload",
                         case, os.path.join(cdir, "stats.json")], env, os.path.join(cdir, "run.log"), TIMEOUT_S)
    out["traced"] = (rc, secs)
    if CASES[case]["ref"]:
        # the reference counts with callbacks; its activity records (information only) are off
        renv = dict(env, GMT_CUPTI_COUNT_ACTIVITY="0", CUDA_INJECTION64_PATH=lib, GMT_CUPTI_COUNT_LIB=lib,
                    GMT_CUPTI_COUNT_OUT=os.path.join(cdir, "ref.json"))
        rc, secs = run_proc([sys.executable, me, "workload", case, os.path.join(cdir, "ref-stats.json")], renv,
                            os.path.join(cdir, "ref.log"), TIMEOUT_S)
        out["ref"] = (rc, secs)
    return case, out


def run_all(args):
    try:
        subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError):
        print("torch_cases: no GPU (nvidia-smi -L failed): skipped")
        return 77
    build = os.path.abspath(args.build)
    gmt = os.path.join(build, "tools", "gpumemtrace")
    lib = os.path.abspath(args.ref_lib)
    for f in (gmt, lib):
        if not os.path.exists(f):
            print(f"torch_cases: {f} not found")
            return 2
    cases = args.cases.split(",") if args.cases else list(CASES)
    os.makedirs(args.out, exist_ok=True)
    t0 = time.monotonic()
    runs = {}
    together = [c for c in cases if not CASES[c].get("alone")]
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for case, out in pool.map(lambda c: run_case(c, args, gmt, lib), together):
            runs[case] = out
    for c in cases:  # the GPU to itself: no other case's allocations compete with its pool
        if CASES[c].get("alone"):
            runs[c] = run_case(c, args, gmt, lib)[1]
    print(f"torch_cases: ran {len(cases)} cases in {time.monotonic() - t0:.0f} s ({args.jobs} at a time)")
    summary = []
    for case in cases:
        out = runs[case]
        print()
        bad = [f"{what} run exited {rc}" for what, (rc, _) in out.items() if rc != 0]
        cdir = os.path.join(args.out, case)
        if bad:
            for what in out:
                log = os.path.join(cdir, "run.log" if what == "traced" else "ref.log")
                print(f"== {case}: {what} run log tail ({log}):")
                print("".join(open(log, errors="replace").readlines()[-15:]))
        ok, line = check_case(case, cdir, build)
        if bad:
            ok, line = False, "; ".join(bad) + "; " + line
        secs = "/".join(f"{s:.0f}s" for _, s in out.values())
        summary.append((case, ok, line, secs))
    print()
    print("torch cases summary")
    for case, ok, line, secs in summary:
        print(f"  {case:<16}{'PASS' if ok else 'FAIL':<6}{secs:<10}{line}")
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump([{"case": c, "ok": ok, "summary": line} for c, ok, line, _ in summary], f)
    return 0 if all(ok for _, ok, _, _ in summary) else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("all")
    a.add_argument("--build", required=True)
    a.add_argument("--out", required=True)
    a.add_argument("--ref-lib", required=True)
    a.add_argument("--jobs", type=int, default=4)
    a.add_argument("--cases")
    w = sub.add_parser("workload")
    w.add_argument("case", choices=list(CASES))
    w.add_argument("out")
    c = sub.add_parser("check")
    c.add_argument("case", choices=list(CASES))
    c.add_argument("casedir")
    c.add_argument("--build", required=True)
    args = ap.parse_args()
    if args.cmd == "workload":
        workload(args.case, args.out)
        return 0
    if args.cmd == "check":
        return 0 if check_case(args.case, args.casedir, args.build)[0] else 1
    return run_all(args)


if __name__ == "__main__":
    sys.exit(main())
