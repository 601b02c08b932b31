"""Seed 003, 参考 4 (详解Pytorch里的pin_memory 和 non_blocking): `tensor.to("cuda", non_blocking=True)`
from pinned memory overlaps compute on another stream and returns at once; from pageable memory,
the notes say, it does neither.

Each step runs the same thing twice, in `record_function("pinned")` and `("pageable")`: a chain of
bf16 matmuls on the compute stream, and a 256 MiB host-to-device copy with `non_blocking=True` on a
copy stream, issued right after the matmuls.

    python3 examples/pytorch/non_blocking_copy.py [TRACE]   (default non_blocking_copy.json.gz)
"""
import sys

import torch
from torch.profiler import record_function

from profiled import profile_steps

MiB = 1 << 20
pinned = torch.ones(256 * MiB // 4, dtype=torch.float32).pin_memory()
pageable = torch.ones(256 * MiB // 4, dtype=torch.float32)
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
out = [torch.empty_like(a) for _ in range(6)]
copy_stream = torch.cuda.Stream()


def phase(name, host):
    with record_function(name):
        for o in out:
            torch.mm(a, a, out=o)
        with torch.cuda.stream(copy_stream):
            host.to("cuda", non_blocking=True)


def step(_i):
    phase("pinned", pinned)
    torch.cuda.synchronize()
    phase("pageable", pageable)


profile_steps(step, sys.argv[1] if len(sys.argv) > 1 else "non_blocking_copy.json.gz")
