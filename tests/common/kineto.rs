//! Small profiler traces made by the tests that need a valid one.

/// A trace of two kernels on two streams, each launched by a call of 5 µs: `a` runs 100–200
/// µs, `b` 150–250 µs (they overlap), both launched at 90 µs, with three idle memsets before
/// for the launch latency.
pub fn two_kernels(a: &str, b: &str) -> String {
    let mut ev = Vec::new();
    let ops = [
        ("gpu_memset", "Memset (Device)", 7, 7.0, 1.0, 5.0),
        ("gpu_memset", "Memset (Device)", 7, 27.5, 1.0, 25.0),
        ("gpu_memset", "Memset (Device)", 7, 47.2, 1.0, 45.0),
        ("kernel", a, 7, 100.0, 100.0, 90.0),
        ("kernel", b, 9, 150.0, 100.0, 90.0),
    ];
    for (c, (cat, name, stream, ts, dur, call)) in ops.into_iter().enumerate() {
        let name = serde_json::to_string(name).unwrap();
        ev.push(format!(
            r#"{{"ph":"X","cat":"{cat}","name":{name},"pid":1,"tid":{stream},"ts":{ts:.3},"dur":{dur:.3},"args":{{"device":0,"stream":{stream},"correlation":{c}}}}}"#
        ));
        ev.push(format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{call:.3},"dur":5.0,"args":{{"correlation":{c}}}}}"#
        ));
    }
    format!(
        r#"{{"schemaVersion":1,"traceEvents":[{}]}}"#,
        ev.join(",\n")
    )
}

/// A trace of one 1 µs kernel per name, one after another on stream 7, each launched by a call
/// 5 µs before it starts.
pub fn kernels_named(names: &[String]) -> String {
    let mut ev = Vec::new();
    for (c, name) in names.iter().enumerate() {
        ev.push(format!(
            r#"{{"ph":"X","cat":"kernel","name":"{name}","pid":1,"tid":7,"ts":{ts}.0,"dur":1.0,"args":{{"device":0,"stream":7,"correlation":{c}}}}}"#,
            ts = 10 * c + 5
        ));
        ev.push(format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{ts}.0,"dur":2.0,"args":{{"correlation":{c}}}}}"#,
            ts = 10 * c
        ));
    }
    format!(r#"{{"schemaVersion":1,"traceEvents":[{}]}}"#, ev.join(","))
}

/// One GPU op of a [`made`] trace: category, name, stream, start and duration (µs), and its
/// launch call's begin (µs; every call lasts 5 µs).
pub type MadeOp<'a> = (&'a str, &'a str, u32, f64, f64, f64);

/// A trace of three memsets issued to an idle GPU (launch latency 2 µs, jitter 0.5 µs, clock
/// error 7 µs), then `ops`, and host ranges given as (name, begin, duration) on the launching
/// thread.
pub fn made(ops: &[MadeOp], ranges: &[(&str, f64, f64)]) -> String {
    let mut all: Vec<MadeOp> = vec![
        ("gpu_memset", "Memset (Device)", 7, 7.0, 1.0, 0.0),
        ("gpu_memset", "Memset (Device)", 7, 107.5, 1.0, 100.0),
        ("gpu_memset", "Memset (Device)", 7, 207.2, 1.0, 200.0),
    ];
    all.extend_from_slice(ops);
    let mut ev = Vec::new();
    for (corr, (cat, name, stream, ts, dur, call)) in all.into_iter().enumerate() {
        ev.push(format!(
            r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":1,"tid":{stream},"ts":{ts:.3},"dur":{dur:.3},"args":{{"device":0,"stream":{stream},"correlation":{corr}}}}}"#
        ));
        ev.push(format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{call:.3},"dur":5.0,"args":{{"correlation":{corr}}}}}"#
        ));
    }
    for (name, ts, dur) in ranges {
        ev.push(format!(
            r#"{{"ph":"X","cat":"user_annotation","name":"{name}","pid":1,"tid":1,"ts":{ts:.3},"dur":{dur:.3}}}"#
        ));
    }
    format!(
        r#"{{"schemaVersion":1,"traceEvents":[{}]}}"#,
        ev.join(",\n")
    )
}

/// `trace` judged by one claim on traces whose selections, trials and checks are `lines`.
pub fn judged(trace: &str, lines: &str) -> stream_litmus::trace_claims::TraceJudgement {
    try_judged(trace, lines).unwrap()
}

/// [`judged`], or the error of a claim that cannot be judged on `trace`.
pub fn try_judged(
    trace: &str,
    lines: &str,
) -> Result<stream_litmus::trace_claims::TraceJudgement, stream_litmus::trace::TraceError> {
    let (trace, claim) = read_with_claim(trace, lines);
    stream_litmus::trace_claims::judge(&claim, &trace)
}

/// `trace` read, and the one claim on traces whose selections, trials and checks are `lines`.
fn read_with_claim(
    trace: &str,
    lines: &str,
) -> (
    stream_litmus::trace::Trace,
    stream_litmus::trace_claims::TraceClaim,
) {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    std::fs::File::create(&path)
        .unwrap()
        .write_all(trace.as_bytes())
        .unwrap();
    let trace = stream_litmus::trace::Trace::read(&[path]).unwrap();
    let text =
        format!("claim t.c\nstatement \"s\"\nsource \"x\" section \"y\"\nexpect holds\n{lines}\n");
    let mut claims = stream_litmus::litmus::parse_traced("t.litmus", &text).unwrap();
    (trace, claims.remove(0))
}

/// How many ops each selection of the claim of `lines` takes in its first trial on `trace`.
#[allow(dead_code)]
pub fn first_trial_members(trace: &str, lines: &str) -> Vec<usize> {
    let (trace, claim) = read_with_claim(trace, lines);
    let claims = [claim];
    let trials = trace.some_trials(&claims[0].trial, &|t| t == 0).unwrap();
    let (_, trial) = trials.first().expect("a first trial");
    (stream_litmus::trace_claims::members(&claims[0], &trace, &trial.ops).iter())
        .map(Vec::len)
        .collect()
}

/// `text` (a trace) with `events` put first in its `traceEvents`.
pub fn with_events(text: &str, events: &[String]) -> String {
    if events.is_empty() {
        return text.to_string();
    }
    text.replacen(
        "\"traceEvents\":[",
        &format!("\"traceEvents\":[{},", events.join(",")),
        1,
    )
}

/// A gzip trace at `path` of three idle memsets and then `n` kernels named by `name(i)`, 10 µs
/// apart on streams 7 and 9 in turn, each launched 5 µs before it starts: written as it is
/// made, so that millions of ops take no memory here.
pub fn gzip_kernels(path: &std::path::Path, n: usize, name: impl Fn(usize) -> String) {
    use std::io::Write;
    let file = std::fs::File::create(path).unwrap();
    let mut gz =
        flate2::write::GzEncoder::new(std::io::BufWriter::new(file), flate2::Compression::fast());
    let head = made(&[], &[]);
    let head = head.strip_suffix("]}").unwrap();
    gz.write_all(head.as_bytes()).unwrap();
    for i in 0..n {
        let (at, corr, stream) = (1000 + 10 * i, 10 + i, 7 + 2 * (i % 2));
        write!(
            gz,
            r#",{{"ph":"X","cat":"kernel","name":{},"pid":1,"tid":{stream},"ts":{at},"dur":5,"args":{{"device":0,"stream":{stream},"correlation":{corr}}}}},{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":5,"args":{{"correlation":{corr}}}}}"#,
            serde_json::to_string(&name(i)).unwrap(),
            at - 5
        )
        .unwrap();
    }
    gz.write_all(b"]}").unwrap();
    gz.finish().unwrap().flush().unwrap();
}
