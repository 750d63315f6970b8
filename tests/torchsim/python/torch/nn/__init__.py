"""A TEST DOUBLE of torch.nn (see torch/__init__.py): Module with torch's hook semantics."""
from torch.nn.modules.module import Module  # noqa: F401
