"""A TEST DOUBLE of torch.optim.optimizer: the global post-step hooks (register_optimizer_step_
post_hook, called with (optimizer, args, kwargs) after every step of every optimizer) and the
base class whose step() runs them."""
import itertools

from torch.utils.hooks import RemovableHandle

_global_optimizer_post_hooks = {}
_ids = itertools.count()


def register_optimizer_step_post_hook(hook):
    key = next(_ids)
    _global_optimizer_post_hooks[key] = hook
    return RemovableHandle(_global_optimizer_post_hooks, key)


class Optimizer:
    def __init__(self, params, lr=0.1):
        self.param_groups = [{"params": list(params), "lr": lr}]

    def _step(self):
        raise NotImplementedError

    def step(self, *args, **kwargs):
        out = self._step()
        for hook in list(_global_optimizer_post_hooks.values()):
            hook(self, args, kwargs)
        return out

    def zero_grad(self):
        pass
