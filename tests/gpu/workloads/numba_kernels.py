"""Numba's CUDA target with its own memory management: arrays copied to the device, a jitted
kernel, arrays made and dropped (Numba defers their frees: up to CUDA_DEALLOCS_COUNT of them wait
in the context's queue), 16 MiB kept to the end, pinned host memory. Every array but the kept ones
is dropped, and the queue is flushed before the end, so what is live at exit is what the program
still holds."""
import numpy as np

# numba-cuda 0.x registers an overload of np.row_stack, an alias of vstack that newer NumPy
# removed (deprecated in 2.0): its import fails on the GPU host's NumPy with "module 'numpy' has
# no attribute 'row_stack'", untraced as traced. Give the alias back before numba looks for it.
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack
from numba import cuda  # noqa: E402 (after the alias)

from common import report


@cuda.jit
def axpy(out, a, x, y):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


n = 1 << 20
kept = [cuda.device_array(n, dtype=np.float32) for _ in range(4)]  # 16 MiB, kept to the end
total = 0.0
for i in range(30):
    x = cuda.to_device(np.full(n, i, dtype=np.float32))
    y = cuda.to_device(np.ones(n, dtype=np.float32))
    out = cuda.device_array_like(x)
    axpy[(n + 255) // 256, 256](out, 2.0, x, y)
    total += float(out.copy_to_host()[-1])
    del x, y, out
host = cuda.pinned_array(1 << 18, dtype=np.float32)
ctx = cuda.current_context()
# the queue of deferred frees: the context's memory manager's (numba-cuda), the context's (older)
# (an empty queue is falsy: test for the attribute, not the queue's truth)
deallocs = getattr(getattr(ctx, "memory_manager", None), "deallocations", None)
if deallocs is None:
    deallocs = ctx.deallocations
pending = len(deallocs)
deallocs.clear()  # the deferred frees, before the end
free, total_mem = ctx.get_memory_info()
report("numba", value=total, kept_bytes=sum(k.nbytes for k in kept), pending_before_clear=pending,
       device_free=free, device_total=total_mem)
