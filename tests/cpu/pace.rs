//! The pace rules (crates/core/src/judge/disturbance/copy_pace.rs) at their boundaries, on hand-made timelines: a
//! copy is judged by how fast it moved its bytes against the rate its kind reaches alone, and by
//! the claim's own other trials, not by whether a neighbour was on the GPU; and the old-file rule
//! sets aside trials without a clock sync in a run that shows a neighbour.

use crate::common;

use common::two_ops::{kernel_and_copy, EXACT_SYNC};
use common::{call, TOL};
use stream_litmus::disturbance::marks;
use stream_litmus::{
    Check, ClockSync, CopyDir, CopyRate, CopyRates, Neighbour, OpId, Place, Program, Sharing, Span,
    StreamKind, Timeline, Tolerances, WitnessSpan,
};

const BYTES: u64 = 32 << 20;
/// 50 GB/s and 2 µs of fixed cost: 32 MiB in 673.09 µs.
const RATE: CopyRate = CopyRate {
    overhead_ns: 2_000,
    bytes_per_us: 50_000,
};

fn rates(alone: bool) -> Tolerances {
    Tolerances {
        copy_rates: Some(CopyRates {
            h2d_pinned: Some(RATE),
            h2d_pageable: Some(RATE),
            alone,
            ..CopyRates::default()
        }),
        ..TOL
    }
}

/// K (a kernel, 0–500 µs) beside copies on other streams, each issued at 10 µs and started at
/// once, taking the given times; K2 follows the first copy in its stream, 1 µs after it. Checked:
/// K2 waited for the first copy, an order a copy's speed moves (an overlap would count beside any
/// neighbour: crates/core/src/judge/disturbance/overlap.rs).
fn copies(dir: CopyDir, place: Place, took: &[u64]) -> (Program, Vec<Check>, Timeline) {
    let mut p = Program::builder("pace");
    let s1 = p.stream(StreamKind::NonBlocking);
    let k = p.spin(s1, "K", std::time::Duration::from_micros(500));
    let mut calls = vec![call(k, 0, 0)];
    let mut spans = Vec::new();
    let mut first = None;
    for (i, &ns) in took.iter().enumerate() {
        let s = p.stream(StreamKind::NonBlocking);
        let c = p.copy_new(s, format!("C{i}"), dir, BYTES, place);
        first.get_or_insert((c, s, ns));
        calls.push(call(c, 10_000, 10_000));
        spans.push(WitnessSpan {
            op: c,
            start_ns: 10_000,
            end_ns: 10_000 + ns as i64,
        });
    }
    let (c, s, ns) = first.expect("a copy");
    let k2 = p.spin(s, "K2", std::time::Duration::from_micros(10));
    calls.push(call(k2, 10_000, 10_000));
    let k2_start = 11_000 + ns;
    let checks = vec![Check::Precedes {
        before: c,
        after: k2,
    }];
    let t = Timeline::new(
        vec![
            Span::single(k, 0, 500_000),
            Span::single(k2, k2_start, k2_start + 10_000),
        ],
        calls,
    )
    .with_witness(spans, Some(EXACT_SYNC));
    (p.build(), checks, t)
}

/// The time a copy of [`BYTES`] takes at `share` of [`RATE`].
fn at(share: f64) -> u64 {
    (RATE.expected_ns(BYTES) as f64 / share) as u64
}

fn busy() -> Sharing {
    Sharing {
        after: vec![Neighbour {
            pid: 42,
            name: "python3".into(),
            memory_mib: Some(1000),
            sm_percent: Some(99),
            memory_percent: Some(30),
        }],
        ..Sharing::default()
    }
}

fn mark(
    p: &Program,
    checks: &[Check],
    t: &Timeline,
    s: Option<&Sharing>,
    tol: &Tolerances,
) -> Option<String> {
    marks(p, checks, std::slice::from_ref(t), s, tol).trials[0].clone()
}

#[test]
fn a_copy_at_its_pace_is_clean_beside_a_busy_neighbour() {
    let (p, c, t) = copies(CopyDir::H2D, Place::Pinned, &[at(0.95)]);
    assert_eq!(mark(&p, &c, &t, Some(&busy()), &rates(true)), None);
    // Just above the page-locked floor (40 %) is still its pace: alone on an H100, a 16 MiB copy
    // ran at 0.44 of the fastest in 3 of 5 trials.
    let (p, c, t) = copies(CopyDir::H2D, Place::Pinned, &[at(0.45)]);
    assert_eq!(mark(&p, &c, &t, Some(&busy()), &rates(true)), None);
}

#[test]
fn a_copy_below_its_pace_is_disturbed_with_or_without_a_neighbour_seen() {
    let (p, c, t) = copies(CopyDir::H2D, Place::Pinned, &[at(0.35)]);
    for sharing in [None, Some(busy())] {
        let why = mark(&p, &c, &t, sharing.as_ref(), &rates(true)).expect("disturbed");
        assert!(why.contains("C0 took 1923.11 µs"), "{why}");
        assert!(why.contains("35 % of their pace"), "{why}");
        assert!(
            why.contains("the copy engines or the bus were shared"),
            "{why}"
        );
    }
}

#[test]
fn pageable_copies_have_a_lower_floor() {
    let (p, c, t) = copies(CopyDir::H2D, Place::Pageable, &[at(0.3)]);
    assert_eq!(
        mark(&p, &c, &t, None, &rates(true)),
        None,
        "the CPU's staging"
    );
    let (p, c, t) = copies(CopyDir::H2D, Place::Pageable, &[at(0.2)]);
    assert!(mark(&p, &c, &t, None, &rates(true)).is_some());
}

#[test]
fn a_copy_slowed_by_a_copy_of_our_own_is_clean() {
    // Two copies side by side for their whole run, each at 35 %: what our own program did.
    let (p, c, t) = copies(CopyDir::H2D, Place::Pinned, &[at(0.35), at(0.35)]);
    assert_eq!(mark(&p, &c, &t, None, &rates(true)), None);
}

#[test]
fn a_small_excess_is_no_disturbance() {
    // A 4 KiB copy at a tenth of its pace: 20 µs late, under the stall threshold (24 µs here).
    let (p, t) = kernel_and_copy(4096, 10_000, RATE.expected_ns(4096) + 20_000, false);
    let (k, c) = (OpId(0), OpId(1));
    let checks = [Check::Overlaps { a: k, b: c }];
    assert_eq!(mark(&p, &checks, &t, None, &rates(true)), None);
}

#[test]
fn rates_never_measured_alone_leave_a_busy_neighbour_in_charge() {
    let (p, c, t) = copies(CopyDir::H2D, Place::Pinned, &[at(0.95)]);
    let why = mark(&p, &c, &t, Some(&busy()), &rates(false)).expect("disturbed as before");
    assert!(why.contains("never measured with the GPU alone"), "{why}");
    assert_eq!(mark(&p, &c, &t, None, &rates(false)), None, "nobody seen");
    // Files recorded before the rates: the same.
    assert!(mark(&p, &c, &t, Some(&busy()), &TOL).is_some());
}

#[test]
fn a_stage_far_slower_than_the_claims_other_trials_is_disturbed() {
    // Device-to-device copies have no calibrated rate: the claim's own trials are the reference.
    let trial = |ns: u64| copies(CopyDir::D2D, Place::Device, &[ns]);
    let (p, c, _) = trial(400_000);
    let timelines: Vec<Timeline> = [400_000u64, 420_000, 990_000, 1_210_000]
        .iter()
        .map(|&ns| trial(ns).2)
        .collect();
    let m = marks(&p, &c, &timelines, None, &rates(true));
    assert_eq!(m.trials[0], None);
    assert_eq!(m.trials[1], None);
    assert_eq!(m.trials[2], None, "2.48× its fastest: within 2.5×");
    let why = m.trials[3].clone().expect("3.03× its fastest");
    assert!(
        why.contains("3.0× its fastest run in this claim's trials (400.00 µs)"),
        "{why}"
    );
}

#[test]
fn trials_without_a_clock_sync_are_set_aside_in_a_run_that_shows_a_neighbour() {
    let (p, c, t) = copies(CopyDir::D2D, Place::Device, &[400_000]);
    let mut synced = t.clone();
    synced.clock = Some(ClockSync {
        shared: false,
        offset_ns: 0,
        error_ns: 500,
    });
    let both = [t.clone(), synced];
    let mut m = marks(&p, &c, &both, None, &TOL);
    assert_eq!(m.trials, vec![None, None]);
    m.mark_unsynced(&c, &both, "3 claims of this run show a neighbour");
    let why = m.trials[0].clone().expect("no clock sync");
    assert!(
        why.contains("cannot show a neighbour holding it back as a whole"),
        "{why}"
    );
    assert!(
        why.ends_with("3 claims of this run show a neighbour"),
        "{why}"
    );
    assert_eq!(m.trials[1], None, "a clock sync shows a trial held back");
    // A check that reads no ready time is not flipped by a shift.
    let returns = [Check::ReturnsBefore {
        call: c[0].ops()[0],
        span: c[0].ops()[0],
    }];
    let mut m = marks(&p, &returns, std::slice::from_ref(&t), None, &TOL);
    m.mark_unsynced(&returns, std::slice::from_ref(&t), "elsewhere");
    assert_eq!(m.trials, vec![None]);
}
