"""The workloads the PyTorch cost benchmarks time (run_torch_block_cost.py, one process per
variant; run_torch_block_ab.py, states inside one process): a loop of tensor alloc+free pairs
inside the cache, and a small transformer's training step. Imported by their child processes."""
import time


def pairs(torch, n, cpu=None):
    """ns per alloc+free pair of 4-28 KiB tensors; the main thread's CPU ns appended to @cpu."""
    t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
    for i in range(n):
        x = torch.empty(1024 * (1 + i % 7), device="cuda")
        del x
    if cpu is not None:
        cpu.append((time.thread_time_ns() - c0) / n)
    return (time.perf_counter_ns() - t0) / n


def make_step(torch, warmup=5):
    """A 4-layer transformer encoder (d=512, bf16 autocast, AdamW): its training step, warmed up;
    None on a torch without the layers (the test double has only nn.Module)."""
    if not hasattr(getattr(torch, "nn", None), "TransformerEncoderLayer"):
        return None
    layer = torch.nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True).cuda()
    model = torch.nn.TransformerEncoder(layer, 4).cuda()
    opt = torch.optim.AdamW(model.parameters())

    def step():
        x = torch.randn(16, 256, 512, device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    return step
