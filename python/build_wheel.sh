#!/usr/bin/env bash
# Builds the stream-litmus wheel (docs/python.md): the binary, the CUPTI injection library and the
# `stream_litmus` package, into DIR (default python/dist). Needs the Rust toolchain and maturin
# (`pip install maturin`); the wheel it makes needs neither, nor a CUDA toolkit.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$(mkdir -p "${1:-$here/dist}" && cd "${1:-$here/dist}" && pwd)"
cd "$here"
# `cargo build` makes the injection library beside the binary; maturin's `bin` bindings take
# only the binary, so the library goes in as wheel data: installed as <prefix>/lib/, where the
# binary (<prefix>/bin/) looks for it.
cargo build --release --manifest-path ../Cargo.toml
rm -rf wheel-data
mkdir -p wheel-data/data/lib
cp ../target/release/libstream_litmus_inject.so wheel-data/data/lib/
maturin build --release --out "$out" "${@:2}"
ls "$out"/*.whl
