//! Names in traces: one claim selects a kernel by the profiler's demangled name and by the
//! compiler's name a `trace --` recording keeps; patterns and names that would take minutes
//! or gigabytes to match are bounded (issue 36, rows 1 and 6).

mod common;

use common::peak::run_cli;
use std::ffi::OsStr;
use stream_litmus::litmus;
use stream_litmus::trace::{judge, Trace};
use stream_litmus::Verdict;

/// A trace of two kernels on two streams, each launched by a call of 5 µs: `a` runs 100–200
/// µs, `b` 150–250 µs (they overlap), both launched at 90 µs, with three idle memsets before
/// for the launch latency.
fn trace(a: &str, b: &str) -> String {
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

fn verdict(trace_text: &str, claim: &str) -> Verdict {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    std::fs::write(&path, trace_text).unwrap();
    let trace = Trace::read(&[path]).unwrap();
    let text =
        format!("claim t.c\nstatement \"s\"\nsource \"x\" section \"y\"\nexpect holds\n{claim}\n");
    let claims = litmus::parse_traced("t.litmus", &text).unwrap();
    judge(&claims[0], &trace).unwrap().verdict
}

const NCCL_MANGLED: &str =
    "_Z40ncclDevKernel_AllReduce_Sum_bf16_RING_LL24ncclDevKernelArgsStorageILm4096EE";
const NCCL_PROFILER: &str =
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";

#[test]
fn one_claim_selects_the_profilers_names_and_the_compilers() {
    // Seed 003's selections, unchanged, on both forms of the same kernels.
    let claim =
        "select AR = kernel \"ncclDevKernel_AllReduce*\"\nselect K = kernel \"k_before*\"\n\
                 check overlaps(AR, K)";
    let profiler = trace(NCCL_PROFILER, "k_before(long long)");
    let recorded = trace(NCCL_MANGLED, "_Z8k_beforex");
    assert_eq!(verdict(&profiler, claim), Verdict::Holds);
    assert_eq!(verdict(&recorded, claim), Verdict::Holds);
    // A pattern written for the compiler's form still selects it.
    let mangled = "select AR = kernel \"_Z*ncclDevKernel_AllReduce*\"\nselect K = kernel \
                   \"_Z8k_before?\"\ncheck overlaps(AR, K)";
    assert_eq!(verdict(&recorded, mangled), Verdict::Holds);
}

#[test]
fn a_long_pattern_on_long_names_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    // Two kernels of 1 MB names; a claim whose pattern is 4 KB (the most taken) of the worst
    // kind for a backtracking glob: a star, then a run that almost matches everywhere.
    let long = "a".repeat(1 << 20);
    let t = dir.path().join("t.json");
    std::fs::write(&t, trace(&long, &long)).unwrap();
    let claim = |pattern: &str| {
        format!(
            "claim t.c\nstatement \"s\"\nsource \"x\" section \"y\"\nexpect holds\ntrace \
             \"t.json\"\nselect A = kernel \"{pattern}\"\nselect B = kernel\n\
             check exists overlaps(A, B)\n"
        )
    };
    let c = dir.path().join("c.litmus");
    std::fs::write(&c, claim(&format!("*{}b", "a".repeat(4094)))).unwrap();
    let started = std::time::Instant::now();
    let (code, err, peak_kib) = run_cli(&[OsStr::new("check"), c.as_os_str()], &[]);
    let took = started.elapsed();
    // The pattern selects nothing (the names, clipped, end in `…`): refused as a selection of
    // nothing, at once.
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("holds no op"), "{err}");
    assert!(took.as_secs_f64() < 2.0, "{took:?}");
    assert!(peak_kib < 256 << 10, "{peak_kib} KiB");
    // A pattern of 500 KB is refused as one, before any trace is read.
    std::fs::write(&c, claim(&format!("*{}b", "a".repeat(500_000)))).unwrap();
    let (code, err, _) = run_cli(&[OsStr::new("check"), c.as_os_str()], &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("at most 4096"), "{err}");
    assert!(
        err.len() < 4096,
        "the refusal quotes the whole pattern: {} bytes",
        err.len()
    );
}

#[test]
fn many_distinct_long_names_are_clipped_and_counted() {
    // 130 distinct names of 15 MiB would take 2 GB held whole; clipped to 16 KiB each they
    // take 2 MB. Here 20 names of 2 MiB: 40 MiB of names, held as 320 KiB.
    let dir = tempfile::tempdir().unwrap();
    let mut ev = Vec::new();
    for i in 0..20 {
        let name = format!("{i}{}", "0".repeat(2 << 20));
        ev.push(format!(
            r#"{{"ph":"X","cat":"kernel","name":"{name}","pid":1,"tid":7,"ts":{ts}.0,"dur":1.0,"args":{{"device":0,"stream":7,"correlation":{i}}}}}"#,
            ts = 10 * i
        ));
    }
    let t = dir.path().join("t.json");
    std::fs::write(
        &t,
        format!(r#"{{"schemaVersion":1,"traceEvents":[{}]}}"#, ev.join(",")),
    )
    .unwrap();
    let trace = Trace::read(&[t]).unwrap();
    let names = &trace.files[0].ops;
    assert_eq!(names.len(), 20);
    assert!(names
        .iter()
        .all(|o| o.name.len() <= stream_litmus::trace::MAX_NAME_BYTES));
}
