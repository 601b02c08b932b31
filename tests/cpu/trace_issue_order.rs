//! `precedes` within one selection is issue order (issue 35, point 6): "stream 7 runs in issue
//! order", the first claim of the seed notes, said on a trace as `forall precedes(S, S)`.

use crate::common;

use common::kineto::{judged, made, MadeOp};
use stream_litmus::trace_claims::TraceJudgement;
use stream_litmus::Verdict;

/// Kernels given as (name, stream, start, duration, launch call's begin), after the idle-issued
/// memsets of [`made`].
fn trace(kernels: &[(&str, u32, f64, f64, f64)]) -> String {
    let ops: Vec<MadeOp> = (kernels.iter())
        .map(|&(n, s, ts, d, c)| ("kernel", n, s, ts, d, c))
        .collect();
    made(&ops, &[])
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
