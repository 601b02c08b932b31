//! Makespans a stretch could have turned (`judge/disturbance/makespan.rs`): a trial of a
//! `Faster` check counts only if its outcome survives the phase it went against at its best in
//! the claim's trials. At the boundaries, on hand-made timelines, and on the recorded run where it
//! moved a count.

use crate::common;

use common::{call, TOL};
use std::time::Duration;
use stream_litmus::disturbance::marks;
use stream_litmus::{judge_claim, Check, OpId, Program, Span, StreamKind, Timeline, Verdict};

/// A slow phase S (one kernel) and then a fast phase F (one kernel) behind it in the same stream,
/// so that F's start is a real wait and no stall: one timeline per `(slow, fast)` pair, in µs.
fn trials(pairs: &[(i64, i64)]) -> (Program, [Check; 1], Vec<Timeline>) {
    let mut p = Program::builder("makespan");
    let s = p.stream(StreamKind::NonBlocking);
    let slow = p.spin(s, "S", Duration::from_micros(1_880));
    let fast = p.spin(s, "F", Duration::from_micros(900));
    let us = |x: i64| x as u64 * 1_000;
    let timelines = pairs
        .iter()
        .map(|&(ds, df)| {
            Timeline::new(
                vec![
                    Span::single(slow, 10_000, us(10 + ds)),
                    Span::single(fast, us(12 + ds), us(12 + ds + df)),
                ],
                vec![call(slow, 0, 1_000), call(fast, 2_000, 3_000)],
            )
        })
        .collect();
    let check = Check::Faster {
        slow: (slow, slow),
        fast: (fast, fast),
    };
    (p.build(), [check], timelines)
}

#[test]
fn a_fast_phase_stretched_past_the_slow_one_is_disturbed() {
    // `scenario.pipeline.8` beside a catalogue loop on an H100: the chunked phase took 0.9–1.0 ms
    // in three trials and 1.94 ms in one, 61 µs more than the unsplit phase, with no stall.
    let (p, c, t) = trials(&[(1_880, 900), (1_880, 950), (1_880, 1_000), (1_880, 1_941)]);
    let m = marks(&p, &c, &t, None, &TOL);
    assert_eq!(m.trials[..3], [None, None, None]);
    let why = m.trials[3]
        .as_deref()
        .expect("the stretched trial is disturbed");
    assert!(
        why.contains("the fast phase took 1.941 ms here and 0.900 ms at best"),
        "{why}"
    );
    let j = judge_claim(&p, &c, &t, None, &TOL, 3);
    assert_eq!(j.verdict, Verdict::Holds, "{j:?}");
    assert_eq!((j.counts.positive, j.counts.disturbed), (3, 1));
}

#[test]
fn a_slow_phase_stretched_into_a_speed_up_is_disturbed() {
    // One stream's chunks against the unsplit stages (`scenario.pipeline.1`): chunking costs
    // 150 µs, and a trial whose unsplit phase took 300 µs more than at best "saves" time.
    let (p, c, t) = trials(&[(1_880, 2_030), (1_890, 2_040), (2_180, 2_030)]);
    let m = marks(&p, &c, &t, None, &TOL);
    assert_eq!(m.trials[..2], [None, None]);
    let why = m.trials[2]
        .as_deref()
        .expect("the stretched trial is disturbed");
    assert!(why.contains("the slow phase took 2.180 ms here"), "{why}");
    let j = judge_claim(&p, &c, &t, None, &TOL, 2);
    assert_eq!(j.verdict, Verdict::Violated, "{j:?}");
    assert_eq!((j.counts.negative, j.counts.disturbed), (2, 1));
}

#[test]
fn outcomes_that_survive_the_best_pace_count() {
    // Stretched sides that could not have turned the outcome: a fast phase 40 % slower than its
    // best, still far under the slow phase; a slow phase stretched the way the outcome went.
    let (p, c, t) = trials(&[(1_880, 900), (1_880, 1_260), (2_500, 900)]);
    assert_eq!(marks(&p, &c, &t, None, &TOL).trials, vec![None; 3]);
    // At the boundaries: the outcome stands only if, with the side it went against at its best,
    // the comparison still goes its way by more than the tolerance (a timer step here).
    let step = TOL.timer_step_ns as i64;
    // A No (the first trial: the fast phase 100 µs slower) against the second trial's fast
    // phase, `gap_ns` slower than the slow phase.
    let no_marked = |gap_ns: i64| {
        let (p, c, mut t) = trials(&[(1_000, 1_100), (1_000, 1_000)]);
        t[1] = two(1_000_000, 1_000_000 + gap_ns);
        marks(&p, &c, &t, None, &TOL).trials[0].clone()
    };
    assert_eq!(
        no_marked(step + 1),
        None,
        "still slower beyond the tolerance"
    );
    let why = no_marked(step).expect("only within the tolerance: it would have turned");
    assert!(why.contains("the fast phase took 1.100 ms here"), "{why}");
    assert!(no_marked(0).is_some(), "a tie turns it");
    // A Yes (the first trial: the slow phase 100 µs slower) against the second trial's slow
    // phase, `gap_ns` slower than the first trial's fast phase.
    let yes_marked = |gap_ns: i64| {
        let (p, c, mut t) = trials(&[(1_100, 1_000), (1_000, 900)]);
        t[1] = two(1_000_000 + gap_ns, 900_000);
        marks(&p, &c, &t, None, &TOL).trials[0].clone()
    };
    assert_eq!(
        yes_marked(step + 1),
        None,
        "still slower beyond the tolerance"
    );
    let why = yes_marked(step).expect("only within the tolerance: it would have turned");
    assert!(why.contains("the slow phase took 1.100 ms here"), "{why}");
    assert!(yes_marked(0).is_some(), "a tie turns it");
}

/// One timeline of [`trials`]' program with the slow phase taking `slow_ns` and the fast one
/// `fast_ns`, in ns.
fn two(slow_ns: i64, fast_ns: i64) -> Timeline {
    let (slow, fast) = (OpId(0), OpId(1));
    let end = 10_000 + slow_ns;
    Timeline::new(
        vec![
            Span::single(slow, 10_000, end as u64),
            Span::single(fast, (end + 2_000) as u64, (end + 2_000 + fast_ns) as u64),
        ],
        vec![call(slow, 0, 1_000), call(fast, 2_000, 3_000)],
    )
}

#[test]
fn the_idle_h200_runs_stretched_unsplit_phases_no_longer_count() {
    // `scenario.pipeline.1` on an idle H200: two trials whose unsplit phase ran slower than its
    // best "saved" time by chunking on one stream. The verdict stays Violated; the two trials are
    // set aside, and no other claim of any recorded idle run moves (tests/cpu/disturbance.rs).
    let (_, run) = &common::recorded("catalogue-h200")[0];
    let claim = run.rejudged();
    let c = (claim.claims.iter())
        .find(|c| c.claim.id == "scenario.pipeline.1")
        .expect("the claim is in the run");
    let j = c.judgement().expect("it ran");
    assert_eq!(j.verdict, Verdict::Violated);
    assert_eq!(
        (j.counts.positive, j.counts.negative, j.counts.disturbed),
        (0, 3, 2)
    );
    let summary = j.disturbance.as_deref().unwrap_or_default();
    assert!(
        summary.contains("a phase ran slower than its best in the claim's trials"),
        "{summary}"
    );
}
