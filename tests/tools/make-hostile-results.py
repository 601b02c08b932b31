#!/usr/bin/env python3
"""Writes the hostile results files of issue 22 into a folder, from a real results file.

    python3 tests/tools/make-hostile-results.py tests/fixtures/core-h100.json OUT_DIR

Each is small on disk and large once read: a gzip with a 1.8 GiB string, a gzip with a million
timelines, devices near 2^32 and 1e9, a second gzip member, data after the object. Used to measure
peak memory and time to refusal with /usr/bin/time -v (docs/results.md, "Limits"); the CPU tests
in tests/costs/hostile_results.rs build smaller ones of the same shapes.
"""
import gzip, json, os, sys, zlib

src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
base = json.load(open(src))
base["claims"] = base["claims"][:1]
head = json.dumps(base)

def gz_stream(path, parts):
    """Writes a gzip of the concatenated byte parts (a part may be (bytes, repeat))."""
    with open(path, "wb") as f:
        comp = zlib.compressobj(1, zlib.DEFLATED, 31)
        for p in parts:
            chunk, n = p if isinstance(p, tuple) else (p, 1)
            block = chunk * max(1, (1 << 20) // max(1, len(chunk)))
            per = len(block) // len(chunk)
            while n > 0:
                k = min(n, per)
                f.write(comp.compress(block[: k * len(chunk)]))
                n -= k
        f.write(comp.flush())

# 1. A 1.8 GiB string: the claim's statement.
cut = head.index('"statement": "') + len('"statement": "')
gz_stream(f"{out}/long-string.json.gz", [head[:cut].encode(), (b"a", 1800 << 20), b'"}'])

# 2. A million timelines in the first claim.
t0 = json.dumps(base["claims"][0]["trials"]["timelines"][0]).encode()
cut = head.index('"timelines": [') + len('"timelines": [')
gz_stream(f"{out}/million-timelines.json.gz",
          [head[:cut].encode(), t0, (b"," + t0, 999_999), b"]}}]}"])

# 3. Devices out of range.
for name, dev, streams in [("dev-4294967295", 4294967295, 1), ("dev-2147483648", 2147483648, 1),
                           ("dev-4294967294x30", 4294967294, 30), ("dev-1e9", 1_000_000_000, 1)]:
    d = json.loads(head)
    ss = d["claims"][0]["claim"]["program"]["streams"]
    for s in ss[:streams]:
        s["device"] = dev
    while len(ss) < streams:
        ss.append(dict(ss[0], id=len(ss), device=dev))
    json.dump(d, open(f"{out}/{name}.json", "w"))

# 4. A second gzip member, and data after the object.
with open(f"{out}/two-members.json.gz", "wb") as f:
    f.write(gzip.compress(head.encode()))
    f.write(gzip.compress(b'{"more": 1}'))
open(f"{out}/trailing.json", "w").write(head + "\n{}\n")
for n in sorted(os.listdir(out)):
    print(f"{os.path.getsize(os.path.join(out, n)):>12} {n}")
