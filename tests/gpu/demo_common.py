"""What demo_leak.py and demo_clean.py share: the marker function and the model they train.
The loops stay in the demos themselves: their forward line is the call site the checks look for.
"""
import ctypes
import sys

D, H, B = 1024, 4096, 2048  # a B x H fp32 activation is 32 MiB


def marker(demo):
    """mark(label): the gpumemtrace Python module's, else the preloaded tracer's gmt_mark."""
    try:
        import gpumemtrace

        return gpumemtrace.mark
    except ImportError:
        pass
    fn = getattr(ctypes.CDLL(None), "gmt_mark", None)
    if fn is None:
        print(f"{demo}: not traced (no gmt_mark): no markers", file=sys.stderr)
        return lambda label: None
    fn.argtypes = [ctypes.c_char_p]
    fn.restype = None
    return lambda label: fn(label.encode())


def model_and_optimizer(torch, dev):
    """The demos' MLP (D -> H -> H -> D with GELU) on @p dev and its AdamW, seeded."""
    import torch.nn as nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(D, H), nn.GELU(), nn.Linear(H, H), nn.GELU(), nn.Linear(H, D)).to(dev)
    return model, torch.optim.AdamW(model.parameters(), lr=1e-3)
