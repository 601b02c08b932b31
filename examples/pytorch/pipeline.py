"""Seed 004 §2 (多Stream并行) and seed 000 §7.3: a chunked host-to-device → compute → device-to-host
pipeline on four streams finishes sooner than the same work on one stream.

Each step runs it both ways, in `record_function("one_stream")` and `("four_streams")`: 8 chunks of
32 MiB from pinned memory, each copied in, squared by a few elementwise kernels, and copied out.

    python3 examples/pytorch/pipeline.py [TRACE]   (default pipeline.json.gz)
"""
import sys

import torch
from torch.profiler import record_function

from profiled import profile_steps

MiB = 1 << 20
CHUNKS = 8
host_in = [torch.ones(32 * MiB // 4).pin_memory() for _ in range(CHUNKS)]
host_out = [torch.empty(32 * MiB // 4).pin_memory() for _ in range(CHUNKS)]
dev = [torch.empty(32 * MiB // 4, device="cuda") for _ in range(CHUNKS)]
streams = [torch.cuda.Stream() for _ in range(4)]


def chunk(i, s):
    with torch.cuda.stream(s):
        dev[i].copy_(host_in[i], non_blocking=True)
        for _ in range(4):
            dev[i].mul_(dev[i])
        host_out[i].copy_(dev[i], non_blocking=True)


def step(_i):
    with record_function("one_stream"):
        for i in range(CHUNKS):
            chunk(i, streams[0])
    torch.cuda.synchronize()
    with record_function("four_streams"):
        for i in range(CHUNKS):
            chunk(i, streams[i % 4])


profile_steps(step, sys.argv[1] if len(sys.argv) > 1 else "pipeline.json.gz")
