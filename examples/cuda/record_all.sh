#!/usr/bin/env bash
# Builds the CUDA C examples with nvcc and records each with `stream-litmus trace` into DIR
# (default: examples/cuda/traces). STREAM_LITMUS names the CLI (default: stream-litmus on PATH).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/traces}
sl=${STREAM_LITMUS:-stream-litmus}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
build=$(mktemp -d)
mkdir -p "$out"
for ex in stream_basics event_two_streams stream_advanced weight_prefetch; do
  "$nvcc" -O2 -o "$build/$ex" "$here/$ex.cu"
  "$sl" trace --overhead --out "$out/$ex.json.gz" -- "$build/$ex"
done
# Seed 002 §4 with the load stream made by cudaStreamCreate (blocking), against the note's advice.
"$sl" trace --out "$out/weight_prefetch_blocking.json.gz" -- "$build/weight_prefetch" blocking
