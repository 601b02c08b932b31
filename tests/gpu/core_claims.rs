//! The lab's five core claims, each run on the GPU.
//!
//! Where they come from: the study notes in `shared/seeds/` (cited per claim in
//! `crates/claims/src/catalogue/`), checked against the CUDA Driver API's "Stream synchronization behavior".
//! Every test runs the catalogue's claim with the catalogue's default spin and passes when the
//! observed verdict equals the claim's expectation. Without a GPU these tests are ignored with a
//! reason; with `GPU_TESTS=1` and no usable GPU they fail naming the cause.

use crate::common::{assert_claim, catalogue_claim, lab};
use rstest::rstest;
use serial_test::serial;
use stream_litmus::catalogue::DEFAULT_SPIN;
use stream_litmus::{Program, StreamKind, Verdict};

/// Same-stream FIFO on every stream kind.
#[rstest]
#[case::legacy_null("fifo.legacy-null")]
#[case::per_thread("fifo.per-thread")]
#[case::blocking("fifo.blocking")]
#[case::non_blocking("fifo.non-blocking")]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn same_stream_fifo(#[case] id: &str) {
    assert_claim(&catalogue_claim(id));
}

/// The legacy null stream is a barrier for blocking streams.
#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn null_stream_is_a_barrier_for_blocking_streams() {
    assert_claim(&catalogue_claim("null.barrier"));
}

/// Non-blocking streams are independent of the null stream, in both issue orders.
#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn non_blocking_streams_ignore_the_null_stream() {
    assert_claim(&catalogue_claim("null.non_blocking_exempt"));
}

/// Two non-blocking streams overlap.
#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn two_non_blocking_streams_overlap() {
    assert_claim(&catalogue_claim("streams.non_blocking_pair"));
}

/// An event wait orders two streams...
#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn event_wait_orders_two_streams() {
    assert_claim(&catalogue_claim("event.wait_orders"));
}

/// ...and only up to the record it captured.
#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn event_wait_does_not_cover_later_work() {
    assert_claim(&catalogue_claim("event.wait_snapshot"));
}

/// Default connections: B1 overlaps A1.
#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn default_connections_keep_streams_independent() {
    assert_claim(&catalogue_claim("connections.default.independent"));
}

/// One connection: B1 waits for A1 (a false dependency)...
#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn one_connection_adds_a_false_dependency() {
    assert_claim(&catalogue_claim("connections.one.false_dependency"));
}

/// ...but does not make one stream of two: B1 still runs beside A2 (expected Violated).
#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn one_connection_is_not_one_stream() {
    assert_claim(&catalogue_claim("connections.one.single_stream"));
}

/// The calibration the tolerances come from is sane: a timer that moves, a clock within the
/// range of real GPUs, launch latencies of microseconds, not milliseconds.
#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn calibration_is_plausible() {
    let cal = lab().gpu().unwrap().calibration();
    println!("{cal:#?}");
    assert!(
        cal.timer_step_ns > 0 && cal.timer_step_ns <= 1_000,
        "{cal:?}"
    );
    assert!((0.3..5.0).contains(&cal.cycles_per_ns), "{cal:?}");
    assert!(cal.launch_jitter_ns < 1_000_000, "{cal:?}");
    assert!(cal.dependent_gap_ns < 1_000_000, "{cal:?}");
}

/// The executor's timeline: one span per spin op, with the requested blocks, durations near the
/// requested spin (the spin is in calibrated cycles), and host calls for every op.
#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn executor_returns_one_span_per_spin_with_every_block() {
    let mut p = Program::builder("executor");
    let s = p.stream(StreamKind::NonBlocking);
    let e = p.event("E");
    let a = p.spin_grid(s, "A", DEFAULT_SPIN, 4, 64);
    p.record(s, e);
    let b = p.spin(s, "B", DEFAULT_SPIN);
    let program = p.build();
    let trials = lab().run(&program).expect("runs");
    assert_eq!(trials.timelines.len(), lab().trials());
    for t in &trials.timelines {
        assert_eq!(t.spans.len(), 2);
        assert_eq!(t.host_calls.len(), 3);
        let sa = t.span(a).unwrap();
        assert_eq!(sa.blocks.len(), 4);
        for blk in &sa.blocks {
            let d = blk.end_ns - blk.start_ns;
            let want = DEFAULT_SPIN.as_nanos() as u64;
            // The spin counts calibrated cycles: a block lasts at least its spin, give or take
            // clock drift since calibration, and not absurdly longer.
            assert!(
                d * 10 >= want * 9 && d <= want * 3,
                "block lasted {d} ns for a {want} ns spin"
            );
        }
        assert!(t.span(b).unwrap().start() >= sa.end());
    }
}

/// `run_with_env` runs in a child process that really has the variable.
#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn run_with_env_uses_a_child_with_that_environment() {
    let mut p = Program::builder("child");
    let s = p.stream(StreamKind::NonBlocking);
    p.spin(s, "A", DEFAULT_SPIN);
    let trials = lab()
        .run_with_env(&p.build(), &[("CUDA_DEVICE_MAX_CONNECTIONS", "1")])
        .expect("child runs");
    assert!(
        trials
            .calibration
            .environment
            .iter()
            .any(|v| v == "CUDA_DEVICE_MAX_CONNECTIONS=1"),
        "{:?}",
        trials.calibration.environment
    );
    assert_eq!(trials.timelines.len(), lab().trials());
}

/// A claim that cannot hold is reported Violated, not passed: the lab can fail.
#[test]
#[cfg_attr(not(gpu), ignore = "needs a CUDA GPU (GPU_TESTS=1)")]
#[serial(gpu)]
fn a_false_claim_is_violated() {
    let mut c = stream_litmus::Claim::builder(
        "test.false",
        "Two non-blocking streams run one after the other",
        stream_litmus::Source::new("test", "none"),
    );
    let s1 = c.stream(StreamKind::NonBlocking);
    let s2 = c.stream(StreamKind::NonBlocking);
    let a = c.spin(s1, "A", DEFAULT_SPIN);
    let b = c.spin(s2, "B", DEFAULT_SPIN);
    c.precedes(a, b);
    let record = lab().check(&c.build(stream_litmus::Expect::Holds));
    assert_eq!(
        record.verdict(),
        Some(Verdict::Violated),
        "{}",
        stream_litmus::report::terminal::details(&record)
    );
}
