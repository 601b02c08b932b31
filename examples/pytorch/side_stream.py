"""Seed 000 §7.6 in PyTorch: a side stream ordered by events. `produce` runs on the current
stream; the side stream waits for it (`wait_stream`: an event recorded on the current stream,
waited for on the side stream) and runs `consume`; the current stream waits for the side stream
before `after`. The profiler's `cuda_sync` events (profiled.py asks for them) record each wait
with the stream and the record it waits for, so that `stream-litmus explain` checks those orders
and names them as the cause of each wait.

    python3 examples/pytorch/side_stream.py [TRACE]   (default side_stream.json.gz)
"""
import sys

import torch

from profiled import profile_steps, ranged

a = torch.randn(4096, 4096, device="cuda")
b = torch.randn(4096, 4096, device="cuda")
side = torch.cuda.Stream()


def step(_i):
    main = torch.cuda.current_stream()
    with ranged("produce"):
        x = a @ b
    side.wait_stream(main)
    with torch.cuda.stream(side), ranged("consume"):
        y = x @ b
    main.wait_stream(side)
    with ranged("after"):
        return y + 1


profile_steps(step, sys.argv[1] if len(sys.argv) > 1 else "side_stream.json.gz")
