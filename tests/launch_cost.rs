//! Launch costs beside a neighbour (src/judge/disturbance/launch.rs): a launch-cost trial that
//! may have shared the GPU counts only if it survives every launch call longer than the stall
//! threshold, which is what a call that waited out a neighbour's time slice is.

mod common;

use stream_litmus::{
    judge_claim, Check, Neighbour, OpId, Program, Sharing, Span, StreamKind, Timeline,
};

use common::{call, TOL};

/// 24 µs with TOL (24 dependent gaps of 1 µs).
const THRESHOLD: u64 = 24_000;

const CHEAPER: [Check; 1] = [Check::LaunchCheaper {
    graph: OpId(2),
    first: OpId(0),
    last: OpId(1),
}];

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

/// D0 and D1 launched one by one, their calls taking `d0` and `d1` ns, then G (the graph launch's
/// stand-in) taking `g`; each kernel runs 10 µs from its call's end, G's from `g_start` (a G that
/// starts late beside nothing of ours pending is a stall in the stamps).
fn launches(d0: u64, d1: u64, g: u64, g_start: Option<u64>) -> (Program, Timeline) {
    let mut p = Program::builder("launch cost");
    let s = p.stream(StreamKind::NonBlocking);
    let ops: Vec<OpId> = ["D0", "D1", "G"]
        .iter()
        .map(|l| p.spin(s, *l, std::time::Duration::from_micros(10)))
        .collect();
    let ends = [d0, d0 + d1, d0 + d1 + g];
    let begins = [0, d0, d0 + d1];
    // Each kernel starts 1 µs after its call returned, unless the previous one still runs.
    let mut spans = Vec::new();
    let mut free = 0u64;
    for (i, &op) in ops.iter().enumerate() {
        let mut start = (ends[i] + 1_000).max(free);
        if i == 2 {
            start = g_start.unwrap_or(start).max(free);
        }
        spans.push(Span::single(op, start, start + 10_000));
        free = start + 10_000;
    }
    let calls = ops
        .iter()
        .enumerate()
        .map(|(i, &op)| call(op, begins[i], ends[i]))
        .collect();
    (p.build(), Timeline::new(spans, calls))
}

/// Disturbed and positive trials, and the evidence followed by the trial's own reason.
fn disturbed(t: &(Program, Timeline), sharing: Option<&Sharing>) -> (usize, usize, String) {
    let j = judge_claim(&t.0, &CHEAPER, std::slice::from_ref(&t.1), sharing, &TOL, 1);
    let why = j.trials[0].disturbed.clone().unwrap_or_default();
    (
        j.counts.disturbed,
        j.counts.positive,
        format!("{} | {why}", j.evidence(&t.0)),
    )
}

#[test]
fn a_cheaper_graph_launch_beside_a_neighbour_counts_when_no_launch_could_have_waited() {
    // 20 + 20 µs one by one against a 30 µs graph launch: a Yes, every call under the threshold.
    let (d, pos, why) = disturbed(&launches(20_000, 20_000, 30_000, None), Some(&busy()));
    assert_eq!((d, pos), (0, 1), "{why}");
    assert!(why.contains("the GPU was shared with pid 4242"), "{why}");
    // A call exactly at the threshold is no wait: 24 + 20 = 44 µs against 43 µs.
    let (d, pos, why) = disturbed(&launches(THRESHOLD, 20_000, 43_000, None), Some(&busy()));
    assert_eq!((d, pos), (0, 1), "{why}");
}

#[test]
fn a_yes_that_rests_on_a_launch_over_the_threshold_is_set_aside() {
    // D0 took 25 µs, one over the threshold: cut to 24 µs, 24 + 20 = 44 µs against a 44.5 µs
    // graph launch, which then would not have been cheaper.
    let t = launches(THRESHOLD + 1_000, 20_000, 44_500, None);
    let (d, pos, why) = disturbed(&t, Some(&busy()));
    assert_eq!((d, pos), (1, 0), "{why}");
    assert!(
        why.contains("a launch call the comparison needed took longer than the stall threshold")
            && why.contains("1 of those launches took over 24.00 µs")
            && why.contains("cut to it, they take 44.00 µs"),
        "{why}"
    );
    // Just below the cut sum it survives: 43.9 µs.
    let t = launches(THRESHOLD + 1_000, 20_000, 43_900, None);
    assert_eq!(disturbed(&t, Some(&busy())).0, 0);
    // A long launch of a slice (2 ms) against a dear graph launch: the Yes was the slice's.
    let t = launches(2_000_000, 20_000, 500_000, None);
    assert_eq!(disturbed(&t, Some(&busy())).0, 1);
    // With nobody else on the GPU the same trial counts: a slow call is the host's (the pace
    // rules judge that), not a neighbour's.
    let (d, pos, why) = disturbed(&t, None);
    assert_eq!((d, pos), (0, 1), "{why}");
}

#[test]
fn a_dearer_graph_launch_beside_a_neighbour_counts_only_if_it_could_not_have_waited() {
    // 5 + 5 µs one by one, a 30 µs graph launch (over the threshold): it may have waited.
    let t = launches(5_000, 5_000, 30_000, None);
    let (d, pos, why) = disturbed(&t, Some(&busy()));
    assert_eq!((d, pos), (1, 0), "{why}");
    assert!(
        why.contains("the graph launch of G took 30.00 µs against 10.00 µs")
            && why.contains("may have waited for the GPU"),
        "{why}"
    );
    // A graph launch at the threshold could not have waited a slice: the No counts.
    let t = launches(5_000, 5_000, THRESHOLD, None);
    assert_eq!(disturbed(&t, Some(&busy())).0, 0);
    // Alone, a dearer graph launch is a finding, whatever its length.
    let t = launches(5_000, 5_000, 30_000, None);
    let (d, pos, _) = disturbed(&t, None);
    assert_eq!((d, pos), (0, 0));
}

#[test]
fn stalled_kernels_show_a_neighbour_to_a_launch_cost_but_do_not_set_it_aside() {
    // G started 500 µs after its call returned with nothing of ours before it: a stall. A
    // launch-cost claim does not read the stamps, so the stall alone spoils nothing...
    let cheap = launches(20_000, 20_000, 30_000, Some(600_000));
    let (d, pos, why) = disturbed(&cheap, None);
    assert_eq!((d, pos), (0, 1), "{why}");
    // ...but it is a neighbour, seen without NVML: a dearer graph launch may have waited.
    let dear = launches(5_000, 5_000, 30_000, Some(600_000));
    let (d, pos, why) = disturbed(&dear, None);
    assert_eq!((d, pos), (1, 0), "{why}");
    // A claim that also reads the stamps keeps the stall rule for them.
    let both = [
        CHEAPER[0],
        Check::Precedes {
            before: OpId(1),
            after: OpId(2),
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
