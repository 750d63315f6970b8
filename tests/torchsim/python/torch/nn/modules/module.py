"""A TEST DOUBLE of torch.nn.modules.module: the global forward hooks
(register_module_forward_pre_hook, register_module_forward_hook with always_call), a module's
own forward hooks, and __call__ running them in torch's order (global pre, forward, global post,
the module's own post)."""
import itertools

from torch.utils.hooks import RemovableHandle

_ids = itertools.count()
_global_pre = {}
_global_post = {}  # key -> (hook, always_call)


def register_module_forward_pre_hook(hook):
    key = next(_ids)
    _global_pre[key] = hook
    return RemovableHandle(_global_pre, key)


def register_module_forward_hook(hook, *, always_call=False):
    key = next(_ids)
    _global_post[key] = (hook, always_call)
    return RemovableHandle(_global_post, key)


class Module:
    def __init__(self):
        self._forward_hooks = {}
        self._forward_pre_hooks = {}

    def register_forward_pre_hook(self, hook):
        key = next(_ids)
        self._forward_pre_hooks[key] = hook
        return RemovableHandle(self._forward_pre_hooks, key)

    def register_forward_hook(self, hook):
        key = next(_ids)
        self._forward_hooks[key] = hook
        return RemovableHandle(self._forward_hooks, key)

    def __call__(self, *args):
        for hook in list(_global_pre.values()) + list(self._forward_pre_hooks.values()):
            hook(self, args)
        done = False
        # as torch's _call_impl: the global and the module's own post hooks are taken together,
        # before any runs (a hook added by one of them runs from the next call on)
        own = list(self._forward_hooks.values())
        try:
            out = self.forward(*args)
            done = True
        finally:
            for hook, always in list(_global_post.values()):
                if done or always:
                    hook(self, args, out if done else None)
        for hook in own:
            hook(self, args, out)
        return out
