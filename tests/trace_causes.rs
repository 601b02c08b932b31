//! Why an op waited for one of another stream, as far as a trace shows (issue 35, point 13): a
//! first launch of its kernel (lazy module loading), an event wait before its launch, or nothing
//! the trace records, said so.

mod common;

use common::kineto::{judged, made, MadeOp};
use stream_litmus::Verdict;

/// `k1` runs 1010–1510 µs on stream 7; `k3`, launched 1 µs after it on stream 9, waited for its
/// end. `early_k3`: `k3` was launched once before, at 390 µs; `wait`: the launching thread called
/// `cudaStreamWaitEvent` right before `k3`'s launch.
fn reason(early_k3: bool, wait: bool) -> String {
    let mut ops: Vec<MadeOp> = vec![
        ("kernel", "k1", 7, 1010.0, 500.0, 1000.0),
        ("kernel", "k3", 9, 1511.0, 50.0, 1001.0),
    ];
    if early_k3 {
        ops.insert(0, ("kernel", "k3", 9, 400.0, 10.0, 390.0));
    }
    let mut trace = made(&ops, &[]);
    if wait {
        let event = r#"{"ph":"X","cat":"cuda_runtime","name":"cudaStreamWaitEvent","pid":1,"tid":1,"ts":1000.5,"dur":0.2,"args":{}}"#;
        trace = trace.replacen(
            "\"traceEvents\":[",
            &format!("\"traceEvents\":[{event},"),
            1,
        );
    }
    let j = judged(
        &trace,
        "select A = kernel \"k1\"\nselect B = kernel \"k3\"\ncheck ~exists overlaps(A, B)",
    );
    let reason = j.trials[0].checks[0].reason.clone();
    assert_eq!(j.verdict, Verdict::Holds, "{reason}");
    reason
}

#[test]
fn a_first_launch_is_named_as_lazy_module_loading() {
    let r = reason(false, false);
    assert!(
        r.contains("on another stream; it is the first launch of its kernel in its process")
            && r.contains("CUDA_MODULE_LOADING=EAGER"),
        "{r}"
    );
}

#[test]
fn an_event_wait_before_the_launch_is_named() {
    let r = reason(true, true);
    assert!(
        r.contains("its thread called cudaStreamWaitEvent since its previous launch"),
        "{r}"
    );
}

#[test]
fn a_wait_the_trace_cannot_explain_says_so() {
    let r = reason(true, false);
    assert!(r.contains("nothing in the trace says why"), "{r}");
    assert!(!r.contains("first launch of its kernel"), "{r}");
}

/// `examples/cuda/event_two_streams.cu` recorded by `stream-litmus trace` (H100): in the first
/// repetition kernel3, on a stream of its own, waited for kernel1 (the claim's documented
/// finding, docs/claims.md); the evidence names the first launch, and the `_eager` recording of
/// the same program overlaps in every repetition.
#[test]
fn the_cuda_examples_first_repetition_waited_for_a_module_load() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/cuda");
    let claims =
        stream_litmus::litmus::load_traced(&root.join("event_two_streams.litmus")).unwrap();
    let c = claims
        .iter()
        .find(|c| c.id == "cuda.no_wait_runs_together")
        .unwrap();
    let trace = stream_litmus::trace::Trace::read(&[root.join("traces/event_two_streams.json.gz")])
        .unwrap();
    let j = stream_litmus::trace_claims::judge(c, &trace).unwrap();
    assert_eq!(j.verdict, Verdict::Violated);
    let first = &j.trials[0].checks[0].reason;
    assert!(
        first.contains("first launch of its kernel in its process"),
        "{first}"
    );
}
