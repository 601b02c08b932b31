#!/usr/bin/env python3
"""An independent answer key for tests/trace_oracle/*.litmus (issue 35, the "newcomer test").

It reads the committed Chrome-trace JSON itself (standard library only) and answers each claim as a
newcomer would, from the rules of docs/checking-your-program.md, never from stream-litmus's output.
Prints one JSON object: {"oracle.ID": {"answer": "Holds"|"Violated"|"Either", "why": "..."}}.

Margins (µs):
- GPU_M = 0.5 between two GPU spans of one device: one clock (CUPTI's globaltimer, ns digits in
  every trace). In all committed traces, consecutive ops of one stream never overlap and never
  leave less than 0.77 µs between them, so stamp noise is well under 0.5 µs; a gap or overlap
  smaller than that is Either.
- HOST_M = 25 between a host call or range and a GPU span: two clocks, aligned by the profiler only
  roughly (the tool itself measures 5-25 µs of clock error on these traces). Twice that for `blocks`,
  whose held time has an error at each end.

Rules, as the docs state them:
- A trial holds the ops whose launch call BEGAN inside the trial's range, on any thread of its
  process; `trial each kernel "P"`: from one marker's launch call to the next; no trial line: the
  whole trace. Several traces, or a `stream-litmus trace` recording of several processes: trial n
  is the n-th range of every process of every file. Two recordings (`trace … as NAME`, `from NAME`):
  the same, `from` being the op's file; only `faster` compares them.
- `in "R"`: the launch call began inside a range R of the call's own thread; `during "R"`: inside a
  range R of any thread of the same process. Ops join their call by correlation id (and process).
- A pair (a, b), a != b, counts only if they could have run together: the later-starting op's launch
  call began before the other op ended (within HOST_M of that end: uncertain).
- `next B`: a is paired with the first op of B (same process, same trial) whose launch call began
  after a's. `precedes(S, S)` on one selection: issue order (b's call began after a's).
- Call relations (returns_before/after, blocks) pair each op with its own launch call.
- exists: Holds if some pair shows it, Violated if every counted pair refutes it. forall: Violated if
  some pair refutes it, Holds if every counted pair shows it. ~exists: Violated if some pair shows it,
  Holds if every counted pair refutes it. A trial with no counted pair, or whose deciding pair lies
  within a margin, is undecided. Claim: Violated if a trial refutes; Holds if all confirm; else Either.
"""
import fnmatch
import gzip
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GPU_M = 0.5
HOST_M = 25.0
_CACHE = {}

# ---------------------------------------------------------------------------------------- loading


def demangled(name):
    """`_Z7kernel1y` -> `kernel1(...)`: enough for patterns like "kernel1*" or "*kernel1*"."""
    m = re.match(r"_Z(\d+)", name)
    return name[m.end():m.end() + int(m.group(1))] + "(...)" if m else name


def load(rel):
    path = os.path.normpath(os.path.join(HERE, "../../examples", rel))
    if path in _CACHE:
        return _CACHE[path]
    with gzip.open(path, "rt") as f:
        d = json.load(f)
    rank = (d.get("distributedInfo") or {}).get("rank", 0)
    ops, calls, by_corr, ranges = [], {}, {}, []
    for e in d["traceEvents"]:
        if e.get("ph") != "X":
            continue
        cat, a = e.get("cat"), e.get("args") or {}
        t0 = float(e["ts"])
        t1 = t0 + float(e.get("dur", 0))
        if cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            n = e["name"]
            op = dict(name=n, alt=demangled(n), kind={"kernel": "kernel", "gpu_memcpy": "copy",
                      "gpu_memset": "memset"}[cat], start=t0, end=t1, device=a.get("device"),
                      stream=a.get("stream"), corr=a.get("correlation"), proc=a.get("process"),
                      rank=rank, file=rel, dir=None, mem=None)
            if cat == "gpu_memcpy":
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
        if op["proc"] is not None:          # a `stream-litmus trace` recording names the process
            op["call"] = calls.get((op["proc"], op["corr"]))
        else:                               # a profiler trace: one process, the correlation id alone
            cs = by_corr.get(op["corr"], [])
            op["call"] = cs[0] if len(cs) == 1 else None
        op["pid"] = op["call"]["pid"] if op["call"] else op["proc"]
    ranges.sort(key=lambda r: r["begin"])
    _CACHE[path] = dict(ops=ops, ranges=ranges, calls=list(calls.values()), rank=rank, file=rel)
    return _CACHE[path]

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
                and call["begin"] <= r["end"] and fnmatch.fnmatchcase(r["name"], pat)):
            return True
    return False


def select(traces, kind="any", pat=None, in_=None, during=None, call=None, **eq):
    """`select X = KIND "PAT" in "R" during "R" call "C"`; eq: stream, device, rank, dir, mem, file."""
    out = []
    for tr in traces:
        for op in tr["ops"]:
            if ((kind == "any" or op["kind"] == kind) and (pat is None or named(op, pat))
                    and all(op[k] == v for k, v in eq.items())
                    and (call is None or (op["call"] and fnmatch.fnmatchcase(op["call"]["name"], call)))
                    and (in_ is None or inside(tr, op["call"], in_, True))
                    and (during is None or inside(tr, op["call"], during, False))):
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
                 pid=c["pid"], file=tr["file"]) for r, c in zip(runs, enq)]

# ---------------------------------------------------------------------------------------- trials
# A trial is (name, windows): each window (file, pid, from, to) takes the ops whose launch call
# began in [from, to] in that file and process; windows None: the whole trace.


def trials_by_range(traces, pat):
    """Trial n: the n-th range of every process of every file (one per rank's file; several in a
    `stream-litmus trace` recording of several processes)."""
    per = {}
    for tr in traces:
        for r in tr["ranges"]:
            if fnmatch.fnmatchcase(r["name"], pat):
                per.setdefault((tr["file"], r["pid"]), []).append(r)
    if len(per) == 1:
        (f, pid), rs = next(iter(per.items()))
        return [(f"{r['name']} #{i + 1} pid {pid}", [(f, pid, r["begin"], r["end"])]) for i, r in enumerate(rs)]
    return [(f"{pat} {i + 1}", [(f, pid, rs[i]["begin"], rs[i]["end"]) for (f, pid), rs in per.items()])
            for i in range(min(len(rs) for rs in per.values()))]


def trials_by_kernel(tr, pat):
    marks = sorted((o for o in tr["ops"] if o["kind"] == "kernel" and named(o, pat)),
                   key=lambda o: o["call"]["begin"])
    ends = [m["call"]["begin"] for m in marks[1:]] + [float("inf")]
    return [(f"marker {i + 1}", [(tr["file"], m["pid"], m["call"]["begin"], e - 1e-6)])
            for i, (m, e) in enumerate(zip(marks, ends))]


def whole():
    return [("whole trace", None)]


def in_trial(ops, wins):
    if wins is None:
        return list(ops)
    return [op for op in ops if op["call"] and any(
        op["file"] == f and op["call"]["pid"] == pid and b <= op["call"]["begin"] <= e
        for f, pid, b, e in wins)]

# ------------------------------------------------------------------------------------- relations
# Each returns (outcome, amount µs): outcome "Y" shows it, "N" refutes it, "?" within a margin.


def yn(x, m):
    return "Y" if x > m else "N" if x < -m else "?"


def flip(o):
    return {"Y": "N", "N": "Y", "?": "?"}[o]


def margin(a, b):
    return HOST_M if "host" in (a["kind"], b["kind"]) else GPU_M


def r_precedes(a, b):
    gap = b["start"] - a["end"]
    return yn(gap, margin(a, b)), gap


def r_overlaps(a, b):
    ov = min(a["end"], b["end"]) - max(a["start"], b["start"])
    return yn(ov, margin(a, b)), ov


def r_serializes(a, b):
    o, ov = r_overlaps(a, b)
    return flip(o), -ov


def r_returns_before(a, _b):
    d = a["end"] - a["call"]["end"]          # > 0: the call returned before its op ended
    return yn(d, HOST_M), d


def r_returns_after(a, _b):
    o, d = r_returns_before(a, a)
    return flip(o), -d


def r_blocks(a, _b):
    held = min(a["end"], a["call"]["end"]) - max(a["start"], a["call"]["begin"])
    return yn(held - (a["end"] - a["start"]) / 2, 2 * HOST_M), held


RELS = dict(precedes=r_precedes, overlaps=r_overlaps, serializes=r_serializes,
            returns_before=r_returns_before, returns_after=r_returns_after, blocks=r_blocks)
CALL_RELS = ("returns_before", "returns_after", "blocks")


def could(a, b):
    """Could a and b have run together? The later-starting one's call began before the other ended."""
    later, other = (a, b) if a["start"] >= b["start"] else (b, a)
    if later["call"] is None:
        return "N"
    return yn(other["end"] - later["call"]["begin"], HOST_M)


def pairs(A, B, mode):
    if mode == "next":
        for a in A:
            later = [b for b in B if b is not a and a["call"] and b["call"] and b["pid"] == a["pid"]
                     and b["file"] == a["file"] and b["call"]["begin"] > a["call"]["begin"]]
            if later:
                yield a, min(later, key=lambda b: b["call"]["begin"])
    else:
        for a in A:
            for b in (A if mode == "issue" else B):
                if b is not a and (mode != "issue" or (
                        a["call"] and b["call"] and b["call"]["begin"] > a["call"]["begin"])):
                    yield a, b


def judge_trial(q, rel, A, B, mode):
    """One check on one trial: ("Y"|"N"|"?", text)."""
    f = RELS[rel]
    if rel in CALL_RELS:                      # each op with its own launch call
        res = [f(a, a) for a in A if a["call"]]
        if q == "one" and len(res) != 1:
            return "?", f"{len(res)} ops where one was meant"
        outs, amts = [o for o, _ in res], [x for _, x in res]
        txt = f"{len(outs)} ops, {rel} amounts " + (f"{min(amts):+.2f}..{max(amts):+.2f} µs" if amts else "none")
        if q == "exists":
            return ("Y" if "Y" in outs else "?" if "?" in outs or not outs else "N"), txt
        return ("N" if "N" in outs else "?" if "?" in outs or not outs else "Y"), txt
    if q == "one" and (len(A) != 1 or len(B) != 1):
        return "?", f"{len(A)}x{len(B)} ops where one each was meant"
    ys, ns, unc, skipped = [], [], [], 0
    for a, b in pairs(A, B, mode):
        o, x = f(a, b)
        ran_together = (rel == "overlaps" and o == "Y") or (rel == "serializes" and o == "N")
        cd = "Y" if ran_together else could(a, b)
        if cd == "N":
            skipped += 1
        elif cd == "?" or o == "?":
            unc.append(o)
        else:
            (ys if o == "Y" else ns).append(x)
    txt = f"{len(ys)} pairs show it, {len(ns)} refute, {len(unc)} within a margin, {skipped} could not run together"
    if ys or ns:
        txt += f" (amounts {min(ys + ns):+.2f}..{max(ys + ns):+.2f} µs)"
    may_y, may_n = "Y" in unc or "?" in unc, "N" in unc or "?" in unc
    if q == "exists":
        return ("Y" if ys else "?" if may_y else "N" if ns else "?"), txt
    if q == "~exists":
        return ("N" if ys else "?" if may_y else "Y" if ns else "?"), txt
    return ("N" if ns else "?" if may_n else "Y" if ys else "?"), txt     # forall, one


def verdict(per, texts):
    """Violated if a trial refutes, Holds if every trial confirms, else Either; the why shows the
    counts and the trial that decides (the first refuting, else the first undecided, else the first)."""
    ans = "Violated" if "N" in per else "Holds" if all(p == "Y" for p in per) else "Either"
    i = per.index("N") if "N" in per else per.index("?") if "?" in per else 0
    return ans, (f"{per.count('Y')}/{len(per)} trials show it, {per.count('N')} refute, "
                 f"{per.count('?')} undecided. {texts[i]}")


def claim(trials, q, rel, A, B, mode=""):
    per, texts = [], []
    for tname, wins in trials:
        o, txt = judge_trial(q, rel, in_trial(A, wins), in_trial(B, wins), mode)
        per.append(o)
        texts.append(f"{tname}: {txt}")
    return verdict(per, texts)


def faster(trials, slow, fast):
    per, texts = [], []
    for tname, wins in trials:
        s, f = in_trial(slow, wins), in_trial(fast, wins)
        ls = max(o["end"] for o in s) - min(o["start"] for o in s)
        lf = max(o["end"] for o in f) - min(o["start"] for o in f)
        per.append(yn(ls - lf, GPU_M))
        texts.append(f"{tname}: slow phase {ls:.2f} µs ({len(s)} ops), fast phase {lf:.2f} µs ({len(f)} ops)")
    return verdict(per, texts)

# ----------------------------------------------------------------------------------------- claims
# One row a claim, written from the claim's words in pytorch.litmus, ddp_trace.litmus and cuda.litmus:
# id: (traces, trials, quantifier, relation, A, B, mode). A and B: sel(KIND, "PATTERN", in_=…,
# during=…, call=…, stream=…, device=…, rank=…, dir=…, mem=…, file=… for `from`), or host("RANGE");
# B None: A again.
# trials: "steps" (ProfilerStep#*), "reps" (repetition), "markers" (kernel *step_marker*), "whole",
# or a range name. Quantifier "one": the plain relation on one op each; relation "faster": (SLOW, FAST).


def sel(kind="any", pat=None, **kw):
    return lambda t: select(t, kind, pat, **kw)


def host(pat):
    return lambda t: host_runs(t[0], pat)


def trials_of(spec, t):
    if spec == "whole":
        return whole()
    if spec == "markers":
        return trials_by_kernel(t[0], "*step_marker*")
    return trials_by_range(t, {"steps": "ProfilerStep#*", "reps": "repetition"}.get(spec, spec))


P, C = "pytorch/traces/", "cuda/traces/"
AL, NB, PL = (P + "async_launch.json.gz",), (P + "non_blocking_copy.json.gz",), (P + "pipeline.json.gz",)
DS = (P + "ddp_same_stream.rank0.json.gz", P + "ddp_same_stream.rank1.json.gz")
DO = (P + "ddp_own_stream.rank0.json.gz", P + "ddp_own_stream.rank1.json.gz")
D1 = (P + "ddp_own_stream_one_connection.rank0.json.gz",)
SB, ET, EE = (C + "stream_basics.json.gz",), (C + "event_two_streams.json.gz",), (C + "event_two_streams_eager.json.gz",)
E2, SA, CL = (C + "event_two_streams_two_processes.json.gz",), (C + "stream_advanced.json.gz",), (C + "cli_run.json.gz",)
AR, NV = "ncclDevKernel_AllReduce*", "nvjet*"
# `stream-litmus trace` recordings of both ranks in one file (ddp_trace.litmus); the hook's x.div_(2)
# on bf16 is this multiplication kernel (no aten:: ranges without the profiler)
TS, TO, T1 = (P + "ddp_same_stream.trace.json.gz",), (P + "ddp_own_stream.trace.json.gz",), \
    (P + "ddp_own_stream_one_connection.trace.json.gz",)
DIV = "*BUnaryFunctorIN3c108BFloat16*MulFunctor*"

CLAIMS = {
    # async_launch: eight matmuls a step in record_function("launch")
    "async_mm_in_issue_order": (AL, "steps", "forall", "precedes", sel("kernel", NV, in_="aten::mm"), None, "issue"),
    "async_matmuls_never_overlap": (AL, "steps", "~exists", "overlaps", sel("kernel", in_="launch"), None, ""),
    "async_memset_calls_return_early": (AL, "steps", "forall", "returns_before", sel("memset", in_="launch"), None, ""),
    "async_launch_holds_host": (AL, "steps", "exists", "blocks", sel("kernel", in_="launch"), None, ""),
    "async_memset_precedes_its_matmul": (AL, "steps", "forall", "precedes", sel("memset", in_="aten::mm"),
                                         sel("kernel", in_="aten::mm"), "next"),
    "async_some_launch_returns_late": (AL, "steps", "exists", "returns_after", sel("kernel", in_="launch"), None, ""),
    # non_blocking_copy: matmuls on the compute stream, a 256 MiB copy on a side stream
    "nb_null_stream_holds_side_copy": (NB, "steps", "forall", "precedes", sel("kernel", NV, in_="pinned"),
                                       sel("copy", dir="h2d", mem="pinned", in_="pinned"), ""),
    "nb_pageable_copy_never_overlaps": (NB, "steps", "~exists", "overlaps", sel("copy", dir="h2d", mem="pageable", in_="pageable"),
                                        sel("kernel", in_="pageable"), ""),
    "nb_pinned_call_holds_host": (NB, "steps", "one", "blocks", sel("copy", dir="h2d", mem="pinned", in_="pinned"), None, ""),
    "nb_pageable_call_returns_after_copy": (NB, "steps", "one", "returns_after",
                                            sel("copy", dir="h2d", mem="pageable", in_="pageable"), None, ""),
    "nb_pinned_phase_faster": (NB, "steps", "", "faster", sel(in_="pageable"), sel(in_="pinned"), ""),
    "nb_copy_op_overlaps_mm_op": (NB, "pinned", "exists", "overlaps", sel("copy", dir="h2d", in_="aten::copy_"),
                                  sel("kernel", in_="aten::mm"), ""),
    "nb_memsets_run_beside_copy": (NB, "steps", "exists", "overlaps", sel("memset", stream=7, device=0, in_="pinned"),
                                   sel("copy", dir="h2d", mem="pinned", device=0, in_="pinned"), ""),
    # pipeline: 8 chunks (copy in, 4 mul_, copy out) on one stream, then on four
    "pipe_one_stream_is_faster": (PL, "steps", "", "faster", sel(in_="four_streams"), sel(in_="one_stream"), ""),
    "pipe_h2d_copies_one_at_a_time": (PL, "steps", "~exists", "overlaps", sel("copy", dir="h2d", mem="pinned", in_="four_streams"), None, ""),
    "pipe_copies_in_and_out_one_at_a_time": (PL, "steps", "~exists", "overlaps", sel("copy", dir="h2d", in_="four_streams"),
                                             sel("copy", dir="d2h", in_="four_streams"), ""),
    "pipe_kernels_of_streams_overlap": (PL, "steps", "exists", "overlaps", sel("kernel", in_="four_streams"), None, ""),
    "pipe_one_stream_issue_order": (PL, "steps", "forall", "precedes", sel(stream=13, in_="one_stream"), None, "issue"),
    "pipe_mul_then_copy_out_stream17": (PL, "steps", "forall", "precedes", sel("kernel", in_="aten::mul_", stream=17),
                                        sel("copy", dir="d2h", stream=17, during="four_streams"), "next"),
    "pipe_whole_trace_one_stream_overlap": (PL, "whole", "exists", "overlaps", sel("copy", in_="one_stream"),
                                            sel("kernel", in_="one_stream"), ""),
    "pipe_copies_in_follow_issue_order": (PL, "steps", "forall", "precedes", sel("copy", dir="h2d", in_="four_streams"), None, "next"),
    "pipe_copies_issue_order_across_streams": (PL, "steps", "forall", "precedes", sel("copy", in_="four_streams"), None, "issue"),
    "pipe_kernels_issue_order_across_streams": (PL, "steps", "forall", "precedes", sel("kernel", in_="four_streams"), None, "issue"),
    "pipe_copy_out_precedes_a_copy_in": (PL, "steps", "exists", "precedes", sel("copy", dir="d2h", in_="one_stream"),
                                         sel("copy", dir="h2d", in_="one_stream"), ""),
    # DDP with a comm hook (seed 003's tests), one trace per rank
    "ddp_same_div_waits_for_allreduce": (DS[:1], "steps", "forall", "precedes", sel("kernel", AR),
                                         sel("kernel", in_="aten::div_"), "next"),
    "ddp_own_hook_mm_waits_per_hook": (DO[:1], "comm_hook", "one", "precedes", sel("kernel", AR),
                                       sel("kernel", NV, in_="comm_hook"), ""),
    "ddp_same_rank1_serializes": (DS, "steps", "forall", "serializes", sel("kernel", AR, rank=1),
                                  sel("kernel", NV, during="backward", stream=7, rank=1), ""),
    "ddp_one_connection_overlaps": (D1, "steps", "exists", "overlaps", sel("kernel", AR, device=0),
                                    sel("kernel", NV, during="backward", stream=7, device=0), ""),
    "ddp_own_forward_faster_than_backward": (DO[:1], "steps", "", "faster", sel(during="backward"), sel(in_="forward"), ""),
    "ddp_own_allreduce_launch_returns_early": (DO[:1], "steps", "forall", "returns_before", sel("kernel", AR), None, ""),
    "ddp_own_bucket_copy_before_allreduce": (DO[:1], "steps", "forall", "precedes", sel("copy", dir="d2d", during="backward"),
                                             sel("kernel", AR), "next"),
    "ddp_ranks_allreduce_together": (DO, "steps", "exists", "overlaps", sel("kernel", AR, rank=0), sel("kernel", AR, rank=1), ""),
    "ddp_same_rank0_gemm_never_with_rank1_allreduce": (DS, "steps", "~exists", "overlaps",
                                                       sel("kernel", NV, during="backward", stream=7, rank=0),
                                                       sel("kernel", AR, rank=1), ""),
    # DDP, both ranks in one `stream-litmus trace` recording: trial n is step n of each process
    "ddp_trace_same_gemm_never_with_allreduce_gpu0": (TS, "steps", "~exists", "overlaps", sel("kernel", AR, device=0),
                                                      sel("kernel", NV, during="backward", stream=7, device=0), ""),
    "ddp_trace_same_div_after_allreduce": (TS, "steps", "forall", "precedes", sel("kernel", AR),
                                           sel("kernel", DIV, in_="comm_hook"), "next"),
    "ddp_trace_same_compute_stream_issue_order": (TS, "steps", "forall", "precedes", sel("kernel", stream=7, device=1), None, "issue"),
    "ddp_trace_own_gemm_with_allreduce_gpu1": (TO, "steps", "exists", "overlaps", sel("kernel", AR, device=1),
                                               sel("kernel", NV, during="backward", stream=7, device=1), ""),
    "ddp_trace_own_hook_mm_after_allreduce": (TO, "steps", "forall", "precedes", sel("kernel", AR),
                                              sel("kernel", NV, in_="comm_hook"), "next"),
    "ddp_trace_own_hook_stream_issue_order": (TO, "steps", "forall", "precedes", sel("kernel", in_="comm_hook", stream=21, device=0),
                                              None, "issue"),
    "ddp_trace_own_hook_gemm_never_with_backward_gemm": (TO, "steps", "~exists", "overlaps", sel("kernel", NV, in_="comm_hook", device=0),
                                                         sel("kernel", NV, during="backward", stream=7, device=0), ""),
    "ddp_trace_own_allreduce_launch_returns_early": (TO, "steps", "forall", "returns_before",
                                                     sel("kernel", AR, call="cuLaunchKernelEx"), None, ""),
    "ddp_trace_own_ranks_allreduce_together": (TO, "steps", "exists", "overlaps", sel("kernel", AR, device=0),
                                               sel("kernel", AR, device=1), ""),
    "ddp_trace_own_every_div_after_every_allreduce": (TO, "steps", "forall", "precedes", sel("kernel", AR),
                                                      sel("kernel", DIV, in_="comm_hook", stream=21), ""),
    "ddp_trace_one_connection_blocks_gpu1": (T1, "steps", "~exists", "overlaps", sel("kernel", AR, device=1),
                                             sel("kernel", NV, during="backward", stream=7, device=1), ""),
    "ddp_trace_one_connection_div_launch_returns_early": (T1, "steps", "forall", "returns_before",
                                                          sel("kernel", DIV, in_="comm_hook"), None, ""),
    "ddp_trace_one_connection_gemm_launch_holds_host": (T1, "steps", "exists", "blocks",
                                                        sel("kernel", NV, during="backward", stream=7), None, ""),
    # two recordings (`as SAME`, `as OWN`): `from` is the op's file
    "ddp_trace_own_backward_faster_than_same": (TS + TO, "steps", "", "faster", sel(during="backward", device=0, file=TS[0]),
                                                sel(during="backward", device=0, file=TO[0]), ""),
    # CUDA C: stream_basics
    "cu_basics_sync_d2h_returns_after": (SB, "markers", "one", "returns_after", sel("copy", dir="d2h", mem="pinned", call="cudaMemcpy"), None, ""),
    "cu_basics_async_d2h_returns_at_once": (SB, "markers", "one", "returns_before", sel("copy", dir="d2h", call="cudaMemcpyAsync"), None, ""),
    "cu_basics_sync_copy_blocks": (SB, "markers", "one", "blocks", sel("copy", dir="h2d", call="cudaMemcpy"), None, ""),
    "cu_basics_async_faster": (SB, "markers", "", "faster", sel("copy", stream=7), sel("copy", stream=13), ""),
    "cu_basics_one_stream_no_overlap": (SB, "whole", "exists", "overlaps", sel("copy", stream=13),
                                        sel("kernel", "*simpleKernel*", stream=13), ""),
    "cu_basics_kernel_then_copy_out": (SB, "markers", "forall", "precedes", sel("kernel", "*simpleKernel*"), sel("copy", dir="d2h"), "next"),
    # CUDA C: event_two_streams, eager, two processes
    "cu_event_k2_after_k1": (ET, "reps", "forall", "precedes", sel("kernel", "*kernel1*"), sel("kernel", "kernel2*"), "next"),
    "cu_event_k3_overlaps_whole_trace": (ET, "whole", "exists", "overlaps", sel("kernel", "*kernel1*"), sel("kernel", "*kernel3*"), ""),
    "cu_event_k3_overlaps_every_rep": (ET, "reps", "forall", "overlaps", sel("kernel", "*kernel1*", stream=13),
                                       sel("kernel", "*kernel3*", stream=14), "next"),
    "cu_event_eager_k3_serializes_nowhere": (EE, "reps", "~exists", "serializes", sel("kernel", "*kernel1*"),
                                             sel("kernel", "*kernel3*"), ""),
    "cu_two_procs_k1_never_together": (E2, "whole", "~exists", "overlaps", sel("kernel", "*kernel1*"), None, ""),
    "cu_two_procs_k2_after_k1": (E2, "whole", "forall", "precedes", sel("kernel", "*kernel1*"), sel("kernel", "*kernel2*"), "next"),
    "cu_two_procs_k3_overlaps": (E2, "reps", "exists", "overlaps", sel("kernel", "*kernel1*"), sel("kernel", "*kernel3*"), ""),
    # CUDA C: stream_advanced (priorities, a callback)
    "cu_adv_low_streams_overlap": (SA, "reps", "one", "overlaps", sel("kernel", "*first_low*", stream=13),
                                   sel("kernel", "*second_low*", stream=14), ""),
    "cu_adv_patient_waits_behind_both": (SA, "reps", "one", "precedes", sel("kernel", "*second_equal*"), sel("kernel", "*patient*"), ""),
    "cu_adv_callback_runs_during_kernel": (SA, "reps", "exists", "overlaps", sel("kernel", "*before_callback*"), host("callback"), ""),
    "cu_adv_kernel_after_callback": (SA, "reps", "forall", "precedes", host("callback"), sel("kernel", "*after_callback*"), "next"),
    "cu_adv_wide_launch_returns_early": (SA, "reps", "forall", "returns_before", sel("kernel", "*first_low*", in_="repetition"), None, ""),
    # CUDA C: cli_run (the lab itself, traced)
    "cu_cli_stream19_issue_order": (CL, "whole", "forall", "precedes", sel("kernel", "spin_stamp", stream=19), None, "issue"),
    "cu_cli_pageable_readback_returns_after": (CL, "whole", "forall", "returns_after", sel("copy", dir="d2h", mem="pageable"), None, ""),
}


def answer(row):
    files, tspec, q, rel, fa, fb, mode = row
    t = [load(f) for f in files]
    A = fa(t)
    B = A if fb is None else fb(t)
    if rel == "faster":
        return faster(trials_of(tspec, t), A, B)
    return claim(trials_of(tspec, t), q, rel, A, B, mode)


def main():
    out = {"oracle." + cid: dict(zip(("answer", "why"), answer(row))) for cid, row in CLAIMS.items()}
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    print()


if __name__ == "__main__":
    main()
