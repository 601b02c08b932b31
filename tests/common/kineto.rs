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
