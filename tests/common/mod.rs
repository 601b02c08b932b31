//! Shared by the integration tests: one lab per test binary, and a claim assertion that prints
//! everything needed to understand a failure.
#![allow(dead_code)] // each test binary uses a different part

pub mod explained;
pub mod fuzz_recording;
pub mod hand_made;
pub mod hand_traces;
pub mod kineto;
pub mod peak;
pub mod recording;
pub mod two_ops;
pub mod witness;

use std::sync::OnceLock;
use stream_litmus::report::terminal;
use stream_litmus::{
    Claim, ClaimRecord, ClockSync, HostCall, Lab, OpId, Span, Timeline, Tolerances,
};

/// The lab of this test binary, with its GPU open. GPU tests are compiled in only when a GPU was
/// requested or detected, so a missing GPU here is a loud failure naming the cause.
pub fn lab() -> &'static Lab {
    static LAB: OnceLock<Lab> = OnceLock::new();
    let lab = LAB.get_or_init(|| Lab::new().with_child_binary(env!("CARGO_BIN_EXE_stream-litmus")));
    if let Err(e) = lab.gpu() {
        panic!("GPU tests were requested (GPU_TESTS=1, or an NVIDIA driver on the build machine), but {e}");
    }
    lab
}

/// The catalogue's claim `id` (claims/catalogue/), at the default spin.
pub fn catalogue_claim(id: &str) -> Claim {
    stream_litmus::catalogue::claim(id, stream_litmus::catalogue::DEFAULT_SPIN)
        .unwrap_or_else(|| panic!("no catalogue claim `{id}`"))
}

/// Runs a claim and asserts that its verdict is the expected one; on failure, prints the claim,
/// the deciding measurement with its tolerances, and a picture of the witness trial.
pub fn assert_claim(claim: &Claim) -> ClaimRecord {
    let record = lab().check(claim);
    println!("{}", terminal::claim_line(&record));
    assert!(
        record.as_expected(),
        "claim {} did not meet its expectation\n{}",
        claim.id,
        terminal::details(&record)
    );
    record
}

/// Path of a file under tests/fixtures.
pub fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The results files under tests/fixtures whose names start with `prefix` (`.json`, or
/// `.json.gz` for the large ones), loaded, in name order. Written by `stream-litmus --json` on
/// real GPUs.
pub fn recorded(prefix: &str) -> Vec<(std::path::PathBuf, stream_litmus::RunRecord)> {
    let dir = fixture("");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/fixtures exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with(prefix) && (name.ends_with(".json") || name.ends_with(".json.gz"))
        })
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no {prefix}*.json under {}",
        dir.display()
    );
    files
        .into_iter()
        .map(|f| {
            let run = stream_litmus::RunRecord::load(&f).unwrap();
            (f, run)
        })
        .collect()
}

/// Every recorded run under tests/fixtures, whole-catalogue ones included (the fuzz file holds
/// violations, not a run), in name order; loaded once per test binary.
pub fn recorded_runs() -> &'static [(std::path::PathBuf, stream_litmus::RunRecord)] {
    static RUNS: OnceLock<Vec<(std::path::PathBuf, stream_litmus::RunRecord)>> = OnceLock::new();
    RUNS.get_or_init(|| {
        let mut names: Vec<String> = std::fs::read_dir(fixture(""))
            .expect("tests/fixtures exists")
            .filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
            .filter(|n| {
                !n.starts_with("fuzz-") && (n.ends_with(".json") || n.ends_with(".json.gz"))
            })
            .collect();
        names.sort();
        let mut runs: Vec<_> = names.iter().flat_map(|n| recorded(n)).collect();
        runs.dedup_by(|a, b| a.0 == b.0);
        runs
    })
}

// Hand-made timelines for the CPU tests of the checks.

/// Tolerances of the hand-made timelines: the 32 ns timer step of the H100 and H200, a launch
/// jitter and a dependent gap of round sizes.
pub const TOL: Tolerances = Tolerances {
    timer_step_ns: 32,
    launch_jitter_ns: 2_000,
    dependent_gap_ns: 1_000,
    launch_latency_ns: None,
    copy_rates: None,
};

/// Host time h is GPU time h + 1 000 000, known within ±968 ns (slack with the step: 1 000 ns).
pub const CLOCK: ClockSync = ClockSync {
    shared: false,
    offset_ns: 1_000_000,
    error_ns: 968,
};

/// The stamped kernel of [`kernel_and_call`].
pub const K: OpId = OpId(0);
/// The host call of [`kernel_and_call`].
pub const CALL: OpId = OpId(1);

pub fn call(op: OpId, begin_ns: u64, end_ns: u64) -> HostCall {
    HostCall {
        op,
        begin_ns,
        end_ns,
    }
}

/// K issued at host 0 and stamped on the GPU from 1 002 000 for `kernel_ns` (host 2 000 on, with
/// [`CLOCK`]); CALL a host call from `begin` to `end` (host ns).
pub fn kernel_and_call(kernel_ns: u64, begin: u64, end: u64) -> Timeline {
    Timeline::new(
        vec![Span::single(K, 1_002_000, 1_002_000 + kernel_ns)],
        vec![call(K, 0, 0), call(CALL, begin, end)],
    )
    .with_host(vec![], Some(CLOCK))
}

/// A tiny deterministic generator: the corpus fuzzers mutate the same way on every run.
pub struct XorShift(pub u64);

impl XorShift {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Numbers that size tables and loops or break careless arithmetic, as a claim file or a
/// results file may write them (the corpus fuzzers put them in place of numbers).
pub const EXTREMES: &[&str] = &[
    "0",
    "-1",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "1e308",
    "-1e308",
    "0.0000000001",
    "1.5",
    "#99999999999999999999",
];
