"""A Python program under an installed gpumemtrace, on the CUDA runtime of LD_LIBRARY_PATH
(tests/simcuda) through ctypes. Prints one JSON line: where `gpumemtrace` and the start-up hook
were imported from, whether the tracer is on, LD_PRELOAD. Leaks 3 MiB, and unless --child runs itself again
as a child process (which allocates and frees 1 MiB): the child inherits the tracer.
"""
import ctypes
import json
import os
import subprocess
import sys

import gpumemtrace

child = "--child" in sys.argv
cudart = ctypes.CDLL("libcudart.so.13")


def alloc(n):
    p = ctypes.c_void_p()
    rc = cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n))
    if rc != 0:
        sys.exit("cudaMalloc: %d" % rc)
    return p


gpumemtrace.mark("py start")
if child:
    cudart.cudaFree(alloc(1 << 20))
else:
    kept = alloc(3 << 20)  # never freed
gpumemtrace.mark("py end")
site = sys.modules.get("sitecustomize")
print(json.dumps({"child": child, "module": gpumemtrace.__file__, "enabled": gpumemtrace.enabled(),
                  "sitecustomize": getattr(site, "__file__", None),
                  "preload": os.environ.get("LD_PRELOAD", "")}), flush=True)
if not child:
    sys.exit(subprocess.run([sys.executable, __file__, "--child"]).returncode)
