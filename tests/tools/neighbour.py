"""A neighbour on the GPU, for measuring verdicts on a shared GPU (issue 25, docs/measurements.md).

    python3 tests/tools/neighbour.py matmul SECONDS   # bf16 8192x8192 products, back to back
    python3 tests/tools/neighbour.py copies SECONDS   # pinned 256 MiB H2D and D2H, both engines
    python3 tests/tools/neighbour.py bursts SECONDS   # matmuls for 30 ms every 100 ms

Prints "neighbour: busy" once its work runs, and what it did when the time is up. Needs PyTorch
with CUDA; it is a tool for the GPU machine, not part of the crate.
"""

import sys
import time

import torch


def main() -> None:
    mode, seconds = sys.argv[1], float(sys.argv[2])
    end = time.time() + seconds
    rounds = 0
    if mode in ("matmul", "bursts"):
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        b = torch.randn_like(a)
        while time.time() < end:
            started = time.time()
            while True:
                for _ in range(4):
                    a @ b
                torch.cuda.synchronize()
                rounds += 1
                if rounds == 1:
                    print("neighbour: busy", flush=True)
                if mode == "matmul" or time.time() - started >= 0.030:
                    break
            if mode == "bursts":
                time.sleep(max(0.0, 0.100 - (time.time() - started)))
    elif mode == "copies":
        n = 256 << 20
        up_h = torch.empty(n, dtype=torch.uint8, pin_memory=True)
        down_h = torch.empty(n, dtype=torch.uint8, pin_memory=True)
        up_d = torch.empty(n, dtype=torch.uint8, device="cuda")
        down_d = torch.empty(n, dtype=torch.uint8, device="cuda")
        s_up, s_down = torch.cuda.Stream(), torch.cuda.Stream()
        while time.time() < end:
            with torch.cuda.stream(s_up):
                up_d.copy_(up_h, non_blocking=True)
            with torch.cuda.stream(s_down):
                down_h.copy_(down_d, non_blocking=True)
            torch.cuda.synchronize()
            rounds += 1
            if rounds == 1:
                print("neighbour: busy", flush=True)
    else:
        sys.exit(f"neighbour: unknown mode {mode!r} (matmul, copies or bursts)")
    print(f"neighbour: {mode}, {rounds} rounds in {seconds:.0f} s", flush=True)


if __name__ == "__main__":
    main()
