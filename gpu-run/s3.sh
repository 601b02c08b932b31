#!/usr/bin/env bash
set -u
cd "$(dirname "$0")/.."
here=$PWD; built=$(cat .gpu-pack/build-root)
[ "$built" != "$here" ] && [ ! -e "$built" ] && mkdir -p "$(dirname "$built")" && ln -s "$here" "$built"
[ -d .gpu-pack/bin ] || tar xJf .gpu-pack/bins.tar.xz -C .gpu-pack
mkdir -p target/release; for b in .gpu-pack/bin/*; do [ -e target/release/$(basename $b) ] || ln -s $here/$b target/release/; done
export GPU_TESTS=1 RUST_BACKTRACE=1
SL=$here/.gpu-pack/bin/stream-litmus
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T0=$(date +%s); el() { echo "[$(( $(date +%s)-T0 ))s] $*"; }
el "fuzz recorded 150 (kept)"
FUZZ_RECORDED_CASES=150 FUZZ_RECORDED_SEED=21 FUZZ_RECORDED_KEEP=$OUT/fuzz-recorded-h100.json.gz timeout 50 .gpu-pack/tests/gpu fuzz_recorded --nocapture 2>&1 | grep -E "fuzz recorded|mismatch|test result|panicked" | cut -c1-300 | head -5
zcat $OUT/fuzz-recorded-h100.json.gz | grep -oE '"name":"host_fn_streams"[^}]*}|"note"[^}]*' | head -3
el "fuzz recorded 20000"
FUZZ_RECORDED_CASES=20000 timeout 240 .gpu-pack/tests/gpu fuzz_recorded --nocapture 2>&1 | grep -E "fuzz recorded|mismatch|broken:|test result|panicked" | cut -c1-500 | head -12
el "catalogue"
(cd /tmp && timeout 25 $SL run 2>&1 | tail -4)
el "gpu tests"
timeout 110 .gpu-pack/tests/gpu --skip fuzz_recorded 2>&1 | grep -E "^test |test result" | grep -vE " ok$" | head -20
el "claim files"
timeout 80 .gpu-pack/tests/claim_files 2>&1 | grep -E "test result|FAILED|failed" | head -10
el "fuzz 100000"
(cd /tmp && timeout 60 $SL fuzz --cases 100000 --seed 28 2>&1 | grep -vE "^\s*$" | head -12)
el "examples"
timeout 60 .gpu-pack/tests/examples 2>&1 | grep -E "test result|FAILED|failed" | head -8
el "done"
