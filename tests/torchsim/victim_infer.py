"""Steps from forward(), for the torch suite's forward-steps scenario (run_torchsim.py): a model of
nested modules run on 6 batches with nothing of gpumemtrace in it, keeping each batch's 64 KiB
output in a list by mistake. MODE infer: no optimizer (the steps are the model's forward ends);
MODE train: an optimizer steps after each forward (its steps take over after the first).

    victim_infer.py MODE
"""
import sys

import torch


class Layer(torch.nn.Module):
    def forward(self, x):
        return torch.empty(1 << 20, device="cuda")  # a temporary activation


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = Layer(), Layer()

    def forward(self, x):
        h = self.b(self.a(x))
        del h
        return torch.empty(64 << 10, device="cuda")


model = Model()
opt = torch.optim.SGD([]) if sys.argv[1] == "train" else None
outs = []
for _ in range(6):
    outs.append(model(torch.empty(4096, device="cuda")))  # the leak: every output kept
    if opt:
        opt.step()
