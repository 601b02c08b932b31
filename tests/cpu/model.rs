//! The model of stream semantics, on the CPU.
//!
//! 1. Spec tests: one small program per rule, in the style of a spec test suite. Each names the
//!    documentation it checks (CUDA Driver API, "Stream synchronization behavior", `cuEventRecord`,
//!    `cuStreamWaitEvent`).
//! 2. The catalogue agrees with the model: a claim expected to hold predicts what the model does,
//!    and a claim expected to be violated contradicts it.
//!
//! Properties over random programs, and the fuzz driver on a simulated GPU, are in
//! `tests/cpu/model_properties.rs`.

use std::time::Duration;
use stream_litmus::catalogue;
use stream_litmus::fuzz::{programs, Shape};
use stream_litmus::model::{HappensBefore, Refinement};
use stream_litmus::{Expect, OpId, Program, StreamKind, SyncTarget, Tolerances};

const SPIN: Duration = Duration::from_micros(10);

// ---- 1. spec tests ----------------------------------------------------------------------------

/// Two kernels on `a` and `b`, issued in that order, plus whatever `between` issues in between.
fn pair(a: StreamKind, b: StreamKind) -> (Program, OpId, OpId) {
    let mut p = Program::builder("pair");
    let sa = p.stream(a);
    let sb = if a == b && a.is_builtin() {
        sa
    } else {
        p.stream(b)
    };
    let x = p.spin(sa, "X", SPIN);
    let y = p.spin(sb, "Y", SPIN);
    (p.build(), x, y)
}

#[test]
fn same_stream_work_runs_in_issue_order() {
    for kind in StreamKind::ALL {
        let mut p = Program::builder("fifo");
        let s = p.stream(kind);
        let x = p.spin(s, "X", SPIN);
        let y = p.spin(s, "Y", SPIN);
        assert!(HappensBefore::of(&p.build()).must_precede(x, y), "{kind}");
    }
}

/// "the legacy stream first waits on all blocking streams … then all blocking streams wait on the
/// legacy stream"; the per-thread default stream counts as blocking; non-blocking streams do not.
#[test]
fn the_legacy_stream_synchronizes_with_blocking_streams_only() {
    use StreamKind::*;
    for (other, synchronized) in [(Blocking, true), (PerThread, true), (NonBlocking, false)] {
        for (first, second) in [(other, LegacyNull), (LegacyNull, other)] {
            let (p, x, y) = pair(first, second);
            assert_eq!(
                HappensBefore::of(&p).must_precede(x, y),
                synchronized,
                "{first} then {second}"
            );
        }
    }
}

/// Blocking streams synchronize through the legacy stream, not with each other.
#[test]
fn blocking_streams_do_not_synchronize_with_each_other() {
    use StreamKind::*;
    for (a, b) in [
        (Blocking, Blocking),
        (PerThread, Blocking),
        (Blocking, PerThread),
        (NonBlocking, Blocking),
    ] {
        let (p, x, y) = pair(a, b);
        assert!(HappensBefore::of(&p).may_overlap(x, y), "{a} then {b}");
    }
    let mut p = Program::builder("through-null");
    let (s1, null, s2) = (p.stream(Blocking), p.stream(LegacyNull), p.stream(Blocking));
    let a = p.spin(s1, "A", SPIN);
    p.spin(null, "N", SPIN);
    let b = p.spin(s2, "B", SPIN);
    assert!(
        HappensBefore::of(&p.build()).must_precede(a, b),
        "A → N → B"
    );
}

/// `cuStreamWaitEvent` waits for the work captured by the most recent record issued before it;
/// later work on the recording stream, and later records, do not count; a wait with no record
/// before it has no effect.
#[test]
fn an_event_wait_covers_the_most_recent_record_only() {
    let mut p = Program::builder("events");
    let (s1, s2) = (
        p.stream(StreamKind::NonBlocking),
        p.stream(StreamKind::NonBlocking),
    );
    let e = p.event("E");
    let early = p.wait(s2, e); // no record yet: no effect
    let a = p.spin(s1, "A", SPIN);
    p.record(s1, e);
    let c = p.spin(s1, "C", SPIN);
    p.wait(s2, e);
    let b = p.spin(s2, "B", SPIN);
    p.record(s1, e); // re-record after the wait: B does not wait for D
    let d = p.spin(s1, "D", SPIN);
    let hb = HappensBefore::of(&p.build());
    assert!(hb.must_precede(a, b));
    assert!(hb.may_overlap(b, c), "C was issued after the record");
    assert!(
        hb.may_overlap(b, d),
        "re-recording does not move an earlier wait"
    );
    assert!(
        hb.may_overlap(early, a),
        "a wait before any record orders nothing"
    );
}

/// A wait on a never-recorded event is "a functional no-op" (`cudaStreamWaitEvent`): on the
/// legacy stream it does not act as a barrier either. Found by the fuzzer on an H100: the model
/// had read "an action … such as cuStreamWaitEvent()" literally, and the GPU ran K2 inside K1.
#[test]
fn a_wait_on_a_never_recorded_event_is_no_legacy_action() {
    let mut p = Program::builder("noop-wait");
    let (pt, null, s1) = (
        p.stream(StreamKind::PerThread),
        p.stream(StreamKind::LegacyNull),
        p.stream(StreamKind::Blocking),
    );
    let e = p.event("E0");
    let k1 = p.spin(pt, "K1", SPIN);
    let w = p.wait(null, e);
    let k2 = p.spin(s1, "K2", SPIN);
    let p = p.build();
    assert!(p.is_noop_wait(w));
    let hb = HappensBefore::of(&p);
    assert!(hb.may_overlap(k1, k2));
    // Once the event has been recorded, the wait is an action and the barrier is back.
    let mut q = Program::builder("recorded-wait");
    let (pt, null, s1) = (
        q.stream(StreamKind::PerThread),
        q.stream(StreamKind::LegacyNull),
        q.stream(StreamKind::Blocking),
    );
    let e = q.event("E0");
    let k1 = q.spin(pt, "K1", SPIN);
    q.record(pt, e);
    q.wait(null, e);
    let k2 = q.spin(s1, "K2", SPIN);
    assert!(HappensBefore::of(&q.build()).must_precede(k1, k2));
}

/// The shrunk programs the fuzzer found on an H100, with the timelines it recorded: sound under
/// the model as it is now.
#[test]
fn the_recorded_fuzz_violations_are_sound_under_the_fixed_model() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/fuzz-violations-h100.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let violations: Vec<stream_litmus::fuzz::Violation> = serde_json::from_str(&text).unwrap();
    assert!(violations.len() >= 5);
    let tol = Tolerances {
        timer_step_ns: 32,
        launch_jitter_ns: 360,
        dependent_gap_ns: 2_080,
        launch_latency_ns: None,
        copy_rates: None,
    };
    for v in &violations {
        assert!(
            v.program.ops.iter().any(|op| v.program.is_noop_wait(op.id)),
            "{}",
            v.program
        );
        let (bad, _) = stream_litmus::fuzz::unsound(&v.program, &v.timeline, &tol);
        assert!(bad.is_none(), "{}\n{:?}", v.program, bad);
    }
}

/// Host syncs: everything issued after the call starts after what the call waited for.
#[test]
fn host_syncs_order_what_they_cover_before_everything_issued_later() {
    let mut p = Program::builder("sync");
    let (s1, s2) = (
        p.stream(StreamKind::NonBlocking),
        p.stream(StreamKind::NonBlocking),
    );
    let e = p.event("E");
    let a = p.spin(s1, "A", SPIN);
    let other = p.spin(s2, "O", SPIN);
    p.host_sync(SyncTarget::Stream(s1));
    let b = p.spin(s2, "B", SPIN);
    p.record(s2, e);
    p.host_sync(SyncTarget::Event(e));
    let c = p.spin(s1, "C", SPIN);
    let hb = HappensBefore::of(&p.build());
    assert!(hb.must_precede(a, b));
    assert!(hb.may_overlap(a, other) && !hb.may_overlap(other, b));
    assert!(
        hb.must_precede(b, c),
        "an event sync covers its record's work"
    );
}

/// The finding of 100,000 random programs on an H100 (docs/model.md, "Findings"): the legacy
/// stream's implicit barrier orders a record (or wait) of a blocking stream after the legacy
/// work, so an event sync of that record waits for it, but a stream sync of a stream whose ops
/// since its last work are records or waits does not. The smallest shrunk program, then the same
/// with a kernel on the per-thread stream, which the stream sync does wait for.
#[test]
fn a_stream_sync_does_not_wait_for_what_the_legacy_barrier_gives_a_record() {
    // K1 on the legacy stream, then `between` on a stream of `kind` (given it and its event
    // E0), then K2 on a non-blocking stream: whether the model orders K1 before K2.
    let ordered = |kind: StreamKind, between: &dyn Fn(&mut stream_litmus::ProgramBuilder, _, _)| {
        let mut p = Program::builder("legacy, then a sync");
        let null = p.stream(StreamKind::LegacyNull);
        let s1 = p.stream(StreamKind::NonBlocking);
        let pt = p.stream(kind);
        let e = p.event("E0");
        let k1 = p.spin(null, "K1", SPIN);
        between(&mut p, pt, e);
        let k2 = p.spin(s1, "K2", SPIN);
        HappensBefore::of(&p.build()).must_precede(k1, k2)
    };
    for kind in [StreamKind::PerThread, StreamKind::Blocking] {
        assert!(
            !ordered(kind, &|p, s, e| {
                p.record(s, e);
                p.host_sync(SyncTarget::Stream(s));
            }),
            "{kind}: the GPU ran K2 before K1 ended"
        );
        assert!(
            ordered(kind, &|p, s, e| {
                p.record(s, e);
                p.host_sync(SyncTarget::Event(e));
            }),
            "{kind}: an event sync waits for the legacy work before its record"
        );
        assert!(
            ordered(kind, &|p, s, _| {
                p.spin(s, "P", SPIN);
                p.host_sync(SyncTarget::Stream(s));
            }),
            "{kind}: a stream sync waits for its kernel, which the barrier put after K1"
        );
    }
    // A wait's own event is still covered: the record it waits for precedes the sync.
    let mut p = Program::builder("wait then stream sync");
    let (s1, s2, s3) = (
        p.stream(StreamKind::NonBlocking),
        p.stream(StreamKind::NonBlocking),
        p.stream(StreamKind::NonBlocking),
    );
    let e = p.event("E");
    let a = p.spin(s1, "A", SPIN);
    p.record(s1, e);
    p.wait(s2, e);
    p.host_sync(SyncTarget::Stream(s2));
    let b = p.spin(s3, "B", SPIN);
    assert!(HappensBefore::of(&p.build()).must_precede(a, b));
}

/// The newcomers' claims of issue 13: a device sync covers work on a non-blocking stream, so
/// everything issued after it follows that work; a sync of s2 covers s2 only, so work issued
/// after it may still run beside s1's. An elapsed read waits for its end event like an event
/// sync.
#[test]
fn a_host_sync_orders_after_it_exactly_the_work_it_covers() {
    let mut p = Program::builder("device sync");
    let (s1, s2) = (
        p.stream(StreamKind::NonBlocking),
        p.stream(StreamKind::NonBlocking),
    );
    let a = p.spin(s1, "A", SPIN);
    p.host_sync(SyncTarget::Device);
    let b = p.spin(s2, "B", SPIN);
    assert!(HappensBefore::of(&p.build()).must_precede(a, b));

    let mut p = Program::builder("sync s2");
    let (s1, s2, s3) = (
        p.stream(StreamKind::NonBlocking),
        p.stream(StreamKind::NonBlocking),
        p.stream(StreamKind::NonBlocking),
    );
    let a = p.spin(s1, "A", SPIN * 10);
    let b = p.spin(s2, "B", SPIN);
    p.host_sync(SyncTarget::Stream(s2));
    let c = p.spin(s3, "C", SPIN);
    let hb = HappensBefore::of(&p.build());
    assert!(hb.must_precede(b, c) && hb.may_overlap(a, c));

    let mut p = Program::builder("elapsed");
    let (s1, s2) = (
        p.stream(StreamKind::NonBlocking),
        p.stream(StreamKind::NonBlocking),
    );
    let (start, stop) = (p.event("start"), p.event("stop"));
    p.record(s1, start);
    let a = p.spin(s1, "A", SPIN);
    p.record(s1, stop);
    let late = p.spin(s1, "late", SPIN);
    p.elapsed(start, stop);
    let b = p.spin(s2, "B", SPIN);
    let hb = HappensBefore::of(&p.build());
    assert!(hb.must_precede(a, b));
    assert!(
        hb.may_overlap(late, b),
        "work after the end event is not covered"
    );
}

/// The fuzz strategy puts host syncs between kernels: among random programs, many have a kernel
/// that a sync covers and a kernel issued after it on another stream.
#[test]
fn random_programs_have_host_syncs_between_kernels() {
    use proptest::strategy::{Strategy, ValueTree};
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = programs(Shape::default());
    let mut with = 0;
    for _ in 0..200 {
        let p = strategy.new_tree(&mut runner).unwrap().current();
        let hb = HappensBefore::of(&p);
        let kernel = |i: usize| p.ops[i].kind.is_stamped();
        let found = p.ops.iter().enumerate().any(|(h, op)| {
            op.kind.host_waits_for().is_some()
                && (0..h).any(|a| kernel(a) && hb.must_precede(OpId(a), op.id))
                && (h + 1..p.ops.len()).any(&kernel)
        });
        with += usize::from(found);
    }
    assert!(with >= 40, "only {with} of 200 programs");
}

/// The queue refinement: with one connection, a kernel queued behind a kernel that must wait
/// inherits the wait (the false dependency), but still does not wait for it to end.
#[test]
fn one_hardware_queue_adds_false_dependencies_but_not_a_single_stream() {
    let mut p = Program::builder("queues");
    let (s1, s2) = (
        p.stream(StreamKind::NonBlocking),
        p.stream(StreamKind::NonBlocking),
    );
    let a1 = p.spin(s1, "A1", SPIN);
    let a2 = p.spin(s1, "A2", SPIN);
    let b1 = p.spin(s2, "B1", SPIN);
    let p = p.build();
    let documented = HappensBefore::of(&p);
    let one = HappensBefore::with(&p, Refinement::Queues(1));
    let eight = HappensBefore::with(&p, Refinement::Queues(8));
    assert!(documented.may_overlap(a1, b1) && eight.may_overlap(a1, b1));
    assert!(one.must_precede(a1, b1), "false dependency through A2");
    assert!(
        one.may_overlap(a2, b1),
        "one queue orders dispatch, not execution"
    );
    assert_eq!(Refinement::for_connections(None), Ok(Refinement::Queues(8)));
    assert_eq!(
        Refinement::for_connections(Some("1")),
        Ok(Refinement::Queues(1))
    );
    // Not read as 8, 1 and 8 any more: a value the driver's range does not hold is an error.
    for bad in ["abc", "0", "-1", "33", " 4", "9223372036854775807"] {
        assert!(Refinement::for_connections(Some(bad)).is_err(), "{bad}");
    }
}

/// A graph is modelled as the work it was captured from: captured orderings hold, later work on
/// the capturing stream follows the graph, and a stream that only joined the capture does not.
#[test]
fn a_graph_keeps_its_captured_orders_and_orders_only_its_own_stream() {
    let mut p = Program::builder("graph");
    let s1 = p.stream(StreamKind::Blocking);
    let s2 = p.stream(StreamKind::Blocking);
    let fork = p.event("fork");
    let before = p.spin(s2, "before", Duration::from_micros(5));
    p.begin_capture(s1);
    let k1 = p.spin(s1, "K1", Duration::from_micros(5));
    p.record(s1, fork);
    p.wait(s2, fork);
    let k2 = p.spin(s2, "K2", Duration::from_micros(5));
    let k3 = p.spin(s1, "K3", Duration::from_micros(5));
    let join = p.event("join");
    p.record(s2, join);
    p.wait(s1, join); // capture must join every forked stream back before it ends
    let end = p.end_capture(s1);
    p.graph_launch(s1, end);
    let after1 = p.spin(s1, "after on s1", Duration::from_micros(5));
    let after2 = p.spin(s2, "after on s2", Duration::from_micros(5));
    let p = p.build();
    let hb = HappensBefore::of(&p);
    assert!(hb.must_precede(k1, k2) && hb.must_precede(k1, k3));
    assert!(hb.may_overlap(k2, k3));
    assert!(hb.must_precede(k2, after1) && hb.must_precede(k3, after1));
    assert!(hb.must_precede(before, after2));
    assert!(
        !hb.must_precede(k2, after2),
        "s2 only joined the capture: its later work is not ordered after the graph"
    );
}

// ---- 2. the catalogue agrees with the model -----------------------------------------------------

#[test]
fn the_model_agrees_with_every_catalogue_claim() {
    for c in catalogue::all(catalogue::DEFAULT_SPIN) {
        let connections = c
            .env
            .iter()
            .find(|v| v.name == "CUDA_DEVICE_MAX_CONNECTIONS")
            .and_then(|v| v.value.as_deref());
        let hb = HappensBefore::with(
            &c.program,
            Refinement::for_connections(connections).unwrap(),
        );
        let predictions: Vec<bool> = c.checks.iter().filter_map(|k| hb.predicts(k)).collect();
        if predictions.is_empty() {
            continue; // no happens-before question among its checks (host times, addresses)
        }
        let agrees = predictions.iter().all(|&p| p);
        match c.expect {
            Expect::Holds => assert!(agrees, "{}: the model does not predict it", c.id),
            Expect::Violated => assert!(!agrees, "{}: the model predicts the misconception", c.id),
        }
    }
}

/// A builder's claim may carry any connection count (Rust code is trusted); the model neither
/// allocates by it nor guesses: a huge or unreadable count leaves the documented rules.
#[test]
fn predict_survives_any_connection_count_from_the_builder() {
    use stream_litmus::{litmus, Claim, Source, StreamKind};
    for value in ["9223372036854775807", "4000000000", "abc", "0"] {
        let mut c = Claim::builder("x.y", "s", Source::new("a", "b"));
        let (s1, s2) = (
            c.stream(StreamKind::NonBlocking),
            c.stream(StreamKind::NonBlocking),
        );
        let a = c.spin(s1, "A", std::time::Duration::from_micros(5));
        let b = c.spin(s2, "B", std::time::Duration::from_micros(5));
        c.precedes(a, b);
        c.env("CUDA_DEVICE_MAX_CONNECTIONS", Some(value));
        let p = litmus::predict(&c.build(Expect::Holds));
        assert_eq!(p.queues, 0, "{value}");
    }
    // With more queues than streams, the model is the same as with one queue per stream.
    let mut b = stream_litmus::Program::builder("q");
    let (s1, s2) = (
        b.stream(StreamKind::NonBlocking),
        b.stream(StreamKind::NonBlocking),
    );
    b.spin(s1, "A", std::time::Duration::from_micros(5));
    b.spin(s2, "B", std::time::Duration::from_micros(5));
    let prog = b.build();
    assert_eq!(
        HappensBefore::with(&prog, Refinement::Queues(usize::MAX)),
        HappensBefore::with(&prog, Refinement::Queues(2))
    );
}

/// The committed regression corpus (`src/fuzz/regressions.json`, run first by every `fuzz`):
/// every program is valid, and in each program of the legacy-barrier class the model lets the
/// last kernel run beside the legacy work, as the H100 did.
#[test]
fn the_regression_corpus_is_valid_and_the_model_agrees_with_the_gpu_on_it() {
    let corpus = stream_litmus::fuzz::regressions();
    assert!(corpus.len() >= 10);
    let mut barrier_class = 0;
    for p in &corpus {
        p.validate().unwrap_or_else(|e| panic!("{}: {e}", p.name));
        if !p.name.contains("stream sync") {
            continue;
        }
        barrier_class += 1;
        let legacy = p
            .ops
            .iter()
            .find(|op| {
                op.kind
                    .stream()
                    .is_some_and(|s| p.streams[s.0].kind == StreamKind::LegacyNull)
            })
            .unwrap()
            .id;
        let last = p.ops.last().unwrap().id;
        assert!(
            HappensBefore::of(p).may_overlap(legacy, last),
            "{}: the model orders the legacy work before the last kernel\n{p}",
            p.name
        );
    }
    assert_eq!(barrier_class, 7);
}
