//! Random programs on the GPU against the documented model (the `fuzz` command, in small).
//! Without a GPU this is ignored with a reason; the fuzz machinery itself is tested on the CPU
//! in tests/model.rs with a simulated GPU.

mod common;

use common::lab;
use serial_test::serial;
use stream_litmus::fuzz::{fuzz, FuzzConfig, Shape};
use stream_litmus::model::Refinement;
use stream_litmus::report::fuzz::fuzz_report;

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
        ),
    };
    let mut exec = |p: &stream_litmus::Program| {
        let trials = gpu.run(p, 1)?;
        let tol = trials.calibration.tolerances();
        Ok((trials.timelines.into_iter().next().unwrap(), tol))
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
