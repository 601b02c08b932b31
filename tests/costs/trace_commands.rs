//! Claims on traces through the command line and on what `stream-litmus trace` records: exit
//! statuses, outputs (`--out`), refusals of options and repeated traces, and recordings joined.

use crate::common;

use common::hand_traces::{file, judged, kineto, two, Op, AB};
use std::path::PathBuf;
use stream_litmus::trace::{Trace, TraceError};
use stream_litmus::Verdict;

/// The CLI on a claim file and a trace: exit status and stderr.
fn cli(claim: &str, trace: &str, env: &[(&str, &str)]) -> (i32, String, String) {
    cli_with(claim, trace, env, &[])
}

fn cli_with(
    claim: &str,
    trace: &str,
    env: &[(&str, &str)],
    args: &[&str],
) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let (c, t) = (dir.path().join("c.litmus"), dir.path().join("t.json"));
    std::fs::write(&c, format!(
        "claim t.c\nstatement \"s\"\nsource \"x\" section \"y\"\nexpect holds\ntrace \"t.json\"\n{claim}\n"
    ))
    .unwrap();
    std::fs::write(&t, trace).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_stream-litmus"))
        .arg("check")
        .arg(&c)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_cli_judges_a_trace_without_a_gpu_and_exits_by_the_verdict() {
    let t = two((1010.0, 100.0), (1050.0, 50.0));
    let (code, out, err) = cli(&format!("{AB}\ncheck overlaps(A, B)"), &t, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("Holds") && out.contains("no GPU used"),
        "{out}"
    );
    let (code, out, _) = cli(&format!("{AB}\ncheck ~exists overlaps(A, B)"), &t, &[]);
    assert_eq!(code, 1, "an unexpected verdict: {out}");
    let (code, _, err) = cli(
        "select A = kernel \"none*\"\nselect B = kernel\ncheck exists overlaps(A, B)",
        &t,
        &[],
    );
    assert_eq!(code, 2, "a claim that selects nothing");
    assert!(err.contains("holds no op"), "{err}");
}

#[test]
fn a_trace_over_the_read_limit_is_refused_by_the_cli() {
    // 2 MiB of events against a 1 MiB limit: the reader stops at the limit, whatever the size.
    // Events nothing keeps (Python's functions): the budget of what a file keeps, a quarter of
    // the limit, would end it first (tests/costs/trace_bounds.rs).
    let op = r#"{"ph":"X","cat":"python_function","name":"f","pid":1,"tid":1,"ts":1.0,"dur":1.0},"#;
    let big = format!(
        r#"{{"schemaVersion":1,"traceEvents":[{}{}]}}"#,
        op.repeat(2 * 1024 * 1024 / op.len()),
        r#"{"ph":"i"}"#
    );
    let (code, _, err) = cli(
        &format!("{AB}\ncheck overlaps(A, B)"),
        &big,
        &[("STREAM_LITMUS_READ_LIMIT_MIB", "1")],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("larger than"), "{err}");
}

/// A launch call as the injection library writes it.
fn recorded_call(pid: u32, ts: f64, c: u32) -> String {
    format!(
        r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":{pid},"tid":{pid},"ts":{ts:.3},"dur":4.000,"args":{{"cbid":211,"correlation":{c}}}}}"#
    )
}

/// A 50 µs kernel as the injection library writes it, naming its process or not (as before).
fn recorded_kernel(process: Option<u32>, ts: f64, c: u32) -> String {
    let process = process.map_or(String::new(), |p| format!(r#""process":{p},"#));
    format!(
        r#"{{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":{ts:.3},"dur":50.000,"args":{{{process}"device":0,"stream":7,"correlation":{c},"grid":[1,1,1],"block":[32,1,1]}}}}"#
    )
}

#[test]
fn what_trace_recorded_joins_into_one_readable_trace() {
    // Two processes' records as the injection library writes them; one was killed mid-line.
    let dir = tempfile::tempdir().unwrap();
    let call = recorded_call;
    let kernel = |ts: f64, c: u32| recorded_kernel(None, ts, c);
    // The driver environment the injection writes first (`process_env`).
    let mut a = r#"{"ph":"M","name":"process_env","pid":11,"args":{"env":{"CUDA_DEVICE_MAX_CONNECTIONS":"1"}}}"#.to_string() + "\n";
    for i in 0..4u32 {
        a += &format!(
            "{}\n{}\n",
            call(11, 100.0 * f64::from(i), i),
            kernel(100.0 * f64::from(i) + 6.5, i)
        );
    }
    std::fs::write(dir.path().join("trace-11.jsonl"), &a).unwrap();
    let b = format!(
        "{}\n{{\"note\":\"x\"}}\n{{\"ph\":\"X\",\"cat\":\"ker",
        call(12, 50.0, 99)
    );
    std::fs::write(dir.path().join("trace-12.jsonl"), b).unwrap();
    let out = dir.path().join("joined.json.gz");
    let joined =
        stream_litmus::trace::join(dir.path(), &out, serde_json::json!({"base_ns": 0})).unwrap();
    assert_eq!((joined.processes, joined.kernels, joined.calls), (2, 4, 5));
    assert_eq!(
        (joined.cut_lines, joined.notes.clone()),
        (1, vec!["x".to_string()])
    );
    let trace = Trace::read(&[out]).unwrap();
    // Kept through the join and read per process; process 12 recorded none.
    let env = &trace.files[0].env;
    assert_eq!(env.len(), 1, "{env:?}");
    assert_eq!(env.get(&11).and_then(|e| e.connections()), Some(1));
    let ops = &trace.files[0].ops;
    assert_eq!(ops.len(), 4);
    assert!(ops.iter().all(|o| o
        .call
        .as_ref()
        .is_some_and(|c| &*c.name == "cudaLaunchKernel")));
}

#[test]
fn a_long_launch_call_or_a_synchronous_copy_is_no_launch_jitter() {
    // A first launch that loads its module inside a 300 µs call starts 2 µs after the call
    // returns; a synchronous copy's call returns after the copy ended; a pageable copy's call
    // returns long after the copy began. None widens the jitter.
    let mut t = kineto(&[Op("kernel", "gemm_a", 7, 1010.0, 100.0, 1000.0)], &[]);
    let extra = [
        r#"{"ph":"X","cat":"kernel","name":"first","pid":0,"tid":7,"ts":5302.0,"dur":10.0,"args":{"device":0,"stream":7,"correlation":1}}"#,
        r#"{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":42,"tid":42,"ts":5000.0,"dur":300.0,"args":{"correlation":1}}"#,
        r#"{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pageable -> Device)","pid":0,"tid":7,"ts":6010.0,"dur":100.0,"args":{"device":0,"stream":7,"correlation":2}}"#,
        r#"{"ph":"X","cat":"cuda_runtime","name":"cudaMemcpy","pid":42,"tid":42,"ts":6000.0,"dur":120.0,"args":{"correlation":2}}"#,
        // An asynchronous copy from pageable memory: its call returns once the last chunk is
        // staged, 390 µs after the copy began and before it ends.
        r#"{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pageable -> Device)","pid":0,"tid":7,"ts":7010.0,"dur":500.0,"args":{"device":0,"stream":7,"correlation":3}}"#,
        r#"{"ph":"X","cat":"cuda_runtime","name":"cudaMemcpyAsync","pid":42,"tid":42,"ts":7000.0,"dur":400.0,"args":{"correlation":3}}"#,
    ];
    t = t.replacen(
        "\"traceEvents\":[",
        &format!("\"traceEvents\":[{},", extra.join(",")),
        1,
    );
    let (_d, path) = file(&t);
    let tol = Trace::read(&[path]).unwrap().tolerances.tolerances;
    assert_eq!(tol.launch_latency_ns, Some(2_000));
    assert_eq!(tol.launch_jitter_ns, 3_000, "as without the three");
}

#[test]
fn a_synchronous_copy_does_not_make_later_ops_look_ready_early() {
    // The memsets start 7 µs after their calls begin: the clock error is over the synced path's
    // bound, so ready times come from the trial's shortest start − issue. A synchronous copy
    // (its call returns 10 µs after the copy ends) must not count there: with it, every op
    // would look ready 10 µs before its call returned, and Y, launched only after X ended,
    // would "wait" for X.
    let t = kineto(
        &[
            Op("kernel", "x_kernel", 7, 1000.0, 20.0, 990.0),
            Op("kernel", "y_kernel", 9, 1026.0, 20.0, 1019.0),
            Op(
                "gpu_memcpy",
                "Memcpy HtoD (Pinned -> Device)",
                7,
                3000.0,
                -0.0,
                0.0,
            ),
        ],
        &[],
    );
    // The copy: its call 2990..3020, the copy itself 2992..3010 (synchronous).
    let t = t
        .replace(
            r#""ts":3000.000,"dur":0.000"#,
            r#""ts":2992.000,"dur":18.000"#,
        )
        .replace(
            r#""ts":0.000,"dur":5.0,"args":{"correlation":1006}"#,
            r#""ts":2990.000,"dur":30.0,"args":{"correlation":1006}"#,
        );
    assert!(
        t.contains(r#""ts":2990.000,"dur":30.0"#),
        "the test trace has the copy's call"
    );
    let j = judged(
        &t,
        "select X = kernel \"x_*\"\nselect Y = kernel \"y_*\"\ncheck ~exists overlaps(X, Y)",
    );
    assert_eq!(
        j.verdict,
        Verdict::Inconclusive,
        "{}",
        j.trials[0].checks[0].reason
    );
}

#[test]
fn check_out_writes_the_perfetto_trace_and_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let (c, tr) = (dir.path().join("c.litmus"), dir.path().join("t.json"));
    std::fs::write(&tr, two((1010.0, 100.0), (1050.0, 50.0))).unwrap();
    let claim = format!(
        "claim t.c\nstatement \"s\"\nsource \"x\" section \"y\"\nexpect holds\ntrace \"t.json\"\n{AB}\ncheck overlaps(A, B)\n"
    );
    std::fs::write(&c, claim).unwrap();
    let out = dir.path().join("out");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_stream-litmus"))
        .args(["check", "--out"])
        .arg(&out)
        .arg(&c)
        .status()
        .unwrap();
    assert!(status.success());
    let picture: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("trace.json")).unwrap()).unwrap();
    let cats: Vec<&str> = picture["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["cat"].as_str())
        .collect();
    assert!(
        cats.contains(&"A") && cats.contains(&"B") && cats.contains(&"other"),
        "each op's category is its selection: {cats:?}"
    );
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    let doc = roxmltree::Document::parse_with_options(
        &page,
        roxmltree::ParsingOptions {
            allow_dtd: true,
            ..Default::default()
        },
    )
    .expect("the page is well-formed XML");
    let rects = doc.descendants().filter(|n| n.has_tag_name("rect")).count();
    // The five ops of the trial, and a swatch per selection.
    assert_eq!(rects, 5 + 2, "{page}");
}

/// A call relation within one selection speaks of each op and its own call: "each launch
/// returns before its kernel ends" holds although the second kernel's launch returned after the
/// first kernel ended (pairing one kernel's call with another's end said Violated).
#[test]
fn a_call_relation_on_one_selection_pairs_each_op_with_its_own_call() {
    let t = kineto(
        &[
            Op("kernel", "gemm_1", 7, 1100.0, 100.0, 1000.0),
            Op("kernel", "gemm_2", 7, 1310.0, 100.0, 1300.0),
        ],
        &[],
    );
    let sel = "select A = kernel \"gemm*\"";
    let before = judged(&t, &format!("{sel}\ncheck forall returns_before(A, A)"));
    assert_eq!(
        before.verdict,
        Verdict::Holds,
        "{}",
        before.trials[0].checks[0].reason
    );
    assert!(
        before.trials[0].checks[0]
            .reason
            .starts_with("2 of 2 pairs"),
        "{}",
        before.trials[0].checks[0].reason
    );
    let after = judged(&t, &format!("{sel}\ncheck exists returns_after(A, A)"));
    assert_eq!(after.verdict, Verdict::Violated);
}

/// A call that returned within the trace's clock error of its op's end is neither shown to
/// return after it nor before it: Inconclusive both ways, with the tolerance named.
#[test]
fn a_return_inside_the_tolerance_decides_neither_way() {
    // The launch call (5 µs) returns at 1005 µs; the kernel ends at 1004 µs.
    let t = kineto(&[Op("kernel", "gemm_1", 7, 1002.0, 2.0, 1000.0)], &[]);
    let sel = "select A = kernel \"gemm*\"";
    for check in ["returns_after(A, A)", "returns_before(A, A)"] {
        let j = judged(&t, &format!("{sel}\ncheck {check}"));
        let reason = &j.trials[0].checks[0].reason;
        assert_eq!(j.verdict, Verdict::Inconclusive, "{check}: {reason}");
        assert!(reason.contains('±'), "{check}: {reason}");
    }
}

/// Options of GPU runs are refused on claims on traces, with exit 2 and the reason, instead of
/// being ignored (`--json FILE` once wrote nothing and exited 0; `--trials` changed nothing).
#[test]
fn gpu_run_options_are_refused_on_trace_claims_not_ignored() {
    let t = two((1010.0, 100.0), (1050.0, 50.0));
    let claim = format!("{AB}\ncheck overlaps(A, B)");
    for (args, word) in [
        (&["--trials", "20"][..], "--trials"),
        (&["--bench"][..], "--bench"),
    ] {
        let (code, out, err) = cli_with(&claim, &t, &[], args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains(word) && err.contains("without it"), "{err}");
        assert!(!out.contains("Holds"), "judged anyway: {out}");
    }
}

/// `--json` and `--junit` on claims on traces: every claim, judged or not, with its verdict,
/// evidence and the SHA-256 of its trace; one test case each, a claim not as expected a failure,
/// one not judged an error (issue 54). Both are refused where they would replace an input or
/// one another.
#[test]
fn check_json_and_junit_hold_every_claim() {
    let dir = tempfile::tempdir().unwrap();
    let (c, tr) = (dir.path().join("c.litmus"), dir.path().join("t.json"));
    let trace = two((1010.0, 100.0), (1050.0, 50.0));
    std::fs::write(&tr, &trace).unwrap();
    let claim = |id: &str, expect: &str, check: &str| {
        format!(
            "claim {id}\nstatement \"s\"\nsource \"x\" section \"y\"\nexpect {expect}\n\
             trace \"t.json\"\n{AB}\n{check}\n\n"
        )
    };
    std::fs::write(
        &c,
        claim("t.ok", "holds", "check overlaps(A, B)")
            + &claim("t.wrong", "violated", "check overlaps(A, B)")
            + &claim("t.none", "holds", "check overlaps(A, B)").replace(
                "select A = kernel \"gemm*\"",
                "select A = kernel \"no_such_kernel\"",
            ),
    )
    .unwrap();
    let (json, xml) = (dir.path().join("v.json"), dir.path().join("v.xml"));
    let run = |extra: &[&std::path::Path]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_stream-litmus"));
        cmd.arg("check")
            .arg(&c)
            .arg("--json")
            .arg(extra[0])
            .arg("--junit")
            .arg(extra[1]);
        cmd.output().unwrap()
    };
    let out = run(&[&json, &xml]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(
        (v["schema"].as_str(), v["version"].as_u64()),
        (Some("stream-litmus check"), Some(1))
    );
    let claims = v["claims"].as_array().unwrap();
    let field = |i: usize, k: &str| claims[i][k].clone();
    assert_eq!(claims.len(), 3, "{v}");
    assert_eq!(field(0, "as_expected"), true);
    assert_eq!(
        (field(1, "verdict"), field(1, "as_expected")),
        ("holds".into(), false.into())
    );
    assert_eq!(
        (field(2, "judged"), field(2, "verdict")),
        (false.into(), "inconclusive".into())
    );
    assert!(
        field(2, "error")
            .as_str()
            .unwrap()
            .contains("selection A holds no op"),
        "{v}"
    );
    let sha = field(0, "traces")[0]["sha256"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(sha.len(), 64);
    assert_eq!(field(0, "traces")[0]["bytes"], trace.len() as u64);
    assert_eq!(field(0, "trials").as_array().unwrap().len(), 1);
    let text = std::fs::read_to_string(&xml).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("well-formed JUnit XML");
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .unwrap();
    let counts = ["tests", "failures", "errors"].map(|a| suite.attribute(a).unwrap());
    assert_eq!(counts, ["3", "1", "1"], "{text}");
    // An output that is an input, or the other output, is refused before anything is judged.
    for (a, b) in [(&c, &xml), (&json, &json), (&json, &tr)] {
        let out = run(&[a, b]);
        assert_eq!(out.status.code(), Some(2));
        assert!(
            String::from_utf8_lossy(&out.stdout).is_empty(),
            "judged anyway"
        );
    }
    assert!(
        std::fs::read_to_string(&c).unwrap().contains("t.none"),
        "the claim file is intact"
    );
}

/// `--filter` keeps the claims whose id contains any filter, and a filter that matches none is
/// an error naming it, on traces as in `run` (one rule, `commands/filters.rs`; issue 53).
#[test]
fn a_filter_that_matches_no_claim_is_an_error_on_traces_too() {
    let t = two((1010.0, 100.0), (1050.0, 50.0));
    let claim = format!("{AB}\ncheck overlaps(A, B)");
    let (code, out, _) = cli_with(&claim, &t, &[], &["-f", "t.c"]);
    assert_eq!(code, 0, "{out}");
    let (code, out, err) = cli_with(&claim, &t, &[], &["-f", "t.c", "-f", "t.typo"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("\"t.typo\""), "{err}");
    assert!(!out.contains("Holds"), "judged anyway: {out}");
}

/// The same trace given twice, by its path and through a link, is refused before it is read,
/// and a long list of repeats costs one pass (issue 36, rows 7 and 15).
#[test]
fn a_trace_given_twice_is_refused() {
    let t = two((1010.0, 100.0), (1050.0, 50.0));
    let (dir, path) = file(&t);
    let link = dir.path().join("again.json");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    for paths in [vec![path.clone(), path.clone()], vec![path.clone(), link]] {
        let Err(err) = Trace::read(&paths) else {
            panic!("a trace given twice was accepted");
        };
        assert!(matches!(err, TraceError::NotOneRun(_)), "{err}");
        assert!(err.to_string().contains("same file"), "{err}");
    }
    let many = vec![path.clone(); 20_000];
    let _one = common::peak::one_at_a_time();
    let began = std::time::Instant::now();
    assert!(Trace::read(&many).is_err());
    assert!(began.elapsed() < std::time::Duration::from_secs(2));
}

#[test]
fn ops_are_joined_to_calls_of_their_own_process() {
    // Two processes whose correlation ids both count from 1, as CUPTI counts them: process 11
    // launches at 0, 100, 200, 300 µs, process 12 at 5000, 5100, … Each kernel runs 6.5 µs after
    // its own launch. Joined by correlation alone, half the ops took the other process's call.
    let dir = tempfile::tempdir().unwrap();
    let (call, kernel) = (recorded_call, recorded_kernel);
    for named in [true, false] {
        for (pid, base) in [(11u32, 0.0), (12, 5000.0)] {
            let mut text = String::new();
            for i in 1..=4u32 {
                let at = base + 100.0 * f64::from(i);
                text += &format!(
                    "{}\n{}\n",
                    call(pid, at, i),
                    kernel(named.then_some(pid), at + 6.5, i)
                );
            }
            std::fs::write(dir.path().join(format!("trace-{pid}.jsonl")), text).unwrap();
        }
        let out = dir.path().join(format!("joined-{named}.json.gz"));
        stream_litmus::trace::join(dir.path(), &out, serde_json::json!({"base_ns": 0})).unwrap();
        let trace = Trace::read(&[out]).unwrap();
        let file = &trace.files[0];
        assert_eq!(file.ops.len(), 8);
        for op in &file.ops {
            match (named, &op.call) {
                (true, Some(c)) => {
                    let lead = op.start_ns - c.begin_ns;
                    assert_eq!(
                        lead, 6_500,
                        "op at {} joined to a call at {}",
                        op.start_ns, c.begin_ns
                    );
                    assert_eq!(op.pid, if op.start_ns < 5_000_000 { 11 } else { 12 });
                }
                (false, None) => {}
                (named, call) => panic!("named {named}: op at {} has call {call:?}", op.start_ns),
            }
        }
        // Where the trace does not name each op's process, the ops stay without a call, and
        // the trace says why.
        assert_eq!(file.join_note.is_some(), !named, "{:?}", file.join_note);
    }
}

/// Recorded on an H100 (2026-11-26): two processes of examples/cuda/event_two_streams.cu run at
/// once under `stream-litmus trace`. CUPTI counts correlation ids from 1 in each process, so every
/// one of the 50 kernels' ids occurs among both processes' calls.
#[test]
fn a_two_process_recording_joins_each_op_within_its_process() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples/cuda/traces/event_two_streams_two_processes.json.gz");
    let trace = Trace::read(std::slice::from_ref(&path)).unwrap();
    let file = &trace.files[0];
    let kernels: Vec<_> = file.ops.iter().filter(|o| o.call.is_some()).collect();
    assert_eq!(kernels.len(), 50);
    let pids: std::collections::BTreeSet<i64> = kernels.iter().map(|o| o.pid).collect();
    assert_eq!(pids.len(), 2, "{pids:?}");
    for op in &kernels {
        let call = op.call.as_ref().unwrap();
        // Each kernel starts after its own launch call began, within a millisecond of it (joined
        // to the other process's call, leads of −300 to +300 ms came out).
        let lead = op.start_ns - call.begin_ns;
        assert!((0..1_000_000).contains(&lead), "lead {lead} ns");
    }
    assert!(file.join_note.is_none());
    // The launch jitter is the one-process figure (1.2 µs on the same machine), not milliseconds.
    assert!(
        trace.tolerances.tolerances.launch_jitter_ns < 10_000,
        "{}",
        trace.tolerances.describe()
    );
}

/// Issue 35, point 12: a folder of claims on traces is judged as its files are, not refused as
/// claims that need `--trace`.
#[test]
fn check_of_a_folder_of_claims_on_traces_judges_them() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("t.json"),
        two((1010.0, 100.0), (1050.0, 50.0)),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("c.litmus"),
        format!(
            "claim t.c\nstatement \"s\"\nsource \"x\" section \"y\"\nexpect holds\n\
             trace \"t.json\"\n{AB}\ncheck overlaps(A, B)\n"
        ),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_stream-litmus"))
        .arg("check")
        .arg(dir.path())
        .env("CUDA_VISIBLE_DEVICES", "")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("Holds") && stdout.contains("no GPU used"),
        "{stdout}"
    );
}

/// Seed 003's DDP step (`ddp_hook.py own_stream --no-profiler`) recorded by `stream-litmus trace`
/// on two H100s (2026-11-27), trimmed to its five steps (`examples/pytorch/trim_steps.py`): both
/// processes in one file, each op joined to its own process's launch, each rank on its GPU, and
/// the launch jitter of one process's profiler trace, not milliseconds.
#[test]
fn a_two_gpu_ddp_recording_joins_each_process_and_keeps_the_jitter() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples/pytorch/traces/ddp_own_stream.trace.json.gz");
    let trace = Trace::read(std::slice::from_ref(&path)).unwrap();
    let file = &trace.files[0];
    let mut device_of: std::collections::BTreeMap<i64, std::collections::BTreeSet<u32>> =
        Default::default();
    for op in file.ops.iter().filter(|o| o.call.is_some()) {
        device_of.entry(op.pid).or_default().insert(op.device);
        let lead = op.start_ns - op.call.as_ref().unwrap().begin_ns;
        assert!((0..100_000_000).contains(&lead), "lead {lead} ns");
    }
    assert_eq!(device_of.len(), 2, "{device_of:?}");
    let devices: Vec<_> = device_of.values().cloned().collect();
    assert_ne!(devices[0], devices[1], "{device_of:?}");
    assert!(devices.iter().all(|d| d.len() == 1), "{device_of:?}");
    let t = trace.tolerances.tolerances;
    assert!(
        t.launch_jitter_ns < 10_000,
        "{}",
        trace.tolerances.describe()
    );
    // Five steps of each process: trial n holds step n of both.
    let trials = trace
        .trials(&stream_litmus::trace::TrialSpec::Each(
            stream_litmus::trace::Pattern::new("ProfilerStep#*").unwrap(),
        ))
        .unwrap();
    assert_eq!(trials.len(), 5);
    for t in &trials {
        let pids: std::collections::BTreeSet<i64> = t.places.iter().map(|p| p.1).collect();
        assert_eq!(pids.len(), 2, "{}", t.name);
    }
}
