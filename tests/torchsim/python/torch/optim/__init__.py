"""A TEST DOUBLE of torch.optim (see torch/__init__.py): an optimizer whose step() runs the
global step hooks as torch's does (torch/optim/optimizer.py), and SGD over the double's tensors."""
from torch.optim import optimizer  # noqa: F401
from torch.optim.optimizer import Optimizer


class SGD(Optimizer):
    def _step(self):
        pass  # the double's tensors hold no numbers: a step changes nothing
