"""torch.compile(mode="reduce-overhead"): inductor kernels replayed through CUDA graphs (a private
memory pool), a small MLP, training steps and inference."""
import torch

from common import report, torch_figures

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
step_fn = torch.compile(model, mode="reduce-overhead")
for step in range(8):
    x = torch.randn(256, 1024, device="cuda")
    loss = step_fn(x).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
with torch.no_grad():
    infer = torch.compile(model.eval(), mode="reduce-overhead")
    for step in range(8):
        out = infer(torch.randn(256, 1024, device="cuda"))
report("compile_reduce_overhead", loss=float(loss), out=float(out.sum()), **torch_figures(torch))
