"""A DataLoader with 4 worker processes (forked) and pinned memory feeding a small model."""
import torch
from torch.utils.data import DataLoader, Dataset

from common import report, torch_figures


class Random(Dataset):
    def __len__(self):
        return 2048

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(3, 64, 64, generator=g), i % 10


if __name__ == "__main__":
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 64 * 64, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Random(), batch_size=64, num_workers=4, pin_memory=True)
    n = 0
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        n += 1
    report("dataloader_workers_pinned", batches=n, loss=float(loss), **torch_figures(torch))
