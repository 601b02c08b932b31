//! Copy and data checks on the CPU: the witness clock aligned to `%globaltimer` through anchors,
//! witnessed copy spans placed with it (its error as slack), and the checks that read them
//! (Serializes, Faster, Blocks) or the buffers read back after a trial (Contents, MemoryIs).
//! Hand-made timelines cover each boundary, one nanosecond either side.

mod common;

use common::{call, kernel_and_call, CALL, CLOCK, K, TOL};
use rstest::rstest;
use stream_litmus::{
    Anchor, BufferId, Check, Contents, Interval, MemoryKind, OpId, Place, Span, Timeline, Truth,
    WitnessKind, WitnessSpan, WitnessSync,
};

/// Witness time w is GPU time w + 900 000, within ±200 ns (CUPTI: no resolution added).
const WITNESS_OFFSET: i64 = 900_000;
const WITNESS_ERROR: u64 = 200;
const SYNC: WitnessSync = sync(WITNESS_ERROR);

const fn sync(error_ns: u64) -> WitnessSync {
    WitnessSync {
        kind: WitnessKind::Cupti,
        offset_ns: WITNESS_OFFSET,
        error_ns,
        anchors: 4,
        disagreement_ns: error_ns,
    }
}

/// A copy witnessed from GPU time `start` to `end` (stored in the witness's clock).
fn witnessed(op: OpId, start: i64, end: i64) -> WitnessSpan {
    WitnessSpan {
        op,
        start_ns: start - WITNESS_OFFSET,
        end_ns: end - WITNESS_OFFSET,
    }
}

// ---------------------------------------------------------------------------------------------
// The witness clock

/// An anchor stamped from `start` to `end` whose witnessed start and end give the offsets
/// `offsets` (`gpu = witness + offset`).
fn anchor(start: i64, end: i64, offsets: (i64, i64)) -> Anchor {
    Anchor {
        stamped: (start, end),
        witnessed: (start - offsets.0, end - offsets.1),
    }
}

/// Each anchor gives two offsets (starts, ends); the offset is their median (the upper middle
/// one, as there is always an even number) and the error is the largest disagreement with it plus
/// the witness's resolution: 0 for CUPTI, 500 ns for events.
#[rstest]
#[case::one_exact_anchor(vec![(900_000, 900_000)], 900_000, 0)]
#[case::upper_middle_of_two(vec![(900_000, 900_300)], 900_300, 300)]
#[case::an_outlier_widens_the_error(
    vec![(900_000, 900_010), (899_990, 900_000), (900_000, 901_200)],
    900_000,
    1_200
)]
#[case::negative_offset(vec![(-4_000, -4_100)], -4_000, 100)]
fn the_witness_offset_is_the_median_of_the_anchors(
    #[case] offsets: Vec<(i64, i64)>,
    #[case] offset: i64,
    #[case] disagreement: u64,
    #[values(WitnessKind::Cupti, WitnessKind::Events)] kind: WitnessKind,
) {
    let anchors: Vec<Anchor> = offsets
        .iter()
        .enumerate()
        .map(|(i, &o)| {
            let start = 1_000_000 + 100_000 * i as i64;
            anchor(start, start + 50_000, o)
        })
        .collect();
    let s = WitnessSync::align(kind, &anchors).expect("anchors give an alignment");
    let resolution = match kind {
        WitnessKind::Cupti => 0,
        WitnessKind::Events => 500,
    };
    assert_eq!(kind.resolution_ns(), resolution);
    assert_eq!(
        s,
        WitnessSync {
            kind,
            offset_ns: offset,
            error_ns: disagreement + resolution,
            anchors: anchors.len() as u32,
            disagreement_ns: disagreement,
        }
    );
}

/// Without a stamped kernel the witness also saw, its clock cannot be placed at all.
#[rstest]
fn no_anchors_no_alignment(#[values(WitnessKind::Cupti, WitnessKind::Events)] kind: WitnessKind) {
    assert_eq!(WitnessSync::align(kind, &[]), None);
}

/// The description gives the kind, the error bound with the resolution, the anchors counted
/// (singular for one) and the disagreement alone.
#[test]
fn the_alignment_describes_its_error_and_anchors() {
    let three = [
        anchor(1_000_000, 1_050_000, (900_000, 900_010)),
        anchor(1_100_000, 1_150_000, (899_990, 900_000)),
        anchor(1_200_000, 1_250_000, (900_000, 901_200)),
    ];
    let cupti = WitnessSync::align(WitnessKind::Cupti, &three).unwrap();
    assert_eq!(
        cupti.describe(),
        "CUPTI aligned to %globaltimer within ±1.20 µs (3 stamped kernels cross-checked, largest \
         disagreement 1.20 µs)"
    );
    let one = [anchor(1_000_000, 1_050_000, (900_000, 900_200))];
    let events = WitnessSync::align(WitnessKind::Events, &one).unwrap();
    assert_eq!(
        events.describe(),
        "events aligned to %globaltimer within ±0.70 µs (1 stamped kernel cross-checked, largest \
         disagreement 0.20 µs)"
    );
}

// ---------------------------------------------------------------------------------------------
// Witnessed spans on the timeline

const COPY: OpId = OpId(0);

/// A witnessed copy's interval is its witness span shifted by the offset, with the alignment
/// error as slack; an aligned anchor set carries its error through unchanged.
#[test]
fn a_witnessed_copy_is_placed_with_the_witness_offset() {
    let t = Timeline::new(vec![], vec![call(COPY, 0, 0)])
        .with_witness(vec![witnessed(COPY, 1_002_000, 1_052_000)], Some(SYNC));
    assert_eq!(
        t.interval(COPY),
        Some(Interval {
            op: COPY,
            start: 1_002_000,
            end: 1_052_000,
            slack_ns: WITNESS_ERROR,
        })
    );

    let aligned = WitnessSync::align(
        WitnessKind::Events,
        &[anchor(5_000, 6_000, (-4_000, -4_100))],
    );
    let t = Timeline::new(vec![], vec![]).with_witness(
        vec![WitnessSpan {
            op: COPY,
            start_ns: 10_000,
            end_ns: 20_000,
        }],
        aligned,
    );
    assert_eq!(
        t.interval(COPY),
        Some(Interval {
            op: COPY,
            start: 6_000,
            end: 16_000,
            slack_ns: 600,
        })
    );
}

/// A witness span without the alignment cannot be placed: no interval, not a guessed one.
#[test]
fn a_witnessed_copy_without_alignment_has_no_interval() {
    let t = Timeline::new(vec![], vec![call(COPY, 0, 0)])
        .with_witness(vec![witnessed(COPY, 1_002_000, 1_052_000)], None);
    assert_eq!(t.interval(COPY), None);
}

/// Stamps, where an op has them, take precedence over the witness: exact, with no slack. Witness
/// spans are kept sorted by op.
#[test]
fn stamps_win_over_the_witness() {
    let t = Timeline::new(vec![Span::single(OpId(1), 1_000, 2_000)], vec![]).with_witness(
        vec![
            witnessed(OpId(1), 5_000, 6_000),
            witnessed(COPY, 3_000, 4_000),
        ],
        Some(SYNC),
    );
    assert_eq!(
        t.interval(OpId(1)),
        Some(Interval {
            op: OpId(1),
            start: 1_000,
            end: 2_000,
            slack_ns: 0,
        })
    );
    assert_eq!(
        t.witnessed.iter().map(|w| w.op).collect::<Vec<_>>(),
        vec![COPY, OpId(1)]
    );
}

/// A copy may hold the host until it has nearly finished, so for the trial's host-to-GPU offset
/// it counts as issued when its call began, not when it returned.
#[test]
fn a_copy_counts_as_issued_when_its_call_began() {
    let kernel = OpId(1);
    let t = Timeline::new(
        vec![Span::single(kernel, 1_050_000, 1_060_000)],
        vec![call(COPY, 0, 40_000), call(kernel, 45_000, 45_000)],
    )
    .with_witness(vec![witnessed(COPY, 1_002_000, 1_042_000)], Some(SYNC));
    // The copy: 1 002 000 - 0; the kernel: 1 050 000 - 45 000. Counted from the return the
    // copy would give 962 000.
    assert_eq!(t.issue_offset_ns(), Some(1_002_000));
    assert_eq!(t.ready_ns(kernel), Some(1_047_000));
}

// ---------------------------------------------------------------------------------------------
// Serializes

const C1: OpId = OpId(0);
const C2: OpId = OpId(1);
const SERIALIZES: Check = Check::Serializes { a: C1, b: C2 };

/// Two witnessed copies: C1 issued at host 0 and run from GPU 1 002 000 to 1 052 000, C2 issued
/// at host `issued` and run for 50 µs from GPU `c2_start`, aligned within `error`.
fn two_copies(c2_start: i64, issued: u64, error: u64) -> Timeline {
    Timeline::new(vec![], vec![call(C1, 0, 0), call(C2, issued, issued)]).with_witness(
        vec![
            witnessed(C1, 1_002_000, 1_052_000),
            witnessed(C2, c2_start, c2_start + 50_000),
        ],
        Some(sync(error)),
    )
}

/// Serializes is Overlaps turned around: an overlap of a timer step plus both copies' alignment
/// errors refutes it; less, while C2 was ready (issued, plus the launch jitter, plus the errors)
/// before C1 ended, proves C2 waited; ready too late decides nothing.
#[rstest]
#[case::overlap_of_a_step_and_the_errors(1_051_568, 1_000, 200, 432, Truth::No)]
#[case::just_under_it(1_051_569, 1_000, 200, 431, Truth::Yes)]
#[case::a_step_without_errors(1_051_968, 1_000, 0, 32, Truth::No)]
#[case::under_a_step_without_errors(1_051_969, 1_000, 0, 31, Truth::Yes)]
#[case::ready_just_in_time(1_053_000, 47_599, 200, -1_000, Truth::Yes)]
#[case::ready_too_late_within_the_errors(1_053_000, 47_600, 200, -1_000, Truth::Unknown)]
#[case::ready_in_time_without_errors(1_053_000, 47_999, 0, -1_000, Truth::Yes)]
#[case::ready_too_late(1_053_000, 48_000, 0, -1_000, Truth::Unknown)]
fn serializes_boundaries(
    #[case] c2_start: i64,
    #[case] issued: u64,
    #[case] error: u64,
    #[case] value: i64,
    #[case] truth: Truth,
) {
    let m = SERIALIZES.measure(&two_copies(c2_start, issued, error), &TOL);
    assert_eq!((m.value_ns, m.truth), (value, truth), "{}", m.reason);
}

#[test]
fn serializes_names_the_alignment_error_and_a_fix() {
    let refuted = SERIALIZES.measure(&two_copies(1_051_568, 1_000, 200), &TOL);
    assert!(refuted.reason.contains("(32 ns)"), "{}", refuted.reason);
    assert!(refuted.reason.contains("±0.40 µs"), "{}", refuted.reason);
    let late = SERIALIZES.measure(&two_copies(1_053_000, 47_600, 200), &TOL);
    assert!(
        late.reason.contains("lengthen the spins"),
        "{}",
        late.reason
    );
}

const COPY_AFTER: OpId = OpId(1);

/// A stamped kernel and a witnessed copy: only the copy's error widens the step.
#[rstest]
#[case::a_step_and_one_error(1_051_768, Truth::No)]
#[case::just_under_it(1_051_769, Truth::Yes)]
fn a_kernel_serializes_with_a_copy(#[case] copy_start: i64, #[case] truth: Truth) {
    let kernel = OpId(0);
    let t = Timeline::new(
        vec![Span::single(kernel, 1_002_000, 1_052_000)],
        vec![call(kernel, 0, 0), call(COPY_AFTER, 1_000, 1_000)],
    )
    .with_witness(
        vec![witnessed(COPY_AFTER, copy_start, copy_start + 50_000)],
        Some(SYNC),
    );
    let m = Check::Serializes {
        a: kernel,
        b: COPY_AFTER,
    }
    .measure(&t, &TOL);
    assert_eq!(
        (m.value_ns, m.truth),
        (1_052_000 - copy_start, truth),
        "{}",
        m.reason
    );
}

/// Copies seen by a witness that could not be aligned have no spans: Unknown, not a verdict.
#[test]
fn serializes_without_alignment_is_unknown() {
    let t = Timeline::new(vec![], vec![call(C1, 0, 0), call(C2, 0, 0)]).with_witness(
        vec![
            witnessed(C1, 1_002_000, 1_052_000),
            witnessed(C2, 1_002_000, 1_052_000),
        ],
        None,
    );
    let m = SERIALIZES.measure(&t, &TOL);
    assert_eq!((m.truth, m.value_ns), (Truth::Unknown, 0));
    assert!(m.reason.contains("no witness"), "{}", m.reason);
}

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
