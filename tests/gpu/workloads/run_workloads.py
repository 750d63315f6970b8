#!/usr/bin/env python3
"""Real workloads under the tracer with default options (scripts/gpu-check, group "workloads").

    run_workloads.py --build BUILD --out DIR [--only gpt2,jax] [--jobs 3]

Each workload (a script in this directory, built on a real framework: transformers, timm,
torch.compile, DataLoader workers, NCCL, JAX, CuPy, Numba, Lightning's Trainer, torch-geometric,
torch.multiprocessing.spawn children on the GPU, PEFT's LoRA with activation checkpointing,
torchvision's Faster R-CNN with autocast and cuDNN autotuning, a CUDA graph captured by hand and a
caught out-of-memory error) runs twice: untraced, then under
`gpumemtrace run` with no GPUMEMTRACE_* option. Required, per workload:
  - the traced run exits exactly as the untraced one does (and that is 0);
  - `gpumemtrace report` reads the traces (exit 0), the main process's trace is complete (a
    trailer) with no dropped event;
  - a workload that leaves nothing of its own live (all but numba, whose kept arrays are its
    own: Numba has no cache) is not said to leak: `leaked_bytes` 0, what frameworks and CUDA
    libraries keep counted as cached or library memory; nor said to grow (no `growth_sites[]`
    and no tensor-level `growth[]`: none of them keeps anything from step to step);
  - what EXPECT says the report must find with no marker (graph-oom: the out-of-memory error
    the program caught is a failed allocation).
The summary also gives each workload's leaked, cached and library bytes at exit.
The summary (one line per workload) goes to stdout and DIR/summary.json; exit 1 if any failed.
JAX preallocates 75% of the device, so it runs alone, after the others.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# name: (script, extra environment, runs alone, leaves nothing of its own live at exit)
WORKLOADS = {
    "gpt2": ("gpt2.py", {}, False, True),
    "gpt2-expandable": ("gpt2.py", {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}, False,
                        True),
    "timm": ("timm_resnet.py", {}, False, True),
    "compile": ("compile_graphs.py", {}, False, True),
    "dataloader": ("dataloader.py", {}, False, True),
    "nccl": ("nccl_single.py", {}, False, True),
    "cupy": ("cupy_pool.py", {}, False, True),
    "numba": ("numba_kernels.py", {}, False, False),
    "lightning": ("lightning_fit.py", {}, False, True),
    "pyg": ("pyg_gcn.py", {}, False, True),
    "spawn": ("spawn_workers.py", {}, False, True),
    "peft": ("peft_lora.py", {}, False, True),
    "detection": ("detection.py", {}, False, True),
    "graph-oom": ("graph_oom.py", {}, False, True),
    "jax": ("jax_matmul.py", {}, True, True),
}
# what the report must also say of a workload (no marker in it): summary key, at least this
EXPECT = {"graph-oom": ("failed_allocations", 1)}  # the caught torch.OutOfMemoryError
TIMEOUT = 300


def run(argv, env, log):
    t0 = time.time()
    with open(log, "w") as f:
        try:
            rc = subprocess.run(argv, env=env, cwd=HERE, stdout=f, stderr=subprocess.STDOUT,
                                timeout=TIMEOUT).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    return rc, time.time() - t0


def last_json(log):
    for line in reversed(open(log, errors="replace").read().splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                pass
    return None


def one(name, gmt, out):
    script, extra, _, clean = WORKLOADS[name]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GPUMEMTRACE_") and k not in ("PYTORCH_CUDA_ALLOC_CONF", "LD_PRELOAD",
                                                           "CUDA_INJECTION64_PATH")}
    env.update(extra)
    env["PYTHONUNBUFFERED"] = "1"
    wdir = os.path.join(out, name)
    os.makedirs(wdir, exist_ok=True)
    tdir = os.path.join(wdir, "trace")
    res = {"workload": name, "ok": False, "notes": []}
    rc_plain, t_plain = run([sys.executable, script], env, os.path.join(wdir, "plain.log"))
    rc_traced, t_traced = run([gmt, "run", "-o", tdir, "--", sys.executable, script], env,
                              os.path.join(wdir, "traced.log"))
    res.update(rc_plain=rc_plain, rc_traced=rc_traced, seconds_plain=round(t_plain, 1),
               seconds_traced=round(t_traced, 1), figures_plain=last_json(os.path.join(wdir, "plain.log")),
               figures_traced=last_json(os.path.join(wdir, "traced.log")))
    if rc_plain != 0:
        res["notes"].append(f"untraced run exits {rc_plain}: the workload itself fails here")
    if rc_traced != rc_plain:
        res["notes"].append(f"traced run exits {rc_traced}, untraced {rc_plain}")
    p = subprocess.run([gmt, "report", "--format", "json", tdir], capture_output=True, text=True,
                       timeout=TIMEOUT)
    if p.returncode != 0:
        res["notes"].append(f"report exits {p.returncode}: {p.stderr.strip()[:200]}")
    else:
        rep = json.loads(p.stdout)
        procs = rep["processes"]
        res["processes"] = len(procs)
        res["events"] = rep["summary"]["events"]
        res["dropped"] = rep["summary"]["dropped"]
        res["peak_held_bytes"] = rep["summary"]["peak_held_bytes"]
        for k in ("leaked_bytes", "cached_at_exit_bytes", "library_at_exit_bytes"):
            res[k] = rep["summary"].get(k)
        if clean and res["leaked_bytes"] != 0:  # (None: the report cannot say, which fails too)
            res["notes"].append(f"{res['leaked_bytes']} bytes said to leak ({rep['summary'].get('leak_sites')} "
                                "sites): the program leaves nothing of its own live")
        # nothing these programs keep grows from step to step: a site said to grow is a false
        # alarm (a cache warming, a buffer made late, a batch of another shape)
        res["growing_sites"] = len(rep.get("growth_sites") or []) + sum(
            len((q.get("tensors") or {}).get("growth") or []) for q in procs)
        if clean and res["growing_sites"]:
            res["notes"].append(f"{res['growing_sites']} sites said to grow: the program keeps "
                                "nothing from step to step")
        if name in EXPECT:
            key, least = EXPECT[name]
            got = rep["summary"].get(key)
            res[key] = got
            if not isinstance(got, int) or got < least:
                res["notes"].append(f"summary {key} {got}, expected at least {least}")
        main = [q for q in procs if not q.get("forked_from")] or procs
        for q in main[:1]:
            if not q["complete"]:
                res["notes"].append(f"{os.path.basename(q['file'])}: no trailer")
            if q["dropped"]:
                res["notes"].append(f"{os.path.basename(q['file'])}: {q['dropped']} events dropped")
            res["coverage"] = q.get("coverage")
        other = [q for q in procs if q not in main[:1] and not q["complete"]]
        if other:
            res["incomplete_other_processes"] = len(other)
        t = subprocess.run([gmt, "report", tdir], capture_output=True, text=True, timeout=TIMEOUT)
        with open(os.path.join(wdir, "report.txt"), "w") as f:
            f.write(t.stdout + t.stderr)
    res["ok"] = rc_plain == 0 and rc_traced == 0 and not res["notes"]
    return res


def line(r):
    """One workload's result in a line."""
    state = "PASS" if r["ok"] else "FAIL"
    return (f"{state} {r['workload']:16} exit {r['rc_plain']}/{r['rc_traced']} (untraced/traced), "
            f"{r['seconds_plain']}/{r['seconds_traced']} s, {r.get('processes', '?')} traces, "
            f"{r.get('events', '?')} events, {r.get('dropped', '?')} dropped, at exit "
            f"{r.get('leaked_bytes', '?')} leaked / {r.get('cached_at_exit_bytes', '?')} cached / "
            f"{r.get('library_at_exit_bytes', '?')} libraries, {r.get('growing_sites', '?')} growing"
            + ("; " + "; ".join(r["notes"]) if r["notes"] else ""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", help="comma-separated workloads (default: all)")
    ap.add_argument("--jobs", type=int, default=3)
    args = ap.parse_args()
    gmt = os.path.join(os.path.abspath(args.build), "tools", "gpumemtrace")
    out = os.path.abspath(args.out)
    names = args.only.split(",") if args.only else list(WORKLOADS)
    for n in names:
        if n not in WORKLOADS:
            sys.exit(f"run_workloads.py: unknown workload {n!r} (known: {', '.join(WORKLOADS)})")
    together = [n for n in names if not WORKLOADS[n][2]]
    alone = [n for n in names if WORKLOADS[n][2]]
    results = []

    def done(n):
        # each result as it comes: a run cut short (a device's time limit) keeps what finished
        r = one(n, gmt, out)
        print("done " + line(r), flush=True)
        return r
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        results += list(ex.map(done, together))
    results += [done(n) for n in alone]
    print("workloads summary")
    for r in results:
        print("  " + line(r))
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(results, f, indent=1)
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
