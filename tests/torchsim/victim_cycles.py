"""Tensors kept alive only by reference cycles, for the torch suite's cycles scenario
(run_torchsim.py): five objects that refer to themselves each hold a 128 KiB tensor and are
dropped, freed only when the cycle collector runs; three plain tensors are freed at once."""
import gc

import torch

gc.disable()  # the collection below is the one that frees them, not an automatic one


class Node:
    def __init__(self):
        self.me = self
        self.tensor = torch.empty(128 << 10, device="cuda")  # kept by the cycle


def make_cycles():
    for _ in range(5):
        Node()


def plain():
    for _ in range(3):
        t = torch.empty(64 << 10, device="cuda")
        del t


make_cycles()
plain()
gc.collect()
