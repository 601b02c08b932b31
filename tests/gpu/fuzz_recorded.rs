//! Random programs recorded with `stream-litmus trace` and rebuilt from the recording (issue 50,
//! point 5): the program behind the trace reads to the model as the generated one does, every
//! must-precede pair of it holds in the spans, and every wait the generated program orders is
//! classified as asked for (or implied by the legacy stream). `tests/common/fuzz_recording.rs`
//! holds the two; a small recording is committed and compared on the CPU too
//! (`tests/cpu/program_behind.rs`).
//!
//! `FUZZ_RECORDED_CASES` (default 2,000), `FUZZ_RECORDED_SEED` (default 13) and
//! `FUZZ_RECORDED_SPIN_US` (default 100: a recording's launch jitter, over a whole fuzz run, is
//! tens of µs, and a wait shorter than that is not seen) set the run; `FUZZ_RECORDED_KEEP=PATH`
//! keeps the recording.

use crate::common::fuzz_recording::compare;
use serial_test::serial;
use std::process::Command;
use stream_litmus::fuzz::{generated, regressions, FuzzConfig, Shape};
use stream_litmus::model::Refinement;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn a_recorded_fuzz_run_rebuilds_to_the_programs_it_ran() {
    let (cases, seed) = (
        env_or("FUZZ_RECORDED_CASES", 2_000),
        env_or("FUZZ_RECORDED_SEED", 13),
    );
    let spin = env_or("FUZZ_RECORDED_SPIN_US", 100);
    let dir = tempfile::tempdir().unwrap();
    let keep = std::env::var_os("FUZZ_RECORDED_KEEP").map(std::path::PathBuf::from);
    let out = keep
        .clone()
        .unwrap_or_else(|| dir.path().join("fuzz.json.gz"));
    let cli = env!("CARGO_BIN_EXE_stream-litmus");
    let started = std::time::Instant::now();
    let status = Command::new(cli)
        .current_dir(dir.path())
        .arg("trace")
        .arg("--out")
        .arg(&out)
        .arg("--")
        .arg(cli)
        .args([
            "fuzz",
            "--cases",
            &cases.to_string(),
            "--seed",
            &seed.to_string(),
            "--spin-us",
            &spin.to_string(),
        ])
        // The recorder has CUPTI; the lab's copy witness leaves it alone (the programs have
        // no copies anyway).
        .env("STREAM_LITMUS_CUPTI", "off")
        .status()
        .unwrap();
    assert!(
        status.success(),
        "stream-litmus trace -- stream-litmus fuzz: {status}"
    );
    let recorded = started.elapsed();
    let config = FuzzConfig {
        cases: cases as usize,
        seed,
        shape: Shape::default(),
        refinement: Refinement::Documented,
        regressions: regressions(),
    };
    let programs = generated(&config);
    let started = std::time::Instant::now();
    let c = compare(&out, &programs).unwrap();
    println!(
        "fuzz recorded: {cases} cases, seed {seed} ({} programs with the regressions), recorded in \
         {:.1} s, compared in {:.1} s: {} rebuilt equal, {} differ only in a graph's own edges, \
         {} mismatches; {} pairs compared; {} model pairs checked on the spans, {} broken; {} \
         waits the generated program orders: {} asked for, {} implied",
        programs.len(),
        recorded.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        c.equal,
        c.graph_only,
        c.mismatches.len(),
        c.pairs,
        c.checked,
        c.broken,
        c.waits_ordered,
        c.waits_asked,
        c.waits_implied
    );
    for m in c.mismatches.iter().take(10) {
        println!("mismatch: {m}");
    }
    for b in c.broken_texts.iter().take(10) {
        println!("broken: {b}");
    }
    println!(
        "waits between two kernels of one graph (its edges are in no trace): {}",
        c.waits_in_graph
    );
    assert!(c.mismatches.is_empty(), "{} mismatches", c.mismatches.len());
    assert_eq!(c.broken, 0);
    assert_eq!(c.equal + c.graph_only, programs.len());
    // Which waits a recording shows depends on its jitter: the tolerance is one per recording,
    // and on H100 2 of 10 seeds (18, 21) at 2,000 cases showed none. A wait seen and ordered by
    // the program is classified above (a "not asked" one is a mismatch); the committed recording
    // (`tests/cpu/program_behind.rs`) holds waits for certain.
    if c.waits_ordered == 0 {
        println!("no wait the program orders was seen in this recording: nothing to classify");
    }
}
