//! A trace has one clock (issue 35, points 3 and 4): a trial's calls are placed against its ops
//! by the profiler's own clock, never by an offset made up from the trial's ops, and every
//! figure in evidence is one the trace shows, counted from the trial's first call or start.

use crate::common;

use common::kineto::{judged, made};
use stream_litmus::trace_claims::TraceJudgement;
use stream_litmus::Verdict;

/// A trace in the shape of a DDP comm hook (`examples/pytorch/traces/ddp_own_stream`): three
/// memsets issued to an idle GPU (launch latency 2 µs, jitter 0.5 µs, clock error 7 µs), the
/// program's backward pass busy on stream 7 from 907 to 4000 µs, and a range `comm_hook` of
/// 500 µs in which an all-reduce is launched at 1000 µs and a division at 1330 µs; both were
/// queued for milliseconds: the all-reduce ran 4000–4230 µs, the division 4440–4460 µs, after
/// it.
fn hook_trace() -> String {
    made(
        &[
            ("kernel", "backward_gemm", 7, 907.2, 3092.8, 900.0),
            (
                "kernel",
                "ncclDevKernel_AllReduce",
                17,
                4000.0,
                230.0,
                1000.0,
            ),
            ("kernel", "div_kernel", 21, 4440.0, 20.0, 1330.0),
        ],
        &[("comm_hook", 990.0, 500.0)],
    )
}

/// The hook's trials, its two selections, and `checks`.
fn hook(checks: &str) -> String {
    format!(
        "trial each \"comm_hook\"\nselect AR = kernel \"ncclDevKernel*\"\n\
         select DIV = kernel \"div*\"\n{checks}"
    )
}

fn reason(j: &TraceJudgement) -> String {
    j.trials[0].checks[0].reason.clone()
}

#[test]
fn a_short_trial_of_queued_ops_is_judged_on_the_traces_own_clock() {
    let j = judged(&hook_trace(), &hook("check forall precedes(AR, DIV)"));
    // The division was ready long before the all-reduce ended (issued at 335 µs into the trial,
    // plus launch latency, clock error and jitter) and started only after it: it waited. An
    // offset made up from the two queued ops (3 ms) would say it was ready only after the end.
    assert_eq!(
        j.verdict,
        Verdict::Holds,
        "{} / {}",
        reason(&j),
        j.tolerances
    );
    let r = reason(&j);
    for figure in [
        "ready to start by 344.50 µs",
        "started at 3440.00 µs",
        "after the end at 3230.00 µs",
        "7.00 µs clock",
    ] {
        assert!(r.contains(figure), "{figure:?} missing from: {r}");
    }
}

#[test]
fn figures_count_from_the_trial_and_advice_fits_a_trace() {
    // The same ops asked the other way: they did not run together, though they could have.
    let j = judged(&hook_trace(), &hook("check exists overlaps(AR, DIV)"));
    assert_eq!(j.verdict, Verdict::Violated, "{}", reason(&j));
    let r = reason(&j);
    assert!(r.contains("ready to start by 344.50 µs"), "{r}");
    // No instant before the trial's first call (the old origin, the first start, made the calls
    // negative), and no lab advice: a trace has no spins to lengthen.
    assert!(!r.contains("by -") && !r.contains("by −"), "{r}");
    assert!(
        !r.contains("spins") && !r.contains("clock sync with a calibrated"),
        "{r}"
    );
}
