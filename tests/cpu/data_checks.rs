//! Data checks on the CPU: Faster (phases, stamped or witnessed), the buffers read back after a
//! trial (Contents, MemoryIs) and Blocks. Hand-made timelines cover each boundary, one
//! nanosecond either side. The witness clock and Serializes are in tests/cpu/witness_checks.rs.

use crate::common;

use common::witness::{witnessed, COPY, SYNC, WITNESS_ERROR};
use common::{call, kernel_and_call, CALL, CLOCK, K, TOL};
use rstest::rstest;
use stream_litmus::{BufferId, Check, Contents, MemoryKind, OpId, Place, Span, Timeline, Truth};

// ---------------------------------------------------------------------------------------------
// Faster

const SLOW: (OpId, OpId) = (OpId(0), OpId(1));
const FAST: (OpId, OpId) = (OpId(2), OpId(3));
const FASTER: Check = Check::Faster {
    slow: SLOW,
    fast: FAST,
};

/// The slow phase (ops 0, 1) lasts `ds` from GPU 1 000 000, the fast phase (ops 2, 3) `df` from
/// GPU 2 000 000; each phase is stamped, or witnessed within ±200 ns.
fn phases(ds: i64, df: i64, slow_witnessed: bool, fast_witnessed: bool) -> Timeline {
    let mut stamped = vec![];
    let mut seen = vec![];
    let mut phase = |first: OpId, last: OpId, start: i64, d: i64, by_witness: bool| {
        for (op, s, e) in [
            (first, start, start + 500),
            (last, start + d - 500, start + d),
        ] {
            if by_witness {
                seen.push(witnessed(op, s, e));
            } else {
                stamped.push(Span::single(op, s as u64, e as u64));
            }
        }
    };
    phase(SLOW.0, SLOW.1, 1_000_000, ds, slow_witnessed);
    phase(FAST.0, FAST.1, 2_000_000, df, fast_witnessed);
    Timeline::new(stamped, vec![]).with_witness(seen, Some(SYNC))
}

/// Faster: the time saved must exceed a timer step plus twice each phase's alignment error (a
/// phase's start and end may each be off by it) to prove a speed-up, and fall below minus that to
/// refute one; in between is Unknown. The reason prints the tolerance.
#[rstest]
#[case::saved_a_step_and_one_ns(100_033, false, false, 33, Truth::Yes, "+0.03 µs")]
#[case::saved_a_step(100_032, false, false, 32, Truth::Unknown, "+0.03 µs")]
#[case::lost_a_step(99_968, false, false, -32, Truth::Unknown, "+0.03 µs")]
#[case::lost_a_step_and_one_ns(99_967, false, false, -33, Truth::No, "+0.03 µs")]
#[case::fast_witnessed_saved_over(100_433, false, true, 433, Truth::Yes, "+0.43 µs")]
#[case::fast_witnessed_saved_within(100_432, false, true, 432, Truth::Unknown, "+0.43 µs")]
#[case::fast_witnessed_lost_within(99_568, false, true, -432, Truth::Unknown, "+0.43 µs")]
#[case::fast_witnessed_lost_over(99_567, false, true, -433, Truth::No, "+0.43 µs")]
#[case::both_witnessed_saved_over(100_833, true, true, 833, Truth::Yes, "+0.83 µs")]
#[case::both_witnessed_saved_within(100_832, true, true, 832, Truth::Unknown, "+0.83 µs")]
fn faster_boundaries(
    #[case] ds: i64,
    #[case] slow_witnessed: bool,
    #[case] fast_witnessed: bool,
    #[case] saved: i64,
    #[case] truth: Truth,
    #[case] tolerance: &str,
) {
    let m = FASTER.measure(&phases(ds, 100_000, slow_witnessed, fast_witnessed), &TOL);
    assert_eq!((m.value_ns, m.truth), (saved, truth), "{}", m.reason);
    assert!(
        m.reason
            .ends_with(&format!("the alignment errors, {tolerance}")),
        "{}",
        m.reason
    );
}

/// A phase runs from the first start to the last end of the ops in its range that have an
/// interval (a host sync in between has none); the reason gives the ratio and both durations,
/// in ms from 1 ms on, else in µs.
#[test]
fn faster_gives_the_speed_up_ratio() {
    let sync_op = OpId(1);
    let t = Timeline::new(
        vec![
            Span::single(OpId(0), 1_000_000, 4_300_000),
            Span::single(OpId(2), 4_300_000, 7_600_000),
        ],
        vec![call(sync_op, 10, 20)],
    )
    .with_witness(vec![witnessed(OpId(3), 8_000_000, 9_000_000)], Some(SYNC));
    let m = Check::Faster {
        slow: (OpId(0), OpId(2)),
        fast: (OpId(3), OpId(3)),
    }
    .measure(&t, &TOL);
    assert_eq!(
        (m.value_ns, m.truth),
        (5_600_000, Truth::Yes),
        "{}",
        m.reason
    );
    assert_eq!(
        m.reason,
        "6.60× (6.600 ms → 1.000 ms); tolerance a timer step plus the alignment errors, +0.43 µs"
    );

    let m = FASTER.measure(&phases(150_000, 100_000, false, false), &TOL);
    assert!(
        m.reason.starts_with("1.50× (150.0 µs → 100.0 µs)"),
        "{}",
        m.reason
    );
}

/// A phase with no interval at all (nothing stamped, a witness without alignment) decides
/// nothing.
#[test]
fn faster_without_a_phase_is_unknown() {
    let only_slow = Timeline::new(vec![Span::single(OpId(0), 0, 100_000)], vec![]);
    let m = FASTER.measure(&only_slow, &TOL);
    assert_eq!((m.truth, m.value_ns), (Truth::Unknown, 0));
    assert!(m.reason.contains("a phase has no spans"), "{}", m.reason);

    let unaligned = Timeline::new(vec![Span::single(OpId(0), 0, 100_000)], vec![])
        .with_witness(vec![witnessed(OpId(2), 200_000, 210_000)], None);
    assert_eq!(FASTER.measure(&unaligned, &TOL).truth, Truth::Unknown);
}

// ---------------------------------------------------------------------------------------------
// Contents and MemoryIs

const BUF: BufferId = BufferId(0);

fn read_back(data: &[f32]) -> Timeline {
    Timeline::default().with_contents(vec![Contents::summarize(BUF, MemoryKind::Device, data)])
}

/// `n` elements of `a` followed by `m` elements of `b`.
fn data(a: f32, n: usize, b: f32, m: usize) -> Vec<f32> {
    let mut v = vec![a; n];
    v.resize(n + m, b);
    v
}

/// Contents: every element read back equals the value. The value counts the elements that
/// differ (one is enough to refute), and the reason summarizes what the buffer held.
#[rstest]
#[case::all_equal(
    data(3.0, 1_000, 3.0, 0),
    3,
    0,
    Truth::Yes,
    "0 of 1000 elements differ from 3: 3 × 1000"
)]
#[case::one_differs(
    data(1.0, 999, 2.0, 1),
    1,
    1,
    Truth::No,
    "1 of 1000 elements differ from 1: 1 × 999, 2 × 1"
)]
#[case::a_race(
    data(1.0, 700, 2.0, 300),
    2,
    700,
    Truth::No,
    "700 of 1000 elements differ from 2: 1 × 700, 2 × 300"
)]
#[case::value_absent(
    data(1.0, 700, 2.0, 300),
    5,
    1_000,
    Truth::No,
    "1000 of 1000 elements differ from 5: 1 × 700, 2 × 300"
)]
#[case::not_whole_numbers(
    data(1.0, 990, 1.5, 10),
    1,
    10,
    Truth::No,
    "10 of 1000 elements differ from 1: 1 × 990 (+10 other)"
)]
#[case::negative(data(-4.0, 10, -4.0, 0), -4, 0, Truth::Yes, "0 of 10 elements differ from -4: -4 × 10")]
fn contents_boundaries(
    #[case] values: Vec<f32>,
    #[case] expected: i32,
    #[case] differing: i64,
    #[case] truth: Truth,
    #[case] reason: &str,
) {
    let m = Check::Contents {
        buffer: BUF,
        value: expected,
    }
    .measure(&read_back(&values), &TOL);
    assert_eq!((m.value_ns, m.truth), (differing, truth), "{}", m.reason);
    assert_eq!(m.reason, reason);
}

/// A buffer that was not read back (no contents, or only its memory type) is Unknown.
#[test]
fn contents_not_read_back_are_unknown() {
    let check = Check::Contents {
        buffer: BUF,
        value: 1,
    };
    let m = check.measure(&Timeline::default(), &TOL);
    assert_eq!((m.truth, m.value_ns), (Truth::Unknown, 0));
    assert_eq!(m.reason, "buffer b0 was not read back");

    let memory_only = read_back(&[]);
    assert_eq!(memory_only.contents_of(BUF).map(|c| c.elements), Some(0));
    assert_eq!(check.measure(&memory_only, &TOL).truth, Truth::Unknown);

    let other_buffer = Check::Contents {
        buffer: BufferId(1),
        value: 1,
    }
    .measure(&read_back(&[1.0; 4]), &TOL);
    assert_eq!(other_buffer.truth, Truth::Unknown);
    assert!(
        other_buffer.reason.contains("b1"),
        "{}",
        other_buffer.reason
    );
}

/// MemoryIs: device memory is CU_MEMORYTYPE_DEVICE, pinned memory CU_MEMORYTYPE_HOST, pageable
/// memory unknown to the driver; anything else (unified memory included) refutes. The reason
/// names what the driver reported.
#[rstest]
#[case::device(Place::Device, MemoryKind::Device, Truth::Yes)]
#[case::pinned(Place::Pinned, MemoryKind::Host, Truth::Yes)]
#[case::pageable(Place::Pageable, MemoryKind::Unregistered, Truth::Yes)]
#[case::device_on_the_host(Place::Device, MemoryKind::Host, Truth::No)]
#[case::device_unified(Place::Device, MemoryKind::Unified, Truth::No)]
#[case::pinned_not_registered(Place::Pinned, MemoryKind::Unregistered, Truth::No)]
#[case::pinned_unified(Place::Pinned, MemoryKind::Unified, Truth::No)]
#[case::pageable_but_pinned(Place::Pageable, MemoryKind::Host, Truth::No)]
#[case::pageable_on_the_device(Place::Pageable, MemoryKind::Device, Truth::No)]
fn memory_is_what_the_place_allocates(
    #[case] place: Place,
    #[case] memory: MemoryKind,
    #[case] truth: Truth,
) {
    // The memory type is recorded for every buffer, read back or not.
    let t = Timeline::default().with_contents(vec![Contents::summarize(BUF, memory, &[])]);
    let m = Check::MemoryIs { buffer: BUF, place }.measure(&t, &TOL);
    // The value carries the kind the driver reported, as its code.
    assert_eq!(
        (m.truth, m.value_ns),
        (truth, memory.code()),
        "{}",
        m.reason
    );
    assert_eq!(MemoryKind::from_code(m.value_ns), Some(memory));
    assert_eq!(
        m.reason,
        format!("the driver reports {memory} (cuPointerGetAttribute)")
    );
}

#[test]
fn memory_without_a_record_is_unknown() {
    let m = Check::MemoryIs {
        buffer: BufferId(3),
        place: Place::Device,
    }
    .measure(&read_back(&[1.0]), &TOL);
    assert_eq!(
        (m.truth, MemoryKind::from_code(m.value_ns)),
        (Truth::Unknown, None)
    );
    assert_eq!(m.reason, "no memory type recorded for buffer b3");
}

// ---------------------------------------------------------------------------------------------
// Blocks

/// Blocks: the call held the host for at least half of the span, beyond the error of the held
/// time. The held time comes from two host instants and two span ends, each placed within the
/// slack (clock error plus a timer step: 1 000 ns here), so it is known within ±2 000 ns: Yes
/// from 52 000 ns held of the 100 µs span, No below 48 000 ns, undecided between. The value is how
/// long the span went on after the call returned.
#[rstest]
#[case::staged(0, 103_000, -1_000, Truth::Yes, "100.0 %")]
#[case::half_plus_the_error(0, 54_000, 48_000, Truth::Yes, "52.0 %")]
#[case::one_ns_short_of_it(0, 53_999, 48_001, Truth::Unknown, "")]
#[case::exactly_half(0, 52_000, 50_000, Truth::Unknown, "50.0 %")]
#[case::half_minus_the_error(0, 50_000, 52_000, Truth::Unknown, "48.0 %")]
#[case::one_ns_below_it(0, 49_999, 52_001, Truth::No, "")]
#[case::asynchronous(0, 500, 101_500, Truth::No, "0.0 %")]
#[case::the_second_half(50_000, 200_000, -98_000, Truth::Yes, "52.0 %")]
#[case::one_ns_short_of_the_second_half(50_001, 200_000, -98_000, Truth::Unknown, "")]
#[case::inside_the_span(20_000, 74_000, 28_000, Truth::Yes, "54.0 %")]
#[case::all_after_the_span(103_000, 200_000, -98_000, Truth::No, "0.0 %")]
fn blocks_boundaries(
    #[case] begin: u64,
    #[case] end: u64,
    #[case] tail: i64,
    #[case] truth: Truth,
    #[case] share: &str,
) {
    let m = Check::Blocks {
        call: CALL,
        span: K,
    }
    .measure(&kernel_and_call(100_000, begin, end), &TOL);
    assert_eq!((m.value_ns, m.truth), (tail, truth), "{}", m.reason);
    if !share.is_empty() {
        assert!(
            m.reason
                .contains(&format!("held the host for {share} of the +100.00 µs span")),
            "{}",
            m.reason
        );
    }
    let side = if tail > 0 { "before" } else { "after" };
    assert!(
        m.reason.contains(&format!(
            "µs {side} its end; the held time is known within ±2.00 µs"
        )),
        "{}",
        m.reason
    );
}

/// A copy's own call against its witnessed span (how the catalogue uses Blocks): the span is
/// placed with the witness offset, the call with the clock sync, so the slack is the clock's
/// 1 000 ns plus the witness's 200 ns and the held time is known within ±2 400 ns.
#[rstest]
#[case::staged(0, 103_000, -1_000, Truth::Yes)]
#[case::half_plus_the_error(0, 54_400, 47_600, Truth::Yes)]
#[case::one_ns_short_of_it(0, 54_399, 47_601, Truth::Unknown)]
#[case::half_minus_the_error(0, 49_600, 52_400, Truth::Unknown)]
#[case::one_ns_below_it(0, 49_599, 52_401, Truth::No)]
#[case::asynchronous(0, 500, 101_500, Truth::No)]
fn blocks_on_a_witnessed_copy(
    #[case] begin: u64,
    #[case] end: u64,
    #[case] tail: i64,
    #[case] truth: Truth,
) {
    let t = Timeline::new(vec![], vec![call(COPY, begin, end)])
        .with_host(vec![], Some(CLOCK))
        .with_witness(vec![witnessed(COPY, 1_002_000, 1_102_000)], Some(SYNC));
    assert_eq!(t.interval(COPY).map(|i| i.slack_ns), Some(WITNESS_ERROR));
    let m = Check::Blocks {
        call: COPY,
        span: COPY,
    }
    .measure(&t, &TOL);
    assert_eq!((m.value_ns, m.truth), (tail, truth), "{}", m.reason);
    assert!(m.reason.contains("known within ±2.40 µs"), "{}", m.reason);
}

/// Without the clock sync the call cannot be set against the span, and without the witness's
/// alignment the copy has no span: Unknown either way.
#[test]
fn blocks_without_a_clock_or_an_alignment_is_unknown() {
    let blocks = Check::Blocks {
        call: COPY,
        span: COPY,
    };
    let no_clock = Timeline::new(vec![], vec![call(COPY, 0, 103_000)])
        .with_witness(vec![witnessed(COPY, 1_002_000, 1_102_000)], Some(SYNC));
    let m = blocks.measure(&no_clock, &TOL);
    assert_eq!((m.truth, m.value_ns), (Truth::Unknown, 0));
    assert!(m.reason.contains("no clock sync"), "{}", m.reason);

    let unaligned = Timeline::new(vec![], vec![call(COPY, 0, 103_000)])
        .with_host(vec![], Some(CLOCK))
        .with_witness(vec![witnessed(COPY, 1_002_000, 1_102_000)], None);
    let m = blocks.measure(&unaligned, &TOL);
    assert_eq!(m.truth, Truth::Unknown);
    assert_eq!(m.reason, "op 0 has no span");
}

/// The span's slack that Blocks leaves aside does count where a copy's return is set against its
/// end: a pinned copy's call returns before its witnessed end only by more than the clock's error
/// plus a timer step plus the witness's error (968 + 32 + 200 = 1 200 ns), and is refuted only by
/// a return more than that after the end.
#[rstest]
#[case::well_before(10_000, 92_000, Truth::Yes)]
#[case::before_by_the_slack_and_one_ns(100_799, 1_201, Truth::Yes)]
#[case::before_within_the_slack(100_800, 1_200, Truth::Unknown)]
#[case::after_within_the_slack(103_200, -1_200, Truth::Unknown)]
#[case::after_by_the_slack_and_one_ns(103_201, -1_201, Truth::No)]
fn a_copy_returns_before_its_witnessed_end(
    #[case] returned: u64,
    #[case] value: i64,
    #[case] truth: Truth,
) {
    let t = Timeline::new(vec![], vec![call(COPY, 0, returned)])
        .with_host(vec![], Some(CLOCK))
        .with_witness(vec![witnessed(COPY, 1_002_000, 1_102_000)], Some(SYNC));
    let m = Check::ReturnsBefore {
        call: COPY,
        span: COPY,
    }
    .measure(&t, &TOL);
    assert_eq!((m.value_ns, m.truth), (value, truth), "{}", m.reason);
    assert!(m.reason.contains("±1.20 µs"), "{}", m.reason);
}
