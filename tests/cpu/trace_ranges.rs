//! What `in` and `during` match (issue 35, point 8): `in "RANGE"` takes the ops whose launch
//! call the range holds on its own thread (a `record_function`, or a PyTorch op such as
//! `aten::div_`); `during "RANGE"` takes those any thread of the process issued while it was
//! open (the kernels PyTorch's autograd thread launches during the main thread's `backward`).

use crate::common;

use common::kineto::{first_trial_members, judged, made, try_judged, MadeOp};
use stream_litmus::trace_claims::TraceJudgement;
use stream_litmus::Verdict;

fn reason(j: &TraceJudgement) -> String {
    j.trials[0].checks[0].reason.clone()
}

/// Two kernels launched on thread 1 at 1000 and 1100 µs, one after the other, the second inside a PyTorch op
/// `aten::div_` (a `cpu_op` of thread 1), both while thread 5's range `backward` was open.
fn trace() -> String {
    let ops: [MadeOp; 2] = [
        ("kernel", "mm", 7, 1010.0, 190.0, 1000.0),
        ("kernel", "div", 7, 1210.0, 50.0, 1100.0),
    ];
    let extra = [
        r#"{"ph":"X","cat":"user_annotation","name":"backward","pid":1,"tid":5,"ts":990.0,"dur":200.0}"#,
        r#"{"ph":"X","cat":"cpu_op","name":"aten::div_","pid":1,"tid":1,"ts":1098.0,"dur":10.0}"#,
    ];
    made(&ops, &[]).replacen(
        "\"traceEvents\":[",
        &format!("\"traceEvents\":[{},", extra.join(",")),
        1,
    )
}

#[test]
fn a_pytorch_op_selects_the_kernels_it_launched() {
    let j = judged(
        &trace(),
        "select D = kernel in \"aten::div_\"\nselect M = kernel \"mm\"\ncheck precedes(M, D)",
    );
    assert_eq!(j.verdict, Verdict::Holds, "{}", reason(&j));
    assert!(
        reason(&j).contains("mm") && reason(&j).contains("div"),
        "{}",
        reason(&j)
    );
    // A PyTorch op is a trial like any range.
    let lines = "trial each \"aten::div_\"\nselect D = kernel\ncheck exists overlaps(D, D)";
    let each = judged(&trace(), lines);
    assert_eq!(each.trials.len(), 1);
    assert_eq!(
        first_trial_members(&trace(), lines),
        [1],
        "{:?}",
        each.trials[0]
    );
}

#[test]
fn in_takes_the_ranges_own_thread_and_during_any_thread() {
    let claim = |word: &str| {
        try_judged(
            &trace(),
            &format!("select K = kernel {word} \"backward\"\ncheck exists overlaps(K, K)"),
        )
    };
    // Thread 1 launched both while thread 5's `backward` was open.
    claim("during").unwrap();
    let during = "select K = kernel during \"backward\"\ncheck exists overlaps(K, K)";
    assert_eq!(first_trial_members(&trace(), during), [2]);
    // `in` takes none, and says where the ops are.
    let err = claim("in").unwrap_err().to_string();
    assert!(
        err.contains("other threads issued 2 that match while it was open")
            && err.contains("`during \"backward\"` takes them"),
        "{err}"
    );
}

#[test]
fn a_selection_names_each_property_once() {
    // `stream 13 stream 14` took stream 14 alone, `pinned pageable` the pageable copies.
    for (words, second) in [
        ("kernel stream 13 stream 14", "stream"),
        ("copy h2d pinned pageable", "host memory"),
        ("copy h2d d2h", "direction"),
        ("kernel in \"a\" in \"b\"", "in"),
    ] {
        let text = format!(
            "claim t.c\nstatement \"s\"\nsource \"x\" section \"y\"\nexpect holds\n\
             select K = {words}\ncheck exists overlaps(K, K)\n"
        );
        let err = stream_litmus::litmus::parse_traced("t.litmus", &text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("a second {second} word in one selection")),
            "{words}: {err}"
        );
    }
}
