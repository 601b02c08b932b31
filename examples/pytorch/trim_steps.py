"""Trim a `stream-litmus trace` recording to its steps: keep the events that overlap [first
`ProfilerStep#` range's begin - 1 ms, last one's end + 0.1 ms], and those without a time.

    python3 examples/pytorch/trim_steps.py IN.json.gz OUT.json.gz

A recording of a whole program holds its start-up too (NCCL's init, first launches whose call
returned after the kernel began), which widens the launch jitter the judging allows for (10.9-24.5
µs over a DDP script's life, 0.8-4.0 µs over its five steps, H100, 2026-11-27). Trimmed, the
trace holds what a profiler's schedule would: the steps (examples/pytorch/traces/ddp_*.trace.json.gz).
"""
import gzip
import json
import os
import sys
d = json.load(gzip.open(sys.argv[1]))
ev = d["traceEvents"]
steps = [e for e in ev if str(e.get("name", "")).startswith("ProfilerStep#") and "ts" in e]
lo = min(e["ts"] for e in steps) - 1000.0
hi = max(e["ts"] + e.get("dur", 0) for e in steps) + 100.0
keep = [e for e in ev if "ts" not in e or (e["ts"] <= hi and e["ts"] + e.get("dur", 0) >= lo)]
d["traceEvents"] = keep
with gzip.open(sys.argv[2] + ".tmp", "wt", compresslevel=9) as f:
    json.dump(d, f, separators=(",", ":"))
os.replace(sys.argv[2] + ".tmp", sys.argv[2])
print(f"trim {sys.argv[1]}: {len(ev)} -> {len(keep)} events, window {hi - lo:.0f} us, {len(steps)} step ranges")
