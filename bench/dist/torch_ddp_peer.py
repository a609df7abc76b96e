"""One rank of PyTorch DistributedDataParallel (gloo, CPU, 1 thread) training a bench model on Fashion-MNIST in
memory with Adam 1e-3 and the global batch split across the ranks. Rank 0 prints the job's steady-state samples/s
(the steps after the first 20)."""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "pipeline"))
import fashion_mnist  # noqa: E402
import models  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch import nn  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["cnn", "large"], required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--global-batch", type=int, default=128)
    a = p.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")  # RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT from the environment
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(42)
    x, y = fashion_mnist.torch_tensors("train")
    x, y = x[rank::world], y[rank::world]  # this rank's shard
    model = nn.parallel.DistributedDataParallel(models.torch_model(a.model))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    local = a.global_batch // world
    times = []
    for step in range(a.steps):
        i = (step * local) % (len(y) - local)
        loss = loss_fn(model(x[i:i + local]), y[i:i + local])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter())
    if rank == 0:
        steady = (len(times[20:]) - 1) * a.global_batch / (times[-1] - times[20])
        print(json.dumps({"samples_per_s": steady, "torch": torch.__version__}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
