"""The kept-graph leak, for the torch suite's kept-graph scenario (run_torchsim.py): a training
loop with no markers appends each step's loss to a list (losses.append(loss)), and the loss's
autograd graph keeps the step's activations (256 KiB saved by each of two layers); the loop also
keeps one detached 64 KiB tensor a step in a dict. Nothing of gpumemtrace in it. A module-level
object warns when looked at (as torch's deprecated torch.distributed.reduce_op does on
isinstance()): the tracer's walk of the objects must not make it print. The script is also
sys.modules["__mp_main__"], as multiprocessing makes it."""
import sys
import warnings

import torch

# the script under a second name, as multiprocessing's spawn machinery puts it: the holders are
# still said to be in __main__
sys.modules["__mp_main__"] = sys.modules["__main__"]


class _WarnsWhenLookedAt:
    @property
    def __class__(self):
        warnings.warn("LOOKED-AT by isinstance()", FutureWarning)
        return _WarnsWhenLookedAt


deprecated_thing = _WarnsWhenLookedAt()

losses = []
acts = {}
opt = torch.optim.SGD([])


def forward(x):
    h = torch._sim_layer(x, 256 << 10)  # an activation saved for backward
    return torch._sim_layer(h, 256 << 10)


for step in range(6):
    x = torch.empty(4096, device="cuda")
    loss = forward(x)
    losses.append(loss)  # the mistake: the graph lives on
    acts[step] = torch.empty(64 << 10, device="cuda")  # kept on purpose, detached
    opt.step()
