//! `precedes` within one selection is issue order (issue 35, point 6): "stream 7 runs in issue
//! order", the first claim of the seed notes, said on a trace as `forall precedes(S, S)`.

use std::io::Write;
use stream_litmus::litmus;
use stream_litmus::trace::{judge, Trace, TraceJudgement};
use stream_litmus::Verdict;

/// Three memsets issued to an idle GPU (launch latency 2 µs), then kernels given as (name,
/// stream, start, duration, launch call's begin), each call 5 µs long.
fn trace(kernels: &[(&str, u32, f64, f64, f64)]) -> String {
    let mut ops = vec![
        ("gpu_memset", "Memset (Device)", 7, 7.0, 1.0, 0.0),
        ("gpu_memset", "Memset (Device)", 7, 107.5, 1.0, 100.0),
        ("gpu_memset", "Memset (Device)", 7, 207.2, 1.0, 200.0),
    ];
    ops.extend(
        kernels
            .iter()
            .map(|&(n, s, ts, d, c)| ("kernel", n, s, ts, d, c)),
    );
    let mut ev = Vec::new();
    for (corr, (cat, name, stream, ts, dur, call)) in ops.into_iter().enumerate() {
        ev.push(format!(
            r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":1,"tid":{stream},"ts":{ts:.3},"dur":{dur:.3},"args":{{"device":0,"stream":{stream},"correlation":{corr}}}}}"#
        ));
        ev.push(format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{call:.3},"dur":5.0,"args":{{"correlation":{corr}}}}}"#
        ));
    }
    format!(
        r#"{{"schemaVersion":1,"traceEvents":[{}]}}"#,
        ev.join(",\n")
    )
}

fn judged(trace: &str, lines: &str) -> TraceJudgement {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    std::fs::File::create(&path)
        .unwrap()
        .write_all(trace.as_bytes())
        .unwrap();
    let trace = Trace::read(&[path]).unwrap();
    let text =
        format!("claim t.c\nstatement \"s\"\nsource \"x\" section \"y\"\nexpect holds\n{lines}\n");
    let claims = litmus::parse_traced("t.litmus", &text).unwrap();
    judge(&claims[0], &trace).unwrap()
}

fn reason(j: &TraceJudgement) -> String {
    j.trials[0].checks[0].reason.clone()
}

/// Three kernels issued 1 µs apart, queued on one stream: each ran after the one issued before.
const IN_ORDER: [(&str, u32, f64, f64, f64); 3] = [
    ("k1", 7, 1010.0, 100.0, 1000.0),
    ("k2", 7, 1111.0, 100.0, 1001.0),
    ("k3", 7, 1212.0, 100.0, 1002.0),
];

#[test]
fn one_stream_runs_in_issue_order() {
    let j = judged(
        &trace(&IN_ORDER),
        "select S = kernel \"k*\" stream 7\ncheck forall precedes(S, S)",
    );
    // Each op with every op issued after it: 3 pairs, never a pair both ways.
    assert_eq!(j.verdict, Verdict::Holds, "{}", reason(&j));
    assert!(
        reason(&j).contains("3 of 3 pairs show it"),
        "{}",
        reason(&j)
    );
}

#[test]
fn an_op_issued_later_that_runs_first_breaks_issue_order() {
    // k2, issued after k1 on another stream, starts while k1 runs.
    let mut two_streams = IN_ORDER;
    two_streams[1] = ("k2", 9, 1020.0, 50.0, 1001.0);
    let j = judged(
        &trace(&two_streams),
        "select S = kernel \"k*\"\ncheck forall precedes(S, S)",
    );
    assert_eq!(j.verdict, Verdict::Violated, "{}", reason(&j));
    assert!(reason(&j).contains("refute it"), "{}", reason(&j));
}
