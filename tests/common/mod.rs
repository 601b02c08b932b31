//! Shared by the integration tests: one lab per test binary, and a claim assertion that prints
//! everything needed to understand a failure.
#![allow(dead_code)] // each test binary uses a different part

use std::sync::OnceLock;
use stream_litmus::report::terminal;
use stream_litmus::{Claim, ClaimRecord, Lab};

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
