//! Relations and verdicts on the CPU, on hand-made edge cases (timelines recorded on real GPUs
//! are re-judged in `tests/cpu/recorded_rejudged.rs`).

use crate::common;

use common::TOL;
use rstest::rstest;
use stream_litmus::{judge, Check, Counts, HostCall, OpId, Span, Timeline, Truth, Verdict};

const A: OpId = OpId(0);
const B: OpId = OpId(1);

/// A issued at host time 0, B issued at host time `issued_b`, with the spans given (GPU ns).
fn two(a: (u64, u64), b: (u64, u64), issued_b: u64) -> Timeline {
    let call = |op, at| HostCall {
        op,
        begin_ns: at,
        end_ns: at,
    };
    Timeline::new(
        vec![Span::single(A, a.0, a.1), Span::single(B, b.0, b.1)],
        vec![call(A, 0), call(B, issued_b)],
    )
}

const PRECEDES: Check = Check::Precedes {
    before: A,
    after: B,
};
const OVERLAPS: Check = Check::Overlaps { a: A, b: B };

/// Precedes: a gap above minus one timer step is an order, if B was issued early enough to have
/// started sooner; an overlap of a whole step refutes it.
#[rstest]
#[case::clear_gap((1_000, 50_000), (51_200, 90_000), 2_000, 1_200, Truth::Yes)]
#[case::touching((1_000, 50_000), (50_000, 90_000), 2_000, 0, Truth::Yes)]
#[case::within_one_step((1_000, 50_000), (49_969, 90_000), 2_000, -31, Truth::Yes)]
#[case::one_full_step((1_000, 50_000), (49_968, 90_000), 2_000, -32, Truth::No)]
#[case::violated((1_000, 50_000), (30_000, 90_000), 2_000, -20_000, Truth::No)]
#[case::issued_too_late((1_000, 50_000), (51_000, 90_000), 47_500, 1_000, Truth::Unknown)]
#[case::ready_just_in_time((1_000, 50_000), (51_000, 90_000), 46_999, 1_000, Truth::Yes)]
fn precedes_boundaries(
    #[case] a: (u64, u64),
    #[case] b: (u64, u64),
    #[case] issued_b: u64,
    #[case] value: i64,
    #[case] truth: Truth,
) {
    let m = PRECEDES.measure(&two(a, b, issued_b), &TOL);
    assert_eq!((m.value_ns, m.truth), (value, truth), "{}", m.reason);
}

/// Overlaps: one timer step of overlap is proof; no overlap is proof of waiting only when the
/// later span was ready (issued, plus the launch jitter) before the earlier one ended.
#[rstest]
#[case::long_overlap((1_000, 50_000), (4_000, 53_000), 2_000, 46_000, Truth::Yes)]
#[case::exactly_one_step((1_000, 50_000), (49_968, 90_000), 2_000, 32, Truth::Yes)]
#[case::under_one_step((1_000, 50_000), (49_969, 90_000), 2_000, 31, Truth::No)]
#[case::waited((1_000, 50_000), (51_000, 90_000), 2_000, -1_000, Truth::No)]
#[case::too_short_to_tell((1_000, 3_000), (4_000, 6_000), 2_000, -1_000, Truth::Unknown)]
#[case::host_hiccup((1_000, 50_000), (75_000, 90_000), 70_000, -25_000, Truth::Unknown)]
#[case::symmetric((51_000, 90_000), (1_000, 50_000), 2_000, -1_000, Truth::No)]
fn overlaps_boundaries(
    #[case] a: (u64, u64),
    #[case] b: (u64, u64),
    #[case] issued_b: u64,
    #[case] value: i64,
    #[case] truth: Truth,
) {
    let m = OVERLAPS.measure(&two(a, b, issued_b), &TOL);
    assert_eq!((m.value_ns, m.truth), (value, truth), "{}", m.reason);
}

#[test]
fn the_unknown_reason_names_the_launch_jitter_and_a_fix() {
    let m = OVERLAPS.measure(&two((1_000, 3_000), (4_000, 6_000), 2_000), &TOL);
    assert!(m.reason.contains("+2.00 µs launch jitter"), "{}", m.reason);
    assert!(m.reason.contains("lengthen the spins"), "{}", m.reason);
}

#[test]
fn a_missing_span_is_unknown_not_false() {
    let t = Timeline::new(vec![Span::single(A, 0, 10)], vec![]);
    let m = PRECEDES.measure(&t, &TOL);
    assert_eq!(m.truth, Truth::Unknown);
    assert!(m.reason.contains("op 1 has no stamps"));
}

#[test]
fn multi_block_spans_run_from_first_start_to_last_end() {
    let mut s = Span::single(A, 100, 200);
    s.blocks.edit(|b| {
        b.push(stream_litmus::BlockStamp {
            start_ns: 50,
            end_ns: 150,
            sm: 3,
            cycles: 0,
            pause: None,
        })
    });
    assert_eq!((s.start(), s.end(), s.sms()), (50, 200, vec![0, 3]));
}

/// A on one stream, B on another: the program of [`two`]'s timelines.
fn pair() -> stream_litmus::Program {
    let mut p = stream_litmus::Program::builder("p");
    let (s1, s2) = (
        p.stream(stream_litmus::StreamKind::NonBlocking),
        p.stream(stream_litmus::StreamKind::NonBlocking),
    );
    p.spin(s1, "A", std::time::Duration::from_micros(50));
    p.spin(s2, "B", std::time::Duration::from_micros(50));
    p.build()
}

fn ordered() -> Timeline {
    two((0, 50_000), (51_000, 100_000), 2_000)
}
fn overlapped() -> Timeline {
    two((0, 50_000), (10_000, 60_000), 2_000)
}
fn too_short() -> Timeline {
    two((0, 1_000), (2_000, 3_000), 1_500)
}

#[test]
fn verdicts_count_trials_like_litmus_tools() {
    let holds = judge(&pair(), &[PRECEDES], &vec![ordered(); 5], &TOL, 5);
    assert_eq!(holds.verdict, Verdict::Holds);
    assert_eq!(holds.counts.to_string(), "Always 5/5");

    let sometimes = judge(
        &pair(),
        &[PRECEDES],
        &[ordered(), overlapped(), ordered(), ordered(), ordered()],
        &TOL,
        5,
    );
    assert_eq!(sometimes.verdict, Verdict::Violated);
    assert_eq!(sometimes.counts.to_string(), "Sometimes 4/5");
    assert_eq!(
        sometimes.witness,
        Some(1),
        "the first negative trial is the witness"
    );

    let never = judge(&pair(), &[PRECEDES], &vec![overlapped(); 3], &TOL, 3);
    assert_eq!(
        (never.verdict, never.counts.to_string()),
        (Verdict::Violated, "Never 0/3".into())
    );
}

#[test]
fn too_few_decided_trials_make_an_inconclusive_verdict_unless_one_refutes() {
    let unknown = judge(&pair(), &[OVERLAPS], &[overlapped(), too_short()], &TOL, 2);
    assert_eq!(unknown.verdict, Verdict::Inconclusive);
    assert_eq!(
        unknown.counts,
        Counts {
            positive: 1,
            negative: 0,
            undecided: 1,
            disturbed: 0,
            overlapped: 0,
        }
    );
    assert_eq!(unknown.counts.to_string(), "Always 1/1 +1?");
    assert_eq!(
        unknown.witness,
        Some(1),
        "the first undecided trial is the witness"
    );
    let refuted = judge(&pair(), &[OVERLAPS], &[too_short(), ordered()], &TOL, 2);
    assert_eq!(refuted.verdict, Verdict::Violated);
    assert_eq!(
        judge(&pair(), &[OVERLAPS], &[], &TOL, 1).verdict,
        Verdict::Inconclusive
    );
    assert_eq!(
        judge(&pair(), &[OVERLAPS], &[], &TOL, 1).counts.to_string(),
        "Undecided 0/0"
    );
}

/// An undecided trial is replaced, not counted against the claim: enough positive trials hold.
#[test]
fn undecided_trials_do_not_block_a_verdict_once_enough_trials_are_decided() {
    let held = judge(
        &pair(),
        &[OVERLAPS],
        &[too_short(), overlapped(), overlapped()],
        &TOL,
        2,
    );
    assert_eq!(held.verdict, Verdict::Holds);
    assert_eq!(held.counts.to_string(), "Always 2/2 +1?");
    assert_ne!(
        held.witness,
        Some(0),
        "the witness of a Holds is a positive trial"
    );
}

#[test]
fn evidence_gives_the_range_of_each_check_and_the_deciding_reason() {
    let mut p = stream_litmus::Program::builder("p");
    let s = p.stream(stream_litmus::StreamKind::NonBlocking);
    p.spin(s, "A", std::time::Duration::from_micros(50));
    p.spin(s, "B", std::time::Duration::from_micros(50));
    let program = p.build();
    let j = judge(&pair(), &[PRECEDES], &[ordered(), overlapped()], &TOL, 2);
    let evidence = j.evidence(&program);
    assert!(
        evidence.starts_with("A→B gap (+) or overlap (−) -40.00 µs..+1.00 µs"),
        "{evidence}"
    );
    assert!(
        evidence.contains("trial 2: A→B started +40.00 µs before the end"),
        "{evidence}"
    );
}

// Recorded runs (`--json` results files): `core-*` are runs of the lab's core claims,
// `catalogue-*` of the whole catalogue (copies and scenarios included, gzip-compressed) and
// `nocupti-*` of the copy claims with CUPTI hidden, all with the default spin, where every claim
// met its expectation on the GPU; `short-spin-*` are runs with spins too short to decide
// everything, kept for their real undecided and refuted trials.

// ---- dispatch order and preemption (stream priorities) ------------------------------------------

/// LOW: 4 waves of 2 blocks starting at 0, 50, 100, 150 µs (each 50 µs, 99 000 cycles); HIGH: 2
/// blocks starting at `high_start`, issued at host time `high_issued`.
fn waves(high_start: u64, high_issued: u64) -> Timeline {
    let block = |start: u64, cycles: u64| stream_litmus::BlockStamp {
        start_ns: start,
        end_ns: start + 50_000,
        sm: 0,
        cycles,
        pause: None,
    };
    let low = Span {
        device: 0,
        op: A,
        blocks: (0..8).map(|i| block((i / 2) * 50_000, 99_000)).collect(),
    };
    let high = Span {
        device: 0,
        op: B,
        blocks: vec![block(high_start, 99_000), block(high_start, 99_000)].into(),
    };
    let call = |op, at| HostCall {
        op,
        begin_ns: at,
        end_ns: at,
    };
    Timeline::new(vec![low, high], vec![call(A, 0), call(B, high_issued)])
}

#[rstest]
#[case::jumped_ahead(50_000, 3_000, Truth::Yes, Truth::No)]
#[case::waited_behind(150_032, 3_000, Truth::No, Truth::Yes)]
#[case::issued_too_late(160_000, 151_000, Truth::Unknown, Truth::Unknown)]
fn dispatch_order_needs_the_second_kernel_ready_in_time(
    #[case] high_start: u64,
    #[case] issued: u64,
    #[case] interleaves: Truth,
    #[case] behind: Truth,
) {
    let t = waves(high_start, issued);
    let i = Check::Interleaves { low: A, high: B }.measure(&t, &TOL);
    let b = Check::Behind { low: A, high: B }.measure(&t, &TOL);
    assert_eq!(
        (i.truth, b.truth),
        (interleaves, behind),
        "{} / {}",
        i.reason,
        b.reason
    );
    assert_eq!(i.value_ns, 150_000 - high_start as i64, "the lead");
    if interleaves == Truth::Yes {
        assert!(
            i.reason
                .starts_with("4 of 8 blocks of the first kernel started after"),
            "{}",
            i.reason
        );
    }
}

#[test]
fn a_block_held_off_its_sm_for_a_block_of_the_other_kernel_was_interrupted() {
    let t = waves(50_000, 3_000);
    let check = Check::Uninterrupted { op: A, by: B };
    let whole = check.measure(&t, &TOL);
    assert_eq!(
        (whole.truth, whole.value_ns),
        (Truth::Yes, 0),
        "{}",
        whole.reason
    );
    // Off its SM for 30 µs, more than half a 50 µs block of the other kernel: interrupted.
    let mut held = t.clone();
    held.spans[0].blocks.edit(|b| b[3].end_ns += 30_000);
    let m = check.measure(&held, &TOL);
    assert_eq!((m.truth, m.value_ns), (Truth::No, 30_000), "{}", m.reason);
    assert!(
        m.reason
            .contains("threshold is half its median block time, +25.00 µs"),
        "{}",
        m.reason
    );
    // Sub-µs excess (warp start skew, __syncthreads) is far from a preemption.
    let mut skew = t.clone();
    skew.spans[0].blocks.edit(|b| b[3].end_ns += 600);
    assert_eq!(check.measure(&skew, &TOL).truth, Truth::Yes);
}

/// Events around a kernel: their elapsed time may exceed the stamps (dispatch gaps), never fall
/// short of them by more than the event resolution plus a timer step.
#[rstest]
#[case::covers_with_gaps(52_300, 2_300, Truth::Yes)]
#[case::within_resolution(49_500, -500, Truth::Yes)]
#[case::too_short(49_000, -1_000, Truth::No)]
fn elapsed_time_covers_the_stamped_kernel(
    #[case] elapsed: i64,
    #[case] extra: i64,
    #[case] truth: Truth,
) {
    let t = Timeline::new(vec![Span::single(B, 1_000, 51_000)], vec![]).with_readings(vec![
        stream_litmus::Reading {
            op: A,
            value_ns: elapsed,
        },
    ]);
    let m = Check::ElapsedCovers {
        elapsed: A,
        span: B,
    }
    .measure(&t, &TOL);
    assert_eq!((m.value_ns, m.truth), (extra, truth), "{}", m.reason);
    let none = Check::ElapsedCovers {
        elapsed: A,
        span: B,
    }
    .measure(&Timeline::default(), &TOL);
    assert_eq!(none.truth, Truth::Unknown);
}
