//! Launch costs beside a neighbour (crates/core/src/judge/disturbance/launch.rs): a launch-cost trial that
//! may have shared the GPU counts only if its outcome survives every launch call that could have
//! waited for the GPU: a call longer than the stall threshold counted as nothing, and a wait of up
//! to the threshold at the end of each time slice the launches could have met.

use crate::common;

use stream_litmus::{
    judge_claim, Check, Neighbour, OpId, Program, Sharing, Span, StreamKind, Timeline,
};

use common::{call, TOL};

/// 24 µs with TOL (24 dependent gaps of 1 µs).
const THRESHOLD: u64 = 24_000;

/// The checks' ops for `n` launches one by one: D0..D(n-1), then G (the graph launch).
fn cheaper(n: usize) -> [Check; 1] {
    [Check::LaunchCheaper {
        graph: OpId(n),
        first: OpId(0),
        last: OpId(n - 1),
    }]
}

fn busy() -> Sharing {
    Sharing {
        after: vec![Neighbour {
            pid: 4242,
            name: "python3".into(),
            memory_mib: Some(1002),
            sm_percent: Some(99),
            memory_percent: Some(30),
        }],
        ..Sharing::default()
    }
}

/// Launches one by one whose calls took `direct` ns each, back to back from host 0, then G (the
/// graph launch's stand-in) taking `g`; each kernel runs 10 µs from 1 µs after its call returned
/// (or after the one before it), G's from `g_start` if given (a G that starts late, with nothing
/// of ours before it, is a stall in the stamps).
fn launches(direct: &[u64], g: u64, g_start: Option<u64>) -> (Program, Timeline) {
    let mut p = Program::builder("launch cost");
    let s = p.stream(StreamKind::NonBlocking);
    let mut took: Vec<u64> = direct.to_vec();
    took.push(g);
    let (mut spans, mut calls) = (Vec::new(), Vec::new());
    let (mut at, mut free) = (0u64, 0u64);
    for (i, &t) in took.iter().enumerate() {
        let label = if i == direct.len() {
            "G".to_string()
        } else {
            format!("D{i}")
        };
        let op = p.spin(s, label, std::time::Duration::from_micros(10));
        let mut start = (at + t + 1_000).max(free);
        if i == direct.len() {
            start = g_start.unwrap_or(start).max(free);
        }
        spans.push(Span::single(op, start, start + 10_000));
        calls.push(call(op, at, at + t));
        free = start + 10_000;
        at += t;
    }
    (p.build(), Timeline::new(spans, calls))
}

/// Disturbed and positive trials, and the evidence followed by the trial's own reason.
fn judged(t: &(Program, Timeline), sharing: Option<&Sharing>) -> (usize, usize, String) {
    let n = t.0.ops.len() - 1;
    let j = judge_claim(
        &t.0,
        &cheaper(n),
        std::slice::from_ref(&t.1),
        sharing,
        &TOL,
        1,
    );
    let why = j.trials[0].disturbed.clone().unwrap_or_default();
    (
        j.counts.disturbed,
        j.counts.positive,
        format!("{} | {why}", j.evidence(&t.0)),
    )
}

#[test]
fn a_cheaper_graph_launch_beside_a_neighbour_counts_when_its_margin_covers_a_tail_wait() {
    // 20 + 20 µs one by one against a 15 µs graph launch: 40 µs against 15 + 24 (one wait at a
    // slice's end, up to the threshold): a Yes that counts.
    let (d, pos, why) = judged(&launches(&[20_000, 20_000], 15_000, None), Some(&busy()));
    assert_eq!((d, pos), (0, 1), "{why}");
    assert!(why.contains("the GPU was shared with pid 4242"), "{why}");
    // 16 µs: 16 + 24 = 40, no longer less: set aside.
    let (d, pos, why) = judged(&launches(&[20_000, 20_000], 16_000, None), Some(&busy()));
    assert_eq!((d, pos), (1, 0), "{why}");
    assert!(
        why.contains("a launch call the comparison needed took longer than the stall threshold")
            && why.contains("which is not more than the graph launch and 1 wait of up to 24.00 µs"),
        "{why}"
    );
    // A call exactly at the threshold is its own cost: 24 + 20 = 44 against 19 + 24 = 43.
    let (d, pos, why) = judged(&launches(&[THRESHOLD, 20_000], 19_000, None), Some(&busy()));
    assert_eq!((d, pos), (0, 1), "{why}");
    // One nanosecond over, it counts as nothing: 20 against 43.
    let (d, _, _) = judged(
        &launches(&[THRESHOLD + 1, 20_000], 19_000, None),
        Some(&busy()),
    );
    assert_eq!(d, 1);
}

#[test]
fn a_yes_that_rests_on_a_launch_over_the_threshold_is_set_aside() {
    // A launch that took 2 ms (a neighbour's slice) against a 500 µs graph launch: a Yes, but
    // that launch may have cost nothing of its own, and 20 µs is all the rest took.
    let t = launches(&[2_000_000, 20_000], 500_000, None);
    let (d, pos, why) = judged(&t, Some(&busy()));
    assert_eq!((d, pos), (1, 0), "{why}");
    assert!(
        why.contains(
            "counting the 1 launches over 24.00 µs (the stall threshold) as nothing, \
                      the launches took 20.00 µs"
        ),
        "{why}"
    );
    // With nobody else on the GPU the same trial counts: a slow call is the host's (the pace
    // rules judge that), not a neighbour's.
    let (d, pos, why) = judged(&t, None);
    assert_eq!((d, pos), (0, 1), "{why}");
}

#[test]
fn the_waits_allowed_grow_with_the_span_of_the_launches() {
    // 100 launches of 12 µs: 1.2 ms, which could meet the end of two time slices (one per
    // millisecond, and one more): 48 µs allowed. A graph launch of 1151 µs still counts.
    let direct = [12_000; 100];
    let (d, pos, why) = judged(&launches(&direct, 1_151_000, None), Some(&busy()));
    assert_eq!((d, pos), (0, 1), "{why}");
    let (d, _, why) = judged(&launches(&direct, 1_152_000, None), Some(&busy()));
    assert_eq!(d, 1, "{why}");
    assert!(why.contains("2 waits of up to 24.00 µs"), "{why}");
}

#[test]
fn a_dearer_graph_launch_beside_a_neighbour_counts_only_if_it_could_not_have_waited() {
    // 5 + 5 µs one by one, a 30 µs graph launch (over the threshold): it may have waited.
    let t = launches(&[5_000, 5_000], 30_000, None);
    let (d, pos, why) = judged(&t, Some(&busy()));
    assert_eq!((d, pos), (1, 0), "{why}");
    assert!(
        why.contains("the graph launch of G took 30.00 µs against 10.00 µs")
            && why.contains("may have waited for the GPU"),
        "{why}"
    );
    // A graph launch at the threshold could not have waited a slice: the No counts.
    let t = launches(&[5_000, 5_000], THRESHOLD, None);
    assert_eq!(judged(&t, Some(&busy())).0, 0);
    // Alone, a dearer graph launch is a finding, whatever its length.
    let t = launches(&[5_000, 5_000], 30_000, None);
    let (d, pos, _) = judged(&t, None);
    assert_eq!((d, pos), (0, 0));
}

#[test]
fn stalled_kernels_show_a_neighbour_to_a_launch_cost_but_do_not_set_it_aside() {
    // G started 500 µs after its call returned with nothing of ours before it: a stall. A
    // launch-cost claim does not read the stamps, so the stall alone spoils nothing...
    let cheap = launches(&[20_000, 20_000, 20_000], 30_000, Some(600_000));
    let (d, pos, why) = judged(&cheap, None);
    assert_eq!((d, pos), (0, 1), "{why}");
    // ...but it is a neighbour, seen without NVML: a dearer graph launch may have waited.
    let dear = launches(&[5_000, 5_000], 30_000, Some(600_000));
    let (d, pos, why) = judged(&dear, None);
    assert_eq!((d, pos), (1, 0), "{why}");
    // A claim that also reads the stamps keeps the stall rule for them.
    let both = [
        cheaper(3)[0],
        Check::Precedes {
            before: OpId(2),
            after: OpId(3),
        },
    ];
    let j = judge_claim(
        &cheap.0,
        &both,
        std::slice::from_ref(&cheap.1),
        None,
        &TOL,
        1,
    );
    assert_eq!(j.counts.disturbed, 1);
    assert!(
        j.evidence(&cheap.0).contains("unexplained stalls"),
        "{}",
        j.evidence(&cheap.0)
    );
}
