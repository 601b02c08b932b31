"""Run a step function under torch.profiler and write one Kineto trace per process.

Every example here calls `profile_steps(step, out)`: one warm-up step, then STEPS profiled steps,
each a `ProfilerStep#N` range in the trace, which stream-litmus counts as one trial. The trace is
the profiler's own Chrome-trace JSON (`export_chrome_trace`), gzip when the name ends in `.gz`.

With `--no-profiler` among the script's arguments nothing is profiled: the same steps run, and
`ProfilerStep#N` and every `ranged(NAME)` become NVTX ranges instead, which
`stream-litmus trace -- python3 SCRIPT … --no-profiler` records (one trace for every process), so
that one claim file selects the same ranges in both recordings.
"""
import contextlib
import gzip
import os
import shutil
import sys
import tempfile

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

STEPS = int(os.environ.get("STEPS", "5"))
# SYNC_EVENTS=0 leaves out the profiler's `cuda_sync` events (each event wait with the stream and
# record it waits for, each sync with its stream), which `stream-litmus explain` checks.
SYNC_EVENTS = os.environ.get("SYNC_EVENTS", "1") != "0"
PROFILED = "--no-profiler" not in sys.argv


@contextlib.contextmanager
def ranged(name):
    """A host range: `record_function` under the profiler, an NVTX range without it."""
    if PROFILED:
        with record_function(name):
            yield
    else:
        torch.cuda.nvtx.range_push(name)
        try:
            yield
        finally:
            torch.cuda.nvtx.range_pop()


def annotate_steps(step, steps=STEPS):
    """The steps of `profile_steps` without a profiler: step N in the NVTX range ProfilerStep#N."""
    step(-1)
    torch.cuda.synchronize()
    for i in range(steps + 1):
        if i == 0:  # the profiler's warm-up step, unrecorded there
            step(i)
        else:
            with ranged(f"ProfilerStep#{i}"):
                step(i)
        torch.cuda.synchronize()


def profile_steps(step, out, steps=STEPS):
    """Runs `step(i)` once unprofiled, then `steps` times profiled; writes the trace to `out`.
    With `--no-profiler`, runs the same steps as NVTX ranges and writes nothing."""
    if not PROFILED:
        annotate_steps(step, steps)
        return
    step(-1)
    torch.cuda.synchronize()
    extra = {}
    if SYNC_EVENTS:
        extra["experimental_config"] = torch._C._profiler._ExperimentalConfig(
            enable_cuda_sync_events=True
        )
    with profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
        schedule=schedule(wait=0, warmup=1, active=steps, repeat=1),
        **extra,
    ) as prof:
        for i in range(steps + 1):
            step(i)
            torch.cuda.synchronize()
            prof.step()
    # Written beside the target and renamed into place: a cut-short run leaves no half file.
    d = os.path.dirname(os.path.abspath(out)) or "."
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, suffix=".json")
    os.close(fd)
    prof.export_chrome_trace(tmp)
    if out.endswith(".gz"):
        with open(tmp, "rb") as f, gzip.open(tmp + ".gz", "wb", compresslevel=6) as g:
            shutil.copyfileobj(f, g)
        os.remove(tmp)
        tmp += ".gz"
    os.replace(tmp, out)
    print(f"trace written to {out}")
