//! What the stamps cannot show (crates/core/src/judge/disturbance): amounts of time and copies beside a busy
//! neighbour, which slows them without stopping them, and a host whose thread was preempted or
//! whose CPU ran slow while it issued a trial. Split from `disturbance.rs`, which holds the stall
//! rule.

use crate::common;

use stream_litmus::{judge_claim, Check, Neighbour, OpId, Outcome, Sharing, Verdict};

use common::two_ops::{kernel_then_copy, pair};
use common::TOL;

#[test]
fn a_speed_up_beside_a_busy_neighbour_is_disturbed() {
    let (p, calm) = pair(52_000, None);
    let faster = [Check::Faster {
        slow: (OpId(0), OpId(1)),
        fast: (OpId(0), OpId(0)),
    }];
    let busy = Sharing {
        after: vec![Neighbour {
            pid: 4242,
            name: "python3".into(),
            memory_mib: Some(714),
            sm_percent: Some(87),
            memory_percent: Some(0),
        }],
        ..Sharing::default()
    };
    let j = judge_claim(
        &p,
        &faster,
        std::slice::from_ref(&calm),
        Some(&busy),
        &TOL,
        1,
    );
    assert_eq!(j.counts.disturbed, 1);
    let why = j.evidence(&p);
    assert!(
        why.contains("the GPU was shared with pid 4242 python3 (87 % SM, 714 MiB)"),
        "{why}"
    );
    // An idle neighbour, or none, leaves it alone.
    let mut idle = busy.clone();
    idle.after[0].sm_percent = Some(0);
    let j = judge_claim(
        &p,
        &faster,
        std::slice::from_ref(&calm),
        Some(&idle),
        &TOL,
        1,
    );
    assert_eq!(j.counts.disturbed, 0);
    let j = judge_claim(&p, &faster, std::slice::from_ref(&calm), None, &TOL, 1);
    assert_eq!(j.counts.disturbed, 0);
    // Host time in launch calls is judged by the calls' own lengths instead: tests/cpu/launch_cost.rs.
    // A neighbour at 0 % SM that moves device memory (its copies), or whose share NVML does not
    // give, is busy too.
    for memory in [Some(12), None] {
        let mut copying = idle.clone();
        copying.after[0].memory_percent = memory;
        let j = judge_claim(
            &p,
            &faster,
            std::slice::from_ref(&calm),
            Some(&copying),
            &TOL,
            1,
        );
        assert_eq!(j.counts.disturbed, 1, "memory {memory:?}");
    }
}

#[test]
fn a_copy_beside_a_busy_neighbour_decides_nothing() {
    let busy = Sharing {
        after: vec![Neighbour {
            pid: 4242,
            name: "stream-litmus".into(),
            memory_mib: Some(630),
            sm_percent: Some(0),
            memory_percent: Some(7),
        }],
        ..Sharing::default()
    };
    // C (a copy) behind K in K's stream: a neighbour's copies slow ours without any stall, and
    // the copy rates were never measured alone to tell.
    let (p, t) = kernel_then_copy(502_000, true);
    let order = [Check::Precedes {
        before: OpId(0),
        after: OpId(1),
    }];
    let j = judge_claim(&p, &order, std::slice::from_ref(&t), Some(&busy), &TOL, 1);
    assert_eq!(j.counts.disturbed, 1);
    assert!(j.evidence(&p).contains("7 % memory"), "{}", j.evidence(&p));
    let j = judge_claim(&p, &order, std::slice::from_ref(&t), None, &TOL, 1);
    assert_eq!((j.counts.disturbed, j.verdict), (0, Verdict::Holds));
    // C on a stream of its own ran beside K: no neighbour makes two of our ops run together, so
    // in a clock-synced trial the overlap counts beside the same neighbour
    // (crates/core/src/judge/disturbance/overlap.rs).
    let (p, mut t) = kernel_then_copy(20_000, false);
    t.clock = Some(stream_litmus::ClockSync {
        shared: false,
        offset_ns: 0,
        error_ns: 1_000,
    });
    let overlaps = [Check::Overlaps {
        a: OpId(0),
        b: OpId(1),
    }];
    let j = judge_claim(
        &p,
        &overlaps,
        std::slice::from_ref(&t),
        Some(&busy),
        &TOL,
        1,
    );
    assert_eq!((j.counts.disturbed, j.verdict), (0, Verdict::Holds));
    assert!(
        j.evidence(&p).contains("counted by their overlaps alone"),
        "{}",
        j.evidence(&p)
    );
    // Two kernels are not slowed without a stall (time slices pause them): counted.
    let (p, t) = pair(20_000, None);
    let j = judge_claim(&p, &overlaps, &[t], Some(&busy), &TOL, 1);
    assert_eq!(j.counts.disturbed, 0);
}

#[test]
fn a_preempted_issuing_thread_sets_aside_host_time_checks_only() {
    let (p, calm) = pair(52_000, None);
    let preempted = calm.clone().with_preempted(2);
    let returns = [Check::ReturnsBefore {
        call: OpId(1),
        span: OpId(0),
    }];
    let j = judge_claim(
        &p,
        &returns,
        std::slice::from_ref(&preempted),
        None,
        &TOL,
        1,
    );
    assert_eq!(j.counts.disturbed, 1);
    let why = j.evidence(&p);
    assert!(
        why.contains("the issuing thread was preempted in 1 trials"),
        "{why}"
    );
    // Stamps alone do not move when the host thread is switched out (issue times only make ops
    // ready later, which every relation already allows for).
    let overlaps = [Check::Overlaps {
        a: OpId(0),
        b: OpId(1),
    }];
    let j = judge_claim(&p, &overlaps, &[preempted], None, &TOL, 1);
    assert_eq!(j.counts.disturbed, 0);
    // Not preempted: counted.
    let j = judge_claim(&p, &returns, &[calm], None, &TOL, 1);
    assert_eq!(j.counts.disturbed, 0);
}

/// `slow-host-h100` holds `graph.launch_cost.100` and `.1000` as recorded on a calm H100 VM with
/// the pace thread (docs/measurements.md, "A slow host"): the first 6 trials of a 1,000-trial run of each, the
/// trials the slow-host rules set aside, and the one trial of the 2,000 in which the graph launch
/// came out dearer (3.60 ms against 3.34 ms of launches) with nothing seen: the pace thread lost
/// only its usual tick time, the issuing thread's units ran at pace, nobody was preempted.
#[test]
fn a_slow_host_sets_trials_aside_and_a_trial_with_nothing_seen_still_counts() {
    for (_, run) in common::recorded("slow-host-") {
        for c in &run.claims {
            let Outcome::Ran { trials, .. } = &c.outcome else {
                panic!("{} did not run", c.claim.id)
            };
            let tol = trials.calibration.tolerances();
            let (program, checks) = (&c.claim.program, &c.claim.checks);
            let j = judge_claim(
                program,
                checks,
                &trials.timelines,
                None,
                &tol,
                trials.wanted,
            );
            let slowed: Vec<usize> = (0..j.trials.len())
                .filter(|&i| {
                    j.trials[i]
                        .disturbed
                        .as_deref()
                        .is_some_and(|why| why.contains("ran slow"))
                })
                .collect();
            assert!(!slowed.is_empty(), "{}: nothing set aside", c.claim.id);
            for &i in &slowed {
                // What the pace saw is the only reason: without it the trial counts.
                let mut bare = trials.timelines[i].clone();
                bare.host_slow.clear();
                bare.issuer_pace = None;
                let alone = judge_claim(program, checks, &[bare], None, &tol, 1);
                assert_eq!(alone.counts.disturbed, 0, "{}: trial {i}", c.claim.id);
            }
            let expected = match c.claim.id.as_str() {
                "graph.launch_cost.100" => Verdict::Holds,
                // The rules set aside only what they have evidence against.
                "graph.launch_cost.1000" => Verdict::Violated,
                other => panic!("unexpected claim {other}"),
            };
            assert_eq!(j.verdict, expected, "{}: {:?}", c.claim.id, j.counts);
        }
    }
}
