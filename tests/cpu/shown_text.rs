//! Text from a results file is shown, not obeyed: control characters and bidi overrides in its
//! strings reach neither the terminal nor the HTML report raw (issue 22, defect 4).

use crate::common;

use std::process::Command;
use stream_litmus::RunRecord;

const NASTY: &str = "a\u{1b}[2J\u{1b}]0;title\u{7}\0\u{9b}31m\u{202e}dcba\r";

fn hidden(text: &str) -> Option<char> {
    text.chars()
        .find(|&c| stream_litmus::report::shown::is_hidden(c))
}

/// The H100 core run with its first claim's words replaced by `NASTY`.
fn nasty_run(dir: &std::path::Path) -> std::path::PathBuf {
    let mut run = RunRecord::load(&common::fixture("core-h100.json")).unwrap();
    run.claims.truncate(2);
    let c = &mut run.claims[0].claim;
    c.id = format!("x.{NASTY}");
    c.statement = NASTY.into();
    c.source.section = NASTY.into();
    c.rationale = Some(NASTY.into());
    c.program.name = NASTY.into();
    c.program.ops[0].label = NASTY.into();
    c.program.streams[0].label = NASTY.into();
    let path = dir.join("nasty.json");
    run.save(&path).unwrap();
    path
}

#[test]
fn judge_compare_and_render_show_control_characters_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let file = nasty_run(dir.path());
    let cli = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_stream-litmus"));
        c.env("CUDA_VISIBLE_DEVICES", "");
        c
    };
    let good = common::fixture("core-h100.json");
    for args in [
        vec!["judge".into(), file.clone()],
        vec!["compare".into(), good.clone(), file.clone()],
    ] {
        let out = cli().args(&args).output().unwrap();
        let (stdout, stderr) = (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        );
        assert_eq!(hidden(&stdout), None, "{args:?}: {stdout:?}");
        assert_eq!(hidden(&stderr), None, "{args:?}: {stderr:?}");
        assert!(stdout.contains("\\u{1b}[2J"), "{args:?}: {stdout}");
    }
    let report = dir.path().join("report");
    let out = cli()
        .arg("render")
        .arg(&file)
        .arg("--out")
        .arg(&report)
        .output()
        .unwrap();
    assert!(out.status.code().is_some_and(|c| c < 2), "{out:?}");
    let html = std::fs::read_to_string(report.join("report.html")).unwrap();
    assert_eq!(hidden(&html), None);
    assert!(html.contains("\\u{202e}dcba"));
    roxmltree::Document::parse_with_options(
        &html,
        roxmltree::ParsingOptions {
            allow_dtd: true,
            ..Default::default()
        },
    )
    .expect("report.html stays well-formed XML");
}

#[test]
fn predict_shows_a_builder_claims_words_as_text() {
    use stream_litmus::{Claim, Expect, Source, StreamKind};
    let mut c = Claim::builder("x.y", NASTY, Source::new(NASTY, "7"));
    let s = c.stream(StreamKind::NonBlocking);
    let a = c.spin(s, NASTY, std::time::Duration::from_micros(5));
    let b = c.spin(s, "B", std::time::Duration::from_micros(5));
    c.precedes(a, b);
    let text = stream_litmus::litmus::predict(&c.build(Expect::Holds)).to_string();
    let shown = stream_litmus::report::shown::shown(&text);
    assert_eq!(hidden(&shown), None);
    assert!(shown.contains("\\u{1b}]0;title\\u{7}"), "{shown}");
}

/// Issue 36, row 8: a line feed in a claim's id or an op's label cannot print a line of ours.
#[test]
fn a_line_feed_from_a_file_forges_no_verdict_line() {
    const FORGED: &str = "ok   forged.claim                            Holds";
    let dir = tempfile::tempdir().unwrap();
    let mut run = RunRecord::load(&common::fixture("core-h100.json")).unwrap();
    run.claims.truncate(2);
    let c = &mut run.claims[0].claim;
    c.id = format!("x.a\n{FORGED}");
    c.statement = format!("s\n{FORGED}");
    c.program.ops[0].label = format!("K\n{FORGED}");
    let path = dir.path().join("forged.json");
    run.save(&path).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_stream-litmus"))
        .env("CUDA_VISIBLE_DEVICES", "")
        .arg("judge")
        .arg(&path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("x.a\\nok   forged.claim"), "{stdout}");
    assert!(
        !stdout.lines().any(|l| l.starts_with("ok   forged")),
        "{stdout}"
    );
}

/// A path is input too (issue 51, point 5): a trace named with a line feed and a forged verdict
/// line, and a kernel named with control characters, reach neither the terminal, nor
/// `explain --out`'s explain.txt, nor the claims `explain --claims` writes, raw.
#[test]
fn a_path_or_a_name_forges_no_line_in_any_output() {
    let dir = tempfile::tempdir().unwrap();
    // (A path holds no slash in a name: the forged line says "5 of 5".)
    let forged = "ok   forged.claim                     Holds        Always 5 of 5";
    let path = dir.path().join(format!("t\n{forged}\n.json"));
    let trace = common::kineto::two_kernels(&format!("k{NASTY}"), "b");
    std::fs::write(&path, trace).unwrap();
    let out = dir.path().join("out");
    let claims = dir.path().join("found.litmus");
    let cli = env!("CARGO_BIN_EXE_stream-litmus");
    let run = |args: &[&std::ffi::OsStr]| {
        let o = Command::new(cli).args(args).output().unwrap();
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    let mut texts = vec![run(&[
        "explain".as_ref(),
        path.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
        "--claims".as_ref(),
        claims.as_os_str(),
    ])];
    // A trace that is not there: the error names the path on stderr.
    let missing = dir.path().join(format!("m\n{forged}\n.json"));
    texts.push(run(&["explain".as_ref(), missing.as_os_str()]));
    texts.push(std::fs::read_to_string(out.join("explain.txt")).unwrap_or_default());
    texts.push(std::fs::read_to_string(&claims).unwrap_or_default());
    for text in &texts {
        assert!(
            !text.lines().any(|l| l.starts_with("ok   forged")),
            "a forged line: {text}"
        );
        assert_eq!(hidden(text), None, "{text}");
    }
    assert!(
        texts[2].contains("waits"),
        "explain.txt written: {}",
        texts[0]
    );
}
