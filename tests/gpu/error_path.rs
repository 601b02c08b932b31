//! The executor's error path on the GPU (issue 15): what a failing run frees, and when.

/// The executor's error path (issue 15, item 7): an error half-way through issuing a program,
/// with a host function still queued behind a long spin, must not free the host function's slot
/// before it has run. The executor synchronizes the context before anything is freed, so the
/// host function ends before its slot is freed; without that, it would run 50 ms after.
#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial_test::serial(gpu)]
fn an_error_while_issuing_frees_nothing_a_queued_host_function_still_uses() {
    use std::time::Duration;
    use stream_litmus::{gpu_testing, HostFnApi, Program, StreamKind};
    let gpu = crate::common::lab().gpu().unwrap();
    let mut p = Program::builder("error-path");
    let s = p.stream(StreamKind::NonBlocking);
    p.spin(s, "long", Duration::from_millis(50));
    p.host_fn(
        s,
        "queued",
        Duration::from_micros(100),
        HostFnApi::LaunchHostFunc,
    );
    p.spin(s, "failing", Duration::from_micros(10));
    let program = p.build();
    let (ended_before, _) = gpu_testing::last_times();
    gpu_testing::fail_at_op(Some(2));
    let result = gpu.run(&program, 1);
    gpu_testing::fail_at_op(None);
    let err = result.expect_err("the injected failure ends the run");
    assert!(err.to_string().contains("failed on purpose"), "{err}");
    // Had the slot been freed first, the host function would still be waiting behind the spin.
    std::thread::sleep(Duration::from_millis(150));
    let (ended, freed) = gpu_testing::last_times();
    assert!(ended > ended_before, "the queued host function never ran");
    assert!(
        ended <= freed,
        "the host function ended {} µs after its slot was freed",
        (ended - freed) / 1000
    );
    // The GPU is still usable afterwards.
    gpu.run(&program, 1)
        .expect("a normal run after the failure");
}
