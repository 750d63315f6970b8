"""torch.multiprocessing.spawn: two child processes (spawned, each a new interpreter that execs
Python, so each writes its own trace) do CUDA work on the GPU and return a figure through a
queue; then the parent uses the GPU itself."""
import torch
import torch.multiprocessing as mp

from common import report, torch_figures


def work(rank, queue):
    torch.manual_seed(rank)
    torch.cuda.set_device(0)
    x = torch.randn(2048, 2048, device="cuda")
    for _ in range(20):
        x = torch.nn.functional.normalize(x @ x, dim=1)
    queue.put((rank, float(x.sum()), torch.cuda.max_memory_allocated()))


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.spawn(work, args=(queue,), nprocs=2, join=True)
    children = sorted(queue.get() for _ in range(2))
    y = torch.randn(4096, 4096, device="cuda")
    total = float((y @ y).sum())
    report("spawn_workers", children=[c[0] for c in children],
           child_max_allocated=[c[2] for c in children], parent_sum=total, **torch_figures(torch))
