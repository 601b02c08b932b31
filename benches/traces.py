#!/usr/bin/env python3
"""How long stream-litmus takes to read what users hand it, beside Python merely parsing it.

Builds, from the committed pipeline example (examples/pytorch/traces/pipeline.json.gz, 5 steps,
480 GPU ops), a trace of N copies laid end to end (313 copies: the docs' 202 MB benchmark,
1,565 steps), plain and gzipped, and a results file of the catalogue's recorded claims repeated;
then times, in turn with their yardstick (A B A B ..., the ratio taken pair by pair):

  check   the four pipeline claims (examples/pytorch/pipeline.litmus) on the trace
  explain the trace
  judge   the results file
  against `python3 -c "json.load(open(F))"` (for .gz: `zcat F | python3 -c "json.load(stdin)"`)

and prints one table in Markdown: wall seconds and peak memory (the maximum resident size, from
GNU time where installed, else from wait4) as medians, the ratio A/B as its median and spread,
and memory over the input's size, whole and beyond a fixed base: the same command's peak on
the committed example (issue 51 asks for 0.25× beyond it). Linux counts in a child's peak the
resident size of its parent at the fork: from this script, about 15 MiB, which would read as
the base of every command; from GNU time, 1-2 MiB. docs/measurements.md keeps the figures with
the machine and date.

Only the standard library; the CLI is built beforehand (`cargo build --release`):

  python3 benches/traces.py                      # 313 copies, 3 runs each
  python3 benches/traces.py --copies 3 31 313 3130 --runs 1   # the scale of issue 51
  python3 benches/traces.py --only explain --copies 313

The built files are kept in --work (default: a folder under the system's temporary one) and
reused when their size matches.
"""

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "pytorch", "traces", "pipeline.json.gz")
CLAIMS = os.path.join(ROOT, "examples", "pytorch", "pipeline.litmus")
RESULTS = os.path.join(ROOT, "tests", "fixtures", "catalogue-h100.json.gz")

# Ids a copy must not share with another: each copy's are moved past the last copy's.
ID_ARGS = ("External id", "correlation", "Record function id")
ID_STRIDE = 10_000_000


def build_trace(copies, path):
    """The example trace laid end to end `copies` times, its steps renumbered."""
    with gzip.open(EXAMPLE, "rt") as f:
        trace = json.load(f)
    events = trace.pop("traceEvents")
    meta = [e for e in events if e.get("ph") == "M"]
    timed = [e for e in events if e.get("ph") != "M"]
    stamps = [e["ts"] for e in timed] + [e["ts"] + e.get("dur", 0) for e in timed]
    span = max(stamps) - min(stamps) + 1000.0
    steps = sum(1 for e in timed if str(e.get("name", "")).startswith("ProfilerStep#"))
    tmp = path + ".part"
    with open(tmp, "w") as out:
        head = json.dumps(trace)[:-1]
        out.write(head + ', "traceEvents": [')
        first = True
        for e in meta:
            out.write(("" if first else ",") + json.dumps(e))
            first = False
        # Each event's text made once, with what a copy moves left as %-fields: the same text
        # as dumping each copy's events (json.dumps writes a float as repr does), in a tenth of
        # the time (the 100x trace, 20 GB, in minutes).
        forms = [form(e, steps) for e in timed]
        for k in range(copies):
            block = []
            for text, fields in forms:
                block.append(text % {
                    name: repr(value + k * (span if name == "ts"
                                            else steps if name == "step" else ID_STRIDE))
                    for name, value in fields.items()
                })
            out.write(("" if first else ",") + ",".join(block))
            first = False
        out.write("]}")
    os.replace(tmp, path)


def form(e, steps):
    """An event's JSON text with its moved fields as %-fields, and their values in copy 0."""
    e = dict(e)
    fields = {"ts": e["ts"] + 0.0}
    e["ts"] = "\0ts\0"
    if "id" in e:
        fields["id"] = e["id"]
        e["id"] = "\0id\0"
    args = e.get("args")
    if args:
        args = dict(args)
        for n, name in enumerate(ID_ARGS):
            if isinstance(args.get(name), int):
                fields["a%d" % n] = args[name]
                args[name] = "\0a%d\0" % n
        e["args"] = args
    name = e.get("name", "")
    if isinstance(name, str) and name.startswith("ProfilerStep#"):
        fields["step"] = int(name[13:])
        e["name"] = "\0step\0"
    text = json.dumps(e).replace("%", "%%")
    for key in fields:
        value = '"ProfilerStep#%(step)s"' if key == "step" else "%%(%s)s" % key
        text = text.replace('"\\u0000%s\\u0000"' % key, value)
    return text, fields


def build_results(copies, path):
    """The catalogue's recorded claims repeated `copies` times, each copy's ids renamed."""
    with gzip.open(RESULTS, "rt") as f:
        run = json.load(f)
    claims = run.pop("claims")
    tmp = path + ".part"
    with open(tmp, "w") as out:
        out.write(json.dumps(run)[:-1] + ', "claims": [')
        first = True
        for k in range(copies):
            for c in claims:
                c = dict(c)
                c["claim"] = dict(c["claim"], id="%s.copy%d" % (c["claim"]["id"], k))
                out.write(("" if first else ",") + json.dumps(c))
                first = False
        out.write("]}")
    os.replace(tmp, path)


def build(kind, copies, path):
    """Builds in a child process: a child started from this one counts this one's peak
    memory as its own (fork, then exec), so this one stays small."""
    subprocess.run([sys.executable, __file__, "--build", kind, str(copies), path], check=True)


def gzipped(path):
    out = path + ".gz"
    if not os.path.exists(out):
        subprocess.run([sys.executable, __file__, "--build", "gzip", "0", path], check=True)
    return out


def gzip_file(path):
    out = path + ".gz"
    with open(path, "rb") as f, gzip.open(out + ".part", "wb", compresslevel=6) as g:
        while True:
            block = f.read(1 << 20)
            if not block:
                break
            g.write(block)
    os.replace(out + ".part", out)


TIME = "/usr/bin/time"


def timed(argv):
    """Wall seconds, peak resident MiB and exit status of one run; output thrown away.

    The peak is GNU time's (`%M`) where it is installed: a child of this script counts this
    script's size at the fork (about 15 MiB) in its peak, one of GNU time's counts only time's
    (1-2 MiB). Without it, the child's own peak from wait4, with that floor."""
    with tempfile.NamedTemporaryFile("r") as peak:
        measured = os.path.exists(TIME)
        if measured:
            argv = [TIME, "-f", "%M", "-o", peak.name] + argv
        started = time.monotonic()
        child = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.monotonic() - started
        code = os.waitstatus_to_exitcode(status)
        kib = usage.ru_maxrss
        if measured:
            # GNU time writes "Command exited with non-zero status N" first where it failed.
            lines = peak.read().split()
            kib = int(lines[-1]) if lines and lines[-1].isdigit() else kib
        return wall, kib / 1024.0, code


def pairs(a, b, runs):
    """A and B in turn, `runs` times each after one unmeasured run of each; B left out (None)
    where Python could not hold the file (`too_big_for_python`): A alone, once."""
    if b is None:
        return [(timed(a), None)]
    timed(a)
    timed(b)
    return [(timed(a), timed(b)) for _ in range(runs)]


def too_big_for_python(text_bytes):
    """Whether `json.load` of this much text would not fit: it takes about 4.4 times the
    text (862 MiB for the 196 MiB trace), and the machine's memory is the limit."""
    with open("/proc/meminfo") as f:
        total_kib = int(next(l for l in f if l.startswith("MemTotal")).split()[1])
    return 4.4 * text_bytes > 0.8 * total_kib * 1024


def python_load(path):
    if path.endswith(".gz"):
        return ["sh", "-c", 'zcat "$0" | python3 -c "import json,sys; json.load(sys.stdin)"', path]
    return ["python3", "-c", "import json,sys; json.load(open(sys.argv[1]))", path]


def row(label, size, got, text=None, base=0.0):
    """One line of the table; memory is over the JSON text (`text`, for a gzip its
    decompressed size), whole and beyond `base` (the same command's peak on the committed
    example: what any input costs, the binary and its tables)."""
    text = text or size
    a_wall = statistics.median(g[0][0] for g in got)
    a_mem = statistics.median(g[0][1] for g in got)
    codes = sorted({g[0][2] for g in got})
    mib = size / (1 << 20)
    if got[0][1] is None:
        b = "— (too big for json.load here) | — | —"
    else:
        b_wall = statistics.median(g[1][0] for g in got)
        b_mem = statistics.median(g[1][1] for g in got)
        ratios = sorted(g[0][0] / g[1][0] for g in got)
        b = "%.2f s | %.0f MiB | %.2f (%.2f–%.2f)" % (
            b_wall, b_mem, statistics.median(ratios), ratios[0], ratios[-1])
    return "| %s | %.1f MiB | %.2f s | %.0f MiB | %s | %.2f | %.2f | %s |" % (
        label,
        mib,
        a_wall,
        a_mem,
        b,
        a_mem / (text / (1 << 20)),
        max(0.0, a_mem - base) / (text / (1 << 20)),
        ",".join(map(str, codes)),
    )


def main():
    if sys.argv[1:2] == ["--build"]:
        kind, copies, path = sys.argv[2], int(sys.argv[3]), sys.argv[4]
        {"trace": build_trace, "results": build_results, "gzip": lambda _, p: gzip_file(p)}[kind](
            copies, path
        )
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--copies", type=int, nargs="+", default=[313])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--cli", default=os.path.join(ROOT, "target", "release", "stream-litmus"))
    p.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "stream-litmus-bench"))
    p.add_argument("--only", nargs="+", choices=["check", "explain", "gz", "judge"])
    args = p.parse_args()
    if not os.path.exists(args.cli):
        sys.exit("no CLI at %s: run `cargo build --release` first, or pass --cli" % args.cli)
    os.makedirs(args.work, exist_ok=True)
    which = set(args.only or ["check", "explain", "gz", "judge"])
    cores = os.cpu_count()
    print("%s, %d cores, %s, %d runs of each, medians; A/B pair by pair"
          % (time.strftime("%Y-%m-%d"), cores, args.cli, args.runs))
    print()
    # The fixed base each command takes whatever its input: its peak on the committed example.
    base = {
        "check": timed([args.cli, "check", CLAIMS])[1],
        "explain": timed([args.cli, "explain", EXAMPLE])[1],
        "judge": timed([args.cli, "judge", RESULTS])[1],
    }
    print("base (peak on the committed example): check %.0f MiB, explain %.0f MiB, judge %.0f MiB"
          % (base["check"], base["explain"], base["judge"]))
    print()
    print("| work | input | A: stream-litmus | A peak | B: json.load | B peak | A/B | A peak / JSON text | A peak beyond base / JSON text | A exit |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for copies in args.copies:
        trace = os.path.join(args.work, "pipeline-%d.json" % copies)
        if not os.path.exists(trace):
            build("trace", copies, trace)
        size = os.path.getsize(trace)
        claims = os.path.join(args.work, "pipeline-%d.litmus" % copies)
        with open(CLAIMS) as f:
            text = f.read().replace('trace "traces/pipeline.json.gz"', 'trace "%s"' % trace)
        with open(claims + ".part", "w") as f:
            f.write(text)
        os.replace(claims + ".part", claims)
        # What one run of `check` judges grows with the trace (32 per op); the four claims
        # ask about 16 an op, so the defaults judge them whole.
        label = "%d copies (%d steps)" % (copies, 5 * copies)
        # The default read limit (2 GiB) raised to what this file needs: its text, and its
        # records (ops, calls, ranges: about 0.23x the text) within the eighth of it they may
        # take (docs/limits.md).
        os.environ["STREAM_LITMUS_READ_LIMIT_MIB"] = str(max(2048, 3 * (size >> 20)))
        python = None if too_big_for_python(size) else python_load(trace)
        if "check" in which:
            got = pairs([args.cli, "check", claims], python, args.runs)
            print(row("`check` 4 claims, " + label, size, got, base=base["check"]), flush=True)
        if "explain" in which:
            got = pairs([args.cli, "explain", trace], python, args.runs)
            print(row("`explain`, " + label, size, got, base=base["explain"]), flush=True)
        if "gz" in which:
            gz = gzipped(trace)
            with open(claims + ".gz.litmus", "w") as f:
                f.write(text.replace(trace, gz))
            got = pairs([args.cli, "check", claims + ".gz.litmus"], python_load(gz), args.runs)
            print(row("`check` 4 claims, gzip, " + label, os.path.getsize(gz), got, size,
                      base["check"]), flush=True)
    if "judge" in which:
        for copies in args.copies:
            # The catalogue's 77 recorded claims are 31 MB of text: 313 copies of the trace
            # are matched by about 14 copies of them, in size.
            k = max(1, copies // 22)
            results = os.path.join(args.work, "results-%d.json" % k)
            if not os.path.exists(results):
                build("results", k, results)
            got = pairs([args.cli, "judge", results], python_load(results), args.runs)
            print(row("`judge`, the catalogue's claims × %d" % k, os.path.getsize(results), got,
                      base=base["judge"]), flush=True)


if __name__ == "__main__":
    main()
