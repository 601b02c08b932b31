//! Orders made by the host (docs/design.md, decision 13), on the CPU: a later op issued after a
//! host call that waits for the earlier op is ordered by that call when the call was made before
//! the earlier op ended and returned no sooner, both placed with the clock sync (±1.00 µs here:
//! the error bound plus a timer step). Hand-made timelines sit at each boundary; the two
//! newcomers' claims of issue 13 decide on realistic ones (tests/gpu/sync_claims.rs runs them on the
//! GPU); every undecided reason names its cause.
//!
//! Host times are host ns; with [`CLOCK`] host h is GPU h + 1 000 000. Every program's first
//! kernel is issued at host 0..3 000 and starts 5 µs after its issue, which makes the trial's
//! host-to-GPU offset 1 005 000.

use crate::common;

use common::{call, CLOCK, TOL};
use rstest::rstest;
use std::time::Duration;
use stream_litmus::model::HappensBefore;
use stream_litmus::{
    judge, ApiCall, Check, HostCall, HostFnApi, HostSpan, OpId, Program, Span, StreamKind,
    SyncTarget, Timeline, Truth, Verdict,
};

const US: u64 = 1_000;
/// GPU time of host time `h` (with [`CLOCK`]).
const fn gpu(h: u64) -> u64 {
    h + 1_000_000
}

/// A kernel issued by the host call `(begin, end)` that starts 5 µs after its issue and runs
/// `len` ns: its span and its call.
fn kernel(op: OpId, begin: u64, end: u64, len: u64) -> (Span, HostCall) {
    let start = gpu(end) + 5 * US;
    (Span::single(op, start, start + len), call(op, begin, end))
}

fn timeline(kernels: Vec<(Span, HostCall)>, calls: Vec<HostCall>) -> Timeline {
    let (spans, mut all): (Vec<Span>, Vec<HostCall>) = kernels.into_iter().unzip();
    all.extend(calls);
    Timeline::new(spans, all).with_host(vec![], Some(CLOCK))
}

/// "cuCtxSynchronize waits for non-blocking work": A (50 µs) on a non-blocking stream, a device
/// sync, B on another stream.
fn device_sync() -> (Program, [OpId; 3]) {
    let mut p = Program::builder("device sync");
    let (s1, s2) = (
        p.stream(StreamKind::NonBlocking),
        p.stream(StreamKind::NonBlocking),
    );
    let a = p.spin(s1, "A", Duration::from_micros(50));
    let sync = p.host_sync(SyncTarget::Device);
    let b = p.spin(s2, "B", Duration::from_micros(50));
    (p.build(), [a, sync, b])
}

/// A from GPU 1 008 000 to 1 058 000 (host 8 000..58 000); the sync called at host `called` and
/// returning at `returned`; B issued 3 µs later.
fn device_sync_trial(called: u64, returned: u64) -> Timeline {
    let [a, sync, b] = device_sync().1;
    timeline(
        vec![
            kernel(a, 0, 3 * US, 50 * US),
            kernel(b, returned + 100, returned + 3_100, 50 * US),
        ],
        vec![call(sync, called, returned)],
    )
}

/// A ends at host 58 000; the tolerance is ±1 000 ns. The call must be made before A's end
/// minus the tolerance and return no sooner than A's end minus the tolerance.
#[rstest]
#[case::returned_well_after(3_100, 60_800, Truth::Yes)]
#[case::returned_1ns_past_the_end_plus_error(3_100, 59_001, Truth::Yes)]
#[case::returned_at_the_end_minus_error(3_100, 57_000, Truth::Yes)]
#[case::returned_1ns_before_the_end_minus_error(3_100, 56_999, Truth::Unknown)]
#[case::called_1ns_before_the_end_minus_error(56_999, 60_800, Truth::Yes)]
#[case::called_at_the_end_minus_error(57_000, 60_800, Truth::Unknown)]
#[case::called_after_the_end(59_000, 60_800, Truth::Unknown)]
fn a_device_sync_orders_what_it_waited_for(
    #[case] called: u64,
    #[case] returned: u64,
    #[case] truth: Truth,
) {
    let (program, [a, _, b]) = device_sync();
    let check = Check::Precedes {
        before: a,
        after: b,
    };
    let m = check.measure_in(&program, &device_sync_trial(called, returned), &TOL);
    assert_eq!(m.truth, truth, "{}", m.reason);
    assert!(m.value_ns > 0, "B came after A in every case");
    match truth {
        Truth::Yes => {
            assert!(
                m.reason
                    .starts_with("ordered through the host: device sync waits for A"),
                "{}",
                m.reason
            );
            assert!(m.reason.contains("±1.00 µs"), "{}", m.reason);
        }
        _ if called >= 57_000 => {
            assert!(m.reason.contains("was called only"), "{}", m.reason);
            assert!(m.reason.contains("lengthen A"), "{}", m.reason);
        }
        _ => assert!(
            m.reason.contains("returned +1.00 µs before A ended"),
            "{}",
            m.reason
        ),
    }
}

#[test]
fn the_evidence_gives_how_long_after_the_end_the_sync_returned() {
    let (program, [a, _, b]) = device_sync();
    let m = Check::Precedes {
        before: a,
        after: b,
    }
    .measure_in(&program, &device_sync_trial(3_100, 60_800), &TOL);
    assert!(
        m.reason
            .contains("returned +2.80 µs after A ended; B was issued only then"),
        "{}",
        m.reason
    );
}

#[test]
fn without_a_clock_sync_the_host_order_is_undecided_and_says_so() {
    let (program, [a, _, b]) = device_sync();
    let mut t = device_sync_trial(3_100, 60_800);
    t.clock = None;
    let m = Check::Precedes {
        before: a,
        after: b,
    }
    .measure_in(&program, &t, &TOL);
    assert_eq!(m.truth, Truth::Unknown);
    assert!(
        m.reason
            .contains("device sync, which waits for A, but this trial has no clock sync"),
        "{}",
        m.reason
    );
    assert!(!m.reason.contains("lengthen"), "{}", m.reason);
}

#[test]
fn without_the_program_the_host_order_is_unknown_not_denied() {
    let (_, [a, _, b]) = device_sync();
    let m = Check::Precedes {
        before: a,
        after: b,
    }
    .measure(&device_sync_trial(3_100, 60_800), &TOL);
    assert_eq!(m.truth, Truth::Unknown);
    assert!(
        m.reason.contains("measured without the program"),
        "{}",
        m.reason
    );
}

/// Overlaps keeps the readiness rule: no overlap behind a sync that waits for the other op is
/// undecided, and the reason says the program cannot show an overlap.
#[test]
fn an_overlap_across_a_sync_that_waits_cannot_be_shown() {
    let (program, [a, _, b]) = device_sync();
    let m = Check::Overlaps { a, b }.measure_in(&program, &device_sync_trial(3_100, 60_800), &TOL);
    assert_eq!(m.truth, Truth::Unknown);
    assert!(
        m.reason
            .contains("this program cannot show them overlapping"),
        "{}",
        m.reason
    );
}

/// A sync of other work that outlasts A: B comes after A only because the call lasted, so the
/// order proves nothing, and a longer A would decide it.
#[test]
fn a_sync_of_other_work_does_not_order_what_it_does_not_wait_for() {
    let mut p = Program::builder("other stream");
    let (s1, s2, s3) = (
        p.stream(StreamKind::NonBlocking),
        p.stream(StreamKind::NonBlocking),
        p.stream(StreamKind::NonBlocking),
    );
    let a = p.spin(s1, "A", Duration::from_micros(20));
    let x = p.spin(s2, "X", Duration::from_micros(100));
    let sync = p.host_sync(SyncTarget::Stream(s2));
    let b = p.spin(s3, "B", Duration::from_micros(20));
    let program = p.build();
    // A runs 1 008 000..1 028 000, X 1 011 000..1 111 000, the sync returns at host 114 000.
    let t = timeline(
        vec![
            kernel(a, 0, 3 * US, 20 * US),
            kernel(x, 3_100, 6 * US, 100 * US),
            kernel(b, 114_100, 117 * US, 20 * US),
        ],
        vec![call(sync, 6_100, 114 * US)],
    );
    let m = Check::Precedes {
        before: a,
        after: b,
    }
    .measure_in(&program, &t, &TOL);
    assert_eq!(m.truth, Truth::Unknown, "{}", m.reason);
    assert!(
        m.reason
            .contains("sync s2, which held the host from before A ended")
            && m.reason.contains("waits for other work, not for A")
            && m.reason.contains("lengthen A so that it outlasts the call"),
        "{}",
        m.reason
    );
    assert!(HappensBefore::of(&program).may_overlap(a, b));
}

/// A blocking driver call that no document makes wait for A: the order it makes is not
/// evidence, and the reason points to the checks that measure the call.
#[test]
fn a_blocking_api_call_orders_nothing_by_itself() {
    let mut p = Program::builder("free");
    let (s1, s2) = (
        p.stream(StreamKind::NonBlocking),
        p.stream(StreamKind::NonBlocking),
    );
    let a = p.spin(s1, "A", Duration::from_micros(50));
    let free = p.api(ApiCall::MemFree, 1 << 20);
    let b = p.spin(s2, "B", Duration::from_micros(50));
    let program = p.build();
    let t = timeline(
        vec![
            kernel(a, 0, 3 * US, 50 * US),
            kernel(b, 63_600, 66_600, 50 * US),
        ],
        vec![call(free, 3_100, 63_500)],
    );
    let m = Check::Precedes {
        before: a,
        after: b,
    }
    .measure_in(&program, &t, &TOL);
    assert_eq!(m.truth, Truth::Unknown);
    assert!(
        m.reason.contains("cuMemFree")
            && m.reason.contains("no document says it waits for A")
            && m.reason.contains("ReturnsAfter and Separates"),
        "{}",
        m.reason
    );
}

/// No host wait between them: the host's own pace made B late, and longer spins would help.
#[test]
fn late_issue_at_the_hosts_own_pace_asks_for_longer_spins() {
    let mut p = Program::builder("pace");
    let s = p.stream(StreamKind::NonBlocking);
    let a = p.spin(s, "A", Duration::from_micros(2));
    let b = p.spin(s, "B", Duration::from_micros(2));
    let program = p.build();
    let t = timeline(
        vec![
            kernel(a, 0, 3 * US, 2 * US),
            kernel(b, 3_100, 6 * US, 2 * US),
        ],
        vec![],
    );
    let m = Check::Precedes {
        before: a,
        after: b,
    }
    .measure_in(&program, &t, &TOL);
    assert_eq!(m.truth, Truth::Unknown);
    assert!(
        m.reason.contains("no host wait came between them")
            && m.reason.contains("lengthen the spins"),
        "{}",
        m.reason
    );
}

/// An order made through a host function: a sync of its stream waits for it, so B, issued after
/// the sync, follows the host function (placed with the clock sync, whose error widens the
/// tolerance again) and the kernel before it.
#[test]
fn a_sync_behind_a_host_function_orders_it_and_the_work_before_it() {
    let mut p = Program::builder("host function");
    let (s1, s2) = (
        p.stream(StreamKind::NonBlocking),
        p.stream(StreamKind::NonBlocking),
    );
    let a = p.spin(s1, "A", Duration::from_micros(50));
    let h = p.host_fn(
        s1,
        "H",
        Duration::from_micros(20),
        HostFnApi::LaunchHostFunc,
    );
    let sync = p.host_sync(SyncTarget::Stream(s1));
    let b = p.spin(s2, "B", Duration::from_micros(20));
    let program = p.build();
    // A ends at host 58 000, H runs 100 000..120 000, the sync returns at 123 000.
    let t = Timeline::new(
        vec![
            kernel(a, 0, 3 * US, 50 * US).0,
            kernel(b, 123_100, 126 * US, 20 * US).0,
        ],
        vec![
            call(a, 0, 3 * US),
            call(h, 3_100, 6 * US),
            call(sync, 6_100, 123 * US),
            call(b, 123_100, 126 * US),
        ],
    )
    .with_host(
        vec![HostSpan {
            op: h,
            begin_ns: 100 * US,
            end_ns: 120 * US,
        }],
        Some(CLOCK),
    );
    for (before, after) in [(h, b), (a, b)] {
        let m = Check::Precedes { before, after }.measure_in(&program, &t, &TOL);
        assert_eq!(m.truth, Truth::Yes, "{}", m.reason);
        assert!(
            m.reason
                .contains("ordered through the host: sync s1 waits for"),
            "{}",
            m.reason
        );
    }
    let m = Check::Precedes {
        before: h,
        after: b,
    }
    .measure_in(&program, &t, &TOL);
    assert!(m.reason.contains("±1.97 µs"), "H's own slack: {}", m.reason);
}

/// Reading an elapsed time waits for its end event: it orders the work the event captured.
#[test]
fn an_elapsed_read_orders_the_work_its_end_event_captured() {
    let mut p = Program::builder("elapsed");
    let (s1, s2) = (
        p.stream(StreamKind::NonBlocking),
        p.stream(StreamKind::NonBlocking),
    );
    let (start, stop) = (p.event("start"), p.event("stop"));
    p.record(s1, start);
    let a = p.spin(s1, "A", Duration::from_micros(50));
    p.record(s1, stop);
    let read = p.elapsed(start, stop);
    let b = p.spin(s2, "B", Duration::from_micros(50));
    let program = p.build();
    assert_eq!(program.ops[read.0].label, "elapsed start→stop");
    assert!(program.needs_host_clock(), "an elapsed read is a host wait");
    let t = timeline(
        vec![
            kernel(a, 0, 3 * US, 50 * US),
            kernel(b, 61_100, 64 * US, 50 * US),
        ],
        vec![
            call(OpId(0), 0, 0),
            call(OpId(2), 3_050, 3_090),
            call(read, 3_100, 61 * US),
        ],
    );
    let m = Check::Precedes {
        before: a,
        after: b,
    }
    .measure_in(&program, &t, &TOL);
    assert_eq!(m.truth, Truth::Yes, "{}", m.reason);
    assert!(m.reason.contains("(sync stop) waits for A"), "{}", m.reason);
}

/// "Synchronizing stream s2 does not wait for s1": A (200 µs) on s1, B on s2, a sync of s2, C on
/// s3. C follows B through the host and runs beside A.
fn sync_s2() -> (Program, [OpId; 4]) {
    let mut p = Program::builder("sync s2");
    let (s1, s2, s3) = (
        p.stream(StreamKind::NonBlocking),
        p.stream(StreamKind::NonBlocking),
        p.stream(StreamKind::NonBlocking),
    );
    let a = p.spin(s1, "A", Duration::from_micros(200));
    let b = p.spin(s2, "B", Duration::from_micros(20));
    let sync = p.host_sync(SyncTarget::Stream(s2));
    let c = p.spin(s3, "C", Duration::from_micros(20));
    (p.build(), [a, b, sync, c])
}

/// One trial of [`sync_s2`] as an H100 runs it: launches of 2.6–3 µs, kernels starting ~5 µs
/// after their launch returned, the sync returning `ret` after B's end, each trial a little
/// different.
fn sync_s2_trial(i: u64, ret: u64) -> Timeline {
    let [a, b, sync, c] = sync_s2().1;
    let jitter = i * 97;
    let b_issued = 5_900 + jitter;
    let b_end = gpu(b_issued) + 5 * US + 20 * US; // GPU
    let returned = b_end - 1_000_000 + ret;
    timeline(
        vec![
            kernel(a, 0, 2_900, 200 * US),
            kernel(b, 3_000, b_issued, 20 * US),
            kernel(c, returned + 80, returned + 2_700, 20 * US),
        ],
        vec![call(sync, b_issued + 60, returned)],
    )
}

#[test]
fn synchronizing_s2_orders_c_after_b_and_leaves_it_beside_a() {
    let (program, [a, b, _, c]) = sync_s2();
    let checks = [
        Check::Precedes {
            before: b,
            after: c,
        },
        Check::Overlaps { a, b: c },
    ];
    let hb = HappensBefore::of(&program);
    assert_eq!(
        checks.iter().map(|k| hb.predicts(k)).collect::<Vec<_>>(),
        [Some(true), Some(true)],
        "the model predicts both"
    );
    let trials: Vec<Timeline> = (0..5).map(|i| sync_s2_trial(i, 2_300 + 200 * i)).collect();
    let j = judge(&program, &checks, &trials, &TOL, 5);
    assert_eq!(j.verdict, Verdict::Holds, "{}", j.evidence(&program));
    let first = &j.trials[0].measurements[0];
    assert!(
        first.reason.starts_with(
            "ordered through the host: sync s2 waits for B and returned +2.30 µs after B ended"
        ),
        "{}",
        first.reason
    );
    // And the sync did not wait for A: C ran inside it.
    let m = Check::Precedes {
        before: a,
        after: c,
    }
    .measure_in(&program, &trials[0], &TOL);
    assert_eq!(m.truth, Truth::No, "{}", m.reason);
}

#[test]
fn cuctxsynchronize_waits_for_non_blocking_work() {
    let (program, [a, _, b]) = device_sync();
    let checks = [Check::Precedes {
        before: a,
        after: b,
    }];
    assert_eq!(HappensBefore::of(&program).predicts(&checks[0]), Some(true));
    // The sync returns 3.2–5.3 µs after A ends (docs/claims.md, implicit.context_sync).
    let trials: Vec<Timeline> = [3_200, 3_900, 4_400, 5_300, 3_600]
        .iter()
        .enumerate()
        .map(|(i, ret)| device_sync_trial(3_100 + 37 * i as u64, 58_000 + ret))
        .collect();
    let j = judge(&program, &checks, &trials, &TOL, 5);
    assert_eq!(j.verdict, Verdict::Holds, "{}", j.evidence(&program));
    assert_eq!(j.counts.to_string(), "Always 5/5");
}
