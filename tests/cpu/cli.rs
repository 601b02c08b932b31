//! The command line, on any machine: a clear error without a GPU, listing and showing claims,
//! and re-judging recorded results.

use crate::common;

use std::process::Command;

fn cli() -> Command {
    Command::new(env!("CARGO_BIN_EXE_stream-litmus"))
}

/// With no device visible the CLI exits 2 with one line naming the cause, and no panic.
/// (`CUDA_VISIBLE_DEVICES=` hides every GPU, so this runs on GPU machines too.)
#[test]
fn without_a_gpu_the_cli_says_why_and_exits_non_zero() {
    let out = cli().env("CUDA_VISIBLE_DEVICES", "").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(
        stderr.starts_with("stream-litmus: no usable GPU: "),
        "{stderr}"
    );
    assert!(
        stderr.contains("libcuda.so")
            || stderr.contains("NVRTC")
            || stderr.contains("no CUDA device"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn list_names_every_claim_with_its_source() {
    let out = cli().arg("list").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for id in [
        "fifo.blocking",
        "null.barrier",
        "event.wait_orders",
        "connections.one.false_dependency",
    ] {
        assert!(text.contains(id), "{id} missing from:\n{text}");
    }
    assert!(text.contains("002_84e77744080bec39.txt"));
}

#[test]
fn show_prints_a_claim_as_json_that_parses_back() {
    let out = cli()
        .args(["show", "event.wait_orders", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let claim: stream_litmus::Claim = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(claim.id, "event.wait_orders");
    assert_eq!(claim.checks.len(), 1);
}

#[test]
fn an_unknown_claim_or_filter_is_a_clear_error() {
    let out = cli().args(["show", "no.such.claim"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("see `stream-litmus list`"));
    let out = cli().args(["--filter", "no.such.claim"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn judge_replays_recorded_results_without_a_gpu() {
    for entry in std::fs::read_dir(common::fixture("")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.starts_with("core-") && name.ends_with(".json")) {
            continue;
        }
        let out = cli()
            .arg("judge")
            .arg(&path)
            .env("CUDA_VISIBLE_DEVICES", "")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}:\n{text}", path.display());
        assert!(text.contains("as expected, 0 not"), "{text}");
        assert!(!text.contains("differs from the re-judged"), "{text}");
    }
}

#[test]
fn judge_rejects_a_file_that_is_not_results() {
    let dir = std::env::temp_dir().join(format!("stream-litmus-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"hello\": 1}").unwrap();
    let out = cli().arg("judge").arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a stream-litmus results file"));
    std::fs::remove_dir_all(&dir).ok();
}

/// `judge --write` re-judges a recorded run and writes it (gzip for a `.gz` name): with the rules
/// unchanged, the written run is the recorded one, stamps and judgements alike.
#[test]
fn judge_writes_the_rejudged_results() {
    // The one results file kept in schema 1 (stamps as objects), to show old files still read.
    let recorded = common::fixture("core-h100.json");
    let out = std::env::temp_dir().join(format!("stream-litmus-{}.json.gz", std::process::id()));
    let status = cli()
        .arg("judge")
        .arg(&recorded)
        .arg("--write")
        .arg(&out)
        .env("CUDA_VISIBLE_DEVICES", "")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(status.status.success(), "{text}");
    assert!(text.contains("re-judged results written to"), "{text}");
    let (a, b) = (
        stream_litmus::RunRecord::load(&recorded).unwrap(),
        stream_litmus::RunRecord::load(&out).unwrap(),
    );
    std::fs::remove_file(&out).unwrap();
    assert_eq!(a.schema, 1);
    // Written again in the current schema (stamps in columns), the same run.
    assert_eq!(b.schema, stream_litmus::SCHEMA_VERSION);
    assert!(
        stream_litmus::RunRecord {
            schema: a.schema,
            ..b
        } == a,
        "the run differs once re-written"
    );
}

/// A reader that leaves early (`stream-litmus show … | head -1`) ends the program quietly, as
/// with any Unix filter: no panic about a broken pipe. (The claim's JSON, a program of a
/// thousand launches, is larger than a pipe's buffer, so the writer does meet the closed pipe.)
#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    use std::io::{BufRead, BufReader};
    let mut child = cli()
        .args(["show", "graph.launch_cost.1000", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with('{'), "{first}");
    // the reader is gone: the rest of the listing meets a closed pipe
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn trace_overhead_takes_a_bounded_number_of_pairs() {
    for bad in ["--overhead=0", "--overhead=21", "--overhead=x"] {
        let out = cli().args(["trace", bad, "--", "true"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {stderr}");
        assert!(stderr.contains("--overhead"), "{bad}: {stderr}");
    }
}

/// `fuzz` replays what an earlier run wrote to `--regressions`: a file that is not such a list,
/// or holds a program the executor would refuse, is refused with exit 2 and its name before any
/// GPU is opened.
#[test]
fn fuzz_refuses_a_regressions_file_it_did_not_write() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("reg.json");
    let program = |stream: u32| {
        format!(
            r#"{{"programs":[{{"name":"x","streams":[{{"kind":"non_blocking","label":"s1"}}],"events":[],"ops":[{{"id":0,"label":"K","op":"spin","stream":{stream},"duration_ns":1000,"grid":1,"block":32}}]}}]}}"#
        )
    };
    let long = format!(
        "{{\"programs\": \"{}\nok   forged.claim\"}}",
        "A".repeat(100_000)
    );
    for text in ["not json", "[]", "{\"a\": 1}", &program(3), &long] {
        std::fs::write(&bad, text).unwrap();
        let out = cli()
            .args(["fuzz", "--cases", "1", "--regressions"])
            .arg(&bad)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {err}");
        assert!(err.contains("not a regressions file"), "{text}: {err}");
        assert!(err.len() < 2_000 && !err.contains("\nok "), "{err}");
    }
    // What `fuzz` writes is read back: past the file, the run stops only for want of a GPU.
    std::fs::write(&bad, program(0)).unwrap();
    let out = cli()
        .args(["fuzz", "--cases", "1", "--regressions"])
        .arg(&bad)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("not a regressions file"), "{err}");
}

/// A count variable that holds no positive whole number is an error naming it (issue 51, point
/// 10), before any command works: once, `1MiB`, `1.0`, `0x1`, `0` and `-1` left the default in
/// force without a word.
#[test]
fn a_limit_that_is_no_count_is_refused_with_its_name() {
    for name in stream_litmus::limits::COUNT_ENVS {
        for bad in ["1MiB", "1.0", "0x1", "0", "-1", "", " "] {
            let o = std::process::Command::new(env!("CARGO_BIN_EXE_stream-litmus"))
                .arg("list")
                .env(name, bad)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{name}={bad:?}: {err}");
            assert!(err.contains(name), "{err}");
        }
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_stream-litmus"))
            .arg("list")
            .env(name, "4096")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{name}=4096");
    }
}
