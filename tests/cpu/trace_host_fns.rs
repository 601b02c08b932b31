//! Host functions in traces: a callback's run is the range it opened on a thread that made no
//! CUDA call, paired with the call that enqueued it, and judged like any op (`select CB = host
//! "callback"`). Hand-made traces at the relations' boundaries.

use stream_litmus::litmus;
use stream_litmus::trace::Trace;
use stream_litmus::trace_claims::judge;
use stream_litmus::Verdict;

/// A trace of one stream (7): `before_callback` issued at 1000 µs and running 1007..9007 µs,
/// `cudaStreamAddCallback` at 1010 µs, `after_callback` issued at 1015 µs starting at `after`,
/// the callback's range `callback` (tid 99, no CUDA calls) from `cb.0` for `cb.1` µs where given.
/// Three idle-issued memsets before give the trace a launch latency of 2 µs.
fn trace(cb: Option<(f64, f64)>, after: f64) -> String {
    let mut ev = Vec::new();
    let mut gpu = |corr: u32, cat: &str, name: &str, ts: f64, dur: f64, call: f64, api: &str| {
        ev.push(format!(
            r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":42,"tid":7,"ts":{ts:.3},"dur":{dur:.3},"args":{{"device":0,"stream":7,"correlation":{corr}}}}}"#
        ));
        ev.push(format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"{api}","pid":42,"tid":42,"ts":{call:.3},"dur":5.0,"args":{{"correlation":{corr}}}}}"#
        ));
    };
    gpu(
        1,
        "gpu_memset",
        "Memset (Device)",
        7.0,
        1.0,
        0.0,
        "cudaMemsetAsync",
    );
    gpu(
        2,
        "gpu_memset",
        "Memset (Device)",
        107.5,
        1.0,
        100.0,
        "cudaMemsetAsync",
    );
    gpu(
        3,
        "gpu_memset",
        "Memset (Device)",
        207.2,
        1.0,
        200.0,
        "cudaMemsetAsync",
    );
    gpu(
        4,
        "kernel",
        "before_callback",
        1007.0,
        8000.0,
        1000.0,
        "cudaLaunchKernel",
    );
    gpu(
        6,
        "kernel",
        "after_callback",
        after,
        50.0,
        1015.0,
        "cudaLaunchKernel",
    );
    ev.push(
        r#"{"ph":"X","cat":"cuda_runtime","name":"cudaStreamAddCallback","pid":42,"tid":42,"ts":1010.0,"dur":3.0,"args":{"correlation":5}}"#
            .to_string(),
    );
    ev.push(
        r#"{"ph":"X","cat":"user_annotation","name":"repetition","pid":42,"tid":42,"ts":990.0,"dur":12000.0}"#
            .to_string(),
    );
    if let Some((b, d)) = cb {
        ev.push(format!(
            r#"{{"ph":"X","cat":"user_annotation","name":"callback","pid":42,"tid":99,"ts":{b:.3},"dur":{d:.3}}}"#
        ));
    }
    format!(
        r#"{{"schemaVersion":1,"traceEvents":[{}]}}"#,
        ev.join(",\n")
    )
}

fn judged(text: &str, selects: &str, check: &str) -> Result<(Verdict, String), String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    std::fs::write(&path, text).unwrap();
    let trace = Trace::read(&[path]).map_err(|e| e.to_string())?;
    let claim = format!(
        "claim t.c\nstatement \"s\"\nsource \"x\" section \"y\"\nexpect holds\n\
         trial each \"repetition\"\n{selects}\ncheck {check}\n"
    );
    let claims = litmus::parse_traced("t.litmus", &claim).map_err(|e| e.to_string())?;
    let j = judge(&claims[0], &trace).map_err(|e| e.to_string())?;
    Ok((j.verdict, j.evidence(&claims[0])))
}

const K_CB: &str = "select K = kernel \"before_callback\"\nselect CB = host \"callback\"";
const CB_K2: &str = "select CB = host \"callback\"\nselect K2 = kernel \"after_callback\"";

#[test]
fn a_callback_that_ran_after_its_kernel_and_held_the_next_one_back_holds() {
    let t = trace(Some((9010.0, 1000.0)), 10015.0);
    let (v, why) = judged(&t, K_CB, "precedes(K, CB)").unwrap();
    assert_eq!(v, Verdict::Holds, "{why}");
    let (v, why) = judged(&t, CB_K2, "precedes(CB, K2)").unwrap();
    assert_eq!(v, Verdict::Holds, "{why}");
}

#[test]
fn a_callback_that_ran_before_its_kernel_ended_is_a_violation() {
    // The range began 100 µs before the kernel ended, beyond the trace's clock error (7 µs:
    // within it, a host span's order stands, as in the lab).
    let t = trace(Some((8907.0, 1000.0)), 10015.0);
    let (v, why) = judged(&t, K_CB, "precedes(K, CB)").unwrap();
    assert_eq!(v, Verdict::Violated, "{why}");
    // A kernel that started while the callback still ran did not wait for it.
    let t = trace(Some((9010.0, 1000.0)), 9500.0);
    let (v, why) = judged(&t, CB_K2, "precedes(CB, K2)").unwrap();
    assert_eq!(v, Verdict::Violated, "{why}");
}

#[test]
fn a_host_function_is_no_gpu_op_and_one_without_its_range_is_named() {
    // The callback's range overlaps `before_callback`: were it taken by `any`, that pair would
    // run together and the check fail. `any` takes GPU ops only: the two kernels, which did not.
    let t = trace(Some((8907.0, 1000.0)), 10015.0);
    let any = "select A = any \"*callback*\"";
    let (v, why) = judged(&t, any, "~exists overlaps(A, A)").unwrap();
    assert_eq!(v, Verdict::Holds, "{why}");
    let (v, why) = judged(&t, K_CB, "exists overlaps(K, CB)").unwrap();
    assert_eq!(v, Verdict::Holds, "{why}");
    let e = judged(&trace(None, 10015.0), K_CB, "precedes(K, CB)").unwrap_err();
    assert!(e.contains("1 host functions enqueued but 0 ranges"), "{e}");
}

#[test]
fn a_host_selection_takes_no_stream_or_device() {
    for w in ["stream 7", "device 0"] {
        let text = format!(
            "claim t.c\nstatement \"s\"\nsource \"x\" section \"y\"\nexpect holds\n\
             select CB = host \"callback\" {w}\nselect K = kernel\ncheck precedes(K, CB)\n"
        );
        let e = litmus::parse_traced("t.litmus", &text)
            .unwrap_err()
            .to_string();
        assert!(e.contains("after `host`"), "{e}");
    }
}
