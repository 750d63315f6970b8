#!/usr/bin/env python3
"""The pickle writer's output (written by test_pickle) read by Python's own unpickler, with every
class lookup refused: plain data only, the values test_pickle wrote."""
import io
import pickle
import sys


class DataOnly(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refused: {module}.{name}")


d = DataOnly(io.BytesIO(open(sys.argv[1], "rb").read())).load()
want = {"address": 0x7f1e40000000, "negative": -5000000000, "small": 7, "mid": 40000, "i32": -2,
        "top": 2 ** 64 - 1, "ratio": 0.375, "flags": [True, False, None], "pool": (1, 0),
        "name": "x" * 299, "utf8": "café", "empty": {}}
bad = {k: (d.get(k), v) for k, v in want.items() if d.get(k) != v}
if bad or set(d) != set(want):
    print("FAIL: Python reads back", bad, sorted(set(d) ^ set(want)))
    sys.exit(1)
print("ok: Python's unpickler reads the writer's output:", sorted(d))
