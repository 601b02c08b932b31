//! Random programs on the GPU against the documented model (the `fuzz` command, in small).
//! Without a GPU this is ignored with a reason; the fuzz machinery itself is tested on the CPU
//! in tests/cpu/model.rs with a simulated GPU.

use crate::common::lab;
use serial_test::serial;
use stream_litmus::fuzz::{fuzz, FuzzConfig, Shape};
use stream_litmus::model::Refinement;
use stream_litmus::report::fuzz_report::fuzz_report;

/// No must-precede pair of the documented model is ever observed out of order.
#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn random_programs_never_break_a_documented_order() {
    let gpu = lab().gpu().unwrap();
    let config = FuzzConfig {
        cases: 200,
        seed: 2026,
        shape: Shape::default(),
        refinement: Refinement::for_connections(
            std::env::var("CUDA_DEVICE_MAX_CONNECTIONS").ok().as_deref(),
        )
        .expect("CUDA_DEVICE_MAX_CONNECTIONS is 1..=32 or unset"),
        // Every class of violation found at scale, first: sound under the corrected model.
        regressions: stream_litmus::fuzz::regressions(),
    };
    let mut exec = |p: &stream_litmus::Program| {
        let run = gpu.run(p, 1)?;
        let tol = gpu.calibration().tolerances();
        Ok((run.timelines.into_iter().next().unwrap(), tol))
    };
    let report = fuzz(&config, &mut exec, &mut |_, _| {});
    let text = fuzz_report(&report);
    println!("{text}");
    assert_eq!(report.errors, 0, "{text}");
    assert!(
        report.must_pairs > 100,
        "too few orders checked to mean anything:\n{text}"
    );
    assert!(report.violations.is_empty(), "{text}");
}

/// The shrunk programs the fuzzer once found (tests/fixtures/fuzz-violations-h100.json), replayed:
/// sound under the model as it is now.
#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn the_fuzz_regressions_replay_soundly() {
    let path = crate::common::fixture("fuzz-violations-h100.json");
    let violations: Vec<stream_litmus::fuzz::Violation> =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let gpu = lab().gpu().unwrap();
    for v in &violations {
        let run = gpu.run(&v.program, 5).unwrap();
        let tol = gpu.calibration().tolerances();
        for t in &run.timelines {
            let (bad, _) = stream_litmus::fuzz::unsound(&v.program, t, &tol);
            assert!(bad.is_none(), "{}\n{bad:?}", v.program);
        }
    }
}
