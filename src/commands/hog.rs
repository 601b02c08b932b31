//! `stream-litmus hog --seconds S`: a neighbour on the GPU, for testing what a shared GPU does
//! to verdicts (tests/gpu/shared_gpu.rs, and anyone who wants to see it). It keeps every SM busy with
//! 2 ms kernels of 4 blocks per SM and the copy engines with 32 MiB copies each way, the load of
//! a training job, until the time is up. Hidden from `--help`: it measures nothing.

use super::{outln, CliResult};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use stream_litmus::{CopyDir, Lab, Place, Program, StreamKind};

pub fn hog(seconds: u64) -> CliResult {
    let lab = Lab::new().with_trials(1);
    let gpu = lab.gpu()?;
    let program = load(gpu.calibration().device.sm_count);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut rounds = 0u64;
    while Instant::now() < deadline {
        gpu.run(&program, 1)?;
        rounds += 1;
        if rounds == 1 {
            // For whoever waits for the load to begin (tests/gpu/shared_gpu.rs).
            outln!("hog: busy");
        }
    }
    outln!("hog: {rounds} rounds in {seconds} s");
    Ok(ExitCode::SUCCESS)
}

/// Kernels on every SM and copies both ways, on three streams so they overlap.
fn load(sms: u32) -> Program {
    let mut p = Program::builder("hog");
    let (k, up, down) = (
        p.stream(StreamKind::NonBlocking),
        p.stream(StreamKind::NonBlocking),
        p.stream(StreamKind::NonBlocking),
    );
    p.copy_new(up, "up", CopyDir::H2D, 32 << 20, Place::Pinned);
    p.copy_new(down, "down", CopyDir::D2H, 32 << 20, Place::Pinned);
    for i in 0..4 {
        p.spin_grid(
            k,
            format!("K{i}"),
            Duration::from_millis(2),
            4 * sms.max(1),
            256,
        );
    }
    p.build()
}
