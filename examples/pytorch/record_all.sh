#!/usr/bin/env bash
# Records every example's trace into DIR (default: examples/pytorch/traces). Single-GPU examples
# run on GPU 0; ddp_hook.py needs two GPUs. NVLink multicast stays off (NCCL_NVLS_ENABLE=0).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/traces}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
for ex in async_launch non_blocking_copy pipeline side_stream; do
  CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} python3 "$here/$ex.py" "$out/$ex.json.gz"
done
if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
  for mode in same_stream own_stream own_stream_one_connection; do
    python3 "$here/ddp_hook.py" "$mode" "$out/ddp_$mode"
  done
else
  echo "one GPU: ddp_hook.py skipped (needs two)"
fi
