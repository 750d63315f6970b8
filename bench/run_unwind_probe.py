#!/usr/bin/env python3
"""What the native unwind of PyTorch's allocator stacks costs, and where libunwind's fast trace
gives up (bench/unwind_probe.c; docs/performance.md). Untraced: the probe is attached as the
allocator's trace tracker through gpumemtrace's bridge, in place of the tracer.

    run_unwind_probe.py --build BUILD [--source SRC]

On a GPU host with torch: a loop of tensor allocations from Python, then a small transformer's
forward and backward (the backward allocates on autograd's thread, without Python frames). With
the torch double (tests/torchsim, PYTHONPATH to an assembled package, simcuda on the loader path)
the tensor loop only. Prints the probe's JSON and one line per place where the cost jumped:
the frames around it, by module and symbol.
"""
import argparse
import ctypes
import json
import os
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(os.path.abspath(a.source), "python"))
    import torch
    from gpumemtrace import _torch
    torch.empty(16, device="cuda")  # CUDA initialised before the attach (as the layer does)
    build = _torch._Build(torch)
    build.start()
    path, why = build.result()
    if not path:
        print("unwind probe: no bridge: %s" % why)
        return 77
    bridge = ctypes.CDLL(path)
    probe = ctypes.CDLL(os.path.join(os.path.abspath(a.build), "bench", "libgmt_unwind_probe.so"))
    err = ctypes.create_string_buffer(512)
    bridge.gmt_bridge_attach.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    if bridge.gmt_bridge_attach(ctypes.cast(probe.gmt_probe_record, ctypes.c_void_p), err,
                                len(err)) != 0:
        print("unwind probe: attach failed: %s" % err.value.decode(errors="replace"))
        return 1

    def loop(n):
        for i in range(n):
            x = torch.empty(1024 * (1 + i % 7), device="cuda")
            del x

    class Wrap:  # a call through C, as nn.Module's __call__ is
        def __call__(self, n):
            return loop(n)
    Wrap()(300)
    try:
        layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True).cuda()
        x = torch.randn(8, 128, 256, device="cuda")
        for _ in range(2):
            layer(x).square().mean().backward()
        torch.cuda.synchronize()
    except AttributeError:
        pass  # the torch double has no nn
    out = ctypes.create_string_buffer(1 << 16)
    if probe.gmt_probe_report(out, len(out)) < 0:
        print("unwind probe: report did not fit")
        return 1
    doc = json.loads(out.value.decode())
    print(json.dumps(doc))
    print("%d block allocations probed: a median stack of %d frames; unw_backtrace %d ns, an "
          "unw_step loop %d ns; the cost jumped in %d of %d searched" % (
              doc["allocations"], doc["frames"], doc["unw_backtrace_ns"],
              doc["unw_step_loop_ns"], doc["cost_jumped"], doc["searched"]))
    for j in sorted(doc["jump_at"], key=lambda j: -j["count"]):
        print("  %4d x at frame %d: %s %s+%s" % (j["count"], j["frame"], j["module"], j["symbol"],
                                                 j["offset"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
