"""torch.distributed with the NCCL backend, world size 1: all_reduce, broadcast, barrier, and a
DistributedDataParallel step (NCCL's own buffers and communicator memory)."""
import os
import socket

import torch
import torch.distributed as dist

from common import report, torch_figures

s = socket.socket()
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1")
torch.cuda.set_device(0)
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
t = torch.ones(1 << 20, device="cuda")
dist.all_reduce(t)
dist.broadcast(t, 0)
dist.barrier()
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1024, 1024).cuda())
loss = model(torch.randn(64, 1024, device="cuda")).sum()
loss.backward()
torch.cuda.synchronize()
dist.destroy_process_group()
report("nccl_world1", sum=float(t.sum()), **torch_figures(torch))
