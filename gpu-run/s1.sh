#!/usr/bin/env bash
# Issue 50 on the GPU: fuzz recorded, DDP and CUDA examples re-recorded with the program behind.
set -u
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
here=$PWD; built=$(cat .gpu-pack/build-root)
[ "$built" != "$here" ] && [ ! -e "$built" ] && mkdir -p "$(dirname "$built")" && ln -s "$here" "$built"
[ -d .gpu-pack/bin ] || tar xJf .gpu-pack/bins.tar.xz -C .gpu-pack
mkdir -p target/release; for b in .gpu-pack/bin/*; do [ -e target/release/$(basename $b) ] || ln -s $here/$b target/release/; done
SL=$here/.gpu-pack/bin/stream-litmus; K=$OUT/keep; mkdir -p $K/cuda /tmp/w
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export GPU_TESTS=1
t0=$(date +%s)
FUZZ_RECORDED_CASES=${CASES:-20000} timeout 300 .gpu-pack/tests/gpu fuzz_recorded --nocapture 2>&1 | grep -E "fuzz recorded|mismatch|broken|test result|panicked|left|right" | head -30
echo "fuzz20k took $(( $(date +%s)-t0 ))s"
FUZZ_RECORDED_CASES=150 FUZZ_RECORDED_SEED=21 FUZZ_RECORDED_KEEP=$K/fuzz-recorded-h100.json.gz timeout 120 .gpu-pack/tests/gpu fuzz_recorded --nocapture 2>&1 | grep -E "fuzz recorded|mismatch|test result" | head
for mode in same_stream own_stream own_stream_one_connection; do
  (cd /tmp/w && timeout 150 $SL trace --out /tmp/w/ddp_$mode.json.gz -- python3 $here/examples/pytorch/ddp_hook.py $mode --no-profiler 2>&1 | tail -3)
  python3 examples/pytorch/trim_steps.py /tmp/w/ddp_$mode.json.gz $K/ddp_$mode.trace.json.gz
  $SL explain $K/ddp_$mode.trace.json.gz 2>&1 | head -12
done
STREAM_LITMUS=$SL timeout 200 bash examples/cuda/record_all.sh $K/cuda 2>&1 | tail -5
for f in $K/cuda/*.json.gz; do echo "== $f"; $SL explain $f 2>&1 | head -9; done
tar czf $OUT/keep.tgz -C $OUT keep; rm -rf $K
echo "total $(( $(date +%s)-t0 ))s"
