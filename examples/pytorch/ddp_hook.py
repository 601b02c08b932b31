"""Seed 003, 测试 03/04/05: a DDP step on two GPUs whose comm hook all-reduces each gradient
bucket and then runs a kernel of its own after `work.wait()`.

    python3 examples/pytorch/ddp_hook.py MODE [PREFIX] [--no-profiler]

MODE is one of
  same_stream                 03: the hook runs on the compute stream ("hook会阻塞backward");
  own_stream                  04: the hook runs on a stream of its own ("hook没有阻塞backward");
  own_stream_one_connection   05: as 04, under CUDA_DEVICE_MAX_CONNECTIONS=1 ("会阻塞backward").
Each rank writes PREFIX.rank{0,1}.json.gz (default PREFIX: ddp_MODE). With --no-profiler no
profiler runs and the ranges are NVTX ranges, for
`stream-litmus trace --out T.json.gz -- python3 ddp_hook.py MODE --no-profiler` (one trace of
both processes; profiled.py). Twelve bf16
Linear(4096, 4096) layers, a batch of 8192 rows; every 32 MiB weight is a bucket of its own.
"""
import os
import sys

MODES = ("same_stream", "own_stream", "own_stream_one_connection")
args = [a for a in sys.argv[1:] if a != "--no-profiler"]
mode = args[0] if args else ""
if mode not in MODES:
    sys.exit(f"usage: ddp_hook.py {{{'|'.join(MODES)}}} [PREFIX] [--no-profiler]")
prefix = args[1] if len(args) > 1 else f"ddp_{mode}"
if mode == "own_stream_one_connection":
    # Read by the driver when the context is created: set before any CUDA call, in every rank.
    os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from profiled import profile_steps, ranged  # noqa: E402


def rank_main(rank, world):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    device = torch.device("cuda", rank)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=device)
    model = nn.Sequential(*[nn.Linear(4096, 4096, bias=False) for _ in range(12)])
    ddp = DDP(model.to(device, torch.bfloat16), device_ids=[rank], bucket_cap_mb=25)
    hook_stream = None if mode == "same_stream" else torch.cuda.Stream()
    extra = torch.randn(2048, 2048, device=device, dtype=torch.bfloat16)

    def all_reduce_then_kernel(bucket):
        t = bucket.buffer()
        work = dist.all_reduce(t, async_op=True)
        work.wait()  # the current stream waits for the all-reduce
        t.div_(world)
        torch.mm(extra, extra)  # the hook's own kernel, which needs the communication done
        fut = torch.futures.Future(devices=[device])
        fut.set_result(t)  # records an event on the current stream; DDP waits on it at the end
        return fut

    def hook(_state, bucket):
        with ranged("comm_hook"):
            if hook_stream is None:
                return all_reduce_then_kernel(bucket)
            hook_stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(hook_stream):
                return all_reduce_then_kernel(bucket)

    ddp.register_comm_hook(None, hook)
    x = torch.randn(8192, 4096, device=device, dtype=torch.bfloat16)

    def step(_i):
        with ranged("forward"):
            loss = ddp(x).float().pow(2).mean()
        with ranged("backward"):
            loss.backward()

    profile_steps(step, f"{prefix}.rank{rank}.json.gz")
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(rank_main, args=(2,), nprocs=2, join=True)
