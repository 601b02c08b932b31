//! Overlaps as evidence beside a neighbour (crates/core/src/judge/disturbance/overlap.rs), at their
//! boundaries on hand-made timelines: a neighbour delays and pauses our work but cannot make two
//! of our ops run together, so a disturbed trial still counts where its outcome rests on an
//! overlap of a kernel with a kernel or copy of ours; an overlap one timer step short, a reversal,
//! a wait, two copies, ops of two devices, a pair issued too far apart to have met alone, a trial
//! without a clock sync, or a claim whose other disturbed trials show the pair apart for no reason
//! the stamps give still count for nothing.

use crate::common;

use common::two_ops::{streams, tol, two_spins, EXACT_SYNC, SYNC};
use common::{call, TOL};
use std::time::Duration;
use stream_litmus::disturbance::marks;
use stream_litmus::{
    judge_claim, Check, CopyDir, HostFnApi, HostSpan, OpId, Pause, Place, Program, Span,
    StreamKind, Timeline, Verdict, WitnessSpan,
};

/// `connections.one.single_stream` beside a loop of matrix products: A (stream 1, issued at host
/// 0) and B (stream 2, issued at 2 µs), 50 µs each, held back by a neighbour until 2 400 µs and
/// let go; A from 2 400 µs, B from `b_start` µs after it (in ns). The order A→B reads the order in
/// which the GPU received them, which the hold lost: the trial is disturbed.
fn held(b_start_ns: u64) -> (Program, Timeline, [OpId; 2]) {
    two_spins(2_400_000, b_start_ns, 2_000)
}

fn verdict(p: &Program, checks: &[Check], t: &Timeline) -> (usize, Verdict) {
    let j = judge_claim(p, checks, std::slice::from_ref(t), None, &tol(), 1);
    (j.counts.disturbed, j.verdict)
}

#[test]
fn an_overlap_refutes_an_order_in_a_trial_held_back_as_a_whole() {
    // B started 45 µs before A ended: the GPU ran them together.
    let (p, t, [a, b]) = held(2_405_000);
    let order = [Check::Precedes {
        before: a,
        after: b,
    }];
    assert_eq!(verdict(&p, &order, &t), (0, Verdict::Violated));
    let j = judge_claim(&p, &order, std::slice::from_ref(&t), None, &tol(), 1);
    assert_eq!((j.counts.negative, j.counts.overlapped), (1, 1));
    assert!(
        j.evidence(&p)
            .contains("1 trials that a neighbour disturbed counted by their overlaps"),
        "{}",
        j.evidence(&p)
    );
}

#[test]
fn an_overlap_of_one_timer_step_counts_and_one_nanosecond_less_does_not() {
    let step = TOL.timer_step_ns;
    let (p, t, [a, b]) = held(2_450_000 - step);
    let order = [Check::Precedes {
        before: a,
        after: b,
    }];
    assert_eq!(verdict(&p, &order, &t), (0, Verdict::Violated));
    // One nanosecond short of a timer step: no overlap the stamps can show, and the order the
    // hold lost is still what the trial would say: disturbed.
    let (p, t, [a, b]) = held(2_450_000 - step + 1);
    let order = [Check::Precedes {
        before: a,
        after: b,
    }];
    assert_eq!(verdict(&p, &order, &t), (1, Verdict::Inconclusive));
}

#[test]
fn a_reversal_in_a_held_trial_is_no_overlap() {
    // B ran wholly before A: the hold let them go in an order of the GPU's own.
    let (p, t, [a, b]) = two_spins(2_450_000, 2_400_000, 2_000);
    let order = [Check::Precedes {
        before: a,
        after: b,
    }];
    assert_eq!(verdict(&p, &order, &t), (1, Verdict::Inconclusive));
}

#[test]
fn a_pair_issued_further_apart_than_the_first_lasts_alone_is_no_evidence() {
    // A (50 µs) issued at 0 ran from 10 µs, was switched out at 30 µs for 2 ms and ended at
    // 2 070 µs; B, issued at `b_issue` µs, ran from 2 040 µs, beside A's last 30 µs.
    let trial = |b_issue: u64| {
        let mut p = Program::builder("stretched");
        let [s1, s2] = streams(&mut p);
        let a = p.spin(s1, "A", Duration::from_micros(50));
        let b = p.spin(s2, "B", Duration::from_micros(50));
        let mut span_a = Span::single(a, 10_000, 2_070_000);
        span_a.blocks.edit(|b| {
            b[0].pause = Some(Pause {
                at_ns: 30_000,
                ns: 2_000_000,
            })
        });
        let t = Timeline::new(
            vec![span_a, Span::single(b, 2_040_000, 2_090_000)],
            vec![
                call(a, 0, 1_000),
                call(b, b_issue * 1_000, b_issue * 1_000 + 1_000),
            ],
        )
        .with_host(vec![], Some(SYNC));
        let order = [Check::Precedes {
            before: a,
            after: b,
        }];
        verdict(&p.build(), &order, &t)
    };
    // Issued 20 µs after A: alone B would have been ready while A ran, as here.
    assert_eq!(trial(20), (0, Verdict::Violated));
    // Issued 100 µs after A: alone A would have ended 50 µs before; only the switch made them
    // meet.
    assert_eq!(trial(100), (1, Verdict::Inconclusive));
}

#[test]
fn a_wait_in_a_held_trial_counts_for_nothing() {
    // B started after A ended: whether it waited for A or was received after it, the hold hid.
    let (p, t, [a, b]) = held(2_452_000);
    let order = [Check::Precedes {
        before: a,
        after: b,
    }];
    assert_eq!(verdict(&p, &order, &t), (1, Verdict::Inconclusive));
    // With an overlap refuting one check, the trial is a counterexample whatever the others say
    // (here one that no overlap decides).
    let both = [order[0], Check::Behind { low: a, high: b }];
    let (p, t, _) = held(2_405_000);
    assert_eq!(verdict(&p, &both, &t), (0, Verdict::Violated));
}

#[test]
fn a_trial_counts_as_positive_only_if_every_check_is_an_overlap() {
    // C (stream 3, issued at 4 µs) started at 5 000 µs although nothing of ours ran after
    // 2 455 µs: a stall, which disturbs the trial.
    let mut p = Program::builder("stalled");
    let [s1, s2, s3] = streams(&mut p);
    let a = p.spin(s1, "A", Duration::from_micros(50));
    let b = p.spin(s2, "B", Duration::from_micros(50));
    let c = p.spin(s3, "C", Duration::from_micros(50));
    let t = Timeline::new(
        vec![
            Span::single(a, 2_400_000, 2_450_000),
            Span::single(b, 2_405_000, 2_455_000),
            Span::single(c, 5_000_000, 5_050_000),
        ],
        vec![
            call(a, 0, 1_000),
            call(b, 2_000, 3_000),
            call(c, 4_000, 5_000),
        ],
    )
    .with_host(vec![], Some(SYNC));
    let p = p.build();
    let together = [Check::Overlaps { a, b }];
    let m = marks(&p, &together, std::slice::from_ref(&t), None, &tol());
    assert_eq!(m.trials, vec![None], "the overlap counts");
    assert_eq!(verdict(&p, &together, &t), (0, Verdict::Holds));
    // With an order that the stall may have made, the trial proves nothing either way.
    let with_order = [together[0], Check::Overlaps { a: b, b: c }];
    assert_eq!(verdict(&p, &with_order, &t), (1, Verdict::Inconclusive));
}

#[test]
fn two_copies_or_two_devices_are_no_evidence() {
    // Two H2D copies of ours that ran together in a held trial: a neighbour's copies time-slice
    // the copy engines, so whether ours interleave is not an order the GPU keeps.
    let mut p = Program::builder("copies");
    let [s1, s2] = streams(&mut p);
    let c1 = p.copy_new(s1, "C1", CopyDir::H2D, 1 << 20, Place::Pinned);
    let c2 = p.copy_new(s2, "C2", CopyDir::H2D, 1 << 20, Place::Pinned);
    let t = Timeline::new(vec![], vec![call(c1, 0, 1_000), call(c2, 2_000, 3_000)])
        .with_witness(
            vec![
                WitnessSpan {
                    op: c1,
                    start_ns: 2_400_000,
                    end_ns: 2_500_000,
                },
                WitnessSpan {
                    op: c2,
                    start_ns: 2_405_000,
                    end_ns: 2_505_000,
                },
            ],
            Some(EXACT_SYNC),
        )
        .with_host(vec![], Some(SYNC));
    let p = p.build();
    let order = [Check::Precedes {
        before: c1,
        after: c2,
    }];
    assert_eq!(verdict(&p, &order, &t), (1, Verdict::Inconclusive));

    // A host function's span comes from the host clock, which a slow host moves.
    let mut p = Program::builder("host function");
    let [s1, s2] = streams(&mut p);
    let h = p.host_fn(
        s1,
        "H",
        Duration::from_micros(50),
        HostFnApi::LaunchHostFunc,
    );
    let k = p.spin(s2, "K", Duration::from_micros(50));
    let t = Timeline::new(
        vec![Span::single(k, 2_405_000, 2_455_000)],
        vec![call(k, 0, 1_000), call(h, 2_000, 3_000)],
    )
    .with_host(
        vec![HostSpan {
            op: h,
            begin_ns: 2_400_000,
            end_ns: 2_450_000,
        }],
        Some(SYNC),
    );
    let p = p.build();
    let order = [Check::Precedes {
        before: k,
        after: h,
    }];
    assert_eq!(verdict(&p, &order, &t), (1, Verdict::Inconclusive));

    // Kernels of two devices run together on any machine.
    let mut p = Program::builder("two devices");
    let s1 = p.stream(StreamKind::NonBlocking);
    let s2 = p.stream_on(1, StreamKind::NonBlocking);
    let a = p.spin(s1, "A", Duration::from_micros(50));
    let b = p.spin(s2, "B", Duration::from_micros(50));
    let t = Timeline::new(
        vec![
            Span::single(a, 2_400_000, 2_450_000),
            Span::single(b, 2_405_000, 2_455_000),
        ],
        vec![call(a, 0, 1_000), call(b, 2_000, 3_000)],
    )
    .with_host(vec![], Some(SYNC));
    let p = p.build();
    let m = marks(
        &p,
        &[Check::Precedes {
            before: a,
            after: b,
        }],
        std::slice::from_ref(&t),
        None,
        &tol(),
    );
    assert!(m.trials[0].is_some(), "{:?}", m.trials);
}

#[test]
fn a_pair_let_go_together_that_alone_would_not_have_met_stays_disturbed() {
    // A issued at host 0, B at 100 µs (A lasts 50 µs), both held until 2 400 µs and let go
    // together: alone A would have ended before B was issued.
    let (p, t, [a, b]) = two_spins(2_400_000, 2_405_000, 100_000);
    let order = [Check::Precedes {
        before: a,
        after: b,
    }];
    assert_eq!(verdict(&p, &order, &t), (1, Verdict::Inconclusive));
    // The same pair as an overlap, which reads no arrival order: the hold's own mark.
    let together = [Check::Overlaps { a, b }];
    let m = marks(&p, &together, std::slice::from_ref(&t), None, &tol());
    let why = m.trials[0].clone().expect("disturbed");
    assert!(why.contains("held A back until B was issued"), "{why}");
}
