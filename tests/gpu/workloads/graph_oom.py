"""An inference server's habits, with no marker: a model captured by hand into a CUDA graph
(torch.cuda.graph, its private memory pool) and replayed, then a request too large for the
device whose torch.OutOfMemoryError is caught (the cache emptied, the server goes on), then more
replays. The program keeps nothing of its own past its end but the graph's pool."""
import torch

from common import report, torch_figures

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(2048, 8192), torch.nn.GELU(),
                            torch.nn.Linear(8192, 2048)).cuda().eval()
static_in = torch.randn(64, 2048, device="cuda")
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.no_grad(), torch.cuda.stream(side):
    for _ in range(3):  # warm-up on a side stream, as torch.cuda.graph's docs ask
        model(static_in)
torch.cuda.current_stream().wait_stream(side)
graph = torch.cuda.CUDAGraph()
with torch.no_grad(), torch.cuda.graph(graph):
    static_out = model(static_in)
total = 0.0
for i in range(20):
    static_in.copy_(torch.randn(64, 2048, device="cuda"))
    graph.replay()
    total += float(static_out.sum())
ooms = 0
free, _ = torch.cuda.mem_get_info()
try:
    too_big = torch.empty(free * 2 // 4, dtype=torch.float32, device="cuda")  # twice what is free
except torch.OutOfMemoryError:
    ooms += 1
    torch.cuda.empty_cache()
for i in range(5):
    graph.replay()
    total += float(static_out.sum())
report("graph_oom", ooms=ooms, total=total, **torch_figures(torch))
