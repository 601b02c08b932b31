//! Claim files through the CLI. `show --litmus` prints what reads back; `predict` says which
//! checks the model cannot decide. Broken files: one clear error with file, line, column and caret, exit
//! status 2, and no GPU opened (`CUDA_VISIBLE_DEVICES=` would make opening one fail with its
//! own message, which must not appear).

use libtest_mimic::{Failed, Trial};
use std::path::PathBuf;
use std::process::Command;

const GOOD: &str = "claim my.first
statement \"B waits for A through an event\"
source \"000_a5eb0762e7ac500e.txt\" section \"7.6\"
expect holds

stream s1, s2 = non-blocking
event E

A: spin 50us on s1
record E on s1
wait E on s2
B: spin 50us on s2

check precedes(A, B)
";

/// (test name, file contents, message, line:column).
fn cases() -> Vec<(&'static str, Vec<u8>, &'static str, &'static str)> {
    let edit = |from: &str, to: &str| GOOD.replace(from, to).into_bytes();
    let mut binary = b"\x7fELF\x02\x01\x01\0\0\0claim".to_vec();
    binary.extend([0xff, 0xfe, 0x00, 0x12]);
    vec![
        (
            "unknown_stream",
            edit("B: spin 50us on s2", "B: spin 50us on s3"),
            "unknown stream `s3`",
            ":12:17",
        ),
        (
            "undeclared_event",
            edit("wait E on s2", "wait F on s2"),
            "unknown event `F`",
            ":11:6",
        ),
        (
            "unknown_label",
            edit("precedes(A, B)", "precedes(A, C)"),
            "unknown op labelled `C`",
            ":14:19",
        ),
        (
            "duration_without_unit",
            edit("A: spin 50us", "A: spin 50"),
            "a duration without a unit",
            ":9:9",
        ),
        (
            "ten_seconds",
            edit("A: spin 50us", "A: spin 10s"),
            "a spin of 10s is over the limit of 1s",
            ":9:9",
        ),
        (
            "unknown_statement",
            edit("expect holds", "expect holds\nexpected holds"),
            "expected a statement",
            ":5:1",
        ),
        (
            "unterminated_string",
            edit("7.6\"", "7.6"),
            "expected a closing `\"`",
            ":3:",
        ),
        (
            "missing_expectation",
            edit("expect holds\n", ""),
            "claim `my.first` has no `expect` line",
            ":1:7",
        ),
        ("empty_file", Vec::new(), "no claim in this file", ":1:1"),
        (
            "binary_file",
            binary,
            "not a text file: control character U+007F",
            ":1:1",
        ),
        (
            "huge_file",
            vec![b'#'; 2 << 20],
            "the file is over 1024 KiB, the limit of a claim file",
            ":1:1",
        ),
    ]
}

pub fn trials() -> Vec<Trial> {
    let mut trials: Vec<Trial> = cases()
        .into_iter()
        .flat_map(|(name, bytes, message, at)| {
            ["check", "predict"].map(|command| {
                let bytes = bytes.clone();
                Trial::test(format!("malformed::{command}::{name}"), move || {
                    refused(command, name, &bytes, message, at)
                })
            })
        })
        .collect();
    trials.push(Trial::test(
        "malformed::one_bad_file_stops_every_file",
        || {
            let good = write("good", GOOD.as_bytes());
            let bad = write("bad", b"claim x\nstatement \"x\"\n");
            let out = cli()
                .arg("check")
                .arg(&good)
                .arg(&bad)
                .output()
                .map_err(|e| e.to_string())?;
            let stderr = String::from_utf8_lossy(&out.stderr);
            check(
                out.status.code() == Some(2),
                format!("exit {:?}", out.status.code()),
            )?;
            check(
                stderr.contains("nothing was run") && !stderr.contains("GPU"),
                stderr.to_string(),
            )
        },
    ));
    trials.push(Trial::test("cli::show_litmus_reads_back", || {
        let out = cli()
            .args(["show", "host.queries_until_done", "--litmus"])
            .output()
            .map_err(|e| e.to_string())?;
        check(
            out.status.success(),
            format!("exit {:?}", out.status.code()),
        )?;
        let text = String::from_utf8(out.stdout).map_err(|e| e.to_string())?;
        let claims =
            stream_litmus::litmus::parse("shown.litmus", &text).map_err(|e| e.to_string())?;
        check(
            claims.len() == 1 && claims[0].id == "host.queries_until_done",
            text,
        )
    }));
    trials.push(Trial::test(
        "cli::predict_names_what_the_model_cannot_decide",
        || {
            let path = write(
                "predict",
                GOOD.replace("precedes(A, B)", "precedes(A, B)\ncheck overlaps(A, B)")
                    .as_bytes(),
            );
            let out = cli()
                .arg("predict")
                .arg(&path)
                .output()
                .map_err(|e| e.to_string())?;
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            check(
                out.status.success(),
                format!("exit {:?}", out.status.code()),
            )?;
            check(
                text.contains(
                    "check precedes(A, B)           must precede: guaranteed by the rules",
                ),
                text.clone(),
            )?;
            check(text.contains("the rules forbid an overlap"), text.clone())?;
            check(
                text.contains("the claim expects Holds but the model says Violated"),
                text,
            )
        },
    ));
    trials
}

fn cli() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_stream-litmus"));
    c.env("CUDA_VISIBLE_DEVICES", "");
    c
}

fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stream-litmus-claims-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("{name}.litmus"));
    std::fs::write(&path, bytes).expect("temp dir is writable");
    path
}

fn check(ok: bool, why: String) -> Result<(), Failed> {
    if ok {
        Ok(())
    } else {
        Err(why.into())
    }
}

fn refused(command: &str, name: &str, bytes: &[u8], message: &str, at: &str) -> Result<(), Failed> {
    let path = write(&format!("{command}-{name}"), bytes);
    let out = cli()
        .arg(command)
        .arg(&path)
        .output()
        .map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let why = |what: &str| format!("{what}; stderr:\n{stderr}");
    check(
        out.status.code() == Some(2),
        why(&format!("exit status {:?}, not 2", out.status.code())),
    )?;
    check(
        stderr.matches("error: ").count() == 1,
        why("not exactly one error"),
    )?;
    check(
        stderr.contains(&format!("error: {message}")),
        why(&format!("no `error: {message}`")),
    )?;
    let origin = format!("--> {}{at}", path.display());
    check(stderr.contains(&origin), why(&format!("no `{origin}`")))?;
    check(stderr.contains('^') || name == "huge_file", why("no caret"))?;
    check(
        !stderr.contains("no usable GPU") && !stderr.contains("panicked"),
        why("reached the GPU or panicked"),
    )?;
    check(
        out.stdout.is_empty() || command == "predict",
        why("printed results"),
    )
}
