#!/usr/bin/env bash
set -u
cd "$(dirname "$0")/.."
here=$PWD; built=$(cat .gpu-pack/build-root)
[ "$built" != "$here" ] && [ ! -e "$built" ] && mkdir -p "$(dirname "$built")" && ln -s "$here" "$built"
[ -d .gpu-pack/bin ] || tar xJf .gpu-pack/bins.tar.xz -C .gpu-pack
mkdir -p target/release; for b in .gpu-pack/bin/*; do [ -e target/release/$(basename $b) ] || ln -s $here/$b target/release/; done
export GPU_TESTS=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
FUZZ_RECORDED_CASES=150 FUZZ_RECORDED_SEED=21 FUZZ_RECORDED_KEEP=$OUT/fuzz-recorded-h100.json.gz timeout 120 .gpu-pack/tests/gpu fuzz_recorded --nocapture 2>&1 | grep -E "fuzz recorded|mismatch|test result|panicked" | cut -c1-400 | head
zcat $OUT/fuzz-recorded-h100.json.gz | grep -E 'host_fn_streams|"note"' | head -3; zcat $OUT/fuzz-recorded-h100.json.gz | tail -c 400
t0=$(date +%s)
FUZZ_RECORDED_CASES=${CASES:-20000} timeout ${T:-450} .gpu-pack/tests/gpu fuzz_recorded --nocapture 2>&1 | grep -E "fuzz recorded|mismatch|broken|test result|panicked" | cut -c1-600 | head -30
echo "fuzz run took $(( $(date +%s)-t0 ))s"
