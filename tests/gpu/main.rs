//! Every GPU test that runs claims through the lab, in one test binary: the claims of the notes
//! (core, copy and synchronization claims), pooled buffers, the fuzzer against the model, the
//! executor's error path, a claim set beside a busy neighbour, and programs on two GPUs
//! (`multi_gpu`, ignored with the reason "needs 2 GPUs" where the build saw fewer).
//!
//! One binary, because each test binary is a process that opens the GPU once: a context, CUPTI
//! and a calibration, about 0.2 s on an H100 before its first claim, paid by each of six binaries
//! before (issue 16: the GPU tests of `cargo test` within 8 s). The tests share the binary's lab
//! as the catalogue's claims share a run's, and each file still holds one concern. GPU tests run
//! one at a time (`#[serial(gpu)]`); without a GPU they are ignored with the reason.
//! Claim files have their own binary (`tests/claim_files.rs`, a custom harness); the CPU tests
//! theirs (`tests/cpu/`).

#[path = "../common/mod.rs"]
mod common;

mod copy_claims;
mod core_claims;
mod error_path;
mod fuzz_gpu;
mod fuzz_recorded;
mod multi_gpu;
mod pooled_buffers;
mod shared_gpu;
mod sync_claims;
