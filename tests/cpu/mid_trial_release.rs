//! Holds in mid-trial (`judge::relation::releases`): beside a neighbour that takes time slices the
//! GPU changes hands at every pause of our work, and an op issued after a host sync waits out the
//! neighbour's slice. At its boundaries, on hand-made timelines: a stretch with nothing of ours
//! pending is a release, not a stall; one op pending when it began keeps it a stall; amounts of
//! time and races across it are disturbed; ops held by one release but issued too far apart to
//! have met are not taken to overlap.

use crate::common;

use common::call;
use common::two_ops::{streams, tol, two_spins, SYNC};
use std::time::Duration;
use stream_litmus::disturbance::{marks, stall_threshold, stalls};
use stream_litmus::{
    judge_claim, Check, HostFnApi, HostSpan, OpId, Program, Span, StreamKind, SyncTarget, Timeline,
    Verdict,
};

/// `implicit.mem_free` by hand: K1 (issued at host 0) runs 7–57 µs, a sync of its stream returns
/// at 58 µs, K2 is issued from `k2_issue` µs and starts at 2 060 µs, after a neighbour's slice.
/// K3, on a second stream, is issued at host 3 µs and starts at `k3_start` µs.
fn after_a_sync(k2_issue: u64, k3_start: u64) -> (Program, Timeline, [OpId; 3]) {
    let mut p = Program::builder("mid-trial hold");
    let [s1, s2] = streams(&mut p);
    let k1 = p.spin(s1, "K1", Duration::from_micros(50));
    let k3 = p.spin(s2, "K3", Duration::from_micros(50));
    let sync = p.host_sync(SyncTarget::Stream(s1));
    let k2 = p.spin(s1, "K2", Duration::from_micros(50));
    let us = |x: u64| x * 1_000;
    let t = Timeline::new(
        vec![
            Span::single(k1, us(7), us(57)),
            Span::single(k3, us(k3_start), us(k3_start + 50)),
            Span::single(k2, us(2_060), us(2_110)),
        ],
        vec![
            call(k1, 0, us(1)),
            call(k3, us(2), us(3)),
            call(sync, us(3), us(58)),
            call(k2, us(k2_issue), us(k2_issue + 1)),
        ],
    )
    .with_host(vec![], Some(SYNC));
    (p.build(), t, [k1, k2, k3])
}

#[test]
fn a_stretch_with_nothing_of_ours_pending_is_a_release_not_a_stall() {
    let tol = tol();
    // K3 ran beside K1 (9–59 µs): when the GPU went quiet at 59 µs nothing of ours was pending.
    let (p, t, [k1, k2, _]) = after_a_sync(60, 9);
    assert!(
        stalls(&p, &t, &tol).is_empty(),
        "{:?}",
        stalls(&p, &t, &tol)
    );
    // The order the sync made is judged on the trial.
    let order = [Check::Precedes {
        before: k1,
        after: k2,
    }];
    let j = judge_claim(&p, &order, std::slice::from_ref(&t), None, &tol, 1);
    assert_eq!((j.counts.disturbed, j.verdict), (0, Verdict::Holds));
    // Without the sync the hold cannot be placed: K2 waited 2 ms while ready, a stall.
    let mut unsynced = t.clone();
    unsynced.clock = None;
    assert!(!stalls(&p, &unsynced, &tol).is_empty());
}

#[test]
fn an_op_pending_when_the_stretch_began_keeps_it_a_stall() {
    let tol = tol();
    // K3 was issued at 3 µs and started only at 2 200 µs: it was pending at 57 µs, when the
    // GPU went quiet, so the stretch may have kept it from K1. A stall, as before.
    let (p, t, [_, _, k3]) = after_a_sync(60, 2_200);
    let found = stalls(&p, &t, &tol);
    assert!(found.iter().any(|s| s.op == k3), "{found:?}");
    // The issuing call of K2 began at the stretch's start less the sync's error: it may have
    // reached the GPU before the GPU went quiet, and K2 had not ended then.
    let (p, t, [_, k2, _]) = after_a_sync(57, 9);
    let found = stalls(&p, &t, &tol);
    assert!(found.iter().any(|s| s.op == k2), "{found:?}");
}

#[test]
fn a_hold_of_the_threshold_is_no_release_and_one_just_over_it_is() {
    let tol = tol();
    let threshold = stall_threshold(&tol);
    // K2 issued at 60–61 µs: ready at 61 + 6 (latency) + 1 (sync error) = 68 µs. Started a
    // threshold after that, it was held exactly the threshold: no release, and no stall (its idle
    // window opens a launch jitter later).
    let (p, mut t, [k1, k2, _]) = after_a_sync(60, 9);
    let faster = [Check::Faster {
        slow: (k1, k2),
        fast: (k1, k1),
    }];
    let start = 68_000 + threshold;
    t.spans[2] = Span::single(k2, start, start + 50_000);
    assert!(stalls(&p, &t, &tol).is_empty());
    assert_eq!(
        marks(&p, &faster, std::slice::from_ref(&t), None, &tol).trials,
        vec![None]
    );
    // One nanosecond more: a release, and the makespan across it is disturbed.
    t.spans[2] = Span::single(k2, start + 1, start + 50_001);
    let why = marks(&p, &faster, &[t], None, &tol).trials[0].clone();
    assert!(why.is_some_and(|w| w.contains("held back in mid-trial for 24.00")));
}

#[test]
fn amounts_of_time_and_races_across_a_hold_are_disturbed() {
    let tol = tol();
    let (p, t, [k1, k2, k3]) = after_a_sync(60, 9);
    // A makespan over the stretch holds the neighbour's slice.
    let faster = [Check::Faster {
        slow: (k1, k2),
        fast: (k3, k3),
    }];
    let m = marks(&p, &faster, std::slice::from_ref(&t), None, &tol);
    let why = m.trials[0].clone().expect("disturbed");
    assert!(why.contains("held back in mid-trial"), "{why}");
    // An order across it is not.
    let order = [Check::Precedes {
        before: k1,
        after: k2,
    }];
    assert_eq!(marks(&p, &order, &[t], None, &tol).trials, vec![None]);
}

/// A (issued at host 0) and B (issued at host `b_issue` µs, after a blocking call) are held by a
/// neighbour until 3 000 µs and let go together: they overlap, whether or not they would have.
fn held_together(b_issue: u64) -> (Program, Timeline, [OpId; 2]) {
    two_spins(3_000_000, 3_001_000, b_issue * 1_000)
}

#[test]
fn ops_let_go_together_overlap_only_if_they_could_have_met() {
    let tol = tol();
    // Issued 2 µs apart, 50 µs each: they would have overlapped on a GPU of our own too.
    let (p, t, [a, b]) = held_together(2);
    let overlap = [Check::Overlaps { a, b }];
    let j = judge_claim(&p, &overlap, std::slice::from_ref(&t), None, &tol, 1);
    assert_eq!((j.counts.disturbed, j.verdict), (0, Verdict::Holds));
    // Issued 50 µs apart: A would have ended before B was issued; the overlap is the hold's.
    let (p, t, [a, b]) = held_together(50);
    let overlap = [Check::Overlaps { a, b }];
    let m = marks(&p, &overlap, std::slice::from_ref(&t), None, &tol);
    let why = m.trials[0].clone().expect("disturbed");
    assert!(why.contains("held A back until B was issued"), "{why}");
    let j = judge_claim(&p, &overlap, &[t], None, &tol, 1);
    assert_eq!(j.verdict, Verdict::Inconclusive);
}

#[test]
fn an_op_held_in_mid_trial_into_one_issued_after_the_hold_did_not_meet_it_alone() {
    // K0 (s1) 7–57 µs, a sync returning at 58 µs, A (s1, 100 µs) issued at 60 µs and held by a
    // neighbour until 400 µs, B (s2) issued at 411 µs after a long host call. Alone, A would
    // have ended near 168 µs, before B was issued; held, they ran together. B itself was not
    // held (issued after the release), so only the pair shows it.
    let mut p = Program::builder("partly held");
    let [s1, s2] = streams(&mut p);
    let k0 = p.spin(s1, "K0", Duration::from_micros(50));
    let sync = p.host_sync(SyncTarget::Stream(s1));
    let a = p.spin(s1, "A", Duration::from_micros(100));
    let b = p.spin(s2, "B", Duration::from_micros(50));
    let t = Timeline::new(
        vec![
            Span::single(k0, 7_000, 57_000),
            Span::single(a, 400_000, 500_000),
            Span::single(b, 419_000, 469_000),
        ],
        vec![
            call(k0, 0, 1_000),
            call(sync, 3_000, 58_000),
            call(a, 60_000, 61_000),
            call(b, 411_000, 412_000),
        ],
    )
    .with_host(vec![], Some(SYNC));
    let p = p.build();
    let tol = tol();
    assert!(stalls(&p, &t, &tol).is_empty(), "A's wait is a release");
    let overlap = [Check::Overlaps { a, b }];
    let why = marks(&p, &overlap, std::slice::from_ref(&t), None, &tol).trials[0].clone();
    assert!(why.is_some_and(|w| w.contains("held A back until B was issued")));
    // The order the sync made between K0 and A is not the hold's.
    let order = [Check::Precedes {
        before: k0,
        after: a,
    }];
    assert_eq!(marks(&p, &order, &[t], None, &tol).trials, vec![None]);
}

#[test]
fn a_host_function_of_ours_in_the_stretch_is_no_hold() {
    // On a GPU of our own: K1 (s1) 7–57 µs, a sync returning at 58 µs, then H (a 1 ms host
    // function on s1) and K2 behind it, both issued at 60 µs. H ran 70–1070 µs on the host and K2
    // started 5 µs after it. The GPU was quiet for a millisecond, but for our own H.
    let mut p = Program::builder("host function");
    let s1 = p.stream(StreamKind::NonBlocking);
    let k1 = p.spin(s1, "K1", Duration::from_micros(50));
    let sync = p.host_sync(SyncTarget::Stream(s1));
    let h = p.host_fn(s1, "H", Duration::from_millis(1), HostFnApi::LaunchHostFunc);
    let k2 = p.spin(s1, "K2", Duration::from_micros(50));
    let t = Timeline::new(
        vec![
            Span::single(k1, 7_000, 57_000),
            Span::single(k2, 1_075_000, 1_125_000),
        ],
        vec![
            call(k1, 0, 1_000),
            call(sync, 3_000, 58_000),
            call(h, 60_000, 61_000),
            call(k2, 61_000, 62_000),
        ],
    )
    .with_host(
        vec![HostSpan {
            op: h,
            begin_ns: 70_000,
            end_ns: 1_070_000,
        }],
        Some(SYNC),
    );
    let p = p.build();
    let tol = tol();
    let faster = [Check::Faster {
        slow: (k1, k2),
        fast: (k1, k1),
    }];
    assert_eq!(marks(&p, &faster, &[t], None, &tol).trials, vec![None]);
}
