#!/usr/bin/env python3
"""An independent answer key for tests/trace_oracle/*.litmus (issue 35, the "newcomer test").

It reads the committed Chrome-trace JSON itself (standard library only) and answers each claim as
a newcomer would, from the docs' rules (docs/checking-your-program.md), never from stream-litmus's
output. It prints one JSON object: {"oracle.ID": {"answer": "Holds"|"Violated"|"Either", "why": …}}.

Margins (µs). Two GPU spans of one device share one clock (CUPTI's %globaltimer, 32 ns steps):
a gap or overlap under GPU_M = 1 µs is called Either. A host call against a GPU span crosses two
clocks that the profiler aligns only roughly (the tool measures 6-25 µs "clock error" on these
traces): a difference under HOST_M = 25 µs is Either.

Rules, as the docs state them:
- A trial: the ops whose launch call BEGAN inside the trial's range (any thread of the process);
  `trial each kernel "P"`: from one marker's launch call to the next; no trial line: the whole trace.
- `in "R"`: the launch call began inside a range R opened by the call's own thread;
  `during "R"`: inside a range R of any thread of the same process.
- A pair (a, b), a != b, counts only if they could have run together: the later-starting op's launch
  call began before the other op ended (within HOST_M of it: the pair is uncertain).
- `next B`: each a is paired with the first op of B (same process, same trial) whose launch call
  began after a's; `precedes(S, S)` on one selection is issue order (b's call began after a's).
- Call relations on one selection pair each op with its own launch call.
- exists: Holds if some pair shows it, Violated if every counted pair refutes it.
  forall: Violated if some pair refutes it, Holds if every counted pair shows it.
  ~exists: Violated if some pair shows it, Holds if every counted pair refutes it.
  A trial with no counted pair, or a deciding pair within a margin, is undecided.
  Claim: Violated if any trial refutes; Holds if every trial confirms; else Either.
"""
import fnmatch
import gzip
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GPU_M = 1.0
HOST_M = 25.0
_CACHE = {}

# ---------------------------------------------------------------------------------------- loading


def demangled(name):
    """`_Z7kernel1y` -> `kernel1(...)`: enough for patterns like "kernel1*" or "*kernel1*"."""
    m = re.match(r"_Z(\d+)", name)
    if not m:
        return name
    n = int(m.group(1))
    return name[m.end():m.end() + n] + "(...)"


def load(rel, rank_default=0):
    path = os.path.normpath(os.path.join(HERE, rel))
    if path in _CACHE:
        return _CACHE[path]
    with gzip.open(path, "rt") as f:
        d = json.load(f)
    rank = (d.get("distributedInfo") or {}).get("rank", rank_default)
    ops, calls, ranges = [], {}, []
    by_corr = {}
    for e in d["traceEvents"]:
        if e.get("ph") != "X":
            continue
        cat, a = e.get("cat"), e.get("args") or {}
        t0 = float(e["ts"])
        t1 = t0 + float(e.get("dur", 0))
        if cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            kind = {"kernel": "kernel", "gpu_memcpy": "copy", "gpu_memset": "memset"}[cat]
            op = dict(name=e["name"], alt=demangled(e["name"]), kind=kind, start=t0, end=t1,
                      device=a.get("device"), stream=a.get("stream"), corr=a.get("correlation"),
                      proc=a.get("process"), rank=rank, file=rel, dir=None, mem=None)
            if kind == "copy":
                n = e["name"]
                op["dir"] = next((v for k, v in (("HtoD", "h2d"), ("DtoH", "d2h"), ("DtoD", "d2d"),
                                                 ("PtoP", "p2p")) if k in n), None)
                op["mem"] = "pinned" if "Pinned" in n else "pageable" if "Pageable" in n else None
            ops.append(op)
        elif cat in ("cuda_runtime", "cuda_driver"):
            c = dict(name=e["name"], begin=t0, end=t1, pid=e["pid"], tid=e["tid"])
            calls[(e["pid"], a.get("correlation"))] = c
            by_corr.setdefault(a.get("correlation"), []).append(c)
        elif cat in ("user_annotation", "cpu_op"):
            ranges.append(dict(name=e["name"], begin=t0, end=t1, pid=e["pid"], tid=e["tid"]))
    for op in ops:
        if op["proc"] is not None:          # a `stream-litmus trace` recording of several processes
            op["call"] = calls.get((op["proc"], op["corr"]))
        else:                               # one process: the correlation id alone
            cs = by_corr.get(op["corr"], [])
            op["call"] = cs[0] if len(cs) == 1 else None
        op["pid"] = op["call"]["pid"] if op["call"] else op["proc"]
    ranges.sort(key=lambda r: r["begin"])
    tr = dict(ops=ops, ranges=ranges, calls=list(calls.values()), rank=rank, file=rel)
    _CACHE[path] = tr
    return tr


def T(name):
    return "../../examples/" + name

# ------------------------------------------------------------------------------------ selections


def named(op, pat):
    return fnmatch.fnmatchcase(op["name"], pat) or fnmatch.fnmatchcase(op["alt"], pat)


def inside(tr, call, pat, same_thread):
    if call is None:
        return False
    for r in tr["ranges"]:
        if r["begin"] > call["begin"]:
            break
        if (r["pid"] == call["pid"] and (not same_thread or r["tid"] == call["tid"])
                and r["begin"] <= call["begin"] <= r["end"] and fnmatch.fnmatchcase(r["name"], pat)):
            return True
    return False


def select(traces, kind="any", pat=None, stream=None, device=None, rank=None, in_=None,
           during=None, call=None, dir=None, mem=None):
    out = []
    for tr in traces:
        for op in tr["ops"]:
            if kind != "any" and op["kind"] != kind:
                continue
            if pat is not None and not named(op, pat):
                continue
            if stream is not None and op["stream"] != stream:
                continue
            if device is not None and op["device"] != device:
                continue
            if rank is not None and op["rank"] != rank:
                continue
            if dir is not None and op["dir"] != dir:
                continue
            if mem is not None and op["mem"] != mem:
                continue
            if call is not None and not (op["call"] and fnmatch.fnmatchcase(op["call"]["name"], call)):
                continue
            if in_ is not None and not inside(tr, op["call"], in_, True):
                continue
            if during is not None and not inside(tr, op["call"], during, False):
                continue
            out.append(op)
    return out


def host_runs(tr, pat):
    """`host "P"`: ranges on threads that made no CUDA call, paired in order with the process's
    cudaLaunchHostFunc / cudaStreamAddCallback calls; each run's `call` is that call."""
    cuda_threads = {(c["pid"], c["tid"]) for c in tr["calls"]}
    runs = [r for r in tr["ranges"] if (r["pid"], r["tid"]) not in cuda_threads
            and fnmatch.fnmatchcase(r["name"], pat)]
    enq = sorted((c for c in tr["calls"] if c["name"] in ("cudaLaunchHostFunc", "cudaStreamAddCallback",
                  "cuLaunchHostFunc", "cuStreamAddCallback")), key=lambda c: c["begin"])
    assert len(runs) == len(enq), (len(runs), len(enq))
    return [dict(name=r["name"], alt=r["name"], kind="host", start=r["begin"], end=r["end"], call=c,
                 pid=c["pid"], rank=tr["rank"], stream=None, device=None, file=tr["file"])
            for r, c in zip(runs, enq)]

# ---------------------------------------------------------------------------------------- trials


def trials_by_range(traces, pat):
    """Trial n: the ops whose launch call began inside the n-th range `pat` of each trace (any thread)."""
    per = []
    for tr in traces:
        rs = [r for r in tr["ranges"] if fnmatch.fnmatchcase(r["name"], pat)]
        per.append((tr, rs))
    n = min(len(rs) for _, rs in per)
    out = []
    for i in range(n):
        wins = [(tr["file"], rs[i]["pid"], rs[i]["begin"], rs[i]["end"]) for tr, rs in per]
        out.append((f"{pat.rstrip('*')}{i + 1}", wins))
    return out


def trials_by_kernel(tr, pat):
    marks = sorted((o for o in tr["ops"] if o["kind"] == "kernel" and named(o, pat)),
                   key=lambda o: o["call"]["begin"])
    out = []
    for i, m in enumerate(marks):
        end = marks[i + 1]["call"]["begin"] if i + 1 < len(marks) else float("inf")
        out.append((f"marker {i + 1}", [(tr["file"], m["pid"], m["call"]["begin"], end)]))
    return out


def whole():
    return [("whole trace", None)]


def in_trial(ops, wins):
    if wins is None:
        return list(ops)
    out = []
    for op in ops:
        c = op["call"]
        if c is None:
            continue
        for f, pid, b, e in wins:
            if op["file"] == f and c["pid"] == pid and b <= c["begin"] < e + 1e-9:
                out.append(op)
                break
    return out

# ------------------------------------------------------------------------------------- relations
# Each returns (outcome, amount): outcome "Y", "N" or "?" (within a margin); amount in µs.


def margin(a, b):
    return HOST_M if "host" in (a["kind"], b["kind"]) else GPU_M


def r_precedes(a, b):
    gap = b["start"] - a["end"]
    m = margin(a, b)
    return ("Y" if gap > m else "N" if gap < -m else "?"), gap


def r_overlaps(a, b):
    ov = min(a["end"], b["end"]) - max(a["start"], b["start"])
    m = margin(a, b)
    return ("Y" if ov > m else "N" if ov < -m else "?"), ov


def r_serializes(a, b):
    o, ov = r_overlaps(a, b)
    return {"Y": "N", "N": "Y", "?": "?"}[o], -ov


def r_returns_before(a, _b):
    d = a["end"] - a["call"]["end"]          # > 0: the call returned before the op ended
    return ("Y" if d > HOST_M else "N" if d < -HOST_M else "?"), d


def r_returns_after(a, _b):
    o, d = r_returns_before(a, a)
    return {"Y": "N", "N": "Y", "?": "?"}[o], -d


def r_blocks(a, _b):
    held = min(a["end"], a["call"]["end"]) - max(a["start"], a["call"]["begin"])
    half = (a["end"] - a["start"]) / 2
    d = held - half
    return ("Y" if d > 2 * HOST_M else "N" if d < -2 * HOST_M else "?"), held


RELS = dict(precedes=r_precedes, overlaps=r_overlaps, serializes=r_serializes,
            returns_before=r_returns_before, returns_after=r_returns_after, blocks=r_blocks)
CALL_RELS = ("returns_before", "returns_after", "blocks")


def could(a, b):
    """Could a and b have run together? "Y", "N" or "?" (the call began within HOST_M of the end)."""
    later, other = (a, b) if a["start"] >= b["start"] else (b, a)
    if later["call"] is None:
        return "N"
    d = other["end"] - later["call"]["begin"]  # > 0: launched before the other ended
    return "Y" if d > HOST_M else "N" if d < -HOST_M else "?"


def pairs(A, B, mode):
    if mode == "next":
        for a in A:
            if a["call"] is None:
                continue
            later = [b for b in B if b is not a and b["call"] and b["pid"] == a["pid"]
                     and b["file"] == a["file"] and b["call"]["begin"] > a["call"]["begin"]]
            if later:
                yield a, min(later, key=lambda b: b["call"]["begin"])
    elif mode == "issue":
        for a in A:
            for b in A:
                if b is not a and a["call"] and b["call"] and b["call"]["begin"] > a["call"]["begin"]:
                    yield a, b
    else:
        for a in A:
            for b in B:
                if b is not a:
                    yield a, b


def judge_trial(q, rel, A, B, mode):
    """One trial: ("Y"|"N"|"?", text)."""
    f = RELS[rel]
    if rel in CALL_RELS:                      # each op with its own launch call
        res = [f(a, a) for a in A if a["call"]]
        if q == "one" and len(res) != 1:
            return "?", f"{len(res)} ops where one was meant"
        outs = [o for o, _ in res]
        amts = [x for _, x in res]
        rng = f"{min(amts):+.2f}..{max(amts):+.2f} µs" if amts else "none"
        if q in ("forall", "one"):
            o = "N" if "N" in outs else "?" if "?" in outs or not outs else "Y"
        else:  # exists
            o = "Y" if "Y" in outs else "?" if "?" in outs or not outs else "N"
        return o, f"{len(outs)} ops, {rel} amounts {rng}"
    ys, ns, unc, skipped = [], [], [], 0
    ps = list(pairs(A, B, mode))
    if q == "one" and (len(A) != 1 or len(B) != 1):
        return "?", f"{len(A)}x{len(B)} ops where one each was meant"
    for a, b in ps:
        o, x = f(a, b)
        c = "Y" if (rel == "overlaps" and o == "Y") or (rel == "serializes" and o == "N") else could(a, b)
        if c == "N":
            skipped += 1
        elif c == "?" or o == "?":
            unc.append((o, x))
        elif o == "Y":
            ys.append(x)
        else:
            ns.append(x)
    txt = f"{len(ys)} pairs show it, {len(ns)} refute, {len(unc)} uncertain, {skipped} could not"
    if ys or ns:
        allx = ys + ns
        txt += f" (amounts {min(allx):+.2f}..{max(allx):+.2f} µs)"
    may_y = any(o in "Y?" for o, _ in unc)     # an uncertain pair that might show it
    may_n = any(o in "N?" for o, _ in unc)     # … or might refute it
    if q == "exists":
        o = "Y" if ys else "?" if may_y else "N" if ns else "?"
    elif q in ("forall", "one"):
        o = "N" if ns else "?" if may_n else "Y" if ys else "?"
    else:  # ~exists
        o = "N" if ys else "?" if may_y else "Y" if ns else "?"
    return o, txt


def claim(trials, checks):
    """checks: list of (quantifier, relation, A-func, B-func, mode); A/B funcs take the trial window."""
    per = []
    texts = []
    for tname, wins in trials:
        outs = []
        for q, rel, fa, fb, mode in checks:
            o, txt = judge_trial(q, rel, in_trial(fa, wins), in_trial(fb, wins), mode)
            outs.append(o)
            texts.append(f"{tname}: {txt}")
        per.append("N" if "N" in outs else "?" if "?" in outs else "Y")
    ans = "Violated" if "N" in per else "Holds" if all(p == "Y" for p in per) else "Either"
    summary = f"{per.count('Y')}/{len(per)} trials show it, {per.count('N')} refute, {per.count('?')} undecided"
    return ans, summary, texts


def faster(trials, slow, fast):
    per, texts = [], []
    for tname, wins in trials:
        s, f = in_trial(slow, wins), in_trial(fast, wins)
        ls = max(o["end"] for o in s) - min(o["start"] for o in s)
        lf = max(o["end"] for o in f) - min(o["start"] for o in f)
        d = ls - lf
        per.append("Y" if d > GPU_M else "N" if d < -GPU_M else "?")
        texts.append(f"{tname}: slow {ls:.1f} µs ({len(s)} ops), fast {lf:.1f} µs ({len(f)} ops)")
    ans = "Violated" if "N" in per else "Holds" if all(p == "Y" for p in per) else "Either"
    return ans, f"{per.count('Y')}/{len(per)} trials faster", texts
