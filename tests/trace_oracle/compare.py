#!/usr/bin/env python3
"""Runs stream-litmus check on this folder's claim files and oracle.py, and prints a Markdown table
of both answers. Usage: python3 compare.py [STREAM_LITMUS_BINARY]  (default: stream-litmus)."""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "../.."))
binary = sys.argv[1] if len(sys.argv) > 1 else "stream-litmus"
files = sorted(os.path.join("tests/trace_oracle", f) for f in os.listdir(HERE) if f.endswith(".litmus"))
run = subprocess.run([binary, "check", *files], cwd=ROOT, capture_output=True, text=True)
tool = {m.group(1): m.group(2) for m in
        re.finditer(r"^(?:ok|FAIL)\s+(\S+)\s+(Holds|Violated|Inconclusive)\b", run.stdout, re.M)}
oracle = json.loads(subprocess.run([sys.executable, os.path.join(HERE, "oracle.py")],
                                   capture_output=True, text=True, check=True).stdout)
print("| claim | tool | oracle | agree? |\n| --- | --- | --- | --- |")
bad = 0
for cid in sorted(set(tool) | set(oracle)):
    t, o = tool.get(cid, "(none)"), oracle.get(cid, {}).get("answer", "(none)")
    ok = t == o or o == "Either" or (t == "Inconclusive" and o != "(none)")
    agree = "yes" if t == o else "yes (oracle: Either)" if o == "Either" else \
        "check the reason" if ok else "NO"
    bad += not ok
    print(f"| {cid} | {t} | {o} | {agree} |")
print(f"\n{len(tool)} verdicts, {len(oracle)} oracle answers, {bad} mismatches (tool exit status {run.returncode})")
sys.exit(1 if bad else 0)
