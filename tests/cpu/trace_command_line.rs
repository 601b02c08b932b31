//! `check --trace` takes the ranks of one run as one list (issue 35, point 12): before or after
//! the claim files, and a claim file given among the traces is still read as claims.

use std::process::Command;

fn check(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_stream-litmus"))
        .arg("check")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

const CLAIMS: &str = "examples/pytorch/ddp_own_stream.litmus";
const R0: &str = "examples/pytorch/traces/ddp_own_stream.rank0.json.gz";
const R1: &str = "examples/pytorch/traces/ddp_own_stream.rank1.json.gz";

#[test]
fn the_ranks_follow_one_trace_flag_before_or_after_the_claims() {
    for args in [
        vec![CLAIMS, "--trace", R0, R1],
        vec!["--trace", R0, R1, CLAIMS],
        vec!["--trace", R0, "--trace", R1, CLAIMS],
    ] {
        let (code, text) = check(&args);
        assert_eq!(code, 0, "{args:?}: {text}");
        assert!(
            text.contains("1 as expected, 0 not, of 1 claims"),
            "{args:?}: {text}"
        );
    }
}

#[test]
fn traces_without_claims_are_refused_with_the_usage() {
    let (code, text) = check(&["--trace", R0]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("no claim file given"), "{text}");
}

#[test]
fn named_recordings_are_not_replaced_by_the_command_lines_traces() {
    let (code, text) = check(&[
        "examples/pytorch/recordings_compared.litmus",
        "--trace",
        R0,
        R1,
    ]);
    assert_ne!(code, 0, "{text}");
    assert!(
        text.contains("selects from named recordings (`from NAME`)"),
        "{text}"
    );
    let (code, text) = check(&["examples/pytorch/recordings_compared.litmus"]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("trace  SAME examples/pytorch/traces/ddp_same_stream.rank0"),
        "{text}"
    );
}
