"""A TEST DOUBLE of torch.utils.hooks: the handle a hook registration returns."""


class RemovableHandle:
    def __init__(self, hooks, key):
        self._hooks, self._key = hooks, key

    def remove(self):
        self._hooks.pop(self._key, None)
