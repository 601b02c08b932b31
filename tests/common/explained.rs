//! Traces made for `explain`'s tests: a few ops on streams of one process, their launch calls,
//! and any extra events; explained whole or step by step.

use stream_litmus::explain::{explain, steps_of, Explanation};
use stream_litmus::trace::{CauseKind, Trace};

/// One GPU op of a [`made`] trace: name, stream, start, duration, launch call's begin (µs;
/// calls last 5 µs), and the profiler's blocks per SM.
pub type Op<'a> = (&'a str, u32, f64, f64, f64, Option<f64>);

/// Three memsets issued to an idle GPU (launch latency 2 µs, clock error 7 µs), then `ops` as
/// kernels ("Memcpy" a pageable host-to-device copy, "Pinned" a pinned one), then `extra`
/// events.
pub fn made(ops: &[Op], extra: &[String]) -> String {
    let mut ev: Vec<String> = extra.to_vec();
    let idle = [(7.0, 0.0), (107.5, 100.0), (207.2, 200.0)];
    for (c, (ts, call)) in idle.iter().enumerate() {
        ev.push(format!(r#"{{"ph":"X","cat":"gpu_memset","name":"Memset (Device)","pid":1,"tid":7,"ts":{ts},"dur":1.0,"args":{{"device":0,"stream":7,"correlation":{c}}}}}"#));
        ev.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaMemsetAsync","pid":1,"tid":1,"ts":{call},"dur":5.0,"args":{{"correlation":{c}}}}}"#));
    }
    for (i, (name, stream, ts, dur, call, blocks)) in ops.iter().enumerate() {
        let c = i + 3;
        let (cat, name) = match *name {
            "Memcpy" => ("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)"),
            "Pinned" => ("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)"),
            _ => ("kernel", *name),
        };
        let blocks = blocks.map_or(String::new(), |b| format!(r#","blocks per SM":{b}"#));
        ev.push(format!(r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":1,"tid":{stream},"ts":{ts},"dur":{dur},"args":{{"device":0,"stream":{stream},"correlation":{c}{blocks}}}}}"#));
        ev.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{call},"dur":5.0,"args":{{"correlation":{c}}}}}"#));
    }
    format!(
        r#"{{"schemaVersion":1,"traceEvents":[{}]}}"#,
        ev.join(",\n")
    )
}

pub fn explained(text: &str) -> (Explanation, Trace) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    std::fs::write(&path, text).unwrap();
    let trace = Trace::read(&[path]).unwrap();
    let spec = steps_of(&trace, None).unwrap();
    (explain(&trace, &spec).unwrap(), trace)
}

/// The waits of the whole trace, as (waiting op's name, cause).
pub fn waits(e: &Explanation) -> Vec<(String, CauseKind)> {
    (e.steps.iter().flat_map(|s| s.waits.iter()))
        .map(|w| (w.label.split('@').next().unwrap().to_string(), w.held.kind))
        .collect()
}
