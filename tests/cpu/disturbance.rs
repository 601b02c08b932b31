//! The stall rule (crates/core/src/judge/disturbance) on the CPU: on runs recorded on an idle GPU it disturbs
//! nothing; on runs recorded beside a neighbour it leaves no wrong decided verdict; and at its
//! boundaries, on hand-made timelines, a real wait is never a stall and an unexplained idle
//! stretch or a paused block is.
//!
//! The contended fixtures were recorded on an H100 beside neighbours; some were re-judged with
//! `judge --write` when a rule moved their verdicts, others keep what they recorded (`judge`
//! prints where today's rules moved a verdict). The tests judge them all by today's rules:
//! - `contended-torch-h100` (beside a PyTorch process running bf16 matrix products and 64 MiB
//!   copies) and `contended-cli2-h100` (beside two other `stream-litmus` runs) were recorded by
//!   the binary before the rule existed (results schema 1, no pauses, no clock syncs, no NVML):
//!   as recorded they had 12 and 25 unexpected verdicts;
//! - `contended-one-h100` (beside a catalogue loop) and `contended-two-h100` (beside a catalogue
//!   loop and the PyTorch job) were recorded by binaries that clock-sync every trial and look
//!   with NVML; as recorded, each had two and one wrong decided verdicts (prefetch claims that
//!   lost their races and a copy that missed its kernel, beside a neighbour that NVML's sparse
//!   samples showed at 0 %), which the copy rule and the carried-forward utilisation remove.
//!
//! - `contended-loop-h100`, `contended-matmul-h100` and `contended-copies-h100` (issue 25) were
//!   recorded beside a catalogue loop, a PyTorch loop of bf16 8192² matrix products and a loop of
//!   256 MiB page-locked copies both ways (`tests/tools/neighbour.py`), by the binary that
//!   measures copy rates and lets held trials go at their release; the two `scenario.sleep`
//!   claims (three quarters of the stamps) were left out to keep them small. As recorded: 60,
//!   37 and 48 of 73 decided as expected, none wrongly.
//!
//! - `contended-loop-overlaps-h100`, `contended-matmul-overlaps-h100` and
//!   `contended-copies-overlaps-h100` (issue 25, a later session) beside the same three
//!   neighbours, by the final binary of that session, which also lets holds in mid-trial go as
//!   releases, scouts with one trial beside a busy neighbour, judges launch costs by their calls'
//!   lengths, waits for the GPU once before each trial, counts disturbed trials by their overlaps
//!   and looks up to three times at the end (`tests/tools/shared-gpu-runs.sh`, the first run
//!   beside each, without the `scenario.sleep` claims): 69, 48 and 53 of 73 decided as expected,
//!   none wrongly. (They replace that issue's `-onewait-` recordings, 66, 46 and 50 of 73 as
//!   recorded, to keep the repository small; the `-scout-` ones went the same way before.)
//! - `contended-gap-h100`, beside a catalogue loop, by a binary of the same session before two
//!   fixes: its calibration measured a dependent gap of 16.13 µs (a stall threshold of 387 µs),
//!   and the stall horizon of a makespan stopped at the end of its phase's last op. As recorded it
//!   decided `scenario.pipeline.8` and `scenario.prefetch.slow_kernels` "Violated"; re-judged
//!   with the capped threshold and whole phases, neither (its stored judgements were rewritten).
//!
//! `catalogue-clock-h100` is the binary that clock-syncs every trial on the idle GPU, where the
//! held-back rule must see nothing.
//!
//! Slimmed (issue 53: the fixtures from 47 to 14 MB): every results file but `core-h100.json`
//! (kept in schema 1, for the reading test) was written again in schema 3 (block stamps in
//! columns) with its stored judgements as recorded; `catalogue-clock-h100` and
//! `catalogue-pauses-h100` left out their two `scenario.sleep` claims (the idle catalogues
//! `catalogue-h100` and `-h200` keep them, for the scenario tables); the seven contended
//! recordings before issue 25's final binary (`-cli2-`, `-torch-`, `-one-`, `-two-`, `-loop-`,
//! `-matmul-`, `-copies-`) left out the `scenario.sleep` and `scenario.pipeline` claims and
//! `graph.launch_cost.1000` (68 claims each), which the other four contended recordings keep
//! beside their neighbours. No other claim's stamps or stored judgement changed.

use crate::common;

use stream_litmus::disturbance::{
    marks, stall_threshold, stalls, stalls_longer_than, StallKind, PAUSE_FLOOR_NS,
};
use stream_litmus::{
    judge_claim, BlockStamp, Check, ClockSync, OpId, Outcome, Pause, Program, Span, StreamKind,
    Timeline, Tolerances, Verdict,
};

use common::two_ops::{kernel_then_copy, pair};
use common::{call, TOL};

/// Every recorded trial of a run, with its program and tolerances.
fn trials(
    run: &stream_litmus::RunRecord,
) -> impl Iterator<Item = (&str, &Program, &Timeline, stream_litmus::Tolerances)> {
    run.claims.iter().flat_map(|c| {
        let (tl, tol) = match &c.outcome {
            Outcome::Ran { trials, .. } => (&trials.timelines[..], trials.calibration.tolerances()),
            Outcome::Failed { .. } => (&[][..], TOL),
        };
        tl.iter()
            .map(move |t| (c.claim.id.as_str(), &c.claim.program, t, tol))
    })
}

#[test]
fn idle_runs_have_no_stall_and_stay_far_below_the_threshold() {
    for (file, run) in common::recorded_runs() {
        let name = file.file_name().unwrap().to_string_lossy();
        if name.starts_with("contended-") {
            continue;
        }
        let mut longest = 0u64;
        for (id, program, t, tol) in trials(run) {
            assert!(
                stalls(program, t, &tol).is_empty(),
                "{name}: {id} disturbed on an idle GPU: {:?}",
                stalls(program, t, &tol)
            );
            for s in stalls_longer_than(program, t, &tol, 0) {
                // The thresholds are twice the longest idle stretch seen and four times the
                // longest pause (docs/measurements.md, "Disturbance on a shared GPU").
                let (limit, kind) = match s.kind {
                    StallKind::Idle => (stall_threshold(&tol) / 2, "idle"),
                    StallKind::Paused => (PAUSE_FLOOR_NS / 4, "pause"),
                };
                longest = longest.max(s.len_ns);
                assert!(
                    s.len_ns <= limit,
                    "{name}: {id}: {kind} of {} ns is over {limit} ns",
                    s.len_ns
                );
            }
        }
        println!("{name}: longest idle stretch {longest} ns");
    }
}

#[test]
fn contended_runs_rejudged_have_no_wrong_decided_verdict() {
    let runs = common::recorded("contended-");
    assert_eq!(runs.len(), 11, "eleven contended recordings");
    for (file, run) in runs {
        let (mut disturbed, mut inconclusive) = (0, 0);
        for rec in &run.rejudged().claims {
            let Some(j) = rec.judgement() else { continue };
            disturbed += j.counts.disturbed;
            match j.verdict {
                Verdict::Inconclusive => inconclusive += 1,
                v => assert!(
                    v.matches(rec.claim.expect),
                    "{}: {} decided {v} wrongly beside a neighbour: {}",
                    file.display(),
                    rec.claim.id,
                    j.evidence(&rec.claim.program)
                ),
            }
            if j.counts.disturbed > 0 {
                // Stalls in the stamps, or (for amounts of time) a busy neighbour, named.
                let why = j.disturbance.as_deref().unwrap_or_default();
                assert!(
                    why.contains("unexplained stalls of")
                        || why.contains("held back by something else for")
                        || why.contains("the GPU was shared with")
                        || why.contains("copies ran below their pace")
                        || why.contains("a launch call the comparison needed took longer")
                        || why.contains("without a clock sync in a run that shows a neighbour"),
                    "{why}"
                );
            }
        }
        assert!(disturbed > 20, "{}: {disturbed} disturbed", file.display());
        println!(
            "{}: {disturbed} disturbed trials, {inconclusive} Inconclusive",
            file.display()
        );
    }
}

#[test]
fn a_start_right_after_the_blocker_is_no_stall() {
    let (p, t) = pair(52_000, None);
    assert!(stalls(&p, &t, &TOL).is_empty());
}

#[test]
fn an_idle_stretch_before_a_ready_op_is_a_stall_from_the_threshold_on() {
    // TOL's dependent gap is 1 µs: the threshold is 24 gaps, above the 20 µs floor.
    let threshold = stall_threshold(&TOL);
    assert_eq!(threshold, 24_000);
    let (p, t) = pair(50_000 + threshold, None);
    assert!(stalls(&p, &t, &TOL).is_empty(), "exactly the threshold");
    let (p, t) = pair(50_000 + threshold + 1, None);
    let found = stalls(&p, &t, &TOL);
    assert_eq!(found.len(), 1);
    assert_eq!(
        (found[0].op, found[0].kind, found[0].len_ns),
        (OpId(1), StallKind::Idle, threshold + 1)
    );
    let (p, t) = pair(350_000, None);
    assert_eq!(stalls(&p, &t, &TOL)[0].len_ns, 300_000);
    // A dependent gap that a neighbour inflated (16.13 µs, beside another catalogue run on an
    // H100) would put the threshold at 387 µs; it is capped below the shortest stall that turned
    // a verdict, so a 100 µs stall still counts.
    let inflated = stream_litmus::Tolerances {
        dependent_gap_ns: 16_130,
        ..TOL
    };
    assert_eq!(stall_threshold(&inflated), 80_000);
    let (p, t) = pair(150_000, None);
    assert_eq!(stalls(&p, &t, &inflated)[0].len_ns, 100_000);
}

/// `priority.equal_waits_behind` beside a neighbour, by hand: A (issued at host 0) and B (issued
/// at host 5 µs) are both held back by a neighbour's time slice, released together at GPU
/// 300 µs, and B goes first. Every start is late by the same amount, so the offset taken from
/// the trial's own starts sees nothing; the clock sync with the calibrated launch latency does,
/// and which of two pending kernels goes first is then the GPU's choice, not their issue order.
fn held_back(clock: Option<ClockSync>) -> (Program, Timeline) {
    let mut p = Program::builder("held back");
    let (s1, s2) = (
        p.stream(StreamKind::NonBlocking),
        p.stream(StreamKind::NonBlocking),
    );
    let a = p.spin(s1, "A", std::time::Duration::from_micros(50));
    let b = p.spin(s2, "B", std::time::Duration::from_micros(50));
    let t = Timeline::new(
        vec![
            Span::single(a, 300_400, 350_400),
            Span::single(b, 300_000, 350_000),
        ],
        vec![call(a, 0, 0), call(b, 5_000, 5_000)],
    )
    .with_host(vec![], clock);
    (p.build(), t)
}

#[test]
fn a_trial_held_back_as_a_whole_is_let_go_not_stalled_and_spoils_only_arrival_orders() {
    // Host time h is GPU time h (the sync's offset 0, within ±1 µs); launches take 6 µs.
    let sync = ClockSync {
        shared: false,
        offset_ns: 0,
        error_ns: 1_000,
    };
    let tol = Tolerances {
        launch_latency_ns: Some(6_000),
        copy_rates: None,
        ..TOL
    };
    let (p, t) = held_back(Some(sync));
    // Nothing ran before the release at 300 µs: both were pending, and both started at it.
    assert!(
        stalls(&p, &t, &tol).is_empty(),
        "{:?}",
        stalls(&p, &t, &tol)
    );
    let (a, b) = (OpId(0), OpId(1));
    // Which of two equal-priority kernels went first is the GPU's choice once both are pending.
    let behind = [Check::Behind { low: a, high: b }];
    let m = marks(&p, &behind, std::slice::from_ref(&t), None, &tol);
    let why = m.trials[0].clone().expect("held back");
    // A was ready by 6 + 1 µs (latency, sync error): held 293 µs.
    assert!(why.contains("held back as a whole for 293.00 µs"), "{why}");
    // Whether they overlapped is not: the trial decides it.
    let overlap = [Check::Overlaps { a, b }];
    let j = judge_claim(&p, &overlap, std::slice::from_ref(&t), None, &tol, 1);
    assert_eq!(j.counts.disturbed, 0);
    assert_eq!(j.verdict, Verdict::Holds);
    // Without the sync, or without a calibrated latency (results files of before), the hold is
    // not seen, and the arrival order is judged as before.
    assert_eq!(
        marks(&p, &behind, &[held_back(None).1], None, &tol).trials,
        vec![None]
    );
    assert_eq!(
        marks(&p, &behind, std::slice::from_ref(&t), None, &TOL).trials,
        vec![None]
    );
    // A sync too coarse to place the trial (error over a quarter of the threshold) is not used.
    let coarse = ClockSync {
        shared: false,
        offset_ns: 0,
        error_ns: stall_threshold(&tol) / 4 + 1,
    };
    assert_eq!(
        marks(&p, &behind, &[held_back(Some(coarse)).1], None, &tol).trials,
        vec![None]
    );
    // On time (started 6.4 µs after issue), the same trial is not held.
    let mut on_time = t.clone();
    for s in &mut on_time.spans {
        s.blocks.edit(|blocks| {
            for b in blocks {
                b.start_ns -= 294_000;
                b.end_ns -= 294_000;
            }
        });
    }
    assert_eq!(
        marks(&p, &behind, &[on_time], None, &tol).trials,
        vec![None]
    );
}

#[test]
fn our_own_kernel_running_explains_a_wait() {
    // C, issued after B, runs from 50 to 400 µs: B may have waited for SMs it held.
    let mut p = Program::builder("held");
    let ss: Vec<_> = (0..3).map(|_| p.stream(StreamKind::NonBlocking)).collect();
    let a = p.spin(ss[0], "A", std::time::Duration::from_micros(50));
    let b = p.spin(ss[1], "B", std::time::Duration::from_micros(50));
    let c = p.spin(ss[2], "C", std::time::Duration::from_micros(350));
    let t = Timeline::new(
        vec![
            Span::single(a, 0, 50_000),
            Span::single(b, 400_500, 450_000),
            Span::single(c, 50_000, 400_000),
        ],
        vec![
            call(a, 0, 0),
            call(b, 10_000, 10_000),
            call(c, 12_000, 12_000),
        ],
    );
    assert!(stalls(&p.build(), &t, &TOL).is_empty());
}

#[test]
fn a_paused_block_is_a_stall_even_while_it_counts_as_running() {
    let pause = |ns| Some(Pause { at_ns: 20_000, ns });
    let (p, t) = pair(30_000, pause(PAUSE_FLOOR_NS));
    assert!(stalls(&p, &t, &TOL).is_empty(), "exactly the pause floor");
    let (p, t) = pair(30_000, pause(PAUSE_FLOOR_NS + 1));
    let found = stalls(&p, &t, &TOL);
    assert_eq!((found[0].op, found[0].kind), (OpId(0), StallKind::Paused));
}

#[test]
fn disturbed_trials_are_counted_apart_and_never_decide() {
    let (p, calm) = pair(52_000, None);
    let (_, stalled) = pair(350_000, None);
    // A and B should overlap; the stalled trial shows them apart, "it waited".
    let overlaps = [Check::Overlaps {
        a: OpId(0),
        b: OpId(1),
    }];
    let j = judge_claim(
        &p,
        &overlaps,
        &[stalled.clone(), stalled.clone()],
        None,
        &TOL,
        2,
    );
    assert_eq!(j.verdict, Verdict::Inconclusive);
    assert_eq!(j.counts.to_string(), "Undecided 0/0 +2!");
    let why = j.evidence(&p);
    assert!(why.contains("2 of 2 trials disturbed"), "{why}");
    assert!(
        why.contains("unexplained stalls of 300.00–300.00 µs"),
        "{why}"
    );
    // Without the rule the same stamps refute the claim.
    let plain = stream_litmus::judge(&p, &overlaps, std::slice::from_ref(&stalled), &TOL, 1);
    assert_eq!(plain.verdict, Verdict::Violated);
    // One calm trial is no Holds when two are wanted; the stalled one is left out.
    let precedes = [Check::Precedes {
        before: OpId(0),
        after: OpId(1),
    }];
    let j = judge_claim(&p, &precedes, &[calm.clone(), stalled], None, &TOL, 2);
    assert_eq!(
        (j.counts.disturbed, j.counts.positive + j.counts.negative),
        (1, 1)
    );
}

#[test]
fn pauses_survive_the_results_file() {
    let block = BlockStamp {
        start_ns: 1,
        end_ns: 2,
        sm: 0,
        cycles: 3,
        pause: Some(Pause { at_ns: 1, ns: 1 }),
    };
    let json = serde_json::to_string(&block).unwrap();
    assert_eq!(serde_json::from_str::<BlockStamp>(&json).unwrap(), block);
    // Schema-1 files recorded before the pause have none.
    let old: BlockStamp =
        serde_json::from_str(r#"{"start_ns":1,"end_ns":2,"sm":0,"cycles":3}"#).unwrap();
    assert_eq!(old.pause, None);
}

#[test]
fn a_copy_held_up_behind_a_kernel_of_another_stream_is_a_stall() {
    // Behind K in its own stream: a real wait, however K ends.
    let (p, t) = kernel_then_copy(502_000, true);
    assert!(stalls(&p, &t, &TOL).is_empty());
    // On another stream K holds no copy engine: a copy ready at 12 µs that starts at 502 µs
    // was held by something else.
    let (p, t) = kernel_then_copy(502_000, false);
    let found = stalls(&p, &t, &TOL);
    assert_eq!(
        (found.len(), found[0].kind),
        (1, StallKind::Idle),
        "{found:?}"
    );
    assert!(found[0].len_ns > 480_000);
    // Started while K ran: no stall.
    let (p, t) = kernel_then_copy(15_000, false);
    assert!(stalls(&p, &t, &TOL).is_empty());
}

#[test]
fn a_stall_after_everything_the_checks_read_spoils_nothing() {
    // A and B overlap from 0 to 55 µs; C, issued at 100 µs when both had ended, waited out a
    // neighbour's slice until 500 µs.
    let mut p = Program::builder("horizon");
    let (s1, s2) = (
        p.stream(StreamKind::NonBlocking),
        p.stream(StreamKind::NonBlocking),
    );
    let a = p.spin(s1, "A", std::time::Duration::from_micros(50));
    let b = p.spin(s2, "B", std::time::Duration::from_micros(50));
    let c = p.spin(s1, "C", std::time::Duration::from_micros(50));
    let t = Timeline::new(
        vec![
            Span::single(a, 0, 50_000),
            Span::single(b, 5_000, 55_000),
            Span::single(c, 500_000, 550_000),
        ],
        vec![
            call(a, 0, 0),
            call(b, 5_000, 5_000),
            call(c, 100_000, 100_000),
        ],
    );
    let (p, t) = (p.build(), std::slice::from_ref(&t));
    assert_eq!(stalls(&p, &t[0], &TOL).len(), 1, "C's wait is a stall");
    let on_ab = [Check::Overlaps { a, b }];
    assert_eq!(marks(&p, &on_ab, t, None, &TOL).trials, vec![None]);
    let on_c = [Check::Overlaps { a: b, b: c }];
    assert!(marks(&p, &on_c, t, None, &TOL).trials[0].is_some());
}

#[test]
fn a_stall_inside_a_phase_counts_after_the_phase_last_op_ended() {
    // A phase of three ops, K1 (s1), K2 (s2), D (s1): D ends at 100 µs, K2 waited out a
    // neighbour's slice and ran 600–650 µs. The phase ends at 650 µs, not at D's end:
    // `scenario.pipeline.8` was once decided "Violated" on such a trial.
    let mut p = Program::builder("phase");
    let (s1, s2) = (
        p.stream(StreamKind::NonBlocking),
        p.stream(StreamKind::NonBlocking),
    );
    let k1 = p.spin(s1, "K1", std::time::Duration::from_micros(50));
    let k2 = p.spin(s2, "K2", std::time::Duration::from_micros(50));
    let d = p.spin(s1, "D", std::time::Duration::from_micros(50));
    let t = Timeline::new(
        vec![
            Span::single(k1, 0, 50_000),
            Span::single(k2, 600_000, 650_000),
            Span::single(d, 50_000, 100_000),
        ],
        vec![
            call(k1, 0, 0),
            call(k2, 2_000, 2_000),
            call(d, 3_000, 3_000),
        ],
    );
    let (p, t) = (p.build(), std::slice::from_ref(&t));
    assert!(!stalls(&p, &t[0], &TOL).is_empty(), "K2's wait is a stall");
    let phase = [Check::Faster {
        slow: (k1, d),
        fast: (k1, d),
    }];
    let why = marks(&p, &phase, t, None, &TOL).trials[0].clone();
    assert!(why.is_some_and(|w| w.contains("K2")));
}

#[test]
fn the_run_says_which_claims_a_neighbour_stopped_early() {
    use stream_litmus::report::terminal::decided_line;
    // Beside the matmul loop, claims whose first trial a neighbour disturbed ran one or two.
    let (_, run) = &common::recorded("contended-matmul-overlaps-")[0];
    let line = decided_line(run);
    assert!(
        line.ends_with(
            "; 23 claims stopped early, a neighbour having disturbed their first trial (47 trials \
             not run)"
        ),
        "{line}"
    );
    // Alone, nobody stops early, and the line says nothing of it.
    let (_, idle) = &common::recorded("catalogue-h100")[0];
    assert!(!decided_line(idle).contains("stopped early"));
}
