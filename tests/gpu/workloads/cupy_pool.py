"""CuPy with its default memory pool: arrays made and dropped, 80 MiB kept, an elementwise kernel
and a reduction, pinned host memory."""
import cupy as cp

from common import report

kept = [cp.zeros(10 << 20, dtype=cp.uint8) for _ in range(8)]  # 80 MiB, kept to the end
for i in range(50):
    a = cp.random.random((1024, 1024), dtype=cp.float32)
    b = cp.sqrt(a * a + 1.0)
    s = float(b.sum())
    del a, b
host = cp.cuda.alloc_pinned_memory(1 << 20)
pool = cp.get_default_memory_pool()
report("cupy", sum=s, kept_bytes=sum(k.nbytes for k in kept), pool_used=pool.used_bytes(),
       pool_total=pool.total_bytes())
