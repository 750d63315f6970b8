"""Shared by the real workloads: a fixed seed, and one JSON line at the end with what the program
itself saw (torch's peak figures where torch is used), for run_workloads.py's log."""
import json
import sys


def report(name, **figures):
    print(json.dumps({"workload": name, **figures}), flush=True)
    sys.stdout.flush()


def torch_figures(torch):
    torch.cuda.synchronize()
    return {
        "max_allocated": torch.cuda.max_memory_allocated(),
        "max_reserved": torch.cuda.max_memory_reserved(),
        "allocated_end": torch.cuda.memory_allocated(),
    }


def lm_steps(torch, model, opt, vocab, steps, batch, tokens):
    """Causal-LM training steps on random tokens under bf16 autocast; the last loss."""
    for _ in range(steps):
        ids = torch.randint(0, vocab, (batch, tokens), device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return float(loss)
