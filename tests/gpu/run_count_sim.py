#!/usr/bin/env python3
"""The reference counter (tests/gpu/cupti_count.c) on the simulated runtime: what it counts must
equal the program's own account, so that the GPU proof's "reference == trace" compares the tracer
with a counter that is itself right.

    run_count_sim.py --build BUILD

Each scenario runs tests/preload/victim under CUDA_INJECTION64_PATH=libcupti_count.so on
tests/simcuda (its libcuda calls InitializeInjection at cuInit, as the driver does) and compares
the counter's JSON with the victim's `{"pid":..,"allocs":{..},"frees":{..}}` line:

  hold      5000 cudaMalloc live at once, freed newest first: the counter's hash chains hold
            several entries each and every free takes the head of its chain (a free that took
            the head's neighbours with it freed them early: frees that find nothing, and on the
            H200 heap corruption under PyTorch's cudaMallocAsync backend)
  poolburst 101 cudaMallocAsync live at once, freed oldest first (pool kind)
  threads   allocations and frees on several threads at once
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

SCENARIOS = {
    # scenario: (victim arguments, the counter's kind, the victim's allocation APIs)
    "hold": (["hold", "5000"], "device", ["cudaMalloc"]),
    "poolburst": (["poolburst"], "pool", ["cudaMallocAsync"]),
    "threads": (["threads"], None, None),
}


def victim_account(stdout):
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("{") and '"allocs"' in line:
            return json.loads(line)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    lib = os.path.join(build, "tests", "gpu", "libcupti_count.so")
    victim = os.path.join(build, "tests", "preload", "victim")
    if not os.path.exists(lib):
        print(f"no reference counter at {lib} (no CUPTI headers here): skipped")
        return 77
    failures = []
    for sc, (vargs, kind, apis) in SCENARIOS.items():
        with tempfile.TemporaryDirectory(prefix=f"gmt-count-{sc}-") as d:
            out = os.path.join(d, "ref.json")
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith("GPUMEMTRACE_") and k not in ("LD_PRELOAD",)}
            env.update({
                "LD_LIBRARY_PATH": os.path.join(build, "tests", "simcuda"),
                "SIMCUDA_MEM_BYTES": "1G",
                "SIMCUDA_DEVICES": "1",
                "CUDA_INJECTION64_PATH": lib,
                "GMT_CUPTI_COUNT_OUT": out,
                "GMT_CUPTI_COUNT_ACTIVITY": "0",
            })
            p = subprocess.run([victim] + vargs, env=env, capture_output=True, text=True, timeout=600)

            def fail(msg):
                failures.append(f"{sc}: {msg}")
                print(f"FAIL {sc}: {msg}")

            if p.returncode != 0:
                fail(f"victim exited {p.returncode}: {p.stderr.strip()[-400:]}")
                continue
            did = victim_account(p.stdout)
            try:
                ref = json.load(open(out))
            except (OSError, ValueError) as e:
                fail(f"no counter summary ({e}); stderr: {p.stderr.strip()[-400:]}")
                continue
            if did is None:
                fail("the victim printed no account")
                continue
            if ref.get("subscribe", {}).get("result") != 0:
                fail(f"the counter could not subscribe: {ref.get('subscribe')}")
                continue
            for key in ("unmatched_frees", "duplicate_allocs", "failed_frees"):
                if ref.get(key):
                    fail(f"{key} {ref[key]} (expected 0)")
            kinds = ref["kinds"]
            n_allocs = sum(did["allocs"].values())
            n_frees = sum(did["frees"].values())
            c_allocs = sum(k["allocs"] for k in kinds.values())
            c_frees = sum(k["frees"] + k["reset_frees"] for k in kinds.values())
            live = {name: k["live"] for name, k in kinds.items() if k["live"]}
            if kind:
                n_allocs = sum(did["allocs"].get(a, 0) for a in apis)
                c_allocs = kinds[kind]["allocs"]
                c_frees = kinds[kind]["frees"]
            if c_allocs != n_allocs:
                fail(f"counted {c_allocs} allocations, the program made {n_allocs}")
            if c_frees != n_frees:
                fail(f"counted {c_frees} frees, the program made {n_frees}")
            if did.get("leaked_allocations", 0) == 0 and live:
                fail(f"live at exit {live}, the program freed everything")
            if not failures or not failures[-1].startswith(sc + ":"):
                print(f"ok {sc}: {c_allocs} allocations, {c_frees} frees, as the program says")
    if failures:
        print(f"{len(failures)} failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
