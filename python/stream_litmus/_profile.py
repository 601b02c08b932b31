"""`profile`: torch.profiler set up as the checker needs it, in three lines."""

import gzip
import os
import shutil
import tempfile


class Profile:
    """What `profile` yields: call `step()` at the end of every step."""

    def __init__(self, prof):
        self._prof = prof
        self.steps = 0

    def step(self):
        """Ends a step: the profiler's next `ProfilerStep#N` range begins. Waits for the GPU
        first, so that a step's kernels end inside its range."""
        import torch

        torch.cuda.synchronize()
        self._prof.step()
        self.steps += 1


class profile:  # noqa: N801 (used as `with stream_litmus.profile(...)`, like torch.profiler.profile)
    """A context manager over `torch.profiler.profile` with what stream-litmus needs: CPU and
    CUDA activities, CUDA sync events (each event wait and sync with its stream, which `explain`
    checks), one `ProfilerStep#N` range per `step()`, and the trace written when the block ends,
    gzipped where `path` ends in `.gz`, written beside it and renamed into place (a run cut short
    leaves no half file).

        with stream_litmus.profile("step.json.gz") as prof:
            for batch in batches:
                train_step(batch)
                prof.step()

    `warmup` steps run first and are not in the trace (their first launches load modules); the
    next `steps` are recorded, and any after them are not. Run at least `warmup + steps` steps:
    a block that ends sooner leaves its last range open at the end, holding no work of a step, and
    is warned about. torch is imported here only."""

    def __init__(self, path, steps=5, warmup=1, sync_events=True):
        if warmup < 0 or steps < 1:
            raise ValueError("warmup is a count of steps, 0 or more; steps 1 or more")
        self.path = os.fspath(path)
        self.steps = steps
        self.warmup = warmup
        self.sync_events = sync_events
        self._prof = None

    def __enter__(self):
        import torch
        from torch.profiler import ProfilerActivity, schedule

        if not torch.cuda.is_available():
            raise RuntimeError("stream_litmus.profile needs a CUDA GPU: torch sees none")
        extra = {}
        if self.sync_events:
            extra["experimental_config"] = torch._C._profiler._ExperimentalConfig(
                enable_cuda_sync_events=True
            )
        # Exactly `steps` steps recorded: each ProfilerStep#N range opens at the step() before it,
        # so recording to the end of the block would leave one more, empty, range.
        self._prof = torch.profiler.profile(
            activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
            schedule=schedule(wait=0, warmup=self.warmup, active=self.steps, repeat=1),
            **extra,
        )
        self._handle = Profile(self._prof)
        torch.cuda.synchronize()
        self._prof.__enter__()
        return self._handle

    def __exit__(self, kind, value, tb):
        import torch

        torch.cuda.synchronize()
        self._prof.__exit__(kind, value, tb)
        if kind is None:
            if self._handle.steps < self.warmup + self.steps:
                import warnings

                warnings.warn(
                    f"stream_litmus.profile: {self._handle.steps} steps ran, fewer than warmup + "
                    f"steps = {self.warmup + self.steps}: the trace's last step range holds no "
                    "whole step (claims then count it undecided)",
                    stacklevel=2,
                )
            _export(self._prof, self.path)
        return False


def _export(prof, path):
    d = os.path.dirname(os.path.abspath(path)) or "."
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".stream-litmus-", suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(tmp)
        if path.endswith(".gz"):
            with open(tmp, "rb") as f, gzip.open(tmp + ".gz", "wb", compresslevel=6) as g:
                shutil.copyfileobj(f, g)
            os.remove(tmp)
            tmp += ".gz"
        os.replace(tmp, path)
    finally:
        for t in (tmp, tmp + ".gz"):
            if os.path.exists(t) and t != path:
                os.remove(t)
