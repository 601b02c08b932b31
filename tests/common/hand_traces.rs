//! Hand-made profiler traces for the tests of claims on traces: a few kernels with their launch
//! calls and steps, written to a file, and a claim judged on them.
#![allow(dead_code)] // each test binary uses a different part

use std::io::Write;
use std::path::PathBuf;
use stream_litmus::litmus;
use stream_litmus::trace::Trace;
use stream_litmus::trace_claims::{judge, TraceJudgement};

/// One GPU op: category, name, stream, start and duration (µs), its launch call's begin (µs).
pub struct Op(
    pub &'static str,
    pub &'static str,
    pub u64,
    pub f64,
    pub f64,
    pub f64,
);

/// A Kineto trace: the ops (each with a `cudaLaunchKernel` of 5 µs), the `ProfilerStep#N`
/// ranges given, and three idle-issued memsets far before, starting 2, 2.5 and 2.2 µs after
/// their calls returned, so the trace has a launch latency (2 µs) and jitter.
pub fn kineto(ops: &[Op], steps: &[(f64, f64)]) -> String {
    kineto_at(0.0, ops, steps)
}

/// [`kineto`] with every time moved by `shift` µs.
pub fn kineto_at(shift: f64, ops: &[Op], steps: &[(f64, f64)]) -> String {
    let mut ev = Vec::new();
    let mut corr = 1000;
    let mut all: Vec<(&str, &str, u64, f64, f64, f64)> =
        vec![("gpu_memset", "Memset (Device)", 7, 7.0, 1.0, 0.0)];
    all.push(("gpu_memset", "Memset (Device)", 7, 107.5, 1.0, 100.0));
    all.push(("gpu_memset", "Memset (Device)", 7, 207.2, 1.0, 200.0));
    all.extend(ops.iter().map(|o| (o.0, o.1, o.2, o.3, o.4, o.5)));
    for (cat, name, stream, ts, dur, call) in all {
        let (ts, call) = (ts + shift, call + shift);
        corr += 1;
        ev.push(format!(
            r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":0,"tid":{stream},"ts":{ts:.3},"dur":{dur:.3},"args":{{"device":0,"stream":{stream},"correlation":{corr}}}}}"#
        ));
        ev.push(format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":42,"tid":42,"ts":{call:.3},"dur":5.0,"args":{{"correlation":{corr}}}}}"#
        ));
    }
    for (i, (b, d)) in steps.iter().enumerate() {
        let b = b + shift;
        ev.push(format!(
            r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{i}","pid":42,"tid":42,"ts":{b:.3},"dur":{d:.3}}}"#
        ));
    }
    format!(
        r#"{{"schemaVersion":1,"traceEvents":[{}]}}"#,
        ev.join(",\n")
    )
}

pub fn file(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    std::fs::File::create(&path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    (dir, path)
}

pub fn judged(trace: &str, claim: &str) -> TraceJudgement {
    let (_d, path) = file(trace);
    let trace = Trace::read(&[path]).unwrap();
    let text =
        format!("claim t.c\nstatement \"s\"\nsource \"x\" section \"y\"\nexpect holds\n{claim}\n");
    let claims = litmus::parse_traced("t.litmus", &text).unwrap();
    judge(&claims[0], &trace).unwrap()
}

/// Two kernels A (stream 7) and B (stream 9), both issued at 1000 µs; B starts `b_start`.
pub fn two(a: (f64, f64), b: (f64, f64)) -> String {
    kineto(
        &[
            Op("kernel", "gemm_a", 7, a.0, a.1, 1000.0),
            Op("kernel", "nccl_b", 9, b.0, b.1, 1000.0),
        ],
        &[],
    )
}

pub const AB: &str = "select A = kernel \"gemm*\"\nselect B = kernel \"nccl*\"";
