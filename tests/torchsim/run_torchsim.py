#!/usr/bin/env python3
"""Torch suite: gpumemtrace's PyTorch layer on CPU, through the torch double (tests/torchsim).

    run_torchsim.py --build BUILD --source SRC SCENARIO

It assembles a `torch` package as a wheel lays it out (python/torch, include/ with the double's
headers, lib/ with the double's libc10_cuda.so and libc10.so), runs victim.py under the tracer
(LD_PRELOAD, default options, so the start-up hook and the bridge build are the real ones, with
the machine's C++ compiler), and checks the trace. Scenarios:

  blocks           every block event with our stack, segments, a free completed on another
                   thread, user metadata, the OOM entry, a "torch" line saying "blocks"
  late-attach      torch used before the layer is installed: the backfill lists what existed
  async-backend    PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync: attach refused, one warning,
                   "segments only" with the reason, the program unharmed; each tensor one
                   cudaMallocAsync and one cudaFreeAsync in the trace, as torch's backend makes
  unknown-version  torch 2.99: refused, never guessed; any-version: GPUMEMTRACE_TORCH=any tries it
  no-compiler      no C++ compiler: the reason in the torch line, CUDA-level events go on
  bad-headers      headers that do not compile: the build's error named, the program unharmed
  untraced         without the tracer: no bridge built, nothing written
  off              GPUMEMTRACE_TORCH=off: no hook, no torch line
  planted          (as root) a bridge planted in the cache by another user, or in a directory
                   others can write, is never loaded: the layer builds its own privately, one
                   warning names what was unsafe, the private copy is gone after the run; a
                   control run that trusts the cache does load the planted library
  auto-steps       a loop with no markers (victim_steps.py) that keeps 64 KiB a step: the
                   optimizer's steps become automatic step marks (one per step of the first
                   optimizer), the tensor level's growth is sampled at them and finds the leak
                   at its line; GPUMEMTRACE_AUTO_STEPS=0 writes none
  cycles           tensors kept alive by reference cycles (victim_cycles.py) are freed inside
                   the cycle collector: their block frees say "gc", the report names their
                   site (freed_by_gc: 5 tensors, 640 KiB), plain frees do not count
  kept-graph       the kept-graph leak (victim_graph.py: losses.append(loss), no markers): at
                   the end the layer walks the live tensors and their autograd graphs; the
                   report says the activations are kept alive by the graphs of 6 tensors in
                   losses (a list in __main__), and the detached ones by acts (a dict ...)
  forward-steps    no optimizer (victim_infer.py infer): a step mark where each forward() of the
                   outermost module starts (from the second on), the growth found at them; with
                   an optimizer (train) only its steps
  version-X.Y      the blocks scenario on the double playing torch X.Y (2.6, 2.8, 2.14; the others
                   play 2.11): its headers, its TraceEntry, its libc10_cuda; the real bridge built
                   by the real build code against them, every check of blocks (the tensor level
                   included), user metadata only where that version's TraceEntry has it
  benches          the GPU session's torch benchmarks still run (on the double): the in-process
                   A/B of the layer (bench/run_torch_block_ab.py) and the unwind probe
                   (bench/run_unwind_probe.py); their figures are not judged here
Each run must exit 0 and write the victim's account, as it does untraced.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


# the torch the double plays unless a scenario says otherwise (tests/torchsim/meson.build's
# torchsim_default: its library is libc10_cuda.so, the others' libc10_cuda-VERSION.so)
DEFAULT_VERSION = "2.11"
# what each version's allocator interface (docs/torch-versions.md) lets a user see: whether a
# block event carries the allocator's user metadata (TraceEntry::user_metadata_)
VERSIONS = {"2.6": {"metadata": False}, "2.8": {"metadata": False},
            "2.11": {"metadata": True}, "2.14": {"metadata": True}}


def make_torch(build, source, root, headers=None, version=DEFAULT_VERSION):
    """A torch package as a wheel lays it out, playing torch @p version: its headers say that
    version (include/torchsim/version.h, read by the double's headers) and its libc10_cuda.so is
    the double built for it."""
    pkg = os.path.join(root, "torch")
    shutil.copytree(os.path.join(source, "tests", "torchsim", "python", "torch"), pkg)
    shutil.copytree(headers or os.path.join(source, "tests", "torchsim", "include"),
                    os.path.join(pkg, "include"))
    major, minor = version.split(".")
    os.makedirs(os.path.join(pkg, "include", "torchsim"), exist_ok=True)
    with open(os.path.join(pkg, "include", "torchsim", "version.h"), "w") as f:
        f.write(f"#pragma once\n#define TORCH_VERSION_MAJOR {major}\n"
                f"#define TORCH_VERSION_MINOR {minor}\n#define TORCH_VERSION_PATCH 0\n")
    os.makedirs(os.path.join(pkg, "lib"))
    lib = "libc10_cuda.so" if version == DEFAULT_VERSION else f"libc10_cuda-{version}.so"
    shutil.copy(os.path.join(build, "tests", "torchsim", lib),
                os.path.join(pkg, "lib", "libc10_cuda.so"))
    shutil.copy(os.path.join(build, "tests", "torchsim", "libc10.so"),
                os.path.join(pkg, "lib", "libc10.so"))
    return root


def read_trace(build, outdir):
    """The records of the one trace in outdir: compressed, as the tracer writes it by default
    (read through the reader's module, tests/preload/gmt-zcat), or plain."""
    files = glob.glob(os.path.join(outdir, "*.jsonl")) + glob.glob(os.path.join(outdir, "*.jsonl.zst"))
    if not check(len(files) == 1, f"one trace file (got {len(files)})"):
        return []
    text = open(files[0]).read() if files[0].endswith(".jsonl") else subprocess.run(
        [os.path.join(build, "tests", "preload", "gmt-zcat"), files[0]], capture_output=True,
        text=True, timeout=120, check=True).stdout
    recs = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                recs.append(json.loads(line))
            except ValueError as e:
                check(False, f"{files[0]}:{n}: not JSON ({e}): {line[:200]!r}")
    return recs


def benches(build, source, env, work):
    env = dict(env, SIMCUDA_MEM_BYTES="1G")
    p = subprocess.run([sys.executable, os.path.join(source, "bench", "run_torch_block_ab.py"),
                        "--build", build, "--rounds", "2", "--pairs", "2000"],
                       env=env, capture_output=True, text=True, timeout=240)
    last = p.stdout.strip().splitlines()[-1:] or [""]
    doc = json.loads(last[0]) if last[0].startswith("{") else {}
    check(p.returncode == 0 and doc.get("added", {}).get("layer", {}).get("pair_ns") is not None
          and len(doc.get("rounds", [])) == 2,
          f"run_torch_block_ab.py runs and measures the layer (exit {p.returncode}): "
          f"{p.stdout[-600:]} {p.stderr[-600:]}")
    if os.path.exists(os.path.join(build, "bench", "libgmt_unwind_probe.so")):
        check(doc.get("added", {}).get("unwind", {}).get("pair_ns") is not None
              and doc.get("layer_over_unwind_ns") is not None,
              f"run_torch_block_ab.py measures the native stacks' floor (unwind): {p.stdout[-600:]}")
    # the tensor row in one process (backend:cudaMallocAsync): each configuration's states, the
    # CUPTI callbacks off only where the tracer holds CUPTI; the tracer's parts per tensor from
    # its self-profile (every configuration recorded something: the double's segments)
    p = subprocess.run([sys.executable, os.path.join(source, "bench", "run_torch_async_inprocess.py"),
                        "--build", build, "--sim", "--rounds", "1", "--iters", "300", "--reps", "3",
                        "--self-profile", "--held"],
                       env=env, capture_output=True, text=True, timeout=240)
    last = p.stdout.strip().splitlines()[-1:] or [""]
    doc = json.loads(last[0]) if last[0].startswith("{") else {}
    cfg = doc.get("configs", {})
    check(p.returncode == 0 and set(cfg) == {"all", "none", "interpose-all", "interpose-none"}
          and all(set(cfg[c]) == {"off", "paused", "recording", "held"} for c in ("all", "none"))
          and all(set(cfg[c]) == {"paused", "recording", "held"}
                  for c in ("interpose-all", "interpose-none"))
          and all(s["ns_per_tensor"] > 0 and s["thread"]["cpu_ns"] > 0
                  for c in cfg.values() for s in c.values())
          and set(doc.get("self_profile") or {}) == set(cfg)
          and all(parts.get("emit", {}).get("probes_per_tensor", 0) > 0
                  for parts in doc["self_profile"].values()),
          f"run_torch_async_inprocess.py times off, paused and recording in one process (exit "
          f"{p.returncode}): {p.stdout[-800:]} {p.stderr[-600:]}")
    probe = os.path.join(build, "bench", "libgmt_unwind_probe.so")
    if os.path.exists(probe):
        p = subprocess.run([sys.executable, os.path.join(source, "bench", "run_unwind_probe.py"),
                            "--build", build, "--source", source],
                           env=env, capture_output=True, text=True, timeout=240)
        first = (p.stdout.splitlines() or [""])[0]
        doc = json.loads(first) if first.startswith("{") else {}
        check(p.returncode == 0 and doc.get("allocations", 0) > 0 and doc.get("frames", 0) > 5
              and doc.get("unw_backtrace_ns", 0) > 0,
              f"run_unwind_probe.py probes the allocator's stacks (exit {p.returncode}): "
              f"{p.stdout[-600:]} {p.stderr[-600:]}")
    return finish(work)


PLANTED_C = r"""
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
__attribute__((constructor)) static void planted(void)
{
	const char *mark = getenv("GMT_PLANTED_MARK");
	int fd = mark ? open(mark, O_CREAT | O_WRONLY, 0644) : -1;
	if (fd >= 0)
		close(fd);
}
"""


def planted(build, source, env, site, work):
    """The bridge is code run in the traced process: one planted by another user must not run."""
    if os.geteuid() != 0:
        print("SKIP: the planted-bridge scenario needs root (it makes files of another user)")
        return 77
    import pwd
    nobody = pwd.getpwnam("nobody").pw_uid
    src = os.path.join(work, "planted.c")
    with open(src, "w") as f:
        f.write(PLANTED_C)
    lib = os.path.join(work, "planted.so")
    subprocess.run(["cc", "-shared", "-fPIC", src, "-o", lib], check=True, timeout=120)
    # the name the layer gives this torch's bridge (the real plan() over the double)
    probe = subprocess.run(
        [sys.executable, "-c", "import os, torch; from gpumemtrace import _torch; "
                               "print(os.path.basename(_torch.plan(torch)[0]))"],
        env=dict(env, PYTHONPATH=site + ":" + os.path.join(source, "python"),
                 GPUMEMTRACE_CACHE_DIR=os.path.join(work, "probe")),
        capture_output=True, text=True, timeout=120)
    if not check(probe.returncode == 0 and probe.stdout.strip().endswith(".so"),
                 f"the bridge's name from plan() ({probe.stdout} {probe.stderr[-400:]})"):
        return finish(work)
    name = probe.stdout.strip()
    private = []  # the private build directories the warnings named

    def case(label, dir_mode, dir_uid, file_uid, trusted, unsafe_path):
        cache = os.path.join(work, "cache-" + label)
        os.mkdir(cache)
        os.chmod(cache, dir_mode)
        os.chown(cache, dir_uid, -1)
        shutil.copy(lib, os.path.join(cache, name))
        os.chmod(os.path.join(cache, name), 0o755)
        os.chown(os.path.join(cache, name), file_uid, -1)
        mark = os.path.join(work, "mark-" + label)
        out = os.path.join(work, "trace-" + label)
        os.mkdir(out)
        e = dict(env, GPUMEMTRACE_CACHE_DIR=cache, GPUMEMTRACE_OUTPUT_DIR=out, GMT_PLANTED_MARK=mark,
                 LD_PRELOAD=os.path.join(build, "src", "libgpumemtrace.so"))
        p = subprocess.run([sys.executable, os.path.join(source, "tests", "torchsim", "victim.py"),
                            "normal", os.path.join(work, "did-" + label + ".json")],
                           env=e, capture_output=True, text=True, timeout=240)
        sys.stdout.write(p.stderr)
        check(p.returncode == 0, f"{label}: the victim exits 0 (got {p.returncode})")
        warnings = [l for l in p.stderr.splitlines() if "PyTorch layer" in l]
        layer = [r for r in read_trace(build, out) if r.get("type") == "torch"]
        if trusted:
            check(os.path.exists(mark), f"{label}: control: a cache this user owns is trusted, "
                                        f"the library in it loaded")
            return
        check(not os.path.exists(mark), f"{label}: the planted library was never loaded")
        check(len(warnings) == 1 and unsafe_path in warnings[0] and "this run only" in warnings[0],
              f"{label}: one warning naming {unsafe_path} (got {warnings})")
        private.extend(w.rsplit(" in ", 1)[-1].strip() for w in warnings if "this run only" in w)
        check(len(layer) == 1 and layer[0].get("layer") == "blocks",
              f"{label}: the layer works from a private build ({layer})")
        check(os.stat(os.path.join(cache, name)).st_uid == file_uid,
              f"{label}: the cached file is left as it was")

    # another user's file in a shared sticky cache (the Docker image's 1777 directory)
    case("sticky", 0o1777, 0, nobody, False, os.path.join(work, "cache-sticky", name))
    # a cache directory another user owns
    case("theirs", 0o755, nobody, nobody, False, os.path.join(work, "cache-theirs"))
    # root's file, but in a directory anyone could have replaced it in
    case("open", 0o777, 0, 0, False, os.path.join(work, "cache-open"))
    # control: this user's directory and file: loaded (the test can see a load)
    case("control", 0o700, 0, 0, True, None)
    # (only the ones these runs named: other tests may be building at the same time)
    left = [d for d in private if os.path.exists(d)]
    check(len(private) == 3 and not left, f"no private build left behind ({private}, {left})")
    return finish(work)


def traced_run(build, source, env, work, label, script, *args, **extra):
    """tests/torchsim/SCRIPT ARGS under the tracer, its trace in WORK/trace-LABEL: (the process,
    that directory)."""
    out = os.path.join(work, "trace-" + label)
    os.mkdir(out)
    e = dict(env, GPUMEMTRACE_OUTPUT_DIR=out,
             LD_PRELOAD=os.path.join(build, "src", "libgpumemtrace.so"), **extra)
    p = subprocess.run([sys.executable, os.path.join(source, "tests", "torchsim", script)] +
                       list(args), env=e, capture_output=True, text=True, timeout=240)
    sys.stdout.write(p.stderr)
    check(p.returncode == 0, f"{label}: the victim exits 0 (got {p.returncode})")
    return p, out


def tensor_report(build, out):
    """The report of the traces in @p out: (its tensor level, {} without; its text)."""
    gmt = os.path.join(build, "tools", "gpumemtrace")
    rp = subprocess.run([gmt, "report", "--format", "json", out], capture_output=True, text=True,
                        timeout=120)
    check(rp.returncode == 0, f"report exits 0 ({rp.stderr[-300:]})")
    t = [pr["tensors"] for pr in json.loads(rp.stdout)["processes"] if "tensors" in pr] \
        if rp.returncode == 0 else []
    txt = subprocess.run([gmt, "report", out], capture_output=True, text=True, timeout=120)
    return (t[0] if t else {}), txt.stdout


def auto_steps(build, source, env, work):
    steps = 8
    for on in (True, False):
        _, out = traced_run(build, source, env, work, "on" if on else "off", "victim_steps.py",
                            str(steps), **({} if on else {"GPUMEMTRACE_AUTO_STEPS": "0"}))
        marks = [r for r in read_trace(build, out) if r.get("type") == "marker"]
        if not on:
            check(not marks, f"GPUMEMTRACE_AUTO_STEPS=0: no step marks ({marks[:2]})")
            continue
        check(len(marks) == steps and all(m.get("auto") == "step" for m in marks) and
              [m["label"] for m in marks] == ["optimizer step %d" % (i + 1) for i in range(steps)],
              f"one automatic step mark per step of the first optimizer ({marks[:3]}...)")
        t, txt = tensor_report(build, out)
        g = t.get("growth", [])
        check(t.get("growth_basis") == "auto_steps" and len(g) == 1 and
              g[0]["site"].endswith(" in train_step") and g[0]["per_step"] == 64 << 10,
              f"the tensor level samples at the steps and finds the 64 KiB a step at its line "
              f"({t.get('growth_basis')}, {g})")
        check("automatic steps (optimizer)" in txt,
              "the text report says the growth was sampled at automatic steps")
    return finish(work)


def cycles(build, source, env, work):
    _, out = traced_run(build, source, env, work, "cycles", "victim_cycles.py")
    recs = read_trace(build, out)
    gc_frees = [r for r in recs if r.get("type") == "block" and r.get("gc")]
    check(len(gc_frees) == 5 and all(r["action"] == "free_requested" and r["size"] == 128 << 10
                                     for r in gc_frees),
          f"five frees inside the collector, flagged gc ({len(gc_frees)})")
    t, txt = tensor_report(build, out)
    rows = t.get("freed_by_gc", [])
    check(len(rows) == 1 and rows[0]["tensors"] == 5 and rows[0]["bytes"] == 5 * (128 << 10)
          and rows[0]["site"].endswith(" in Node.__init__") and
          rows[0]["callers"][:1] and rows[0]["callers"][0].endswith(" in make_cycles"),
          f"one site of tensors kept by cycles: Node.__init__ from make_cycles ({rows})")
    check("kept alive by reference cycles" in txt, "the text report names them")
    return finish(work)


def kept_graph(build, source, env, work):
    p, out = traced_run(build, source, env, work, "graph", "victim_graph.py")
    check("was not found" not in p.stderr, "kept-graph: the walk ran")
    check("LOOKED-AT" not in p.stderr,
          f"kept-graph: the walk made no object warn into the program's stderr ({p.stderr[-300:]})")
    recs = read_trace(build, out)
    hl = [r for r in recs if r.get("type") == "holders"]
    check(len(hl) == 1, f"one holders line ({len(hl)})")
    t, txt = tensor_report(build, out)
    if t:
        rows = t.get("held_at_end", [])
        held = {r["holder"]: r for r in rows}
        g = held.get("losses (a list in __main__)")
        check(g is not None and g["kind"] == "graph" and g["roots"] == 6 and
              g["bytes"] == 12 * (256 << 10) + 6 * 512 and g["tensors"] == 18 and
              g["made_at"]["site"].endswith(" in forward"),
              f"the activations (and the losses): kept by the graphs of the 6 tensors in "
              f"`losses`, made in forward ({rows})")
        k = held.get("acts (a dict in __main__)")
        check(k is not None and k["kind"] == "kept" and k["bytes"] == 6 * (64 << 10) and
              k["tensors"] == 6, f"the detached tensors: kept by `acts` ({rows})")
        growth = t.get("growth", [])
        check(any((r.get("held_by") or {}).get("holder") == "losses (a list in __main__)"
                  for r in growth), f"the growing site says what holds it ({growth})")
    check("kept alive by the autograd graphs of 6 tensors in losses (a list in __main__)"
          in txt, "the text report explains the kept graph")
    return finish(work)


def forward_steps(build, source, env, work):
    for mode in ("infer", "train"):
        _, out = traced_run(build, source, env, work, mode, "victim_infer.py", mode)
        labels = [r["label"] for r in read_trace(build, out)
                  if r.get("type") == "marker" and r.get("auto") == "step"]
        # infer: a step ends where the next forward starts (the last one is not marked)
        want = (["forward %d" % i for i in range(1, 6)] if mode == "infer" else
                ["optimizer step %d" % i for i in range(1, 7)])
        check(labels == want, f"{mode}: the automatic steps {labels} == {want}")
        t, _ = tensor_report(build, out)
        g = t.get("growth", [])
        check(t.get("growth_basis") == "auto_steps" and len(g) == 1 and
              g[0]["site"].endswith(" in Model.forward") and g[0]["per_step"] == 64 << 10,
              f"{mode}: the kept outputs grow 64 KiB a step at Model.forward ({g})")
    return finish(work)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("scenario")
    a = ap.parse_args()
    build, source, sc = os.path.abspath(a.build), os.path.abspath(a.source), a.scenario
    work = tempfile.mkdtemp(prefix=f"gmt-torch-{sc}-")
    headers = None
    if sc == "bad-headers":
        headers = os.path.join(work, "badinc")
        shutil.copytree(os.path.join(source, "tests", "torchsim", "include"), headers)
        with open(os.path.join(headers, "c10", "cuda", "CUDACachingAllocator.h"), "a") as f:
            f.write("\n#error this is not a header the bridge can use\n")
    version = sc[len("version-"):] if sc.startswith("version-") else DEFAULT_VERSION
    site = make_torch(build, source, os.path.join(work, "site"), headers, version)
    outdir = os.path.join(work, "trace")
    os.mkdir(outdir)
    did_path = os.path.join(work, "did.json")
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("GPUMEMTRACE_") or k in ("PYTORCH_CUDA_ALLOC_CONF", "CUDA_INJECTION64_PATH"):
            del env[k]
    env.update({
        "LD_LIBRARY_PATH": os.path.join(build, "tests", "simcuda"),
        "PYTHONPATH": site,
        "GPUMEMTRACE_OUTPUT_DIR": outdir,
        "GPUMEMTRACE_CACHE_DIR": os.path.join(work, "cache"),
        "SIMCUDA_MEM_BYTES": "256M",
        "SIMCUDA_DEVICES": "1",
    })
    if sc == "benches":
        return benches(build, source, env, work)
    if sc == "planted":
        return planted(build, source, env, site, work)
    if sc == "forward-steps":
        return forward_steps(build, source, env, work)
    if sc == "kept-graph":
        return kept_graph(build, source, env, work)
    if sc == "cycles":
        return cycles(build, source, env, work)
    if sc == "auto-steps":
        return auto_steps(build, source, env, work)
    if sc != "untraced":
        env["LD_PRELOAD"] = os.path.join(build, "src", "libgpumemtrace.so")
    else:
        # the module importable as under the tracer, but no tracer
        env["PYTHONPATH"] = site + ":" + os.path.join(source, "python")
    if sc == "async-backend":
        env["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
    if sc in ("unknown-version", "any-version"):
        env["TORCHSIM_VERSION"] = "2.99.0+sim"
    if sc == "any-version":
        env["GPUMEMTRACE_TORCH"] = "any"
    if sc.startswith("version-"):
        env["TORCHSIM_VERSION"] = version + ".0+sim"
    if sc == "off":
        env["GPUMEMTRACE_TORCH"] = "off"
    if sc == "no-compiler":
        env["CXX"] = os.path.join(work, "no", "c++")
    argv = [sys.executable] + (["-S"] if sc == "late-attach" else []) + [
        os.path.join(source, "tests", "torchsim", "victim.py"),
        "late" if sc == "late-attach" else "normal", did_path]
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=240)
    sys.stdout.write(p.stderr)
    check(p.returncode == 0, f"the victim exits 0 (got {p.returncode})")
    if p.returncode != 0 or not os.path.exists(did_path):
        return finish(work)
    did = json.load(open(did_path))
    warnings = [l for l in p.stderr.splitlines() if "PyTorch layer" in l]
    cache = glob.glob(os.path.join(work, "cache", "*.so"))

    if sc == "untraced":
        check(not did["gpumemtrace_enabled"], "untraced: the module says the tracer is off")
        check(not cache, f"untraced: no bridge built (found {cache})")
        check(not glob.glob(os.path.join(outdir, "*")), "untraced: no trace written")
        return finish(work)

    recs = read_trace(build, outdir)
    torch_lines = [r for r in recs if r.get("type") == "torch"]
    blocks = [r for r in recs if r.get("type") == "block"]
    events = [r for r in recs if r.get("type") == "event"]
    check(any(r.get("type") == "trailer" for r in recs), "the trace has its trailer")

    if sc == "off":
        check(not torch_lines and not blocks, "GPUMEMTRACE_TORCH=off: no torch line, no blocks")
        check(not cache, "GPUMEMTRACE_TORCH=off: no bridge built")
        return finish(work)

    if sc in ("async-backend", "unknown-version", "no-compiler", "bad-headers"):
        check(len(torch_lines) == 1 and torch_lines[0].get("layer") == "segments only",
              f"{sc}: one torch line saying 'segments only' (got {torch_lines})")
        check(not [b for b in blocks if b["action"] == "alloc"], f"{sc}: no block events")
        check(len(warnings) == 1, f"{sc}: one warning line naming the PyTorch layer (got {warnings})")
        detail = torch_lines[0].get("detail", "") if torch_lines else ""
        want = {"async-backend": "cudaMallocAsync", "unknown-version": "2.99",
                "no-compiler": "compiler", "bad-headers": "not a header the bridge can use"}[sc]
        check(want in detail, f"{sc}: the torch line says why ({want!r} in {detail!r})")
        check(len([e for e in events if e["op"] == "alloc" and e["result"] == 0]) > 0,
              f"{sc}: CUDA-level allocations still recorded")
        if sc == "async-backend":
            # as torch's backend: every tensor one cudaMallocAsync from the device's pool, freed
            # by a cudaFreeAsync, the 1 TiB request a failed one (PyTorch's OOM, seen below it)
            pool = [e for e in events if e.get("kind") == "pool" and e.get("api") == "cudaMallocAsync"]
            made = sorted(e["size"] for e in pool if e["op"] == "alloc" and e["result"] == 0)
            failed = [e for e in pool if e["op"] == "alloc" and e["result"] != 0]
            frees = [e for e in events if e["op"] == "free" and e.get("api") == "cudaFreeAsync"]
            want = sorted(x["bytes"] for x in did["allocs"])
            check(made == want, f"{sc}: one cudaMallocAsync per tensor, of its size "
                  f"({len(made)} allocations, {len(want)} tensors)")
            check(len(failed) == 1 and failed[0]["size"] == 1 << 40,
                  f"{sc}: the OOM's request is one failed cudaMallocAsync ({failed})")
            check(len(frees) >= len(want) - 5, f"{sc}: the tensors dropped are cudaFreeAsync'd "
                  f"({len(frees)} frees, {len(want)} tensors, 5 kept)")
        return finish(work)

    # blocks, late-attach, any-version: the layer is on
    check(len(torch_lines) == 1 and torch_lines[0].get("layer") == "blocks",
          f"one torch line saying 'blocks' (got {torch_lines})")
    if torch_lines:
        t = torch_lines[0]
        check(t.get("version") == ("2.99.0+sim" if sc == "any-version" else version + ".0+sim")
              and t.get("backend") == "native", f"the torch line names version and backend ({t})")
    check(not warnings, f"no warning about the layer (got {warnings})")
    check(len(cache) == 1, f"one bridge built and cached (got {cache})")
    allocs = [b for b in blocks if b["action"] == "alloc"]
    want_allocs = [x for x in did["allocs"] if x["function"] != "before_attach"]
    check(len(allocs) == len(want_allocs),
          f"one block alloc per tensor after attach ({len(allocs)} vs {len(want_allocs)})")
    check(sorted(b["size"] for b in allocs) == sorted(x["bytes"] for x in want_allocs),
          "block alloc sizes are the requested sizes")
    # our stack on every block allocation, its innermost Python frame the victim's function
    stacks = {r["id"]: r for r in recs if r.get("type") == "stack"}
    codes = {r["id"]: r for r in recs if r.get("type") == "pycode"}
    names = []
    torch_dir = os.path.join(site, "torch")
    for b in allocs:
        st = stacks.get(b.get("stack"))
        py = [f for f in (st.get("py") or []) if f[0] in codes] if st else []
        # the innermost frame outside torch's own Python files (the double's Tensor.__init__)
        own = [codes[f[0]] for f in py if not codes[f[0]]["file"].startswith(torch_dir)]
        names.append(own[0]["name"] if own else None)
    check(all(n == "alloc" for n in names),
          f"every block alloc has our Python stack, the victim's alloc() innermost ({set(names)})")
    # frees
    req = [b for b in blocks if b["action"] == "free_requested"]
    comp = [b for b in blocks if b["action"] == "free_completed"]
    check(len(req) == len(comp), f"every free requested completes ({len(req)} vs {len(comp)})")
    by_ptr = {}
    for b in blocks:
        if b["action"] in ("free_requested", "free_completed"):
            by_ptr.setdefault(b["ptr"], []).append(b)
    other = [v for v in by_ptr.values() if len({x["tid"] for x in v}) > 1]
    check(other, "a free completed on another thread than its request (record_stream)")
    # segments: the bridge's and the CUDA level's are the same memory
    seg = {b["ptr"]: b["size"] for b in blocks if b["action"] in ("segment_alloc", "segment_state")}
    cuda = {e["ptr"]: e["size"] for e in events if e["op"] == "alloc" and e["result"] == 0}
    check(seg and all(cuda.get(p) == s for p, s in seg.items()),
          f"every segment (alloc or backfilled) is a CUDA-level allocation of the same address "
          f"and size")
    if sc != "late-attach":  # there the blocks allocated before stay live: no segment is empty
        check(any(b["action"] == "segment_free" for b in blocks), "empty_cache gives segment_free")
    meta = [b for b in allocs if b.get("meta")]
    if VERSIONS[version]["metadata"]:
        check(len(meta) == 1 and meta[0]["meta"] == "phase=eval" and meta[0]["size"] == 2048,
              f"user metadata on the allocation made while it was set ({meta})")
    else:
        check(not meta, f"torch {version}'s allocator has no user metadata: none in the trace ({meta})")

    oom = [b for b in blocks if b["action"] == "oom"]
    check(did["oom"] and len(oom) == 1 and oom[0]["size"] == 1 << 40 and oom[0]["device_free"] > 0,
          f"the OOM entry: the request and the device's free bytes ({oom})")
    # live requested bytes at each marker, replayed from the block lines
    live, seqs = {}, sorted(recs, key=lambda r: r.get("seq", 0))
    marks = []
    for r in seqs:
        if r.get("type") == "block":
            if r["action"] in ("alloc",):
                live[r["ptr"]] = r["size"]
            elif r["action"] == "block_state" and r.get("allocated"):
                live[r["ptr"]] = r["requested"]
            elif r["action"] == "free_requested":
                live.pop(r["ptr"], None)
        elif r.get("type") == "marker":
            marks.append(sum(live.values()))
    want = [m["live_requested"] for m in did["markers"]]
    check(marks == want, f"live requested bytes at each marker from the trace {marks} == the "
                         f"program's {want}")
    # the allocator's own figure (rounded, split blocks), replayed as the GPU check does it
    sys.path.insert(0, os.path.join(source, "tests", "gpu"))
    import torch_blocks
    model, got = torch_blocks.Model(False), []
    for r in seqs:
        if r.get("type") == "block":
            model.apply(r)
        elif r.get("type") == "marker":
            got.append(model.figures()["allocated"])
    check(not model.errors, f"the block replay is consistent ({model.errors[:3]})")
    want = [m["allocated"] for m in did["markers"]]
    check(got == want, f"allocated bytes at each marker from the trace {got} == the allocator's {want}")
    # the analyzer's tensor level on the same trace: its replay, growth and sites
    gmt = os.path.join(build, "tools", "gpumemtrace")
    rp = subprocess.run([gmt, "report", "--format", "json", outdir], capture_output=True, text=True)
    check(rp.returncode == 0, f"report exits 0 ({rp.returncode}: {rp.stderr[-300:]})")
    if rp.returncode == 0:
        tens = [pr["tensors"] for pr in json.loads(rp.stdout)["processes"] if "tensors" in pr]
        check(len(tens) == 1, "the report has the tensor level")
        t = tens[0] if tens else {}
        marks = [m["allocated"] for m in t.get("at_markers", []) if m["label"].startswith("step")]
        check(marks == want, f"the analyzer's replay at each marker {marks} == the allocator's {want}")
        g = t.get("growth", [])
        check(len(g) == 1 and g[0]["site"].endswith(" in alloc") and g[0]["callers"] and
              g[0]["callers"][0].endswith(" in grows") and g[0]["per_step"] == 64 << 10,
              f"one growing site: the helper alloc() called from grows(), +64 KiB a step ({g})")
        rows = [r for r in t.get("peak_sites", []) + t.get("live_at_exit", [])
                if r["site"].endswith(" in alloc")]
        callers = {r["callers"][0].rsplit(" in ", 1)[-1] for r in rows if r["callers"]}
        check({"temporaries", "grows"} <= callers,
              f"the helper alloc() shows once per caller, with the caller ({sorted(callers)})")
        lines = {r["callers"][0] for r in rows if r["callers"] and r["callers"][0].endswith("temporaries")}
        check(len(lines) == 2 or sc == "late-attach",
              f"the two lines of temporaries() calling alloc() are two rows ({sorted(lines)})")
        summ = json.loads(rp.stdout)["summary"]
        check(summ.get("tensor_oom_errors") == 0 and summ["failed_allocations"] >= 1,
              f"the OOM's failed cudaMalloc counts it once, not twice ({summ.get('tensor_oom_errors')}, "
              f"{summ['failed_allocations']})")
        ooms = t.get("ooms", [])
        check(len(ooms) == 1 and ooms[0]["requested"] == 1 << 40 and ooms[0]["cause"] == "too_large",
              f"the OOM at the tensor level: 1 TiB asked, more than the device holds: too_large ({ooms})")
    if sc == "late-attach":
        st = [b for b in blocks if b["action"] == "block_state" and b.get("allocated")]
        check(sorted(b["requested"] for b in st) == [123456, 7 << 20],
              f"the backfill lists the two blocks allocated before the layer ({st})")
        check(any(b["action"] == "segment_state" for b in blocks), "the backfill lists segments")
    return finish(work)


def finish(work):
    if failures:
        print(f"{len(failures)} failed; files in {work}")
        return 1
    if not os.environ.get("GMT_KEEP"):
        shutil.rmtree(work, ignore_errors=True)
    print("ok", work if os.environ.get("GMT_KEEP") else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
