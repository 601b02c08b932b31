//! Witnessed copies on the CPU: the witness clock aligned to `%globaltimer` through anchors,
//! witnessed copy spans placed with it (its error as slack), and Serializes, the check that
//! reads two of them. Hand-made timelines cover each boundary, one nanosecond either side. The
//! checks of phases, read-back buffers and blocking calls are in tests/cpu/data_checks.rs.

use crate::common;

use common::witness::{sync, witnessed, COPY, SYNC, WITNESS_ERROR};
use common::{call, TOL};
use rstest::rstest;
use stream_litmus::{
    Anchor, Check, Interval, OpId, Span, Timeline, Truth, WitnessKind, WitnessSpan, WitnessSync,
};

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
