#!/usr/bin/env python3
"""A stand-in for torchrun (torch.distributed.run) as a memory tracer sees it, for tests/ranks'
`launch` group, where PyTorch is not installed.

    launch_ranks.py --nnodes N --node-rank K --nproc-per-node P -- COMMAND...

Starts P worker processes of COMMAND on this "node", each with the environment torchrun gives
its workers: RANK (K * P + local rank), LOCAL_RANK, WORLD_SIZE (N * P), LOCAL_WORLD_SIZE,
GROUP_RANK, GROUP_WORLD_SIZE, ROLE_RANK, ROLE_WORLD_SIZE, MASTER_ADDR, MASTER_PORT and
TORCHELASTIC_RUN_ID; waits for them all and exits with the first failing worker's status (0
when all succeeded). Unlike torchrun it does not stop the other workers when one fails, does not
restart any and opens no rendezvous: what the tracer reads (the variables, one process per rank,
children of the launcher) is the same. Python 3 standard library only.
"""
import argparse
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--nnodes', type=int, default=1)
    ap.add_argument('--node-rank', type=int, default=0)
    ap.add_argument('--nproc-per-node', type=int, required=True)
    ap.add_argument('command', nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ['--'] else a.command
    if not cmd:
        ap.error('no command')
    world = a.nnodes * a.nproc_per_node
    procs = []
    for local in range(a.nproc_per_node):
        env = dict(os.environ,
                   RANK=str(a.node_rank * a.nproc_per_node + local), LOCAL_RANK=str(local),
                   WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(a.nproc_per_node),
                   GROUP_RANK=str(a.node_rank), GROUP_WORLD_SIZE=str(a.nnodes),
                   ROLE_RANK=str(a.node_rank * a.nproc_per_node + local),
                   ROLE_WORLD_SIZE=str(world), MASTER_ADDR='127.0.0.1', MASTER_PORT='29500',
                   TORCHELASTIC_RUN_ID='none')
        procs.append(subprocess.Popen(cmd, env=env))
    status = 0
    for p in procs:
        rc = p.wait()
        if rc != 0 and status == 0:
            status = rc if rc > 0 else 128 - rc
    sys.exit(status)


if __name__ == '__main__':
    main()
