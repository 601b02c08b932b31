//! Programs on several GPUs (issue 14): validation, serialization, the per-device model rules
//! and judging a hand-made two-device timeline on the CPU; then every `multi.*` claim on two
//! GPUs, compiled in only where the build saw two (`cfg(gpus2)`, see build.rs), otherwise shown
//! as ignored with the reason "needs 2 GPUs".

use crate::common;

use common::{catalogue_claim, TOL};
use std::time::Duration;
use stream_litmus::catalogue::{self, DEFAULT_SPIN};
use stream_litmus::model::{HappensBefore, Refinement};
use stream_litmus::{
    BlockStamp, Check, DeviceClock, OpId, OpKind, Program, Span, StreamKind, SyncTarget, Timeline,
    Truth,
};

const SPIN: Duration = Duration::from_micros(50);

fn problems(p: &Program) -> String {
    match p.validate() {
        Ok(_) => String::new(),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_stream_on_device_1_makes_a_two_device_program() {
    let mut b = Program::builder("two");
    let s0 = b.stream_on(0, StreamKind::NonBlocking);
    let s1 = b.stream_on(1, StreamKind::NonBlocking);
    let a = b.spin(s0, "A", SPIN);
    let c = b.spin(s1, "B", SPIN);
    let p = b.build();
    assert_eq!(p.device_count(), 2);
    assert!(p.is_multi_device());
    assert_eq!((p.device_of(a), p.device_of(c)), (Some(0), Some(1)));
    assert_eq!(problems(&p), "");
    assert!(p.streams[s1.0].display_label().contains("gpu1"));
}

#[test]
fn each_device_may_have_its_legacy_null_stream_once() {
    let mut b = Program::builder("nulls");
    let n0 = b.stream_on(0, StreamKind::LegacyNull);
    let n1 = b.stream_on(1, StreamKind::LegacyNull);
    b.spin(n0, "N0", SPIN);
    b.spin(n1, "N1", SPIN);
    assert_eq!(problems(&b.build()), "");
    // The builder hands out one null stream per device; a hand-written program may repeat it.
    let mut p = b_twice();
    let again = p.streams[1].clone();
    p.streams.push(again);
    let found = problems(&p);
    assert!(found.contains("of device 1 is declared 2 times"), "{found}");
}

fn b_twice() -> Program {
    let mut b = Program::builder("twice");
    b.stream_on(0, StreamKind::NonBlocking);
    let n1 = b.stream_on(1, StreamKind::LegacyNull);
    b.spin(n1, "N", SPIN);
    b.build()
}

#[test]
fn an_all_reduce_needs_one_rank_per_device_with_its_own_buffer() {
    let mut b = Program::builder("ranks");
    let s0 = b.stream_on(0, StreamKind::NonBlocking);
    let s1 = b.stream_on(1, StreamKind::NonBlocking);
    let g0 = b.buffer_on(0, "g0", 1024, 1);
    let g1 = b.buffer_on(1, "g1", 1024, 2);
    b.all_reduce("AR", &[(s0, g0), (s1, g1)]);
    let p = b.build();
    assert_eq!(problems(&p), "");
    assert_eq!(p.collectives(), vec![vec![OpId(0), OpId(1)]]);

    let mut b = Program::builder("one rank");
    let s0 = b.stream_on(0, StreamKind::NonBlocking);
    let s1 = b.stream_on(1, StreamKind::NonBlocking);
    let g0 = b.buffer_on(0, "g0", 1024, 1);
    b.spin(s1, "K", SPIN);
    b.all_reduce("AR", &[(s0, g0)]);
    assert!(problems(&b.build()).contains("one all-reduce op per device"));

    let mut b = Program::builder("wrong buffer");
    let s0 = b.stream_on(0, StreamKind::NonBlocking);
    let s1 = b.stream_on(1, StreamKind::NonBlocking);
    let g0 = b.buffer_on(0, "g0", 1024, 1);
    b.all_reduce("AR", &[(s0, g0), (s1, g0)]);
    assert!(problems(&b.build()).contains("not device memory of its stream's device"));
}

#[test]
fn peer_copies_device_syncs_and_cross_device_events_are_checked() {
    let mut b = Program::builder("peer");
    let s0 = b.stream_on(0, StreamKind::NonBlocking);
    let d0 = b.buffer_on(0, "d0", 4096, 1);
    let d1 = b.buffer_on(1, "d1", 4096, 0);
    let p = b.copy(s0, "P", d0, d1);
    b.device_sync(1);
    let prog = b.build();
    assert_eq!(problems(&prog), "");
    assert!(prog.is_peer_copy(p));

    // One device only: a device sync of device 0 alone is not a multi-device op.
    let mut b = Program::builder("host fn on two devices");
    let s0 = b.stream_on(0, StreamKind::NonBlocking);
    let s1 = b.stream_on(1, StreamKind::NonBlocking);
    b.spin(s1, "K", SPIN);
    b.host_sync(SyncTarget::Device);
    b.spin(s0, "K0", SPIN);
    assert!(problems(&b.build()).contains("not supported in a program on several devices"));

    let mut b = Program::builder("event on two devices");
    let s0 = b.stream_on(0, StreamKind::NonBlocking);
    let s1 = b.stream_on(1, StreamKind::NonBlocking);
    let e = b.event("E");
    b.record(s0, e);
    b.record(s1, e);
    assert!(problems(&b.build()).contains("record it on one device"));
}

#[test]
fn single_device_programs_serialize_as_before_and_two_device_ones_round_trip() {
    for claim in catalogue::all(DEFAULT_SPIN) {
        let json = serde_json::to_string(&claim.program).unwrap();
        assert!(!json.contains("\"device\":"), "{}", claim.id);
        assert!(!json.contains("peer_access"), "{}", claim.id);
    }
    for claim in catalogue::multi_gpu(DEFAULT_SPIN) {
        assert!(claim.program.is_multi_device(), "{}", claim.id);
        assert_eq!(problems(&claim.program), "", "{}", claim.id);
        let json = serde_json::to_string(&claim).unwrap();
        let back: stream_litmus::Claim = serde_json::from_str(&json).unwrap();
        assert_eq!(back, claim);
    }
}

#[test]
fn the_multi_family_is_not_part_of_the_default_catalogue() {
    let all = catalogue::all(DEFAULT_SPIN);
    assert_eq!(all.len(), 77);
    assert!(all.iter().all(|c| !c.program.is_multi_device()));
    assert!(catalogue::multi_gpu(DEFAULT_SPIN)
        .iter()
        .all(|c| c.id.starts_with("multi.")));
}

#[test]
fn legacy_null_streams_and_device_syncs_are_per_device() {
    let claim = catalogue_claim("multi.null.per_device");
    let hb = HappensBefore::of(&claim.program);
    // N on gpu1's null stream, A on gpu0's blocking stream: no order either way.
    assert!(hb.may_overlap(OpId(0), OpId(1)));
    // The same program with both streams on one device: the legacy rule orders them.
    let mut one = claim.program.clone();
    for s in &mut one.streams {
        s.device = 0;
    }
    one.ops
        .retain(|o| !matches!(o.kind, OpKind::DeviceSync { .. }));
    assert!(HappensBefore::of(&one).must_precede(OpId(0), OpId(1)));

    let sync = catalogue_claim("multi.device_sync.own_device");
    let hb = HappensBefore::of(&sync.program);
    // L (gpu1), A (gpu0), sync gpu0: the sync covers A only.
    assert!(hb.must_precede(OpId(1), OpId(2)));
    assert!(!hb.must_precede(OpId(0), OpId(2)));
}

#[test]
fn events_across_devices_and_all_reduces_order_work() {
    let claim = catalogue_claim("multi.event.across_devices");
    let hb = HappensBefore::of(&claim.program);
    let (a, b) = (OpId(0), OpId(3));
    assert!(hb.must_precede(a, b));
    let barrier = catalogue_claim("multi.all_reduce.barrier");
    let hb = HappensBefore::of(&barrier.program);
    assert!(hb.must_precede(OpId(0), OpId(3)), "A on gpu0 → B on gpu1");
}

#[test]
fn hardware_queues_are_per_device() {
    // Under one connection the comm-first hook orders B2 after the all-reduce, per device; the
    // comm-after hook leaves the hook free to overlap B2 (the claim's expected violation).
    for (comm_first, ordered) in [(true, true), (false, false)] {
        let claim = catalogue_claim(if comm_first {
            "multi.hook.one_connection.comm_first"
        } else {
            "multi.hook.one_connection.comm_after"
        });
        let hb = HappensBefore::with(&claim.program, Refinement::Queues(1));
        for check in &claim.checks {
            if let Check::Precedes { before, after } = *check {
                assert_eq!(hb.must_precede(before, after), ordered, "{}", claim.id);
            }
        }
    }
    // A stream of device 1 is the first of its device: with one connection per device it does
    // not share a queue with device 0's stream.
    let mut b = Program::builder("queues");
    let s0 = b.stream_on(0, StreamKind::NonBlocking);
    let s1 = b.stream_on(1, StreamKind::NonBlocking);
    let k0 = b.spin(s0, "K0", SPIN);
    let k1 = b.spin(s1, "K1", SPIN);
    let hb = HappensBefore::with(&b.build(), Refinement::Queues(1));
    assert!(hb.may_overlap(k0, k1));
}

/// A on device 0 from 1 000 000 to 1 050 000; B on device 1, moved onto device 0's axis,
/// starting `gap` after A's end; alignment errors 600 ns and 500 ns.
fn two_devices(gap: i64) -> (Program, Timeline) {
    let claim = catalogue_claim("multi.event.across_devices");
    let (a, b) = (OpId(0), OpId(3));
    let start = (1_050_000 + gap) as u64;
    let mut spans = vec![
        Span::single(a, 1_000_000, 1_050_000),
        Span::single(b, start, start + 50_000),
    ];
    spans[1].device = 1;
    let calls = (0..4).map(|i| common::call(OpId(i), 0, 1_000)).collect();
    let mut t = Timeline::new(spans, calls);
    t.devices = vec![
        DeviceClock {
            device: 0,
            offset_ns: 999_000,
            error_ns: 600,
        },
        DeviceClock {
            device: 1,
            offset_ns: 5_000_000,
            error_ns: 500,
        },
    ];
    (claim.program, t)
}

#[test]
fn relations_across_devices_widen_by_both_alignment_errors() {
    let check = Check::Precedes {
        before: OpId(0),
        after: OpId(3),
    };
    let (_, t) = two_devices(3_000);
    assert_eq!(t.device_slack_ns(1), 1_100);
    assert_eq!(check.measure(&t, &TOL).truth, Truth::Yes);
    // An overlap of 1 µs is inside the 1.1 µs both clocks allow: not a refutation.
    let (_, t) = two_devices(-1_000);
    assert_ne!(check.measure(&t, &TOL).truth, Truth::No);
    // An overlap of 10 µs is beyond it.
    let (_, t) = two_devices(-10_000);
    assert_eq!(check.measure(&t, &TOL).truth, Truth::No);
    // Round trip of the timeline with its device fields.
    let json = serde_json::to_string(&t).unwrap();
    assert!(json.contains("\"device\":1") && json.contains("\"devices\""));
    let back: Timeline = serde_json::from_str(&json).unwrap();
    assert_eq!(back, t);
    let _ = BlockStamp {
        start_ns: 0,
        end_ns: 0,
        sm: 0,
        cycles: 0,
        pause: None,
    };
}

#[test]
fn a_missing_nccl_names_where_it_looked() {
    if stream_litmus::probe_nccl().is_ok() {
        return; // NCCL is installed here: nothing to see
    }
    let message = stream_litmus::probe_nccl().unwrap_err().to_string();
    assert!(message.contains("libnccl.so"), "{message}");
    assert!(message.contains("LD_LIBRARY_PATH"), "{message}");
}

// On two GPUs: every claim of the family as expected.

#[cfg(gpus2)]
fn two_gpus() {
    let n = stream_litmus::device_count();
    assert!(
        n >= 2,
        "multi-GPU tests were requested (MULTI_GPU_TESTS=1 or GPU_TESTS=2, or two GPUs on the \
         build machine), but the driver sees {n} CUDA device(s)"
    );
}

#[test]
#[cfg_attr(not(gpus2), ignore = "needs 2 GPUs (MULTI_GPU_TESTS=1)")]
fn multi_gpu_claims_hold_as_expected() {
    #[cfg(gpus2)]
    two_gpus();
    let mut failed = Vec::new();
    for claim in catalogue::multi_gpu(DEFAULT_SPIN) {
        let record = common::lab().check(&claim);
        println!("{}", stream_litmus::report::terminal::claim_line(&record));
        if !record.as_expected() {
            println!("{}", stream_litmus::report::terminal::details(&record));
            failed.push(claim.id.clone());
        }
    }
    assert!(failed.is_empty(), "not as expected: {failed:?}");
}

/// A results file with a two-device claim and hand-made trials: saved, loaded back through the
/// load checks, judged, and drawn with a lane per device's stream (what `render` and `judge` do
/// with the 2 × H200 fixture, without a GPU).
#[test]
fn a_two_device_results_file_loads_judges_and_renders() {
    let (program, t) = two_devices(3_000);
    let mut claim = catalogue_claim("multi.event.across_devices");
    claim.program = program;
    let trials = stream_litmus::Trials {
        calibration: common::hand_made::calibration(2_000),
        wanted: 5,
        timelines: vec![t; 5],
        gpu_time_ns: 1,
        warnings: vec![],
        sharing: None,
        timing: None,
        left_out: 0,
    };
    let mut run = stream_litmus::RunRecord::new(Some(trials.calibration.clone()), 5);
    run.claims
        .push(stream_litmus::ClaimRecord::judged(claim, trials));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two.json");
    run.save(&path).unwrap();
    let back = stream_litmus::RunRecord::load(&path).unwrap();
    assert_eq!(back.claims.len(), 1);
    assert!(
        back.claims[0].as_expected(),
        "{:?}",
        back.claims[0].verdict()
    );
    let html = stream_litmus::report::html::html_report(&back);
    assert!(
        html.contains("gpu1"),
        "the device 1 stream's lane names its GPU"
    );
    let trace =
        serde_json::to_string(&stream_litmus::report::chrome_trace::chrome_trace(&back)).unwrap();
    assert!(trace.contains("gpu1"));
}
