//! One model for programs and traces (issue 50): the program behind a recording rebuilt and
//! judged by the lab's model, transitively. A test per point, each on a recording made for it
//! that the rules written apart from the model got wrong: a chain of event waits across three
//! streams, a first launch that an event wait also orders, the legacy default stream in the
//! first repetition, a pageable copy seen beside a kernel, more streams than hardware queues.

use crate::common;

use common::explained::explained;
use common::kineto::judged;
use common::recording::Recording;
use stream_litmus::explain::{Explanation, RuleKind, Wait};
use stream_litmus::model::{Act, StreamFacts, What};
use stream_litmus::trace::{CauseKind, Source, Trace};
use stream_litmus::{StreamId, StreamKind, Verdict};

/// The wait of the op named `name` that lost more than 100 µs.
fn wait_of(e: &Explanation, name: &str) -> Wait {
    let all: Vec<Wait> = e.steps.iter().flat_map(|s| &s.waits).collect();
    (all.iter())
        .find(|w| w.label.starts_with(&format!("{name}@")) && w.lost_ns > 100_000)
        .cloned()
        .unwrap_or_else(|| panic!("no long wait of {name}: {all:#?}"))
}

/// `A` on stream 7 (1010–1510 µs); stream 21 waits for an event recorded on 7 after `A`, stream
/// 17 for one recorded on 21 after that wait; `B` on stream 17 launched at 1010, starting at
/// `b_start`. `warm`: `B` was launched once before (no first launch).
fn chain(b_start: f64, warm: bool) -> Recording {
    let mut r = Recording::new();
    if warm {
        r.kernel("B", 17, 400.0, 10.0, 390.0);
    }
    r.kernel("A", 7, 1010.0, 500.0, 1000.0)
        .record(7, 1, 1006.0)
        .wait(21, 1, 1007.0)
        .record(21, 2, 1008.0)
        .wait(17, 2, 1009.0)
        .kernel("B", 17, b_start, 50.0, 1010.0);
    r
}

#[test]
fn a_chain_of_event_waits_across_three_streams_was_asked_for_and_is_named() {
    let (e, _) = explained(&chain(1511.0, true).text());
    let w = wait_of(&e, "B");
    assert_eq!(w.held.kind, CauseKind::EventWait, "{}", w.held.cause);
    assert!(
        w.held.cause.contains(
            "the program ordered it: stream 17 waited (cudaStreamWaitEvent, recorded) for an \
             event recorded on stream 21, after stream 21 waited (cudaStreamWaitEvent, \
             recorded) for an event recorded on stream 7, after A@s7"
        ),
        "{}",
        w.held.cause
    );
    assert!(w.held.kind.asked());
    // The chain is a must-precede pair of the model: A before B, checked against the spans.
    let pairs = |e: &Explanation| -> usize {
        (e.steps[0].by_rule.iter())
            .filter(|(r, _)| *r == RuleKind::EventWait)
            .map(|r| r.1)
            .sum()
    };
    assert_eq!(pairs(&e), 1, "{:?}", e.steps[0].by_rule);
    assert_eq!(e.steps[0].violations, []);
    // B started 110 µs before A ended: the chain's pair is broken, a finding naming the chain.
    let (e, _) = explained(&chain(1400.0, true).text());
    let v = &e.steps[0].violations;
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].rule, RuleKind::EventWait);
    assert!(
        v[0].text.contains("110.00 µs before A@s7")
            && v[0].text.contains("for an event recorded on stream 21"),
        "{}",
        v[0].text
    );
}

#[test]
fn a_first_launch_that_an_event_wait_also_orders_was_asked_for() {
    let (e, _) = explained(&chain(1511.0, false).text());
    let w = wait_of(&e, "B");
    assert_eq!(w.held.kind, CauseKind::EventWait, "{}", w.held.cause);
    // Without the waits the same first launch is put down to the module it loads.
    let mut r = Recording::new();
    r.kernel("A", 7, 1010.0, 500.0, 1000.0)
        .kernel("B", 17, 1511.0, 50.0, 1010.0);
    let (e, _) = explained(&r.text());
    assert_eq!(wait_of(&e, "B").held.kind, CauseKind::FirstLaunch);
}

/// `k1` on the legacy default stream 7 (1010–1510 µs); `k3`, the first launch of its kernel, on
/// blocking stream 9, launched right after.
#[test]
fn a_wait_the_legacy_stream_orders_is_implied_in_the_first_repetition_too() {
    let mut r = Recording::new();
    r.stream(7, "legacy_default", 1)
        .stream(9, "blocking", 2)
        .kernel("k1", 7, 1010.0, 500.0, 1000.0)
        .kernel("k3", 9, 1511.0, 50.0, 1006.0);
    let (e, _) = explained(&r.text());
    let w = wait_of(&e, "k3");
    assert_eq!(w.held.kind, CauseKind::LegacyStream, "{}", w.held.cause);
    assert!(w.held.kind.implied() && !w.held.kind.asked());
    assert!(
        w.held.cause.contains(
            "blocking stream 9 waited for the legacy default stream (stream 7), after k1@s7"
        ) && w.held.cause.contains("cudaStreamNonBlocking"),
        "{}",
        w.held.cause
    );
    // A non-blocking stream: nothing orders them, and the first launch is what is left.
    let mut r = Recording::new();
    r.stream(7, "legacy_default", 1)
        .stream(9, "non_blocking", 2)
        .kernel("k1", 7, 1010.0, 500.0, 1000.0)
        .kernel("k3", 9, 1511.0, 50.0, 1006.0);
    let (e, _) = explained(&r.text());
    assert_eq!(wait_of(&e, "k3").held.kind, CauseKind::FirstLaunch);
}

/// A kernel launched at 1000 µs runs 1010–3500; a pageable `cudaMemcpyAsync` called at 1005,
/// before the kernel started, holds its thread until 3910, and its copy runs 1030–3900 on
/// another stream: beside the kernel for 2,470 µs. Taken as issued at its call's return, the
/// copy was "issued only after the kernel ended", and the pair was left out.
#[test]
fn a_pageable_copy_seen_beside_a_kernel_is_a_witness_of_overlap() {
    let mut r = Recording::new();
    r.kernel("busy", 7, 1010.0, 2490.0, 1000.0).op(
        "gpu_memcpy",
        "Memcpy HtoD (Pageable -> Device)",
        9,
        1030.0,
        2870.0,
        1005.0,
        2905.0,
        "cudaMemcpyAsync",
    );
    let text = r.text();
    let sel = "select H2D = copy h2d pageable\nselect BUSY = kernel \"busy\"\n";
    let never = judged(&text, &format!("{sel}check ~exists overlaps(H2D, BUSY)"));
    let reason = &never.trials[0].checks[0].reason;
    assert_eq!(never.verdict, Verdict::Violated, "{reason}");
    assert!(reason.contains("ran together for +2470.00 µs"), "{reason}");
    let some = judged(&text, &format!("{sel}check exists overlaps(H2D, BUSY)"));
    assert_eq!(some.verdict, Verdict::Holds);
}

/// Ten non-blocking streams created in order (stream 11 first): under the default 8 hardware
/// queues (the environment recorded, the variable unset), stream 19, the ninth, shares stream
/// 11's queue. `k1` and `k2` on stream 11, then `k3` on stream 19 and `k4` on stream 12.
#[test]
fn more_streams_than_hardware_queues_share_them_in_order_of_creation() {
    let mut r = Recording::new();
    r.env(r#""CUDA_MODULE_LOADING":"LAZY""#);
    for (k, s) in (11..=20).enumerate() {
        r.stream(s, "non_blocking", 500 + k as u32);
    }
    r.kernel("k3", 19, 400.0, 10.0, 390.0)
        .kernel("k4", 12, 420.0, 10.0, 410.0)
        .kernel("k1", 11, 1010.0, 500.0, 1000.0)
        .kernel("k2", 11, 1511.0, 50.0, 1000.5)
        .kernel("k3", 19, 1511.0, 50.0, 1001.0)
        .kernel("k4", 12, 1511.0, 50.0, 1001.5);
    let (e, _) = explained(&r.text());
    let k3 = wait_of(&e, "k3");
    assert_eq!(k3.held.kind, CauseKind::SharedQueues, "{}", k3.held.cause);
    assert!(
        k3.held.cause.contains(
            "stream 19 is dispatched after k2@s11 #6 from hardware queue 0 of 8 \
             (CUDA_DEVICE_MAX_CONNECTIONS unset, recorded: 8 queues)"
        ),
        "{}",
        k3.held.cause
    );
    assert!(!k3.held.kind.asked() && !k3.held.kind.implied());
    let k4 = wait_of(&e, "k4");
    assert_eq!(k4.held.kind, CauseKind::Unknown, "{}", k4.held.cause);
    assert!(
        k4.held.cause.contains(
            "created 10 streams: streams 12 and 11 feed queues 1 and 0 of 8 (the driver's \
             assignment in order of creation"
        ),
        "{}",
        k4.held.cause
    );
}

/// The program behind the three-stream recording, act by act, as the model reads it: the
/// memsets, `A`, the records and waits on their streams (each record an event of its own, each
/// wait for the record the trace joins it to), `B`; streams in the order they are named.
#[test]
fn the_program_behind_a_recording_is_what_it_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    std::fs::write(&path, chain(1511.0, false).text()).unwrap();
    let trace = Trace::read(&[path]).unwrap();
    let behind = &trace.behind[0];
    assert_eq!(behind.processes.len(), 1);
    let p = &behind.processes[0];
    let s = |i: usize| StreamId(i);
    let work = |i| What::Work {
        stream: s(i),
        queued: true,
    };
    let acts: Vec<What> = p.issued.ops.iter().map(|a: &Act| a.what).collect();
    assert_eq!(
        acts,
        [
            work(0),
            work(0),
            work(0),
            work(0),
            What::Record {
                stream: s(0),
                event: 0
            },
            What::Wait {
                stream: s(2),
                event: 0
            },
            What::Record {
                stream: s(2),
                event: 1
            },
            What::Wait {
                stream: s(1),
                event: 1
            },
            work(1),
        ]
    );
    // Streams numbered as the program names them: those of GPU ops first.
    assert_eq!(p.streams, [(0, 7), (0, 17), (0, 21)]);
    let unknown = StreamFacts {
        kind: None,
        device: 0,
        slot: None,
    };
    assert_eq!(p.issued.streams, [unknown; 3]);
    assert!(matches!(p.sources[3], Source::Op(_)));
    assert!(p
        .notes
        .iter()
        .any(|n| n.contains("stream kinds not recorded")));
    let _ = StreamKind::LegacyNull;
}

/// A fuzz run recorded on an H100 (`stream-litmus trace -- stream-litmus fuzz --cases 150 --seed
/// 21`, tests/gpu/fuzz_recorded.rs), rebuilt and held against the programs it ran.
#[test]
fn a_recorded_fuzz_run_rebuilds_to_the_programs_it_ran() {
    use stream_litmus::fuzz::{generated, regressions, FuzzConfig, Shape};
    let config = FuzzConfig {
        cases: 150,
        seed: 21,
        shape: Shape::default(),
        refinement: stream_litmus::model::Refinement::Documented,
        regressions: regressions(),
    };
    let programs = generated(&config);
    let path = common::fixture("fuzz-recorded-h100.json.gz");
    let c = common::fuzz_recording::compare(&path, &programs).unwrap();
    for m in c.mismatches.iter().take(5) {
        println!("{m}");
    }
    assert!(c.mismatches.is_empty(), "{c:#?}");
    assert_eq!(c.equal + c.graph_only, programs.len(), "{c:#?}");
    assert_eq!(c.broken, 0, "{c:#?}");
    assert!(c.waits_ordered > 0, "{c:#?}");
}
