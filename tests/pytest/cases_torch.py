"""Tests for the pytest plugin's suite (run_pytest.py copies this file as test_torch.py), on the
torch double (tests/torchsim) and tests/simcuda: a tensor kept past its test is a leak (block
level), a tensor freed while its segment stays in PyTorch's cache is not, unless count_cached.
A library's workspace is not the test's leak: cuBLAS's, which torch allocates through its cache at
a handle's first matmul and keeps for the handle's life. The LINE comments mark the lines the
failure messages must name."""
import pytest
import torch

kept = []


def make(nbytes):
    return torch.empty(nbytes, device="cuda")


@pytest.mark.limit_gpu_leaks("0 B")
def test_tensor_leak():
    kept.append(make(1 << 20))  # LINE tensor_leak


@pytest.mark.limit_gpu_leaks("0 B")
def test_cache_keeps_segment():
    t = make(24 << 20)
    del t


@pytest.mark.limit_gpu_leaks("0 B", count_cached=True)
def test_cache_counted():
    t = make(96 << 20)
    del t


@pytest.mark.limit_gpu_leaks("0 B")
def test_matmul_workspace():
    a, b = make(1 << 20), make(1 << 20)
    c = torch.matmul(a, b)
    del a, b, c
