"""Tests for the pytest plugin's suite (run_pytest.py copies this file as test_gpu.py): GPU
memory through ctypes on the CUDA runtime of LD_LIBRARY_PATH (tests/simcuda). The file's own
tests pass untraced but test_own_failure; with --gpumemtrace, test_peak_over, test_leaks and
test_method_leaks fail on their limits, and test_own_failure also says it leaked.
The LINE comments mark the lines the failure messages must name."""
import ctypes

import pytest

cudart = ctypes.CDLL("libcudart.so.13")
kept = []


def alloc(n):
    p = ctypes.c_void_p()
    assert cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)) == 0
    return p


def free(p):
    assert cudart.cudaFree(p) == 0


def test_small():
    free(alloc(1 << 20))


@pytest.mark.limit_gpu_memory("4 MiB")
def test_peak_over():
    big = alloc(6 << 20)  # LINE peak_over
    free(big)


@pytest.mark.limit_gpu_memory("4 MiB")
def test_peak_under():
    free(alloc(1 << 20))


@pytest.mark.limit_gpu_leaks("0 B")
def test_leaks():
    kept.append(alloc(512 << 10))  # LINE leaks


@pytest.mark.limit_gpu_leaks("0 B")
def test_no_leak():
    free(alloc(2 << 20))


@pytest.mark.limit_gpu_leaks("1 MiB")
def test_leak_within_limit():
    kept.append(alloc(256 << 10))


class TestClass:
    @pytest.mark.limit_gpu_leaks(0)
    def test_method_leaks(self):
        kept.append(alloc(128 << 10))  # LINE method_leaks


@pytest.mark.limit_gpu_leaks("0 B")
def test_own_failure():
    kept.append(alloc(64 << 10))  # LINE own_failure
    assert False, "the test's own failure"
