#!/usr/bin/env python3
"""Answers with no code change, on the GPU (scripts/gpu-check, group "no_markers"; issue 29): plain
PyTorch programs that import nothing of ours and put no marks, run under `gpumemtrace run` with
default options; the report must find the problem by itself.

    no_markers.py list
    no_markers.py run CASE OUTDIR GPUMEMTRACE       write the program, trace it, check the report
    no_markers.py check CASE DIR GPUMEMTRACE        the same checks on a saved run's DIR (its
                                                    program and traces/): kept_graph, detached,
                                                    cycles and clean; no GPU needed

Cases:
  kept_graph    an evaluation loop without torch.no_grad() that keeps every step's loss
                (`losses.append(out.loss)`) of a 4-layer GPT-2 (transformers, from its config):
                the graphs keep their activations, memory grows every step. The report's tensor
                growth is found on automatic steps (basis auto_steps: forward N), a growing row
                names this program's line as its user_line, and held_at_end names `losses` as
                a graph holder
  detached      60 steps of a 2-layer MLP with no optimizer, each keeping a detached 16 MiB
                activation in a dict: growth per step 16 MiB on automatic steps, at the line of
                the model's call in this program
  cycles        20 objects, each with a 32 MiB tensor and a reference to itself, freed only by
                gc.collect(): freed_by_gc adds up to the 640 MiB
  clean         timm's ResNet-50 (torchvision's when timm is missing), 3 training steps, AdamW:
                nothing of the program's own is leaked (summary.leaked_bytes 0, the text says
                so), cuBLAS's workspaces are the libraries' (library_at_exit or the cache), and
                `check --max-leaked-bytes 0` passes
  fraction_oom  torch.cuda.set_per_process_memory_fraction() at 1 GiB, 512 MiB held, then a
                2 GiB tensor: torch's
                own limit refuses it with no cudaMalloc failing; the tensor-level OOM's cause is
                allocator_limit
  pytest        `gpumemtrace run -- python -m pytest --gpumemtrace` on three tests with
                limit_gpu_leaks("0 B"): one that keeps a tensor fails naming its line; one
                whose first matmul makes cuBLAS's workspace passes; one that frees what it made
                passes

Prints `no_markers CASE: PASS|FAIL` and one `FAIL: ...` line per failed check; exit 0 or 1.
"""
import json
import os
import subprocess
import sys
import textwrap

MiB = 1 << 20

PROGRAMS = {
    "kept_graph": '''
        import torch
        from transformers import GPT2Config, GPT2LMHeadModel

        torch.manual_seed(0)
        cfg = GPT2Config(n_layer=4, n_embd=512, n_head=8, vocab_size=8192, n_positions=512)
        model = GPT2LMHeadModel(cfg).cuda()
        losses = []
        for step in range(12):
            ids = torch.randint(0, cfg.vocab_size, (8, 256), device="cuda")
            out = model(input_ids=ids, labels=ids)  # MODEL-LINE
            losses.append(out.loss)  # KEEP-LINE: the graph and its activations stay
        print("allocated", torch.cuda.memory_allocated())
    ''',
    "detached": '''
        import torch

        model = torch.nn.Sequential(torch.nn.Linear(2048, 2048), torch.nn.ReLU(),
                                    torch.nn.Linear(2048, 2048)).cuda()
        feats = {}
        for step in range(60):
            x = torch.randn(2048, 2048, device="cuda")
            y = model(x)  # MODEL-LINE: 16 MiB output, kept detached below
            feats[step] = y.detach()
        print("allocated", torch.cuda.memory_allocated())
    ''',
    "cycles": '''
        import gc
        import torch


        class Holder:
            def __init__(self):
                self.t = torch.empty(32 << 20, dtype=torch.uint8, device="cuda")  # MAKE-LINE
                self.me = self  # a cycle: only the collector frees it


        gc.disable()
        for i in range(20):
            Holder()
        print("before gc", torch.cuda.memory_allocated())
        gc.collect()
        torch.cuda.synchronize()
        print("after gc", torch.cuda.memory_allocated())
    ''',
    "clean": '''
        import torch
        try:
            import timm
            model = timm.create_model("resnet50", pretrained=False)
        except ImportError:
            import torchvision
            model = torchvision.models.resnet50()
        model = model.cuda()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        for step in range(3):
            x = torch.randn(16, 3, 224, 224, device="cuda")
            loss = model(x).float().mean()
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        print("loss", float(loss))
    ''',
    "fraction_oom": '''
        import torch

        torch.cuda.init()
        # a limit of 1 GiB whatever the device (2% of an H200 would hold the request)
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction((1 << 30) / total)
        kept = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
        try:
            t = torch.empty(2 << 30, dtype=torch.uint8, device="cuda")  # OOM-LINE
            print("no OOM")
        except torch.cuda.OutOfMemoryError as e:
            print("OOM:", str(e).splitlines()[0])
    ''',
    "pytest": '''
        import pytest
        import torch

        kept = []


        @pytest.mark.limit_gpu_leaks("0 B")
        def test_keeps():
            kept.append(torch.empty(8 << 20, dtype=torch.uint8, device="cuda"))  # KEEP-LINE


        @pytest.mark.limit_gpu_leaks("0 B")
        def test_first_matmul():
            a = torch.randn(1024, 1024, device="cuda")
            b = a @ a
            torch.cuda.synchronize()
            del a, b


        @pytest.mark.limit_gpu_leaks("0 B")
        def test_frees():
            t = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
            del t
    ''',
}


def line_of(src, tag):
    for i, line in enumerate(src.splitlines(), 1):
        if tag in line:
            return i
    raise SystemExit(f"no {tag} in the program")


def report_json(gmt, tracedir):
    p = subprocess.run([gmt, "report", "--format", "json", tracedir], capture_output=True,
                       text=True, timeout=600)
    if p.returncode not in (0, 1):
        raise SystemExit(f"report failed ({p.returncode}): {p.stderr[-2000:]}")
    return json.loads(p.stdout)


def tensors_of(doc):
    return next((p["tensors"] for p in doc.get("processes", []) if p.get("tensors")), None)


def names(row):
    return " | ".join(str(row.get(k) or "") for k in ("site", "user_line")) + " | " + \
        " | ".join(row.get("callers") or [])


def check_case(case, prog, src, out, gmt, run, fails):
    tracedir = os.path.join(out, "traces")
    doc = report_json(gmt, tracedir)
    t = tensors_of(doc)
    text = subprocess.run([gmt, "report", tracedir], capture_output=True, text=True,
                          timeout=600).stdout
    if run is not None:  # a fresh run: its report beside its trace (not over a saved one)
        with open(os.path.join(out, "report.txt"), "w") as f:
            f.write(text)
    if case != "pytest" and t is None:
        fails.append("no tensors object in the report (the PyTorch layer did not attach)")
        return
    base = os.path.basename(prog)
    if case in ("kept_graph", "detached"):
        want_line = f"{base}:{line_of(src, 'MODEL-LINE')}"
        if t.get("growth_basis") != "auto_steps":
            fails.append(f"growth basis {t.get('growth_basis')!r}, not auto_steps")
        rows = t.get("growth", [])
        ours = [r for r in rows if want_line in names(r)]
        if not ours:
            fails.append(f"no growing tensor row names {want_line}: {[names(r) for r in rows][:5]}")
        elif case == "detached":
            per = ours[0].get("per_step")
            if per is None or abs(per - 16 * MiB) > MiB:
                fails.append(f"growth per step {per}, not 16 MiB")
        if case == "kept_graph":
            held = t.get("held_at_end", [])
            if not any("losses" in (h.get("holder") or "") and h.get("kind") == "graph"
                       for h in held):
                fails.append(f"held_at_end names no graph holder `losses`: {held[:3]}")
    elif case == "cycles":
        freed = sum(r.get("bytes", 0) for r in t.get("freed_by_gc", []))
        if abs(freed - 640 * MiB) > 8 * MiB:
            fails.append(f"freed_by_gc adds up to {freed}, not 640 MiB")
        want_line = f"{base}:{line_of(src, 'MAKE-LINE')}"
        if not any(want_line in names(r) for r in t.get("freed_by_gc", [])):
            fails.append(f"freed_by_gc names no {want_line}")
    elif case == "clean":
        s = doc.get("summary", {})
        if s.get("leaked_bytes") != 0:
            fails.append(f"summary.leaked_bytes {s.get('leaked_bytes')} on a clean program")
        if "leaked at exit: nothing of the program's own" not in text:
            fails.append("the text report does not say nothing of the program's own leaked")
        p = subprocess.run([gmt, "check", "--max-leaked-bytes", "0", tracedir],
                           capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            fails.append(f"check --max-leaked-bytes 0 exits {p.returncode}: {p.stdout[-800:]}")
    elif case == "fraction_oom":
        if "OOM:" not in run.stdout:
            fails.append(f"torch raised no OOM: {run.stdout[-300:]}")
        causes = [o.get("cause") for o in t.get("ooms", [])]
        if causes[:1] != ["allocator_limit"]:
            fails.append(f"tensor-level OOM causes {causes}, not allocator_limit")
    elif case == "pytest":
        msg = run.stdout + run.stderr
        keep = f"{base}:{line_of(src, 'KEEP-LINE')}"
        if run.returncode != 1:
            fails.append(f"pytest exits {run.returncode}, not 1 (one test over its limit)")
        if "1 failed, 2 passed" not in msg:
            fails.append("not exactly test_keeps failed: " + msg[-1500:])
        if keep not in msg:
            fails.append(f"the failure does not name {keep}")


OFFLINE = ("kept_graph", "detached", "cycles", "clean")  # judged from the trace alone


def check_saved(case, out, gmt):
    """The checks of a case on a directory an earlier `run` left (the program, traces/): the
    CPU suite's regression test over the H200's traces (tests/fixtures/h200-torch2.11)."""
    prog = os.path.join(out, case + ".py")
    with open(prog) as f:
        src = f.read()
    fails = []
    check_case(case, prog, src, out, gmt, None, fails)
    return fails


def main():
    if sys.argv[1] == "list":
        print(" ".join(PROGRAMS))
        return 0
    if sys.argv[1] == "check":  # check CASE DIR GPUMEMTRACE [REPORT_TXT_OUT]: no GPU needed
        case, out, gmt = sys.argv[2:5]
        if case not in OFFLINE:
            raise SystemExit(f"{case}: needs the program's own output, not only its trace")
        fails = check_saved(case, out, gmt)
        for f in fails:
            print("FAIL:", f)
        print(f"no_markers {case} (saved trace): {'FAIL' if fails else 'PASS'}")
        return 1 if fails else 0
    case, out, gmt = sys.argv[2:5]
    os.makedirs(out, exist_ok=True)
    src = textwrap.dedent(PROGRAMS[case]).lstrip()
    prog = os.path.join(out, ("test_" if case == "pytest" else "") + case + ".py")
    with open(prog, "w") as f:
        f.write(src)
    tracedir = os.path.join(out, "traces")
    cmd = [gmt, "run", "-o", tracedir, "--", sys.executable]
    cmd += ["-m", "pytest", "-q", "-p", "gpumemtrace.pytest_plugin", "-p", "no:cacheprovider",
            "--gpumemtrace", os.path.basename(prog)] \
        if case == "pytest" else [prog]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=540, cwd=out)
    print(run.stdout[-3000:])
    print(run.stderr[-3000:], file=sys.stderr)
    fails = []
    if case != "pytest" and run.returncode != 0:
        fails.append(f"the program exits {run.returncode} under the tracer")
    else:
        check_case(case, prog, src, out, gmt, run, fails)
    for f in fails:
        print("FAIL:", f)
    print(f"no_markers {case}: {'FAIL' if fails else 'PASS'}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
