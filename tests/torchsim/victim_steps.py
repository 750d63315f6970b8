"""A training loop with no markers and nothing of gpumemtrace in it, for the torch suite's
auto-steps scenario (run_torchsim.py): each step keeps 64 KiB by mistake (kept.append), makes and
drops a 1 MiB temporary, and steps two optimizers. The tracer must find the steps itself.

    victim_steps.py STEPS
"""
import sys

import torch

kept = []
model = torch.optim.SGD([torch.empty(4096, device="cuda")])
other = torch.optim.SGD([])  # a second optimizer: its steps are not more steps


def train_step():
    tmp = torch.empty(1 << 20, device="cuda")
    kept.append(torch.empty(64 << 10, device="cuda"))  # the leak
    del tmp
    model.step()
    other.step()


for _ in range(int(sys.argv[1])):
    train_step()
