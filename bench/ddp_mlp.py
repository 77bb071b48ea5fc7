"""PyTorch DDP over gloo: the peer twinflow's multi-process MLP is measured against.

Launched by bench/mpi_bench.sh as `mpirun -np R /usr/bin/python3 bench/ddp_mlp.py STEPS`; rank and
size come from Open MPI's environment. The MLP 784-4096-4096-10, global batch 512 split over the
ranks, fp32, SGD, one intra-op thread per rank (as twinflow gives each device one BLAS thread).
Rank 0 prints "samples_per_s <value>" over STEPS timed steps after two untimed ones.
"""
import os
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
    size = int(os.environ["OMPI_COMM_WORLD_SIZE"])
    torch.set_num_threads(1)
    torch.manual_seed(1)
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29533", rank=rank,
                            world_size=size)
    model = nn.Sequential(nn.Linear(784, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),
                          nn.Linear(4096, 10))
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    batch = 512 // size
    x = torch.randn(batch, 784)
    y = torch.randint(0, 10, (batch,))

    def step():
        optimizer.zero_grad()
        loss_fn(ddp(x), y).backward()
        optimizer.step()

    for _ in range(2):
        step()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    dist.barrier()
    seconds = time.perf_counter() - start
    if rank == 0:
        print(f"samples_per_s {512 * steps / seconds:.2f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
