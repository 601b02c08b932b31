//! Running, as a careless user meets it (issue 15): nonsense arguments are refused before the
//! GPU opens and leave nothing behind; and the child reads a bounded request. (On the GPU, an
//! error half-way through issuing a program: `tests/gpu/error_path.rs`.)

use crate::common;

use common::hand_made::snapshot;
use std::process::{Command, Output};

fn cli() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_stream-litmus"));
    c.env("CUDA_VISIBLE_DEVICES", "");
    c
}

/// Asserts a refusal: status 2, `message` on stderr, no panic.
fn refused(out: &Output, message: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(stderr.contains(message), "wanted {message:?} in: {stderr}");
    assert!(stderr.starts_with("stream-litmus: "), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Nonsense arguments end with status 2 before any GPU is looked for.
#[test]
fn nonsense_arguments_are_refused_before_the_gpu_opens() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/folder/results.json");
    let both = dir.path().join("fuzz.json").display().to_string();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "fuzz".into(),
                "--json".into(),
                both.clone(),
                "--regressions".into(),
                both,
            ],
            "both name",
        ),
        (
            vec!["--trials".into(), "0".into()],
            "must be 1..=10000 trials, not 0",
        ),
        (
            vec!["--trials".into(), "99999999".into()],
            "must be 1..=10000 trials",
        ),
        (
            vec!["run".into(), "--spin-us".into(), "0".into()],
            "must be 1..=8000 µs, not 0",
        ),
        (
            vec!["--spin-us".into(), "9000".into()],
            "must be 1..=8000 µs",
        ),
        (vec!["--filter".into(), "".into()], "an empty filter"),
        (
            vec![
                "-f".into(),
                "fifo".into(),
                "-f".into(),
                "nothing.like.it".into(),
            ],
            "matches the filter \"nothing.like.it\"",
        ),
        (
            vec!["--json".into(), missing.display().to_string()],
            "cannot write there",
        ),
        (
            vec!["--json".into(), dir.path().display().to_string()],
            "is a folder",
        ),
        (vec!["fuzz".into(), "--cases".into(), "0".into()], ", not 0"),
        (
            vec!["fuzz".into(), "--spin-us".into(), "0".into()],
            ", not 0",
        ),
        (
            vec!["sweep".into(), "--trials".into(), "0".into()],
            ", not 0",
        ),
        (
            vec!["sweep".into(), "--max-streams".into(), "0".into()],
            ", not 0",
        ),
    ];
    let before = snapshot(dir.path());
    for (args, message) in cases {
        let out = cli().args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(message),
            "{args:?}: wanted {message:?} in {stderr}"
        );
        assert!(!stderr.contains("no usable GPU"), "{args:?}: {stderr}");
        assert_eq!(
            snapshot(dir.path()),
            before,
            "{args:?} left something behind"
        );
    }
    let out = cli().env("STREAM_LITMUS_TRIALS", "0").output().unwrap();
    refused(&out, "STREAM_LITMUS_TRIALS=0");
    // An --out folder made up front is removed again when the GPU cannot be opened.
    let report = dir.path().join("report/deeper");
    let out = cli().arg("--out").arg(&report).output().unwrap();
    refused(&out, "no usable GPU");
    assert!(!dir.path().join("report").exists());
}

/// The child's request is read with the same bound, and its trial count checked: `/dev/zero` on
/// its stdin, or a request for zero trials, ends with an error reply, not a hang.
#[test]
fn the_child_reads_a_bounded_request() {
    let zero = std::fs::File::open("/dev/zero").unwrap();
    let out = cli().arg("child").stdin(zero).output().unwrap();
    let reply = String::from_utf8_lossy(&out.stdout);
    assert!(reply.contains("not a child request"), "{reply}");
    let mut child = cli()
        .arg("child")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(br#"{"trials": 0, "jobs": []}"#).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let reply = String::from_utf8_lossy(&out.stdout);
    assert!(reply.contains("asks for 0 trials"), "{reply}");
}
