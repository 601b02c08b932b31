"""Seed 003, 参考 3: "pytorch中的kernel是异步的，不会等待执行完才继续后面kernel的启动".

Each step launches eight 8192² bf16 matmuls inside `record_function("launch")` and only then
synchronizes: if launches are asynchronous, every launch call returns before the first matmul
has ended (the host runs ahead of the GPU by the whole queue).

    python3 examples/pytorch/async_launch.py [TRACE]   (default async_launch.json.gz)
"""
import sys

import torch
from torch.profiler import record_function

from profiled import profile_steps

a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
out = [torch.empty_like(a) for _ in range(8)]


def step(_i):
    with record_function("launch"):
        for o in out:
            torch.mm(a, b, out=o)


profile_steps(step, sys.argv[1] if len(sys.argv) > 1 else "async_launch.json.gz")
