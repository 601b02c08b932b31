"""The installed wheel on a GPU (docs/python.md): the side-stream step of seed 000 §7.6
(side_stream.py) recorded two ways, then judged with `assert_claims`.

    python3 wheel_smoke.py profile OUT.json.gz   # recorded by stream_litmus.profile
    stream-litmus trace --out OUT.json.gz -- python3 wheel_smoke.py nvtx
                                                 # recorded by CUPTI; steps as NVTX ranges
    python3 wheel_smoke.py judge TRACE…          # side_stream.litmus on each, in turn

The step: `produce` on the current stream, the side stream waits for it (`wait_stream`) and runs
`consume`, the current stream waits for the side stream before `after`.
"""
import contextlib
import sys

import stream_litmus

HERE = __file__.rsplit("/", 1)[0] if "/" in __file__ else "."
STEPS = 5


def run(mode, out=None):
    import torch

    nvtx = mode == "nvtx"

    @contextlib.contextmanager
    def ranged(name):
        if nvtx:
            torch.cuda.nvtx.range_push(name)
            try:
                yield
            finally:
                torch.cuda.nvtx.range_pop()
        else:
            with torch.profiler.record_function(name):
                yield

    a = torch.randn(4096, 4096, device="cuda")
    b = torch.randn(4096, 4096, device="cuda")
    side = torch.cuda.Stream()

    def step():
        main = torch.cuda.current_stream()
        with ranged("produce"):
            x = a @ b
        side.wait_stream(main)
        with torch.cuda.stream(side), ranged("consume"):
            y = x @ b
        main.wait_stream(side)
        with ranged("after"):
            return y + 1

    step()  # warm-up: the first launches load modules
    torch.cuda.synchronize()
    if nvtx:
        for i in range(1, STEPS + 1):
            with ranged(f"ProfilerStep#{i}"):
                step()
            torch.cuda.synchronize()
        return
    with stream_litmus.profile(out, steps=STEPS, warmup=1) as prof:
        for _ in range(1 + STEPS):
            step()
            prof.step()
    print(f"profiled {prof.steps} steps into {out}")


def judge(traces):
    for t in traces:
        verdicts = stream_litmus.assert_claims(f"{HERE}/side_stream.litmus", traces=[t])
        for v in verdicts:
            print(f"{t}: {v}")


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "judge":
        judge(sys.argv[2:])
    else:
        run(mode, sys.argv[2] if len(sys.argv) > 2 else None)
