"""Two processes, one GPU each, bf16 matmuls and an NCCL all-reduce: a two-GPU program for
`stream-litmus trace` (no profiler of its own):

    NCCL_NVLS_ENABLE=0 stream-litmus trace --out two.json.gz -- python3 examples/pytorch/two_gpus.py
"""
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def rank_main(rank, world):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29531")
    dev = torch.device("cuda", rank)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    for _ in range(5):
        b = a @ a
        dist.all_reduce(b)
    torch.cuda.synchronize()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(rank_main, args=(2,), nprocs=2, join=True)
