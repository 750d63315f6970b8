"""Build the PyTorch bridge ahead of time (it is otherwise built at the first traced run):

    python -m gpumemtrace.torch_bridge         # prints the path of the cached bridge

Needs torch, its C++ headers (in the wheel), the CUDA headers and a C++ compiler; see
gpumemtrace/_torch.py.
"""
import sys

from gpumemtrace import _torch


def main():
    import torch
    b = _torch._Build(torch)
    b.start()
    path, why = b.result()
    if b.private:  # the cache could not be used (the warning above says why): nothing cached
        b.done()
        return 1
    if not path:
        print(f"gpumemtrace: {why}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
